// speculation.method draft_model (a separate small LM in the EAGLE cycle) and ngram (prompt lookup
// on the host, no draft forward): docs/model.md#draft-model and #ngram.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_run.hpp"
#include "specsim/compute_model.hpp"
#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"
#include "specsim/report.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
const std::string kDraftModelRow = std::string(SPECSIM_SOURCE_DIR) +
                                   "/validation/vllm-scripts-llama33-70b-2xh100/vscripts-llama33-70b-draft1b-k4-c1-instructcoder.yaml";
const std::string kNgramRow = std::string(SPECSIM_SOURCE_DIR) +
                              "/validation/vllm-lab-v029-ngram-rtx4090/vllmlab-v029-qwen3-8b-ngram-k4-count-c8.yaml";

bool has_part(const specsim::MemoryFit& fit, const std::string& name) {
  return std::any_of(fit.parts.begin(), fit.parts.end(), [&](const auto& p) { return p.name == name; });
}
}  // namespace

TEST_CASE("draft_model: Llama-3.2-1B's shape gives Meta's published 1.24B parameters", "[draft_model]") {
  const auto d = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "llama-3.2-1b"));
  // Per layer: q and o 2 x 2048^2, k and v 2 x 2048 x 512 (8 KV heads x 64), MLP 3 x 2048 x 8192
  //   = 8,388,608 + 2,097,152 + 50,331,648 = 60,817,408; x 16 layers = 973,078,528
  const double layers = 16.0 * (2.0 * 2048 * 2048 + 2.0 * 2048 * 512 + 3.0 * 2048 * 8192);
  const double embedding = 128256.0 * 2048;  // 262,668,288; tied to the LM head in the checkpoint
  // 973.1M + 262.7M = 1.236B with the tied matrix counted once (Meta: 1.24B)
  CHECK_THAT(layers + embedding, WithinRel(1.24e9, 0.005));
  CHECK_THAT(d.lm_head_params(), WithinRel(embedding, 1e-12));
  CHECK_FALSE(d.eagle3);
}

TEST_CASE("draft_model: each draft forward runs the whole small LM with its own all-reduces", "[draft_model]") {
  const auto s = specsim::load_scenario(kDraftModelRow, {}, kRoot);
  REQUIRE(s.speculation.method == "draft_model");
  REQUIRE(s.parallel.tp == 2);
  const specsim::CycleModel model(s);
  const auto p = model.predict();
  // vLLM: the extend over the accepted tokens yields draft 1, then K - 1 = 3 single-token forwards.
  REQUIRE(p.drafts.size() == 4);
  for (const auto& d : p.drafts) CHECK(d.allreduce_count == 2 * 16 + 1);  // 16 layers and the embedding
  // One decode step of the draft reads every weight of it on one of 2 ranks (the tied matrix read
  // twice: once as embedding row, once as the whole LM head; the row is negligible) plus its KV.
  const specsim::ComputeModel draft(s.draft, s.gpu, 2, 1, s.context_tokens, s.compute, 0.84, 1.0);
  const double per_rank = (16.0 * (2.0 * 2048 * 2048 + 2.0 * 2048 * 512 + 3.0 * 2048 * 8192) + 128256.0 * 2048) * 2 / 2;
  CHECK(draft.bytes_read(1.0) > per_rank);
  CHECK_THAT(draft.bytes_read(1.0), WithinRel(per_rank, 0.02));
  // Its weights and cache count in the memory fit.
  const auto fit = specsim::memory_fit(s);
  CHECK(has_part(fit, "draft weights"));
  CHECK(has_part(fit, "draft KV cache"));
}

TEST_CASE("ngram: no draft forward, host lookup linear in batch x context", "[ngram]") {
  const auto at = [](const std::string& per_token) {
    return specsim::CycleModel(specsim::load_scenario(kNgramRow, {"host.ngram_lookup_per_token=" + per_token}, kRoot))
        .predict();
  };
  const auto none = at("0s");
  CHECK(none.drafts.empty());
  CHECK(none.draft_s == 0.0);
  CHECK_THAT(none.cycle_s, WithinRel(none.verify.total_s() + none.spec_host_s, 1e-12));
  // 1 us per context token: batch 8 x context from the row; the lookup is the only difference.
  const auto s = specsim::load_scenario(kNgramRow, {}, kRoot);
  const auto slow = at("1us");
  CHECK_THAT(slow.cycle_s - none.cycle_s, WithinAbs(1e-6 * s.batch * s.context_tokens, 1e-12));
  // The prior: 1.06 ns per token (vLLM PR 56732, 66.3M tokens in 70.28 ms).
  CHECK_THAT(s.host.ngram_lookup_per_token_s, WithinRel(70.28e-3 / 66.3e6, 0.01));
  const auto fit = specsim::memory_fit(s);
  CHECK_FALSE(has_part(fit, "draft weights"));
  CHECK_FALSE(has_part(fit, "draft KV cache"));
}

TEST_CASE("ngram: predict shows the lookup's cost with its origin, in text and JSON", "[ngram][report]") {
  const auto render = [](const std::vector<std::string>& patches, specsim::Format format) {
    const specsim::CycleModel model(specsim::load_scenario(kNgramRow, patches, kRoot));
    return specsim::render_prediction(model, model.predict(), format);
  };
  const auto prior = nlohmann::json::parse(render({}, specsim::Format::kJson));
  const auto& lookup = prior["calibration"]["ngram_lookup_per_token_s"];
  CHECK(lookup["value"].get<double>() == specsim::kPriorNgramLookupPerTokenS.value);
  CHECK_THAT(lookup["origin"].get<std::string>(), StartsWith("prior: vLLM's single-threaded lookup"));
  const auto set = nlohmann::json::parse(render({"host.ngram_lookup_per_token=2ns"}, specsim::Format::kJson));
  CHECK(set["calibration"]["ngram_lookup_per_token_s"]["origin"] == "set");
  CHECK(set["speculative"]["drafts"].empty());
  const std::string text = render({}, specsim::Format::kText);
  CHECK_THAT(text, Contains("draft: n-gram lookup on the host"));
  CHECK_THAT(text, Contains("n-gram lookup per context token 1.06 ns  (prior:"));
}

