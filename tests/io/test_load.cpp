#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "cli_run.hpp"

#include "specsim/acceptance.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;
namespace fs = std::filesystem;

namespace {
const std::string kData = SPECSIM_TEST_DATA_DIR;
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

std::string invalid(const std::string& name) { return kData + "/invalid/" + name; }
}  // namespace

TEST_CASE("load: every shipped data file validates", "[load]") {
  for (const char* dir : {"models/llm", "models/gpu", "models/topology", "models/scenarios", "calibration/profiles"}) {
    for (const auto& entry : fs::directory_iterator(fs::path(SPECSIM_SOURCE_DIR) / dir)) {
      if (entry.path().extension() != ".yaml") continue;
      INFO(entry.path().string());
      CHECK_NOTHROW(specsim::check_data_file(entry.path().string(), kRoot));
    }
  }
}

TEST_CASE("load: model parameter counts reproduce published totals", "[load]") {
  // docs/references/models.md#targets: Kimi-K2.5 ~1T total / 32B active; computed there 1026.4B / 32.9B.
  const auto kimi = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "kimi-k2.5"));
  CHECK_THAT(kimi.total_params(), WithinRel(1026.4e9, 0.02));
  CHECK_THAT(kimi.active_params(), WithinRel(32.9e9, 0.03));
  // Llama-3.1-8B: 8.03B (docs/references/models.md#targets, computed).
  const auto llama = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "llama-3.1-8b"));
  CHECK_THAT(llama.total_params(), WithinRel(8.03e9, 0.02));
  // Kimi EAGLE-3 head 1.19B without the shared embedding (docs/references/models.md#eagle3-heads: fc 154M, attn 411M,
  // MLP 396M, lm_head 229M).
  const auto head = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "kimi-k2.5-eagle3"));
  CHECK_THAT(head.total_params(), WithinRel(1.19e9, 0.02));
}

TEST_CASE("load: an eagle block is an EAGLE-1/2 head: fc over [embedding, feature], the target's vocabulary",
          "[load]") {
  // docs/references/models.md#eagle1-structure. H = 4096, V = 128,256, GQA 32/8 x 128, FFN 14,336:
  //   fc     2H x H                      = 33,554,432
  //   attn   qkv H x (H + 2 x 1024) + o H x H = 25,165,824 + 16,777,216 = 41,943,040 (qkv reads H, not 2H)
  //   mlp    3 x H x 14,336              = 176,160,768
  //   head   V x H                       = 525,336,576
  //   total                              = 776,994,816 (the embedding is the target's)
  const auto head = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "llama-3.1-8b-eagle1"));
  REQUIRE(head.eagle3);
  CHECK(head.eagle3->version == 1);
  CHECK(head.eagle3->draft_vocab_size == 128256);
  CHECK(head.draft_input_params() == 2.0 * 4096 * 4096);
  CHECK(head.lm_head_params() == 128256.0 * 4096);
  CHECK_THAT(head.total_params(), WithinRel(776994816.0, 1e-9));
  // The EAGLE-3 head of the same target: fc 3H x H, qkv reads 2H, a 32,000-token draft vocabulary.
  const auto e3 = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "llama-3.1-8b-eagle3"));
  CHECK(e3.eagle3->version == 3);
  CHECK(e3.draft_input_params() == 3.0 * 4096 * 4096);
}

TEST_CASE("load: a Hugging Face config.json with nested text_config loads", "[load]") {
  const auto m = specsim::load_model(kData + "/valid/hf/kimi-k2.5.config.json");
  CHECK(m.layers == 61);
  CHECK(m.hidden_size == 7168);
  CHECK(m.dense_layers == 1);
  REQUIRE(m.moe);
  CHECK(m.moe->experts == 384);
  CHECK(m.attention.kind == specsim::AttentionKind::kMla);
  CHECK(m.weights.experts == specsim::Dtype::kInt4G32);
}

TEST_CASE("load: bad files name file, line, column and key", "[load][invalid]") {
  CHECK_THROWS_WITH(specsim::load_gpu(invalid("gpu/missing-unit.yaml")),
                    Contains("gpu/missing-unit.yaml:5:19: memory_bandwidth: expected a bandwidth with unit"));
  CHECK_THROWS_WITH(specsim::load_gpu(invalid("gpu/unknown-key.yaml")),
                    Contains("gpu/unknown-key.yaml:5:1: memory_bandwidth: required key is missing; is 'memory_bandwith' here a misspelling of it?"));
  CHECK_THROWS_WITH(specsim::load_gpu(invalid("gpu/no-schema-version.yaml")),
                    Contains("schema_version: required key is missing"));
  CHECK_THROWS_WITH(specsim::load_scenario(invalid("scenario/unknown-key.yaml"), {}, kRoot),
                    Contains("unknown-key.yaml:44:3: speculation.num_stepz: unknown key"));
  CHECK_THROWS_WITH(specsim::load_scenario(invalid("scenario/accept-out-of-range.yaml"), {}, kRoot),
                    Contains("accept-out-of-range.yaml:49:11: acceptance.accept: = 1.2: must be in [0, 1]"));
  CHECK_THROWS_WITH(specsim::load_scenario(invalid("scenario/unknown-topology.yaml"), {}, kRoot),
                    Contains("unknown-topology.yaml:9:11: topology: unknown topology '8x-rtx-pro-9000' (known in"));
  CHECK_THROWS_WITH(specsim::load_scenario(invalid("scenario/missing-unit.yaml"), {}, kRoot),
                    Contains("missing-unit.yaml:68:17: compute.kernel_floor: expected a duration with unit"));
}

