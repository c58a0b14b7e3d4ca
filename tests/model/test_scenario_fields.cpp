#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"
#include "specsim/scenario_fields.hpp"
#include "specsim/whatif.hpp"

using Catch::Matchers::Contains;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

// For every field: a value inside its range that moves the default scenario, and one outside it
// (or malformed). A field added to the table without a line here fails the first test below.
struct Probe {
  std::string good;
  std::string bad;
};
const std::map<std::string, Probe> kProbes = {
    {"workload.batch", {"4", "0"}},
    {"workload.context", {"32768", "-1"}},
    {"speculation.num_steps", {"5", "65"}},
    {"speculation.eagle_topk", {"2", "0"}},
    {"speculation.num_draft_tokens", {"4", "1"}},
    {"speculation.block_size", {"8", "1"}},
    {"acceptance.accept", {"0.6", "1.5"}},
    {"compute.bandwidth_efficiency", {"0.6", "84"}},
    {"compute.flop_efficiency", {"0.01", "1.5"}},
    {"compute.routing_skew", {"0.5", "2"}},
    {"compute.expert_bandwidth_efficiency", {"0.5", "0"}},
    {"compute.kv_efficiency_decode", {"0.5", "3"}},
    {"compute.kv_efficiency_verify", {"0.5", "3"}},
    {"compute.kv_verify_ratio", {"0.6", "2"}},
    {"compute.eager_overlap_exponent", {"2", "0.5"}},
    {"compute.kernel_floor", {"4us", "4"}},
    {"compute.eager_launch_per_kernel", {"8us", "8 parsecs"}},
    {"compute.graph_launch", {"50us", "-1us"}},
    {"compute.eager_multi_token_step", {"30us", "1e300s"}},
    {"compute.multi_token_step", {"20us", "x"}},
    {"compute.per_token_layer", {"2us", "nan"}},
    {"comm.scale", {"0.5", "-1"}},
    {"comm.overlap", {"0.3", "2"}},
    {"comm.min_channels", {"16", "65"}},
    {"comm.max_channels", {"2", "-1"}},
    {"comm.eager_overhead_per_op", {"0us", "fast"}},
    {"host.decode_per_step", {"1ms", "1"}},
    {"host.spec_extra_per_cycle", {"3ms", "2 m"}},
    {"host.draft_step_overhead", {"200us", "inf"}},
    {"host.spec_per_request", {"50us", "inf"}},
    {"host.ngram_lookup_per_token", {"1us", "inf"}},
    {"engine.decode_mode", {"eager", "fast"}},
    {"engine.verify_mode", {"graph", "captured"}},
    {"engine.draft_mode", {"piecewise", "1"}},
    {"engine.kv_cache_dtype", {"fp8", "fp4"}},
    {"comm.nccl_algo", {"tree", "star"}},
    {"comm.nccl_proto", {"simple", "ll256"}},
    {"comm.implementation", {"custom_oneshot", "magic"}},
    {"comm.fuse_residual_norm", {"true", "maybe"}},
    {"parallel.draft_tp", {"1", "0"}},
    {"parallel.tp", {"4", "0"}},
    {"parallel.pp", {"2", "0"}},
    {"comm.profile", {"h200-8x-nvswitch-aic-nccl", "no-such-table"}},
    {"comm.custom_profile", {"rtx-pro-6000-8x-pcie5-aic-custom", "deepep-ll-h800-8x-ep8-a2a"}},
    {"model", {"kimi-k2.5", "no-such-model"}},
    {"draft", {"kimi-k2.5-eagle3-lightseekorg", "no-such-draft"}},
    {"gpu", {"rtx-5090", "no-such-gpu"}},
    {"topology", {"8x-rtx-pro-6000-pcie5-switch", "no-such-box"}},
};

// What a probe needs beside it on the default box (8 GPUs, tables measured at 8 ranks), given to
// the loader and the sweep alike: TP4 scales the 8-rank table by NCCL.s model (the custom one cleared), and
// two stages take TP4 to fit the 8 GPUs.
const std::map<std::string, std::vector<std::string>> kProbeBase = {
    {"parallel.tp", {"comm.rank_scaling=nccl", "comm.custom_profile="}},
    {"parallel.pp", {"parallel.tp=4", "comm.profile=rtx-pro-6000-4x-pcie5-aic-nccl", "comm.custom_profile="}},
};

double spec_rate(const specsim::SweepResult& r) {
  REQUIRE(r.points.size() == 1);
  return r.points[0].tokens_per_s;
}

}  // namespace

