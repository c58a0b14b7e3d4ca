// The calibration rules of ModelRules (docs/validation.md#ablation): what each does on a row that
// exercises it, that no calibrated efficiency leaves its plausible range, and `validate --ablate`.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "cli_run.hpp"
#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/validate_corpus.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using Catch::Matchers::WithinRel;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
const std::string kCorpus = std::string(SPECSIM_SOURCE_DIR) + "/validation";
const std::string kBs32 = kCorpus + "/angelslim-issue-163-4xh100/as163-qwen3-30b-a3b-eagle3-tp4-bs32-4-4-16.yaml";

specsim::CycleModel model_of(const std::string& file, const specsim::ModelRules& rules = {},
                             const std::vector<std::string>& set = {}) {
  specsim::Scenario s = specsim::load_scenario(file, set, kRoot);
  s.rules = rules;
  return specsim::CycleModel(std::move(s));
}

bool warned(const specsim::Calibration& cal, const std::string& text) {
  return std::any_of(cal.warnings.begin(), cal.warnings.end(),
                     [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("rules: no row of the corpus calibrates an efficiency outside 74-100% of datasheet bandwidth",
          "[rules][validate]") {
  for (const auto& file : specsim::find_validation_rows({}, kRoot)) {
    const auto m = model_of(file);
    const auto& eta = m.calibration().bandwidth_efficiency;
    INFO(file << ": " << eta.value << " (" << eta.origin << ")");
    if (eta.origin == "set") continue;
    CHECK(eta.value >= specsim::kMinPlausibleBandwidthEfficiency);
    CHECK(eta.value <= specsim::kMaxPlausibleBandwidthEfficiency);
  }
}

TEST_CASE("rules: a step shorter than the forward even at the datasheet's bandwidth names the part that reads too much",
          "[rules]") {
  // Kimi-K2.6 at batch 32 on 8x RTX PRO 6000: the measured 32 ms step is shorter than the modelled
  // forward at 100%: the efficiency stops there (it reached 143% before), the host time is 0, and
  // the warning says the model's expert bytes are what is wrong.
  const auto m = model_of(kCorpus + "/rtx6kpro-kimi-k26-v5/kimi-k26-v5-eagle3-tp8-ctx0-c32.yaml");
  const auto& cal = m.calibration();
  CHECK(cal.bandwidth_efficiency.value == specsim::kMaxPlausibleBandwidthEfficiency);
  CHECK(cal.host_decode_s.value == 0.0);
  CHECK(warned(cal, "the model reads more than this engine does in its expert weights"));
  // Rule off: the prior efficiency stays, the host time is 0 all the same.
  specsim::ModelRules off;
  off.efficiency_to_short_step = false;
  CHECK(model_of(kCorpus + "/rtx6kpro-kimi-k26-v5/kimi-k26-v5-eagle3-tp8-ctx0-c32.yaml", off)
            .calibration()
            .bandwidth_efficiency.value == specsim::kPriorBandwidthEfficiency.value);
}

TEST_CASE("rules: an end-to-end plain rate's residual is per request, or per step up to the host prior's p90",
          "[rules]") {
  // AngelSlim batch 32, end to end (includes_prefill), no TPOT and no prompt lengths: 28.4 ms per
  // step against an 8.24 ms forward leaves 20.1 ms.
  const auto shipped = model_of(kBs32);
  const auto& cal = shipped.calibration();
  // As shipped, all of it is per-request time (prefill, batch tails), paid per output token.
  CHECK_THAT(cal.host_per_output_token_s, WithinRel(cal.host_decode_s.value, 1e-12));
  CHECK(cal.host_decode_s.value > 0.019);
  // Flipped: per-step host work up to SGLang's host prior p90 (1.1 ms, models/engines/sglang.yaml),
  // the rest per request, and a warning naming the measurement that would settle it.
  specsim::ModelRules bounded;
  bounded.end_to_end_residual_per_request = false;
  const auto b = model_of(kBs32, bounded);
  CHECK_THAT(b.calibration().host_decode_s.value - b.calibration().host_per_output_token_s, WithinRel(1.1e-3, 1e-9));
  CHECK(warned(b.calibration(), "a measured TPOT would settle it"));
  // Prefill charging off: the whole residual is per step, and speculation divides it by tau.
  specsim::ModelRules none;
  none.prefill_per_output_token = false;
  const auto n = model_of(kBs32, none);
  CHECK(n.calibration().host_per_output_token_s == 0.0);
  CHECK(n.predict().spec_tokens_per_s > 1.9 * shipped.predict().spec_tokens_per_s);  // 2445 against 1263 tok/s
}

TEST_CASE("rules: a long batch-1 step has two readings, unless the measured verify refutes one", "[rules]") {
  // vLLM Qwen3-32B + 1.7B draft, one H100: the TPOT leaves 9.3 ms beyond the forward. Shipped: the
  // point takes the GPU reading down to the 74% floor; flipped: the host reading at the prior 84%.
  const std::string row = kCorpus + "/vllm-scripts-qwen3-32b-h100/vscripts-qwen3-32b-draft1.7b-k3-c1-mtbench.yaml";
  CHECK(model_of(row).calibration().bandwidth_efficiency.value == specsim::kMinPlausibleBandwidthEfficiency);
  specsim::ModelRules host;
  host.efficiency_to_long_step = false;
  const auto h = model_of(row, host);
  CHECK(h.calibration().bandwidth_efficiency.value == specsim::kPriorBandwidthEfficiency.value);
  REQUIRE(h.calibration().plain_step_readings.size() == 2);  // the band still draws both
  // The home scenario measured its verify compute (5 ms for 4 tokens): at 74% the model cannot be
  // that fast even with no expert-routing spread, so that reading is refuted and the host keeps it.
  const auto home = model_of(specsim::kDefaultScenario);
  CHECK(home.calibration().bandwidth_efficiency.value == specsim::kPriorBandwidthEfficiency.value);
  CHECK(home.calibration().plain_step_readings.empty());
  CHECK(warned(home.calibration(), "would make the verify's measured compute (5 ms) unreachable"));
  CHECK_THAT(home.predict().verify.compute_s, WithinRel(5e-3, 1e-6));
}

TEST_CASE("rules: the two readings' warning says how far a plain step at 8x the batch tells them apart",
          "[rules]") {
  // Under both readings a step at batch 8B is F(8B; eta) + (step - F(B; eta)): the readings differ
  // there by how much faster the forward grows at the GPU reading's efficiency. Weights are read once
  // per step, so a dense target's forward grows alike under both. vLLM Qwen3-32B at batch 1:
  // [F(8; 74%) - F(1; 74%)] - [F(8; 84%) - F(1; 84%)], the KV and attention growth only.
  const std::string dense = kCorpus + "/vllm-scripts-qwen3-32b-h100/vscripts-qwen3-32b-draft1.7b-k3-c1-mtbench.yaml";
  const auto d = model_of(dense);
  REQUIRE(d.calibration().plain_step_readings.size() == 2);
  const auto apart_of = [](const specsim::Calibration& cal) {
    for (const auto& w : cal.warnings) {
      const auto at = w.find("A plain step at batch ");
      if (at != std::string::npos) return w.substr(at);
    }
    return std::string();
  };
  CHECK_THAT(apart_of(d.calibration()), StartsWith("A plain step at batch 8 would come out "));
  CHECK_THAT(apart_of(d.calibration()), Contains(" us (0.1%) apart under the two"));
  CHECK_THAT(apart_of(d.calibration()), Contains("a profile's kernel sum, or one measured speculative run"));
  // gpt-oss-120b on one H100 (SGLang, batch 1): its experts follow the bandwidth efficiency, and 8
  // requests touch more of them than one, so the GPU reading's step at batch 8 is 0.58 ms (6.3%) longer.
  const auto moe = model_of(kCorpus + "/hf-dogacel-specdrift-gpt-oss-h100/specdrift-gpt-oss-120b-eagle3-h100-bs1-3-1-4.yaml");
  CHECK_THAT(apart_of(moe.calibration()), StartsWith("A plain step at batch 8 would come out 579 us (6.3%) apart"));
  // A measured batch of 4 is told apart at 32 (GPUStack, Qwen3-8B FP8 on one H100, TPOT at 4).
  const auto c4 = model_of(kCorpus + "/gpustack-qwen3-8b-h100/gpustack-qwen3-8b-fp8-h100-c4-s2-k1-chain.yaml");
  CHECK_THAT(apart_of(c4.calibration()), StartsWith("A plain step at batch 32 would come out "));
}

TEST_CASE("rules: without a measured plain step the host time is the engine's prior, labelled", "[rules]") {
  const auto without_step = [](const specsim::ModelRules& rules) {
    specsim::Scenario s = specsim::load_scenario(kBs32, {}, kRoot);
    s.measurements.baseline_tokens_per_s.reset();
    s.rules = rules;
    return specsim::CycleModel(std::move(s));
  };
  const auto m = without_step({});
  CHECK(m.calibration().host_decode_s.value == 0.1e-3);  // models/engines/sglang.yaml plain_step_host
  CHECK_THAT(m.calibration().host_decode_s.origin, StartsWith("prior: engine sglang plain_step_host"));
  specsim::ModelRules off;
  off.host_prior_without_step = false;
  CHECK(without_step(off).calibration().host_decode_s.value == 0.0);
}

TEST_CASE("rules: validate --ablate flips each rule and reports the check set apart", "[rules][validate][cli]") {
  const auto r = specsim::test::run({"validate", "--ablate", "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["rules"].size() == specsim::model_rule_names().size());
  for (const auto& rule : j["rules"]) {
    INFO(rule["rule"]);
    REQUIRE(rule["as_shipped"].size() == 3);
    CHECK(rule["as_shipped"][0]["group"] == "check");
    CHECK(rule["flipped"][0]["group"] == "check");
    CHECK(rule["as_shipped"][2]["group"] == "leave-source-out");
    // The batch transfers' speculative side, check and fit, both ways.
    REQUIRE(rule["batch_transfers"]["as_shipped"].size() == 2);
    REQUIRE(rule["batch_transfers"]["flipped"].size() == 2);
    CHECK(rule["batch_transfers"]["as_shipped"][0]["group"] == "batch transfers check");
    CHECK(rule["batch_transfers"]["flipped"][1]["group"] == "batch transfers fit");
  }
  // The transfer error moves no row, only the bands of rates carried to another batch: wider, and
  // holding at least as many measurements.
  const auto transfer = std::find_if(j["rules"].begin(), j["rules"].end(),
                                     [](const auto& x) { return x["rule"] == "batch-transfer-error"; });
  REQUIRE(transfer != j["rules"].end());
  CHECK((*transfer)["check_verdict"] == "no effect");
  for (int set : {0, 1}) {
    const auto& on = (*transfer)["batch_transfers"]["as_shipped"][set];
    const auto& off = (*transfer)["batch_transfers"]["flipped"][set];
    INFO(on["group"]);
    CHECK(on["median_abs_error"] == off["median_abs_error"]);
    CHECK(on["median_band_width"].get<double>() > off["median_band_width"].get<double>());
    CHECK(on["in_band"].get<int>() >= off["in_band"].get<int>());
  }
  // Charging an end-to-end residual per request is what the fit set chose; it holds on the check set.
  const auto it = std::find_if(j["rules"].begin(), j["rules"].end(),
                               [](const auto& x) { return x["rule"] == "end-to-end-residual-per-request"; });
  REQUIRE(it != j["rules"].end());
  CHECK((*it)["as_shipped"][1]["median_abs_error"].get<double>() < (*it)["flipped"][1]["median_abs_error"].get<double>());
  CHECK((*it)["check_verdict"] == "as shipped is better");
  // An ablation is its own view: it does not mix with a guard or a calibration.
  const auto mixed = specsim::test::run({"validate", "--ablate", "--calibrate-on", "all"});
  CHECK(mixed.code != 0);
  CHECK_THAT(mixed.err, Contains("--ablate") && Contains("--calibrate-on"));
}

TEST_CASE("calibrate-spec: one measured run calibrates at its own setting and predicts another K",
          "[calibrate_spec][cli]") {
  // The home box measured 60 tok/s at 3 steps. As an input it reproduces itself at 3 steps...
  const auto at3 = specsim::test::run({"predict", "--calibrate-spec", "60tok/s", "--json"});
  REQUIRE(at3.code == 0);
  const auto j3 = nlohmann::json::parse(at3.out);
  CHECK_THAT(j3["speculative"]["tokens_per_s"].get<double>(), WithinRel(60.0, 1e-9));
  const double extra = j3["calibration"]["spec_extra_per_cycle_s"]["value"].get<double>();
  // ...and at 5 steps the per-cycle term is the one the 3-step run gave, not one refitted so that
  // 5 steps would also run at 60 tok/s.
  const auto at5 = specsim::test::run({"predict", "--calibrate-spec", "60tok/s", "--set", "speculation.num_steps=5",
                                       "--set", "speculation.num_draft_tokens=6", "--json"});
  REQUIRE(at5.code == 0);
  const auto j5 = nlohmann::json::parse(at5.out);
  CHECK(j5["calibration"]["spec_extra_per_cycle_s"]["value"].get<double>() == extra);
  CHECK_THAT(j5["calibration"]["spec_extra_per_cycle_s"]["origin"].get<std::string>(),
             StartsWith("calibrated from the speculative run: the measured 60.0 tok/s at 3 steps, top-k 1, batch 1"));
  CHECK(std::abs(j5["speculative"]["tokens_per_s"].get<double>() - 60.0) > 0.5);
}

TEST_CASE("rules: an engine prior scoped to its methods leaves another method without it", "[rules]") {
  // models/engines/trtllm.yaml names eagle3 only: its tech-blog MTP rows get no engine prior (0).
  const std::string mtp = kCorpus + "/trtllm-blog1-dsr1-8xb200/trtllm-blog1-dsr1-fp4-mtp3-tp8-ep-bs1.yaml";
  specsim::ValidateOptions shipped;
  const auto as_shipped = specsim::validate_corpus({mtp}, shipped, kRoot);
  CHECK(as_shipped.rows[0].spec_extra_per_cycle_s == 0.0);
  specsim::ValidateOptions flipped;
  flipped.rules.engine_prior_scoped_to_method = false;
  const auto unscoped = specsim::validate_corpus({mtp}, flipped, kRoot);
  CHECK_THAT(unscoped.rows[0].spec_extra_per_cycle_s, WithinRel(2.6e-3, 1e-12));  // the EAGLE-3 prior's cycle_overhead
  CHECK(unscoped.rows[0].predicted_spec_tokens_per_s < as_shipped.rows[0].predicted_spec_tokens_per_s);
}
