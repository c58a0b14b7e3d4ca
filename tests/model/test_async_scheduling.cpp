// vLLM's async scheduling per run (engine.async_scheduling, models/engines/vllm.yaml
// behaviour.async_scheduling): a synchronous speculative cycle beside a plain step measured under async
// scheduling pays the host time of a synchronous step, the engine's plain_step_host prior, where
// it exceeds what the plain step left exposed (docs/model.md#async-scheduling).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_run.hpp"
#include "specsim/cycle.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/prior_band.hpp"
#include "specsim/report.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
// vLLM 0.29.0, Qwen3-8B + ngram on one RTX 4090; the row states plain async, ngram synchronous.
const std::string kNgramRow = std::string(SPECSIM_SOURCE_DIR) +
                              "/validation/vllm-lab-v029-ngram-rtx4090/vllmlab-v029-qwen3-8b-ngram-k4-count-c1.yaml";
// vLLM, Llama-3.1-8B + EAGLE-3 on one H100; version unknown, so both runs take the engine default.
const std::string kEagleRow = std::string(SPECSIM_SOURCE_DIR) +
                              "/validation/vllm-issue-20780-llama8b/vllm20780-llama31-8b-eagle3-k4-bs1.yaml";
// models/engines/vllm.yaml plain_step_host: 0.44 ms, p10 0.2 ms, p90 2 ms.
constexpr double kSyncHostS = 0.44e-3;

specsim::Prediction predict(const std::string& row, const std::vector<std::string>& patches) {
  return specsim::CycleModel(specsim::load_scenario(row, patches, kRoot)).predict();
}

