// The p10-p90 band of a prediction over the priors' spread (prior_band.hpp). With one term drawn,
// the band is that term's p10/p90 carried through the cycle, a monotone map, so it can be checked
// in closed form (engine terms) or against the prediction with the term set to its p10/p90 (compute
// terms); a set term has no spread.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "specsim/cycle.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/prior_band.hpp"

using Catch::Matchers::WithinRel;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
// A one-GPU Llama-3.1-8B row whose engine (sglang) has a prior file (models/engines/sglang.yaml).
const std::string kRow = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/validation/run-a/a-chain3.yaml";
// The compute priors set, so that only the engine terms remain open.
const std::vector<std::string> kComputeSet = {"compute.bandwidth_efficiency=0.84", "compute.kv_verify_ratio=0.5",
                                              "compute.multi_token_step=5us"};

std::vector<std::string> with(std::vector<std::string> patches, const std::vector<std::string>& more) {
  patches.insert(patches.end(), more.begin(), more.end());
  return patches;
}

}  // namespace

TEST_CASE("prior band: one drawn term maps its p10 and p90 through the cycle", "[prior_band]") {
  // The per-draft-forward overhead and the compute priors set (no spread): only the cycle overhead
  // is drawn.
  const specsim::CycleModel model(
      specsim::load_scenario(kRow, with(kComputeSet, {"host.draft_step_overhead=0.1ms"}), kRoot));
  const auto p = model.predict();
  const auto& prior = *model.scenario().engine_prior;
  const auto band = specsim::prior_band(model, p, 20000, 7);
  REQUIRE(band.terms == std::vector<std::string>{"engine overhead per cycle"});
  // T_0 = the cycle without its per-cycle term; tok/s = B tau / (T_0 + c) falls as c rises, so the
  // band's p10 is the rate at c's p90 and its p90 the rate at c's p10; the median is the rate at
  // the log-normal's median sqrt(p10 p90) (sampling error of 20,000 draws: well under 1%).
  const double t0 = p.cycle_s - model.calibration().spec_extra_per_cycle_s.value;
  const double emitted = model.scenario().batch * p.tokens_per_cycle;
  const auto& c = prior.cycle_overhead;
  CHECK_THAT(band.p10_tokens_per_s, WithinRel(emitted / (t0 + c.p90_s), 0.01));
  CHECK_THAT(band.p90_tokens_per_s, WithinRel(emitted / (t0 + c.p10_s), 0.01));
  CHECK_THAT(band.p50_tokens_per_s, WithinRel(emitted / (t0 + std::sqrt(c.p10_s * c.p90_s)), 0.01));
  // Seeded: the same seed gives the same band.
  CHECK(specsim::prior_band(model, p, 20000, 7).p10_tokens_per_s == band.p10_tokens_per_s);
}

TEST_CASE("prior band: set terms and engines without a prior have no spread", "[prior_band]") {
  const specsim::CycleModel set(specsim::load_scenario(
      kRow, with(kComputeSet, {"host.draft_step_overhead=0.1ms", "host.spec_extra_per_cycle=1ms"}), kRoot));
  const auto p = set.predict();
  const auto band = specsim::prior_band(set, p);
  CHECK(band.terms.empty());
  CHECK(band.p10_tokens_per_s == p.spec_tokens_per_s);
  CHECK(band.p90_tokens_per_s == p.spec_tokens_per_s);
  // An engine with no models/engines file: the overheads are 0, reported as such, and not drawn.
  const specsim::CycleModel other(specsim::load_scenario(kRow, with(kComputeSet, {"engine.name=tensorrt-llm"}), kRoot));
  CHECK(other.calibration().spec_extra_per_cycle_s.value == 0.0);
  CHECK(other.calibration().spec_extra_per_cycle_s.origin.find("no models/engines file") != std::string::npos);
  CHECK(specsim::prior_band(other, other.predict()).terms.empty());
}

