// The speculative path's work per request (models/engines/*.yaml spec_per_request: 8 us, p10 2 us,
// p90 30 us; docs/references/batch-speculation.md#per-request-prior): charged per request beyond
// the first, per cycle, where the speculative run is synchronous; a set value always wins.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/prior_band.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using Catch::Matchers::WithinRel;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
// SGLang spec v1 (synchronous), Qwen3-30B-A3B + EAGLE-3 on 4x H100, batch 32.
const std::string kSglangRow = std::string(SPECSIM_SOURCE_DIR) +
                               "/validation/angelslim-issue-163-4xh100/as163-qwen3-30b-a3b-eagle3-tp4-bs32-4-4-16.yaml";
// vLLM EAGLE-3 on one H100: eagle3 is among vLLM's async methods (models/engines/vllm.yaml).
const std::string kVllmRow = std::string(SPECSIM_SOURCE_DIR) +
                             "/validation/vllm-issue-20780-llama8b/vllm20780-llama31-8b-eagle3-k4-bs1.yaml";
constexpr double kPriorS = 8e-6;

specsim::CycleModel model_of(const std::string& row, const std::vector<std::string>& patches) {
  return specsim::CycleModel(specsim::load_scenario(row, patches, kRoot));
}

}  // namespace

TEST_CASE("spec per request: a synchronous cycle pays the prior for each request beyond the first", "[per_request]") {
  const specsim::CycleModel model = model_of(kSglangRow, {});
  const auto& cal = model.calibration();
  CHECK_THAT(cal.spec_per_request_s.value, WithinRel(kPriorS, 1e-12));
  CHECK_THAT(cal.spec_per_request_s.origin, StartsWith("prior: engine sglang, p10-p90 2 us to 30 us"));
  // The same cycle with the term set to 0 is shorter by 31 requests x 8 us = 248 us.
  const specsim::CycleModel without = model_of(kSglangRow, {"host.spec_per_request=0us"});
  CHECK_THAT(model.predict().cycle_s - without.predict().cycle_s, WithinRel(31 * kPriorS, 1e-9));
  CHECK(without.calibration().spec_per_request_s.origin == "set");
  // A value the user sets wins: 100 us x 31 = 3.1 ms over the set 0.
  const specsim::CycleModel set = model_of(kSglangRow, {"host.spec_per_request=100us"});
  CHECK_THAT(set.predict().cycle_s - without.predict().cycle_s, WithinRel(31 * 100e-6, 1e-9));
  // The band draws it: the term is among the priors named.
  const specsim::PredictionBand band = specsim::prior_band(model, model.predict());
  CHECK(std::find(band.terms.begin(), band.terms.end(), "engine overhead per request") != band.terms.end());
}

TEST_CASE("spec per request: batch 1 pays nothing and its band draws nothing more", "[per_request]") {
  const specsim::CycleModel model = model_of(kSglangRow, {"workload.batch=1"});
  const specsim::CycleModel without = model_of(kSglangRow, {"workload.batch=1", "host.spec_per_request=0us"});
  CHECK(model.predict().cycle_s == without.predict().cycle_s);
  const specsim::PredictionBand band = specsim::prior_band(model, model.predict());
  CHECK(std::find(band.terms.begin(), band.terms.end(), "engine overhead per request") == band.terms.end());
}

TEST_CASE("spec per request: an async speculative run hides it, and the rule switch removes it", "[per_request]") {
  const specsim::CycleModel async = model_of(kVllmRow, {"workload.batch=16"});
  CHECK(async.calibration().spec_per_request_s.value == 0.0);
  CHECK_THAT(async.calibration().spec_per_request_s.origin, StartsWith("0: hidden, the speculative run is async"));
  // Forced synchronous, the same vLLM run pays it (15 x 8 us).
  const specsim::CycleModel sync = model_of(kVllmRow, {"workload.batch=16", "engine.async_scheduling.speculative=false"});
  CHECK_THAT(sync.calibration().spec_per_request_s.value, WithinRel(kPriorS, 1e-12));
  specsim::Scenario off = specsim::load_scenario(kSglangRow, {}, kRoot);
  off.rules.spec_per_request = false;
  const specsim::CycleModel ablated(off);
  CHECK(ablated.calibration().spec_per_request_s.value == 0.0);
  CHECK_THAT(ablated.calibration().spec_per_request_s.origin, Contains("rule spec-per-request off"));
}
