// The p10-p90 band of a prediction over the engine priors' spread (prior_band.hpp). With one term
// drawn, the band is that term's p10/p90 carried through the cycle, a monotone map, so it can be
// checked in closed form; a set term has no spread.
#include <catch2/catch.hpp>

#include <cmath>

#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/prior_band.hpp"

using Catch::Matchers::WithinRel;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
// A one-GPU Llama-3.1-8B row whose engine (sglang) has a prior file (models/engines/sglang.yaml).
const std::string kRow = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/validation/run-a/a-chain3.yaml";

}  // namespace

TEST_CASE("prior band: one drawn term maps its p10 and p90 through the cycle", "[prior_band]") {
  // The per-draft-forward overhead set (no spread): only the cycle overhead is drawn.
  const specsim::CycleModel model(specsim::load_scenario(kRow, {"host.draft_step_overhead=0.1ms"}, kRoot));
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
      kRow, {"host.draft_step_overhead=0.1ms", "host.spec_extra_per_cycle=1ms"}, kRoot));
  const auto p = set.predict();
  const auto band = specsim::prior_band(set, p);
  CHECK(band.terms.empty());
  CHECK(band.p10_tokens_per_s == p.spec_tokens_per_s);
  CHECK(band.p90_tokens_per_s == p.spec_tokens_per_s);
  // An engine with no models/engines file: the overheads are 0, reported as such, and not drawn.
  const specsim::CycleModel other(specsim::load_scenario(kRow, {"engine.name=tensorrt-llm"}, kRoot));
  CHECK(other.calibration().spec_extra_per_cycle_s.value == 0.0);
  CHECK(other.calibration().spec_extra_per_cycle_s.origin.find("no models/engines file") != std::string::npos);
  CHECK(specsim::prior_band(other, other.predict()).terms.empty());
}

TEST_CASE("prior band: both terms drawn bracket the central prediction", "[prior_band]") {
  const specsim::CycleModel model(specsim::load_scenario(kRow, {}, kRoot));
  const auto p = model.predict();
  const auto band = specsim::prior_band(model, p);
  CHECK(band.terms.size() == 2);
  CHECK(band.p10_tokens_per_s < band.p50_tokens_per_s);
  CHECK(band.p50_tokens_per_s < band.p90_tokens_per_s);
  CHECK(band.p10_tokens_per_s < p.spec_tokens_per_s);
  CHECK(p.spec_tokens_per_s < band.p90_tokens_per_s);
}