TEST_CASE("prior band: a compute prior drawn alone maps its p10 and p90 through a recalibrated model",
          "[prior_band]") {
  // Engine terms, the KV ratio and the multi-token step set: only the bandwidth efficiency (prior
  // 0.84, p10 0.79, p90 0.86) is drawn. Each draw recalibrates the host time (what the measured plain step leaves
  // after the forward); a faster forward shortens drafts and verify, so the rate rises with the
  // efficiency. With a plain step of 7.41 ms (135 tok/s) every draw leaves host time, within
  // SGLang's host prior (p90 1.1 ms), and the band's p10/p90 are the predictions at 0.79 and 0.86.
  const std::vector<std::string> engine = {"host.draft_step_overhead=0.1ms", "host.spec_extra_per_cycle=1ms",
                                           "compute.kv_verify_ratio=0.5", "compute.multi_token_step=5us"};
  const auto rate_at = [&](const std::vector<std::string>& patches, const std::string& eta) {
    return specsim::CycleModel(
               specsim::load_scenario(kRow, with(patches, {"compute.bandwidth_efficiency=" + eta}), kRoot))
        .predict()
        .spec_tokens_per_s;
  };
  const auto roomy = with(engine, {"measurements.baseline.tokens_per_s=135tok/s"});
  const specsim::CycleModel model(specsim::load_scenario(kRow, roomy, kRoot));
  const auto band = specsim::prior_band(model, model.predict());
  REQUIRE(band.terms == std::vector<std::string>{"bandwidth efficiency"});
  // 64 strata of the efficiency, each crossed with ceil(4000 / 64) = 63 engine draws.
  CHECK(band.samples == 63 * specsim::kComputeBandStrata);
  // One point in each 1/64 of the efficiency's log-normal: the sample p10 lies within one stratum of
  // the true p10 (at most ~0.2% in z times sigma 0.033 there); the rate moves less than the efficiency does.
  CHECK(rate_at(roomy, "0.79") < rate_at(roomy, "0.86"));
  CHECK_THAT(band.p10_tokens_per_s, WithinRel(rate_at(roomy, "0.79"), 0.01));
  CHECK_THAT(band.p90_tokens_per_s, WithinRel(rate_at(roomy, "0.86"), 0.01));

  // The row's own step, 6.67 ms, is shorter than the forward at 79% (6.8 ms): a draw below the
  // efficiency at which the forward fills the step (just under 81%, where 7 us of host time are
  // left) is lifted to it, as the central prediction would be, so the measurement bounds the band
  // from below: p10 is the rate at ~81%, above the rate with 79% set (host time 0).
  const specsim::CycleModel tight(specsim::load_scenario(kRow, engine, kRoot));
  const auto tight_band = specsim::prior_band(tight, tight.predict());
  CHECK(tight_band.p10_tokens_per_s > rate_at(engine, "0.79") * 1.01);
  CHECK_THAT(tight_band.p10_tokens_per_s, WithinRel(rate_at(engine, "0.81"), 0.003));

  // Set, the efficiency has no spread.
  const specsim::CycleModel set(specsim::load_scenario(kRow, with(engine, {"compute.bandwidth_efficiency=0.8"}), kRoot));
  CHECK(specsim::prior_band(set, set.predict()).terms.empty());
}

TEST_CASE("prior band: every term drawn brackets the central prediction", "[prior_band]") {
  const specsim::CycleModel model(specsim::load_scenario(kRow, {}, kRoot));
  const auto p = model.predict();
  const auto band = specsim::prior_band(model, p);
  CHECK(band.terms == std::vector<std::string>{"bandwidth efficiency", "verify KV efficiency", "multi-token step",
                                               "engine overhead per cycle", "engine overhead per draft forward"});
  CHECK(band.p10_tokens_per_s < band.p50_tokens_per_s);
  CHECK(band.p50_tokens_per_s < band.p90_tokens_per_s);
  CHECK(band.p10_tokens_per_s < p.spec_tokens_per_s);
  CHECK(p.spec_tokens_per_s < band.p90_tokens_per_s);
}