TEST_CASE("scenario fields: a value set on the loaded scenario predicts what the loader's --set does",
          "[scenario_fields][sweep]") {
  const auto as_is = specsim::CycleModel(specsim::load_scenario(specsim::kDefaultScenario, {}, kRoot)).predict();
  for (const std::string& key : specsim::scenario_field_keys()) {
    INFO(key);
    const auto probe = kProbes.find(key);
    REQUIRE(probe != kProbes.end());
    const std::string patch = key + "=" + probe->second.good;
    if (key == "speculation.block_size") {
      // A block drafter's key (speculation.method dflash): both refuse it on EAGLE-3; tests/model/
      // test_dflash.cpp checks that the two agree on a DFlash scenario.
      CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, {patch}, kRoot),
                        Catch::Matchers::Contains("is a block drafter's key"));
      CHECK_THROWS_WITH(specsim::sweep(specsim::kDefaultScenario, {}, {specsim::parse_vary(patch)}, kRoot),
                        Catch::Matchers::Contains("is a block drafter's key"));
      continue;
    }
    if (key == "host.ngram_lookup_per_token") {
      // Not a field of an EAGLE-3 scenario: the loader and the sweep's fast path both refuse it.
      CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, {patch}, kRoot),
                        Catch::Matchers::Contains("prices speculation.method ngram's prompt lookup"));
      CHECK_THROWS_WITH(specsim::sweep(specsim::kDefaultScenario, {}, {specsim::parse_vary(patch)}, kRoot),
                        Catch::Matchers::Contains("prices speculation.method ngram's prompt lookup"));
      continue;
    }
    const auto base = kProbeBase.count(key) ? kProbeBase.at(key) : std::vector<std::string>{};
    auto patches = base;
    patches.push_back(patch);
    const auto loaded_scenario = specsim::load_scenario(specsim::kDefaultScenario, patches, kRoot);
    const auto loaded = specsim::CycleModel(loaded_scenario).predict();
    const auto r = specsim::sweep(specsim::kDefaultScenario, base, {specsim::parse_vary(patch)}, kRoot);
    CHECK(r.fast_path);
    if (const auto fit = specsim::memory_fit(loaded_scenario); !fit.fits()) {
      // Kimi K2.5's weights need all 8 GPUs: at TP4 the sweep says so, as memory_fit does.
      REQUIRE(r.points.size() == 1);
      CHECK(r.points[0].infeasible == specsim::describe_overflow(loaded_scenario, fit));
      continue;
    }
    // The same code runs on the same numbers: equal to the last bit, plain rate included.
    CHECK(spec_rate(r) == loaded.spec_tokens_per_s);
    CHECK(r.points[0].baseline_tokens_per_s == loaded.baseline_tokens_per_s);
    CHECK(r.points[0].tokens_per_cycle == loaded.tokens_per_cycle);
    // The probe moves the prediction (plain or speculative), so a setter that wrote the wrong field
    // would show. On the default chain, num_draft_tokens can only be num_steps + 1 = 4, as it is;
    // NCCL's model gives the PCIe box's 2-channel graph no gain or loss from a cap on channels; the
    // default scenario drafts with EAGLE-3, so the n-gram lookup's cost does not enter; at batch 1
    // no request is beyond the first, so host.spec_per_request adds nothing; a custom all-reduce
    // table prices nothing where the scenario runs NCCL; only Kimi K2.5 fits its EAGLE-3 head (the
    // next test swaps a target).
    if (key != "speculation.num_draft_tokens" && key != "comm.max_channels" && key != "host.ngram_lookup_per_token" &&
        key != "host.spec_per_request" && key != "comm.custom_profile" && key != "model") {
      CHECK((loaded.spec_tokens_per_s != as_is.spec_tokens_per_s ||
             loaded.baseline_tokens_per_s != as_is.baseline_tokens_per_s));
    }
  }
}

TEST_CASE("scenario fields: a value out of range or malformed is refused here and by the loader",
          "[scenario_fields][invalid]") {
  for (const auto& [key, probe] : kProbes) {
    INFO(key << "=" << probe.bad);
    CHECK(specsim::is_scenario_field(key));
    CHECK_THROWS_WITH(specsim::load_field_value(key, probe.bad, {"--vary", 0, 0}, kRoot), Contains("--vary: " + key));
    CHECK_THROWS(specsim::load_scenario(specsim::kDefaultScenario, {key + "=" + probe.bad}, kRoot));
  }
  // A target, a card or a box cannot be left out; a table can (no table: NCCL's prior).
  for (const char* key : {"model", "gpu", "topology"}) {
    CHECK_THROWS_WITH(specsim::parse_field_value(key, "", {"--set", 0, 0}), Contains(std::string(key) + ": names a file"));
  }
  CHECK(specsim::load_field_value("comm.profile", "", {"--set", 0, 0}, kRoot).name.empty());
  CHECK_FALSE(specsim::is_scenario_field("parallel.ep"));
}