TEST_CASE("load: unknown scenario names list the known ones", "[load][invalid]") {
  CHECK_THROWS_WITH(specsim::load_scenario("no-such-scenario", {}, kRoot),
                    Contains("unknown scenario 'no-such-scenario'") && Contains(specsim::kDefaultScenario));
}

TEST_CASE("load: --set patches any field by dotted path, with units, and errors name the patch", "[load][set]") {
  const auto s = specsim::load_scenario(specsim::kDefaultScenario,
                                        {"speculation.num_steps=2", "compute.kernel_floor=2us", "workload.batch=4"}, kRoot);
  CHECK(s.speculation.shape.num_steps == 2);
  CHECK(s.speculation.shape.num_draft_tokens == 3);  // a chain verifies num_steps + 1
  CHECK_THAT(s.compute.kernel_floor_s, WithinRel(2e-6, 1e-12));
  CHECK(s.batch == 4);
  CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, {"compute.kernel_floor=2"}, kRoot),
                    Contains("--set compute.kernel_floor=2: compute.kernel_floor: expected a duration with unit"));
  CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, {"speculation.num_stepz=2"}, kRoot),
                    Contains("--set speculation.num_stepz=2: speculation.num_stepz: unknown key"));
  CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, {"speculation.num_steps"}, kRoot),
                    Contains("expected key=value"));
  CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, {"topology=h9000"}, kRoot),
                    Contains("--set topology=h9000: topology: unknown topology 'h9000'"));
}

// The default scenario states `acceptance.accept` with a depth profile; a patch of another form
// replaces both, and the engines' average over drafted tokens becomes tau at the draft shape.
TEST_CASE("load: a patched acceptance form replaces the file's, and draft_acceptance_rate is tau at the shape", "[load][set]") {
  const auto tau = [](const std::vector<std::string>& patches) {
    const auto s = specsim::load_scenario(specsim::kDefaultScenario, patches, kRoot);
    const auto* m = std::get_if<specsim::MeasuredTau>(&s.acceptance.kind);
    REQUIRE(m != nullptr);
    return m->tokens_per_cycle;
  };
  CHECK(tau({"acceptance.tokens_per_cycle=2.4"}) == 2.4);
  // vLLM's "Avg Draft acceptance rate: 69.1%" at K = 3: 1 + 0.691 x 3 = 3.073.
  CHECK_THAT(tau({"acceptance.draft_acceptance_rate=0.691"}), WithinRel(3.073, 1e-12));
  // At the patched shape: K = 5 drafts 5 tokens, 1 + 0.5 x 5 = 3.5; an SGLang tree of 8 draft
  // tokens drafts 7, 1 + 0.3 x 7 = 3.1.
  CHECK_THAT(tau({"speculation.num_steps=5", "acceptance.draft_acceptance_rate=0.5"}), WithinRel(3.5, 1e-12));
  CHECK_THAT(tau({"speculation.eagle_topk=4", "speculation.num_draft_tokens=8", "acceptance.draft_acceptance_rate=0.3"}),
             WithinRel(3.1, 1e-12));
  // A patched accept keeps the file's profile; two patched forms are still two.
  const auto accept = specsim::load_scenario(specsim::kDefaultScenario, {"acceptance.accept=0.6"}, kRoot);
  const auto* chain = std::get_if<specsim::ConstantChain>(&accept.acceptance.kind);
  REQUIRE(chain != nullptr);
  CHECK(chain->accept == 0.6);
  CHECK_FALSE(chain->depth_profile.empty());
  CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario,
                                           {"acceptance.tokens_per_cycle=2", "acceptance.draft_acceptance_rate=0.5"}, kRoot),
                    Contains("give exactly one of") && Contains("(found 2)"));
  // A rate the tree cannot emit names the key and the patch.
  CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario,
                                           {"speculation.eagle_topk=4", "speculation.num_draft_tokens=16",
                                            "acceptance.draft_acceptance_rate=0.9"},
                                           kRoot),
                    Contains("acceptance.draft_acceptance_rate: = 0.9 gives tau 14.5 at 16 draft tokens"));
}