TEST_CASE("prior band: collectives priced by NCCL's model carry its spread, a measured table none", "[prior_band]") {
  // sf339: Qwen3-30B-A3B at TP2 on H100s with no measured all-reduce table, so NCCL's model and the
  // engine's one-shot kernel price every collective. Every other prior set: only the all-reduce
  // ratio (kPriorAllReduceRatio, p10 0.66, p90 1.23) is drawn, as comm.scale on the deployment as
  // measured (the host time recalibrates to the plain step each draw).
  const std::string row = std::string(SPECSIM_SOURCE_DIR) +
                          "/validation/specforge-issue-339-2xh100/sf339-qwen3-30b-a3b-eagle3-tp2-bs1-3-1-4.yaml";
  // Its plain rate is end to end: the residual's second reading is switched off too.
  const std::vector<std::string> set = with(
      kComputeSet, {"host.draft_step_overhead=0.1ms", "host.spec_extra_per_cycle=1ms", "compute.routing_skew=1"});
  specsim::Scenario s = specsim::load_scenario(row, set, kRoot);
  s.rules.end_to_end_band_readings = false;
  const specsim::CycleModel model(std::move(s));
  const auto p = model.predict();
  const auto band = specsim::prior_band(model, p);
  REQUIRE(band.terms == std::vector<std::string>{"all-reduce prior"});
  CHECK(band.p10_tokens_per_s < p.spec_tokens_per_s);
  CHECK(p.spec_tokens_per_s < band.p90_tokens_per_s);
  // The draft's all-reduces are not in the plain step, so slower collectives slow the cycle: the band
  // is wider than nothing, yet narrower than the ratio's own 0.66-1.23 (the verify's collectives
  // recalibrate away against the decode's).
  CHECK(band.p90_tokens_per_s / band.p10_tokens_per_s > 1.005);
  CHECK(band.p90_tokens_per_s / band.p10_tokens_per_s < 1.23 / 0.66);
  // The home scenario's all-reduces come from a measured table: no such term.
  const specsim::CycleModel home(specsim::load_scenario("kimi-k2.5-eagle3-8x-rtx-pro-6000", {}, kRoot));
  const auto terms = specsim::prior_band(home, home.predict()).terms;
  CHECK(std::find(terms.begin(), terms.end(), "all-reduce prior") == terms.end());
}

TEST_CASE("engine prior: trtllm's file covers eagle3 only and says so elsewhere", "[prior_band][engine]") {
  // models/engines/trtllm.yaml (docs/references/engine-overheads-research.md section 7): per cycle
  // 3.05 ms left unpriced by PRs #3035 and #5146 less 4 draft forwards x 0.1 ms = 2.6 ms (rounded);
  // per draft forward 0.1 ms; plain-step host 0.1 ms under the overlap scheduler, p90 2.9 ms (PR
  // #3035's 9.3 ms step less specsim's 6.43 ms forward, before the overlap scheduler was default).
  const specsim::EnginePrior prior = specsim::load_engine_prior(kRoot.resolve(specsim::DataKind::kEngine, "trtllm"));
  CHECK(prior.name == "trtllm");
  CHECK(prior.methods == std::vector<std::string>{"eagle3"});
  CHECK_THAT(prior.cycle_overhead.value_s, WithinRel(2.6e-3, 1e-12));
  CHECK_THAT(prior.cycle_overhead.p10_s, WithinRel(0.9e-3, 1e-12));
  CHECK_THAT(prior.cycle_overhead.p90_s, WithinRel(4e-3, 1e-12));
  CHECK_THAT(prior.draft_step_overhead.value_s, WithinRel(0.1e-3, 1e-12));
  CHECK_THAT(prior.draft_step_overhead.p90_s, WithinRel(0.75e-3, 1e-12));
  REQUIRE(prior.plain_step_host);
  CHECK_THAT(prior.plain_step_host->p90_s, WithinRel(2.9e-3, 1e-12));

  // An EAGLE-3 scenario served by TensorRT-LLM takes both overheads from the file.
  const specsim::CycleModel eagle3(specsim::load_scenario(kRow, {"engine.name=trtllm"}, kRoot));
  CHECK_THAT(eagle3.calibration().spec_extra_per_cycle_s.value, WithinRel(2.6e-3, 1e-12));
  CHECK_THAT(eagle3.calibration().spec_extra_per_cycle_s.origin, Catch::Matchers::Contains("models/engines/trtllm.yaml"));
  CHECK_THAT(eagle3.calibration().draft_step_overhead_s.value, WithinRel(0.1e-3, 1e-12));
  // A tech blog 1 MTP row gets none of it (its evidence is EAGLE-3 only), and says why.
  const std::string row = std::string(SPECSIM_SOURCE_DIR) +
                          "/validation/trtllm-blog1-dsr1-8xb200/trtllm-blog1-dsr1-fp4-mtp3-tp8-ep-bs1.yaml";
  const specsim::CycleModel mtp(specsim::load_scenario(row, {}, kRoot));
  CHECK_FALSE(mtp.scenario().engine_prior);
  CHECK(mtp.calibration().spec_extra_per_cycle_s.value == 0.0);
  CHECK(mtp.calibration().spec_extra_per_cycle_s.origin ==
        "prior: 0 (models/engines/trtllm.yaml holds evidence for eagle3 only, not mtp)");
  // A method the tool does not know is refused with file, line and key.
  const auto file = std::filesystem::temp_directory_path() / "specsim-engine-methods.yaml";
  std::ofstream(file) << "schema_version: 1\nkind: engine\nname: x\nsource: \"test\"\nmethods: [eagle3, medusa]\n"
                         "cycle_overhead: {value: 1ms, p10: 0.5ms, p90: 2ms}\n"
                         "draft_step_overhead: {value: 1ms, p10: 0.5ms, p90: 2ms}\n";
  try {
    (void)specsim::load_engine_prior(file.string());
    FAIL("an unknown method was accepted");
  } catch (const specsim::Error& e) {
    CHECK_THAT(std::string(e.what()), Catch::Matchers::Contains("specsim-engine-methods.yaml:5:") &&
                                          Catch::Matchers::Contains("methods: 'medusa' is not a speculation method"));
  }
  std::filesystem::remove(file);
}