TEST_CASE("scenario fields: calibrated keys say 'set' with the calibrated value beside, per point",
          "[scenario_fields][overrides]") {
  CHECK(specsim::field_affects_calibration("compute.bandwidth_efficiency"));
  CHECK(specsim::field_affects_calibration("measurements.verify.step"));
  CHECK_FALSE(specsim::field_affects_calibration("compute.kernel_floor"));
  // The default scenario calibrates routing skew (0.038) from its verify's measured compute.
  const auto r = specsim::sweep(specsim::kDefaultScenario, {},
                                {specsim::parse_vary("compute.routing_skew=0.1..0.9:5")}, kRoot);
  REQUIRE(r.points.size() == 5);
  for (const auto& p : r.points) {
    const auto loaded = specsim::CycleModel(specsim::load_scenario(
        specsim::kDefaultScenario, {"compute.routing_skew=" + p.values[0]}, kRoot));
    INFO(p.values[0]);
    CHECK(p.tokens_per_s == loaded.predict().spec_tokens_per_s);
    CHECK_THAT(loaded.calibration().routing_skew.origin, Contains("set, calibrated: 0.038"));
  }
  // With the scenario and calibration apart: calibrate(s) then CycleModel(s, c) is CycleModel(s).
  const auto s = specsim::load_scenario(specsim::kDefaultScenario, {"compute.routing_skew=0.5"}, kRoot);
  const specsim::Calibration c = specsim::calibrate(s);
  CHECK(c.routing_skew.value == 0.5);
  CHECK_THAT(c.routing_skew.origin, Contains("set, calibrated: 0.038"));
  CHECK(specsim::CycleModel(s, c).predict().spec_tokens_per_s == specsim::CycleModel(s).predict().spec_tokens_per_s);
}

TEST_CASE("sweep: lo..hi:N spaces N values, units kept, bad forms name the option", "[sweep]") {
  const auto a = specsim::parse_vary("compute.bandwidth_efficiency=0.5..0.9:5");
  CHECK(a.values == std::vector<std::string>{"0.5", "0.6", "0.7", "0.8", "0.9"});
  const auto b = specsim::parse_vary("compute.kernel_floor=1us..2us:3");
  CHECK(b.values == std::vector<std::string>{"1us", "1.5us", "2us"});
  for (const char* bad : {"k=1us..2ms:3", "k=2..1:3", "k=1..2:1", "k=1..2:x", "k=a..2:3"}) {
    INFO(bad);
    CHECK_THROWS_WITH(specsim::parse_vary(bad), Contains("--vary") && Contains("a spaced range is lo..hi:N"));
  }
}

TEST_CASE("scenario fields: n-gram lookup's cost is a field of an ngram scenario only, and never a tree",
          "[scenario_fields]") {
  const std::string ngram = std::string(SPECSIM_SOURCE_DIR) +
                            "/validation/vllm-lab-v018-ngram-rtx4090/vllmlab-v018-qwen3-8b-ngram-k4-repeat-c1.yaml";
  const auto loaded = specsim::CycleModel(specsim::load_scenario(ngram, {"host.ngram_lookup_per_token=1us"}, kRoot)).predict();
  const auto as_is = specsim::CycleModel(specsim::load_scenario(ngram, {}, kRoot)).predict();
  CHECK(loaded.spec_tokens_per_s < as_is.spec_tokens_per_s);  // 1 us per context token is costly
  const auto r = specsim::sweep(ngram, {}, {specsim::parse_vary("host.ngram_lookup_per_token=1us")}, kRoot);
  CHECK(r.fast_path);
  CHECK(r.points[0].tokens_per_s == loaded.spec_tokens_per_s);
  CHECK_THROWS_WITH(specsim::load_scenario(ngram, {"speculation.eagle_topk=4", "speculation.num_draft_tokens=8"}, kRoot),
                    Catch::Matchers::Contains("speculation.method ngram proposes one chain"));
}