TEST_CASE("host prior: a batch-1 graph step far above vLLM's host prior is read as slower weight reads", "[calibration][host]") {
  const std::string row = std::string(SPECSIM_SOURCE_DIR) +
                          "/validation/vllm-scripts-qwen3-32b-h100/vscripts-qwen3-32b-draft1.7b-k3-c1-mtbench.yaml";
  const specsim::CycleModel model(specsim::load_scenario(row, {}, kRoot));
  const auto& cal = model.calibration();
  // models/engines/vllm.yaml plain_step_host: 0.44 ms (p90 2 ms). The measured TPOT is 34.17 ms
  // against a ~24.9 ms forward at 84%, so 9.3 ms would be host: two readings. The GPU reading lowers
  // the efficiency, but only to its plausible floor (74%, kMinPlausibleBandwidthEfficiency): the
  // forward is then 24.9 x 84 / 74 = ~28.3 ms, and the ~5.9 ms the floor cannot absorb stays host
  // time. The end-to-end step 1/29.18 s = 34.27 ms adds 0.10 ms per output token (prefill).
  CHECK(cal.bandwidth_efficiency.value == specsim::kMinPlausibleBandwidthEfficiency);
  CHECK_THAT(cal.host_per_output_token_s, WithinRel(1.0 / 29.18 - 34.17e-3, 1e-9));
  const double per_step = cal.host_decode_s.value - cal.host_per_output_token_s;
  CHECK(per_step > 2e-3);  // beyond the prior's p90: what no plausible efficiency explains
  CHECK(per_step < 9.3e-3);
  CHECK_THAT(cal.bandwidth_efficiency.origin, StartsWith("calibrated: the measured plain TPOT 34.2 ms"));
  // Both readings are kept for the band: the host reading at the prior 84%, the GPU one at 74%.
  REQUIRE(cal.plain_step_readings.size() == 2);
  CHECK(cal.plain_step_readings[0].bandwidth_efficiency == specsim::kPriorBandwidthEfficiency.value);
  CHECK(cal.plain_step_readings[1].bandwidth_efficiency == specsim::kMinPlausibleBandwidthEfficiency);
  CHECK(std::any_of(cal.warnings.begin(), cal.warnings.end(), [](const std::string& w) {
    return w.find("two readings") != std::string::npos && w.find("would settle it") != std::string::npos;
  }));
  // The forward fills the step less the host time left.
  CHECK_THAT(model.predict().baseline_tokens_per_s, WithinRel(29.18, 1e-6));
  // At batch 16 the TPOT (35.34 ms) holds no prefill or batch tails: its excess is read the same way.
  const std::string c16 = std::string(SPECSIM_SOURCE_DIR) +
                          "/validation/vllm-scripts-qwen3-32b-h100/vscripts-qwen3-32b-draft1.7b-k3-c16-mtbench.yaml";
  const specsim::CycleModel batch16(specsim::load_scenario(c16, {}, kRoot));
  CHECK_THAT(batch16.calibration().bandwidth_efficiency.origin, StartsWith("calibrated: the measured plain TPOT"));
  // Without the TPOT the end-to-end step may hold batch tails: the host keeps the excess, the
  // efficiency stays a prior.
  specsim::test::TempDir dir("specsim-no-tpot");
  const std::string file = (dir.path / "c16.yaml").string();
  std::ofstream(file) << specsim::test::replaced_once(specsim::test::read_text(c16), "    tpot: 35.34ms", "    # tpot removed");
  const specsim::CycleModel no_tpot(specsim::load_scenario(file, {}, kRoot));
  CHECK_THAT(no_tpot.calibration().bandwidth_efficiency.origin, StartsWith("prior"));
}

TEST_CASE("mtp: a model file's mtp_weights price the module apart from the target", "[mtp]") {
  const specsim::DataDir root(SPECSIM_SOURCE_DIR);
  // TensorRT-LLM's DeepSeek-R1 NVFP4: MoE experts NVFP4 in the target, BF16 in the MTP module.
  const specsim::TransformerSpec r1 = specsim::load_model(root.resolve(specsim::DataKind::kModel, "deepseek-r1-nvfp4-trtllm"));
  REQUIRE(r1.weights.experts == specsim::Dtype::kNvfp4);
  REQUIRE(r1.mtp_weights);
  const specsim::TransformerSpec mtp = specsim::mtp_draft(r1);
  CHECK(mtp.weights.experts == specsim::Dtype::kBf16);
  CHECK(mtp.weights.attention == specsim::Dtype::kBf16);
  // One expert read per routed expert: BF16 2 B per parameter against NVFP4's 0.5 B plus one FP8
  // scale per 16 values (4.5 bits): 2 / 0.5625 = 3.56x the bytes.
  CHECK_THAT(specsim::bytes_per_param(mtp.weights.experts) / specsim::bytes_per_param(r1.weights.experts),
             Catch::Matchers::WithinRel(2.0 / 0.5625, 1e-9));
  // Without mtp_weights the module keeps the target's dtypes.
  const specsim::TransformerSpec v3 = specsim::load_model(root.resolve(specsim::DataKind::kModel, "deepseek-v3"));
  CHECK(specsim::mtp_draft(v3).weights.experts == v3.weights.experts);
}