TEST_CASE("prior band: each drawn prior's spread reaches the band, and collapsed to a point leaves none",
          "[prior_band][priors]") {
  // The registry's rows with every spread but that of the row `kept` collapsed to its value ("": all).
  const auto collapsed_but = [](std::string_view kept) {
    std::vector<specsim::Prior> rows(specsim::priors().begin(), specsim::priors().end());
    for (auto& row : rows) {
      if (row.key != kept) row.estimate = {row.estimate.value, row.estimate.value, row.estimate.value};
    }
    return rows;
  };
  // The engine terms set and tau measured (one rate alone has a second reading), so that only the
  // registry's rows spread the band; between them the four deployments leave every drawn row open
  // (tests/model/test_priors.cpp).
  const std::vector<std::string> engine = {"host.spec_extra_per_cycle=1ms", "host.draft_step_overhead=0.1ms",
                                           "acceptance.tokens_per_cycle=2.5"};
  const std::vector<std::pair<std::string, std::vector<std::string>>> deployments = {
      {"llama-3.1-8b-eagle3-1x-h200", with(engine, {"engine.verify_mode=piecewise"})},
      {"llama-3.3-70b-eagle3-4x-h100-nvswitch", engine},
      {"deepseek-v3-mtp-8x-h200-ep8", with(engine, {"parallel.moe_a2a=deepep"})},
      {std::string(SPECSIM_SOURCE_DIR) + "/validation/rtx6kpro-qwen35-397b-mtp/qwen35-397b-nvfp4-mtp2-tp4-c1.yaml",
       engine}};
  for (const specsim::Prior& prior : specsim::priors()) {
    if (!prior.drawn()) continue;
    INFO(prior.key);
    bool drawn_somewhere = false;
    for (const auto& [scenario, patches] : deployments) {
      const specsim::CycleModel model(specsim::load_scenario(scenario, patches, kRoot));
      if (!prior.open(model.scenario(), model.calibration())) continue;
      drawn_somewhere = true;
      INFO(scenario);
      const auto p = model.predict();
      const auto alone = specsim::prior_band(model, p, collapsed_but(prior.key), 640);
      REQUIRE(std::find(alone.terms.begin(), alone.terms.end(), prior.label) != alone.terms.end());
      CHECK(alone.p10_tokens_per_s < alone.p90_tokens_per_s);
      // The same draws with that spread collapsed too: every draw the same rate.
      const auto none = specsim::prior_band(model, p, collapsed_but(""), 640);
      CHECK(none.p10_tokens_per_s == none.p90_tokens_per_s);
    }
    CHECK(drawn_somewhere);
  }
}