namespace {
// `patch` as a one-point sweep on values predicts what the loader's --set does, to the last bit;
// the loader's prediction.
specsim::Prediction sweep_matches_loader(const std::string& scenario, const std::string& patch) {
  const auto loaded = specsim::CycleModel(specsim::load_scenario(scenario, {patch}, kRoot)).predict();
  const auto r = specsim::sweep(scenario, {}, {specsim::parse_vary(patch)}, kRoot);
  CHECK(r.fast_path);
  CHECK(spec_rate(r) == loaded.spec_tokens_per_s);
  CHECK(r.points[0].baseline_tokens_per_s == loaded.baseline_tokens_per_s);
  return loaded;
}
}  // namespace

TEST_CASE("scenario fields: parallel.tp set on the loaded scenario predicts what --set does, calibrated again",
          "[scenario_fields][sweep]") {
  // Llama 3.3 70B fits at TP2 and TP4 on the 4x H100 box (no comm table: NCCL's prior at any TP).
  const std::string scenario = "llama-3.3-70b-eagle3-4x-h100-nvswitch";
  const auto loaded = sweep_matches_loader(scenario, "parallel.tp=2");
  // It moves: half the ranks read twice the weights each.
  const auto at4 = specsim::CycleModel(specsim::load_scenario(scenario, {}, kRoot)).predict();
  CHECK(loaded.baseline_tokens_per_s < 0.7 * at4.baseline_tokens_per_s);
}

TEST_CASE("scenario fields: a target swapped on the loaded scenario predicts what --set model= does",
          "[scenario_fields][sweep]") {
  // n-gram lookup drafts with no model, so any target fits the box: Qwen3-8B in BF16, then in FP8.
  const std::string scenario = "qwen3-8b-ngram-1x-rtx-4090";
  const auto loaded = sweep_matches_loader(scenario, "model=qwen3-8b-fp8");
  // Half the weight bytes per token: the plain step is faster.
  const auto bf16 = specsim::CycleModel(specsim::load_scenario(scenario, {}, kRoot)).predict();
  CHECK(loaded.baseline_tokens_per_s > 1.3 * bf16.baseline_tokens_per_s);
  // A target the draft does not fit is refused at the point, by the rule the loader applies (at the
  // draft's line: the draft is what no longer fits).
  const auto bad = specsim::sweep(specsim::kDefaultScenario, {}, {specsim::parse_vary("model=kimi-k2.5,llama-3.1-8b")}, kRoot);
  CHECK(bad.invalid == 1);
  CHECK_THAT(bad.invalid_example, Contains("model=llama-3.1-8b: 2 problems:") &&
                                      Contains("draft: 'kimi-k2.5-eagle3' (built for kimi-k2.5) does not fit the model 'llama-3.1-8b'"));
}

TEST_CASE("scenario fields: a draft swapped on the loaded scenario predicts what --set draft= does",
          "[scenario_fields][sweep]") {
  // The home box's EAGLE-3 head with its 32k draft vocabulary, then lightseekorg's with the full 164k.
  const auto loaded = sweep_matches_loader(specsim::kDefaultScenario, "draft=kimi-k2.5-eagle3-lightseekorg");
  const auto aq = specsim::CycleModel(specsim::load_scenario(specsim::kDefaultScenario, {}, kRoot)).predict();
  CHECK(loaded.baseline_tokens_per_s == aq.baseline_tokens_per_s);  // the plain run does not draft
  CHECK(loaded.spec_tokens_per_s < aq.spec_tokens_per_s);           // a five times larger LM head per draft step
  // A draft of another tokenizer is refused at the point by the loader's rule, named at its patch.
  const auto other = specsim::sweep("llama-3.3-70b-draft-1b-2x-h100", {}, {specsim::parse_vary("draft=llama-3.2-1b,qwen3-1.7b")}, kRoot);
  CHECK(other.fast_path);
  CHECK(other.invalid == 1);
  CHECK_THAT(other.invalid_example, Contains("--set draft=qwen3-1.7b: draft: 'qwen3-1.7b' has vocab_size 151936"));
  // A method that takes no draft file refuses one set on the value, as the loader refuses the key.
  CHECK_THROWS_WITH(specsim::sweep("deepseek-v3-mtp-2x8-h100-ib", {}, {specsim::parse_vary("draft=llama-3.2-1b")}, kRoot),
                    Contains("--set draft=llama-3.2-1b: draft: speculation.method mtp takes no draft file"));
  CHECK_THROWS_WITH(specsim::load_scenario("deepseek-v3-mtp-2x8-h100-ib", {"draft=llama-3.2-1b"}, kRoot),
                    Contains("speculation.method mtp drafts with the model's own multi-token-prediction layers; leave 'draft' out"));
}