std::string load_error(const std::string& file) {
  try {
    (void)specsim::load_scenario(file, {}, kRoot);
  } catch (const specsim::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("async scheduling: a synchronous ngram cycle beside an async plain step pays vLLM's sync host", "[async]") {
  // The plain step's host part set to 0.12 ms: what an async step leaves exposed. The ngram run is
  // synchronous, so its cycle pays the 0.44 ms of a synchronous step: 0.44 - 0.12 = 0.32 ms more.
  const std::vector<std::string> exposed = {"host.decode_per_step=0.12ms"};
  const specsim::CycleModel model(specsim::load_scenario(kNgramRow, exposed, kRoot));
  const auto& cal = model.calibration();
  CHECK_THAT(cal.sync_step_host_s.value, WithinRel(kSyncHostS, 1e-12));
  CHECK_THAT(cal.sync_step_host_s.origin, StartsWith("prior: engine vllm plain_step_host, p10-p90 200 us to 2 ms"));
  CHECK_THAT(cal.unhidden_host_s, WithinRel(0.44e-3 - 0.12e-3, 1e-9));
  // Both runs synchronous: the cycle keeps the plain step's 0.12 ms, so it is 0.32 ms shorter.
  const auto sync = predict(kNgramRow, {"host.decode_per_step=0.12ms", "engine.async_scheduling.plain=false"});
  const auto p = model.predict();
  CHECK_THAT(p.cycle_s - sync.cycle_s, WithinRel(0.32e-3, 1e-9));
  CHECK_THAT(p.spec_host_s - sync.spec_host_s, WithinRel(0.32e-3, 1e-9));
  // The plain step is what was measured, whatever the speculative run does.
  CHECK(p.baseline_step_s == sync.baseline_step_s);
}

TEST_CASE("async scheduling: the sync host never undercuts what the plain step left exposed", "[async]") {
  // A plain step leaving 1 ms beyond the forward already holds more than 0.44 ms: max(0, 0.44 - 1) = 0.
  const specsim::CycleModel model(specsim::load_scenario(kNgramRow, {"host.decode_per_step=1ms"}, kRoot));
  CHECK(model.calibration().unhidden_host_s == 0.0);
  CHECK_THAT(model.calibration().sync_step_host_s.value, WithinRel(kSyncHostS, 1e-12));
}

TEST_CASE("async scheduling: an explicit setting wins over the engine default", "[async]") {
  // EAGLE-3 under vLLM: both runs async by default (PR 27614, PR 31998), nothing charged or shown.
  const auto by_default = specsim::async_scheduling_of(specsim::load_scenario(kEagleRow, {}, kRoot));
  CHECK(by_default.plain.on);
  CHECK(by_default.speculative.on);
  CHECK_THAT(by_default.speculative.origin, StartsWith("engine default: eagle3 is among vllm's async methods"));
  CHECK_FALSE(by_default.shown());
  CHECK(specsim::CycleModel(specsim::load_scenario(kEagleRow, {}, kRoot)).calibration().unhidden_host_s == 0.0);
  // --no-async-scheduling on the speculative server: set, and the cycle pays the sync host.
  const specsim::CycleModel off(
      specsim::load_scenario(kEagleRow, {"engine.async_scheduling.speculative=false", "host.decode_per_step=0.1ms"}, kRoot));
  const auto set = specsim::async_scheduling_of(off.scenario());
  CHECK(set.speculative.origin == "set");
  CHECK_FALSE(set.speculative.on);
  CHECK(set.plain.origin != "set");
  CHECK_THAT(off.calibration().unhidden_host_s, WithinRel(0.44e-3 - 0.1e-3, 1e-9));
  // The reverse: an ngram run stated async (against vLLM's default) charges nothing.
  const specsim::CycleModel on(specsim::load_scenario(kNgramRow, {"engine.async_scheduling.speculative=true"}, kRoot));
  CHECK(on.calibration().unhidden_host_s == 0.0);
  // The engine's default for draft_model follows PR 48341 (async); the shipped rows state their log's 'off'.
  const std::string draft_row = std::string(SPECSIM_SOURCE_DIR) +
                                "/validation/vllm-scripts-qwen3-32b-h100/vscripts-qwen3-32b-draft1.7b-k3-c1-mtbench.yaml";
  const auto row = specsim::async_scheduling_of(specsim::load_scenario(draft_row, {}, kRoot));
  CHECK((row.speculative.origin == "set" && !row.speculative.on));
  specsim::test::TempDir dir("specsim-async-default");
  const std::string file = (dir.path / "draft.yaml").string();
  std::ofstream(file) << specsim::test::replaced_once(specsim::test::read_text(draft_row), "    speculative: false",
                                                     "    # speculative left to the engine");
  const auto engine_default = specsim::async_scheduling_of(specsim::load_scenario(file, {}, kRoot));
  CHECK(engine_default.speculative.on);
  CHECK_THAT(engine_default.speculative.origin, StartsWith("engine default: draft_model is among vllm's async methods"));
}

TEST_CASE("async scheduling: predict shows the term and its origin in text and JSON", "[async][report]") {
  const specsim::CycleModel model(specsim::load_scenario(kNgramRow, {"host.decode_per_step=0.12ms"}, kRoot));
  const std::string text = specsim::render_prediction(model, model.predict(), specsim::Format::kText);
  CHECK_THAT(text, Contains("async scheduling: plain run on (set), speculative run off (set)"));
  CHECK_THAT(text, Contains("host per synchronous step 440 us  (prior: engine vllm plain_step_host"));
  CHECK_THAT(text, Contains("the cycle pays 320 us over the plain step's 120 us"));
  CHECK_THAT(text, Contains("host per synchronous step)"));  // a term of the band
  const auto j = nlohmann::json::parse(specsim::render_prediction(model, model.predict(), specsim::Format::kJson));
  const auto& a = j["calibration"]["async_scheduling"];
  CHECK(a["plain"]["value"] == true);
  CHECK(a["speculative"]["origin"] == "set");
  CHECK_THAT(a["sync_step_host_s"]["value"].get<double>(), WithinRel(kSyncHostS, 1e-12));
  CHECK_THAT(a["unhidden_host_per_cycle_s"].get<double>(), WithinRel(0.32e-3, 1e-9));
  // Runs sharing a regime that the scenario does not state: no line, no key.
  const specsim::CycleModel eagle(specsim::load_scenario(kEagleRow, {}, kRoot));
  const auto je = nlohmann::json::parse(specsim::render_prediction(eagle, eagle.predict(), specsim::Format::kJson));
  CHECK_FALSE(je["calibration"].contains("async_scheduling"));
}

TEST_CASE("async scheduling: the sync host prior's spread enters the band", "[async][prior_band]") {
  // Every other prior set, and the plain step's host part 0.1 ms (below the prior's p10 of 0.2 ms):
  // the term max(0, h - 0.1 ms) is monotone in the drawn h, so the band's ends are the cycle with
  // h at its p90 (2 ms) and p10 (0.2 ms): 1.9 ms and 0.1 ms over the cycle without the term.
  const std::vector<std::string> set = {"host.decode_per_step=0.1ms",      "compute.bandwidth_efficiency=0.84",
                                        "compute.kv_verify_ratio=0.5",      "compute.multi_token_step=5us",
                                        "compute.eager_launch_per_kernel=5us", "compute.eager_overlap_exponent=2",
                                        "host.spec_extra_per_cycle=0.34ms", "host.draft_step_overhead=0.1ms"};
  const specsim::CycleModel model(specsim::load_scenario(kNgramRow, set, kRoot));
  const auto p = model.predict();
  const auto band = specsim::prior_band(model, p);
  REQUIRE(band.terms == std::vector<std::string>{"host per synchronous step"});
  const double emitted = model.scenario().batch * p.tokens_per_cycle;
  const double without = p.cycle_s - model.calibration().unhidden_host_s;
  CHECK_THAT(band.p10_tokens_per_s, WithinRel(emitted / (without + 1.9e-3), 0.02));
  CHECK_THAT(band.p90_tokens_per_s, WithinRel(emitted / (without + 0.1e-3), 0.02));
  // Both runs synchronous: no such term.
  auto sync = set;
  sync.push_back("engine.async_scheduling.plain=false");
  const specsim::CycleModel both_sync(specsim::load_scenario(kNgramRow, sync, kRoot));
  CHECK(specsim::prior_band(both_sync, both_sync.predict()).terms.empty());
}

TEST_CASE("async scheduling: bad input names file, line and key", "[async][load]") {
  specsim::test::TempDir dir("specsim-async-bad");
  const std::string text = specsim::test::read_text(kNgramRow);
  const std::string not_bool = (dir.path / "not-bool.yaml").string();
  std::ofstream(not_bool) << specsim::test::replaced_once(text, "    plain: true ", "    plain: maybe ");
  const std::string e1 = load_error(not_bool);
  CHECK_THAT(e1, Contains("not-bool.yaml:37:") && Contains("engine.async_scheduling.plain: expected true or false"));
  const std::string typo = (dir.path / "typo.yaml").string();
  std::ofstream(typo) << specsim::test::replaced_once(text, "    speculative: false", "    speculativ: false");
  CHECK_THAT(load_error(typo), Contains("typo.yaml:38:") && Contains("engine.async_scheduling.speculativ: unknown key") &&
                                   Contains("speculative"));
  const std::string scalar = (dir.path / "scalar.yaml").string();
  std::string one_flag = specsim::test::replaced_once(text, "  async_scheduling:\n", "  async_scheduling: true\n");
  one_flag = specsim::test::replaced_once(one_flag, "    plain: true ", "    # plain: true ");
  std::ofstream(scalar) << specsim::test::replaced_once(one_flag, "    speculative: false", "    # speculative: false");
  CHECK_THAT(load_error(scalar), Contains("scalar.yaml:36:") && Contains("async_scheduling"));
  // An engine file naming a method specsim does not know under behaviour.async_scheduling.methods.
  const auto engine = dir.path / "engine.yaml";
  std::ofstream(engine) << "schema_version: 1\nkind: engine\nname: x\nsource: \"test\"\n"
                           "cycle_overhead: {value: 1ms, p10: 0.5ms, p90: 2ms}\n"
                           "draft_step_overhead: {value: 1ms, p10: 0.5ms, p90: 2ms}\n"
                           "behaviour:\n  async_scheduling:\n    plain: true\n    methods: [eagle3, suffix]\n";
  try {
    (void)specsim::load_engine_prior(engine.string());
    FAIL("an unknown method was accepted");
  } catch (const specsim::Error& e) {
    CHECK_THAT(std::string(e.what()), Contains("engine.yaml:10:") && Contains("'suffix' is not a speculation method"));
  }
}