// One rate with no profile has two public readings (averaged_rate_reading): each position's
// conditional rate, the point, and vLLM's accepted / drafted. With every other term set the band is
// those two predictions, half of the draws each: p10 the first, p90 the second.
TEST_CASE("prior band: a single acceptance rate spans its two readings", "[prior_band][acceptance]") {
  const auto all_set = with(kComputeSet, {"host.draft_step_overhead=0.1ms", "host.spec_extra_per_cycle=1ms",
                                          "acceptance.accept=0.6"});
  const specsim::CycleModel model(specsim::load_scenario(kRow, all_set, kRoot));
  const auto p = model.predict();
  // The point: a constant chain of 3 at 0.6, 1 + 0.6 + 0.36 + 0.216.
  REQUIRE_THAT(p.tokens_per_cycle, WithinRel(2.176, 1e-9));
  const auto band = specsim::prior_band(model, p, 4000, 3);
  REQUIRE(band.terms == std::vector<std::string>{"acceptance read as accepted / drafted"});
  REQUIRE(band.averaged_rate_tokens_per_cycle);
  CHECK_THAT(*band.averaged_rate_tokens_per_cycle, WithinRel(1.0 + 0.6 * 3, 1e-9));  // 2.8
  const double batch = model.scenario().batch;
  CHECK_THAT(band.p10_tokens_per_s, WithinRel(p.spec_tokens_per_s, 1e-9));
  CHECK_THAT(band.p90_tokens_per_s, WithinRel(batch * 2.8 / model.cycle_s(2.8), 1e-9));
  CHECK(band.p90_tokens_per_s > 1.2 * band.p10_tokens_per_s);

  // A measured tau, or a rate with a profile, says which it is: no second reading, no spread.
  const specsim::CycleModel measured(specsim::load_scenario(
      kRow, with(kComputeSet, {"host.draft_step_overhead=0.1ms", "host.spec_extra_per_cycle=1ms"}), kRoot));
  const auto plain = specsim::prior_band(measured, measured.predict(), 4000, 3);
  CHECK_FALSE(plain.averaged_rate_tokens_per_cycle);
  CHECK(plain.terms.empty());
  const specsim::CycleModel profiled(specsim::load_scenario(
      kRow, with(all_set, {"acceptance.depth_profile=[1.0, 0.6, 0.4]"}), kRoot));
  CHECK_FALSE(specsim::prior_band(profiled, profiled.predict(), 4000, 3).averaged_rate_tokens_per_cycle);
}

// An end-to-end plain rate with no TPOT leaves a residual that is per-request time (the point: paid
// per output token, tau times a cycle) or per-step host work (paid once a cycle): with every prior
// set the band is those two predictions, half of the draws each (docs/model.md#end-to-end-readings).
TEST_CASE("prior band: an end-to-end plain rate with no TPOT spans its two readings", "[prior_band][calibration]") {
  // vLLM PR #16035: Llama-3-8B + EAGLE, K = 2, one H100; its rate is output tokens / wall time.
  const std::string row = std::string(SPECSIM_SOURCE_DIR) + "/validation/vllm-pr-16035-llama3-8b/vllm16035-llama3-8b-eagle1-k2-bs1.yaml";
  const auto all_set = with(kComputeSet, {"host.draft_step_overhead=0.1ms", "host.spec_extra_per_cycle=1ms"});
  const specsim::Scenario s = specsim::load_scenario(row, all_set, kRoot);
  REQUIRE(s.measurements.baseline_includes_prefill);
  const specsim::CycleModel model(s);
  const auto& cal = model.calibration();
  REQUIRE(cal.end_to_end_unsplit_s > 0.0);
  const auto p = model.predict();
  const auto band = specsim::prior_band(model, p, 4000, 3);
  REQUIRE(band.terms == std::vector<std::string>{"end-to-end residual read as per-step host work"});
  // The other reading: the residual per step, up to vLLM's plain_step_host p90 (2 ms), which holds it.
  specsim::Scenario per_step = s;
  per_step.rules.end_to_end_residual_per_request = false;
  const double other = specsim::CycleModel(per_step).predict().spec_tokens_per_s;
  CHECK(other > 1.05 * p.spec_tokens_per_s);
  CHECK_THAT(band.p10_tokens_per_s, WithinRel(p.spec_tokens_per_s, 1e-9));
  CHECK_THAT(band.p90_tokens_per_s, WithinRel(other, 1e-9));
  // The report says so, and names the measurement that would settle it.
  const auto warned = std::find_if(cal.warnings.begin(), cal.warnings.end(), [](const std::string& w) {
    return w.find("two readings") != std::string::npos && w.find("mean TPOT would settle it") != std::string::npos;
  });
  CHECK(warned != cal.warnings.end());

  // A measured TPOT tells the two apart: no second reading. Nor where the rule is off.
  const specsim::CycleModel with_tpot(specsim::load_scenario(row, with(all_set, {"measurements.baseline.tpot=7ms"}), kRoot));
  CHECK(with_tpot.calibration().end_to_end_unsplit_s == 0.0);
  CHECK(specsim::prior_band(with_tpot, with_tpot.predict(), 4000, 3).terms.empty());
  specsim::Scenario off = s;
  off.rules.end_to_end_band_readings = false;
  const specsim::CycleModel point_only(std::move(off));
  CHECK(specsim::prior_band(point_only, point_only.predict(), 4000, 3).terms.empty());
}