TEST_CASE("load: an end-to-end plain rate carries the benchmark's prompt and output lengths", "[load]") {
  // GPUStack's Qwen3-8B page, section 3: 23260 input and 22061 generated tokens over 100 requests,
  // 233 and 221 per request (rounded as the row states them).
  const std::string row = std::string(SPECSIM_SOURCE_DIR) +
                          "/validation/gpustack-qwen3-8b-h100/gpustack-qwen3-8b-fp8-h100-c4-s2-k1-chain.yaml";
  const specsim::Scenario s = specsim::load_scenario(row, {}, kRoot);
  CHECK(s.measurements.baseline_includes_prefill);
  CHECK(s.measurements.baseline_prompt_tokens == 233.0);
  CHECK(s.measurements.baseline_output_tokens == 221.0);
  // Its tau is derived from the held-out speculative run's own ITL / TPOT, and the row says so.
  REQUIRE(s.validation);
  CHECK_THAT(s.validation->inputs_from_speculative_run, Contains("ITL"));
  // A decode-only rate states neither: 0 is "not stated".
  const specsim::Scenario home = specsim::load_scenario("kimi-k2.5-eagle3-8x-rtx-pro-6000", {}, kRoot);
  CHECK(home.measurements.baseline_prompt_tokens == 0.0);
  CHECK(home.measurements.baseline_output_tokens == 0.0);
}

TEST_CASE("load: a measured rate below 0.01 tok/s is refused, denormals and 0 included", "[load][invalid]") {
  for (const std::string key : {"measurements.baseline.tokens_per_s", "measurements.speculative.tokens_per_s"}) {
    for (const std::string value : {"0tok/s", "1e-300tok/s", "0.009tok/s"}) {
      INFO(key << "=" << value);
      CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, {key + "=" + value}, kRoot),
                        Contains(key) && Contains("must be at least 0.01 tok/s"));
    }
  }
  CHECK_NOTHROW(specsim::load_scenario(specsim::kDefaultScenario, {"measurements.baseline.tokens_per_s=0.01tok/s"}, kRoot));
}

TEST_CASE("load: a measured comm table may scatter, not fall by more than 25% between sizes", "[load][invalid]") {
  // The shipped 2x 2080 Ti table falls 9.7% from 32 B to 64 B (12.86 -> 11.61 us): measurement scatter.
  const std::string shipped = std::string(SPECSIM_SOURCE_DIR) + "/calibration/profiles/nccl-anthonyhoo-2x2080ti-nop2p-pix.yaml";
  CHECK_NOTHROW(specsim::load_comm_profile(shipped));
  // Its 1 GiB row edited to 1 us after 134 ms at 512 MiB: refused at that row.
  std::string text = specsim::test::read_text(shipped);
  const auto at = text.rfind("time:");
  REQUIRE(at != std::string::npos);
  const auto end = text.find_first_of("}\n", at);
  text.replace(at, end - at, "time: 1us");
  specsim::test::TempDir dir("specsim-measured-falls");
  const std::string file = (dir.path / "falls.yaml").string();
  std::ofstream(file) << text;
  CHECK_THROWS_WITH(specsim::load_comm_profile(file),
                    Contains(file) && Contains("more than a measurement's scatter (25%)"));
}

TEST_CASE("load: a data file read again gives the value kept, and an edited one is read again", "[load]") {
  // What-ifs load the same files for every scenario they build: the value is kept by path, size and
  // modification time (load.cpp, remembered), so an edit, even one of the same length, reads again.
  specsim::test::TempDir dir("specsim_test_load_kept_gpu");
  const fs::path file = dir.path / "h200-copy.yaml";
  std::ifstream in(fs::path(SPECSIM_SOURCE_DIR) / "models/gpu/h200.yaml");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto write = [&](const std::string& t) {
    std::ofstream(file, std::ios::trunc) << t;
  };
  write(text);
  const auto first = specsim::load_gpu(file.string());
  CHECK(first.memory_bandwidth_bytes_per_s == 4800e9);
  CHECK(specsim::load_gpu(file.string()).memory_bandwidth_bytes_per_s == 4800e9);
  // 4800GB/s -> 4100GB/s: the same length, so only the modification time tells the edit apart.
  std::string edited = text;
  edited.replace(edited.find("4800GB/s"), 8, "4100GB/s");
  REQUIRE(edited.size() == text.size());
  write(edited);
  fs::last_write_time(file, fs::last_write_time(file) + std::chrono::seconds(2));
  CHECK(specsim::load_gpu(file.string()).memory_bandwidth_bytes_per_s == 4100e9);
  // An edit that breaks the file fails every time, with its line.
  write(text + "memory_bandwidth: 1GB/s\n");
  CHECK_THROWS_WITH(specsim::load_gpu(file.string()), Catch::Matchers::Contains("memory_bandwidth"));
  CHECK_THROWS_WITH(specsim::load_gpu(file.string()), Catch::Matchers::Contains("memory_bandwidth"));
}