// An MoE target's verify reads the experts its tokens touch; the point counts them as if each token
// of a request routed independently (skew 1, the most), the band down to Cohere's measured sharing
// (skew 0.54, docs/references/models.md#distinct-experts). With every other term set, the band's
// p90 is at most the prediction at 0.54 and above the point; a dense target or a set skew has none.
TEST_CASE("prior band: an MoE target's routing skew spans independent routing and the measured sharing",
          "[prior_band][moe]") {
  // gpt-oss-20b + EAGLE-3 on one H100 (32 experts, top-4): no collectives; a TPOT (3 ms, within its
  // 3.28 ms end-to-end step) leaves its plain rate one reading.
  const std::string row = std::string(SPECSIM_SOURCE_DIR) +
                          "/validation/hf-dogacel-specdrift-gpt-oss-h100/specdrift-gpt-oss-20b-eagle3-h100-bs1-3-1-4.yaml";
  const auto all_set = with(kComputeSet, {"host.draft_step_overhead=0.1ms", "host.spec_extra_per_cycle=1ms",
                                          "measurements.baseline.tpot=3ms"});
  specsim::Scenario s = specsim::load_scenario(row, all_set, kRoot);
  const specsim::CycleModel model(s);
  const auto p = model.predict();
  const auto band = specsim::prior_band(model, p, 4000, 3);
  REQUIRE(band.terms == std::vector<std::string>{"routing skew"});
  const auto rate_at = [&](const std::string& skew) {
    return specsim::CycleModel(specsim::load_scenario(row, with(all_set, {"compute.routing_skew=" + skew}), kRoot))
        .predict()
        .spec_tokens_per_s;
  };
  // Fewer experts touched, a cheaper verify: the correlated end is the faster one.
  const double correlated = rate_at("0.54");
  REQUIRE(correlated > p.spec_tokens_per_s);
  CHECK(band.p10_tokens_per_s >= p.spec_tokens_per_s * (1 - 1e-9));
  CHECK(band.p90_tokens_per_s > p.spec_tokens_per_s);
  CHECK(band.p90_tokens_per_s <= correlated * (1 + 1e-9));
  // Set, or the rule off: the point's skew in every draw.
  const specsim::CycleModel set(specsim::load_scenario(row, with(all_set, {"compute.routing_skew=1"}), kRoot));
  CHECK(specsim::prior_band(set, set.predict(), 4000, 3).terms.empty());
  s.rules.routing_skew_spread = false;
  const specsim::CycleModel off(std::move(s));
  CHECK(specsim::prior_band(off, off.predict(), 4000, 3).terms.empty());
}

TEST_CASE("speculation call: pays or loses only where the whole band clears the plain rate", "[prior_band][call]") {
  using specsim::SpeculationCall;
  using specsim::speculation_call;
  // Bands and points as predict prints them: the home case (43.3-60.5, point 54.6, against 82.0
  // plain) and vllm20780-llama31-8b-eagle3-k2-bs1 (214.6-307.0, point 277.4, against 141.4).
  CHECK(speculation_call(43.3, 60.5, 54.6, 82.0) == SpeculationCall::kLoses);
  CHECK(speculation_call(214.6, 307.0, 277.4, 141.4) == SpeculationCall::kPays);
  // A band that holds the plain rate, or touches it, commits to nothing, whatever its point says
  // (as163-qwen3-30b-a3b-eagle3-tp4-bs4-4-4-16: 409-615, point 514.8, against 507.5).
  CHECK(speculation_call(409.0, 615.0, 514.8, 507.5) == SpeculationCall::kTooClose);
  CHECK(speculation_call(82.0, 90.0, 86.0, 82.0) == SpeculationCall::kTooClose);
  CHECK(specsim::to_string(SpeculationCall::kTooClose) == "too close to call");
  // A band without spread calls on the point; a point equal to the plain rate is too close.
  specsim::PredictionBand point;
  point.p10_tokens_per_s = point.p90_tokens_per_s = 0.0;
  CHECK(speculation_call(point, 95.0, 82.0) == SpeculationCall::kPays);
  CHECK(speculation_call(point, 82.0, 82.0) == SpeculationCall::kTooClose);
  specsim::PredictionBand wide;
  wide.p10_tokens_per_s = 70.0;
  wide.p90_tokens_per_s = 100.0;
  CHECK(speculation_call(wide, 95.0, 82.0) == SpeculationCall::kTooClose);  // the point alone would say pays
}
