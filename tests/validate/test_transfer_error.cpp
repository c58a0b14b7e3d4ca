// The error of a rate carried from the batch its plain run was measured at to another
// (docs/validation.md#batch-transfer): measured on the fit set's batch transfers, written to
// models/model-error.yaml, and drawn by every band away from the measured batch.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>

#include "cli_run.hpp"
#include "specsim/concurrency.hpp"
#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/prior_band.hpp"
#include "specsim/validate_corpus.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
constexpr double kZ90 = 1.2815515655446004;

// A fit-set transfer whose prediction is 100 tok/s, measured at exp(r) x that, with its own band a
// log-normal of sigma `own` (p10/p90 at exp(-+z90 own)).
specsim::BatchTransfer transfer(const std::string& source, int from, int to, double r, double own,
                                const std::string& set = "fit") {
  specsim::BatchTransfer t;
  t.source = source;
  t.set = set;
  t.from_batch = from;
  t.to_batch = to;
  t.predicted_spec_tokens_per_s = 100.0;
  t.measured_spec_tokens_per_s = 100.0 * std::exp(r);
  t.spec_own_p10_tokens_per_s = 100.0 * std::exp(-kZ90 * own);
  t.spec_own_p90_tokens_per_s = 100.0 * std::exp(kZ90 * own);
  // The widened band is not what the error is measured on.
  t.spec_p10_tokens_per_s = 1.0;
  t.spec_p90_tokens_per_s = 1e6;
  return t;
}

const std::string kHome = "models/scenarios/kimi-k2.5-eagle3-8x-rtx-pro-6000.yaml";
}  // namespace

TEST_CASE("transfer error: the moments of the fit set's transfers, worked numbers", "[batch_transfer][model_error]") {
  // Source A has two transfers (weight 1/2 each), B, C and D one each. r^2 - own^2, weighted:
  //   A 1->8: 0.5 x (0.09 - 0.01) = 0.04;  A 1->32: 0.5 x (0.16 - 0.01) = 0.075
  //   B 1->4: 0.04 - 0.0025 = 0.0375;  C 2->16: 0.01 - 0.04 = -0.03 (inside its own band);
  //   D 1->64: 0.25 - 0.01 = 0.24;  sum 0.3625
  // ln(to / from)^2, weighted: 0.5 x 4.3241 + 0.5 x 12.0113 + 1.9218 + 4.3241 + 17.2964 = 31.7099
  // sigma = sqrt(0.3625 / 31.7099) = 0.106919; times t_0.9(3) / z_0.9 = 1.637744 / 1.281552 = 1.277938.
  std::vector<specsim::BatchTransfer> ts = {transfer("A", 1, 8, 0.3, 0.1),  transfer("A", 1, 32, -0.4, 0.1),
                                            transfer("B", 1, 4, 0.2, 0.05), transfer("C", 2, 16, -0.1, 0.2),
                                            transfer("D", 1, 64, 0.5, 0.1)};
  // Never measured on: a check-set transfer, one without a speculative side, one at its own batch.
  ts.push_back(transfer("E", 1, 8, 2.0, 0.1, "check"));
  specsim::BatchTransfer plain_only = transfer("F", 1, 8, 2.0, 0.1);
  plain_only.measured_spec_tokens_per_s = 0.0;
  ts.push_back(plain_only);
  ts.push_back(transfer("G", 4, 4, 2.0, 0.1));

  const auto e = specsim::transfer_error_of(ts, "");
  REQUIRE(e.has_value());
  CHECK(e->points == 5);
  CHECK(e->sources == 4);
  CHECK_THAT(e->sigma_per_ln_batch, WithinRel(0.106919 * 1.277938, 1e-5));

  specsim::ModelRules known_spread;
  known_spread.model_error_small_sample = false;
  CHECK_THAT(specsim::transfer_error_of(ts, "", known_spread)->sigma_per_ln_batch, WithinRel(0.106919, 1e-5));

  // Without a source: its transfers leave the pool. Without D, four points are too few.
  CHECK_FALSE(specsim::transfer_error_of(ts, "D").has_value());
  // Transfers inside their own bands measure no error beyond them.
  const std::vector<specsim::BatchTransfer> inside = {transfer("A", 1, 8, 0.05, 0.1), transfer("B", 1, 8, -0.05, 0.1),
                                                      transfer("C", 1, 8, 0.0, 0.1), transfer("D", 1, 8, 0.09, 0.1),
                                                      transfer("E", 1, 8, -0.02, 0.1)};
  CHECK(specsim::transfer_error_of(inside, "")->sigma_per_ln_batch == 0.0);
  // Two sources are too few, however many points.
  std::vector<specsim::BatchTransfer> two;
  for (int i = 0; i < 6; ++i) two.push_back(transfer(i % 2 ? "A" : "B", 1, 8, 0.3, 0.1));
  CHECK_FALSE(specsim::transfer_error_of(two, "").has_value());
}

TEST_CASE("transfer error: added to each tail in quadrature, by the distance in ln batch", "[batch_transfer][prior_band]") {
  specsim::ModelError e;
  e.sigma = 0.128;
  e.sigma_below = 0.16;
  e.sigma_above = 0.086;
  e.transfer_sigma_per_ln_batch = 0.069;
  // 1 -> 32: 0.069 x ln 32 = 0.23913; below hypot(0.16, 0.23913) = 0.28773.
  const auto far = specsim::with_batch_transfer(e, 32, 1);
  CHECK_THAT(far.sigma_below, WithinRel(0.2877254, 1e-6));
  CHECK_THAT(far.sigma_above, WithinRel(std::hypot(0.086, 0.069 * std::log(32.0)), 1e-12));
  CHECK_THAT(far.sigma, WithinRel(std::hypot(0.128, 0.069 * std::log(32.0)), 1e-12));
  // Down is as far as up: 32 -> 1 is the same distance.
  CHECK(specsim::with_batch_transfer(e, 1, 32).sigma_below == far.sigma_below);
  // The measured batch, or no transfer error known: as it was.
  CHECK(specsim::with_batch_transfer(e, 8, 8).sigma_below == 0.16);
  e.transfer_sigma_per_ln_batch = 0.0;
  CHECK(specsim::with_batch_transfer(e, 32, 1).sigma_below == 0.16);
}

TEST_CASE("transfer error: predict's band draws it away from the measured batch, and only there",
          "[batch_transfer][prior_band]") {
  const std::string file = kRoot.root() + "/" + kHome;
  const specsim::CycleModel at_one(specsim::load_scenario(file, {}, kRoot));
  REQUIRE(at_one.scenario().model_error.has_value());
  const specsim::ModelError& error = *at_one.scenario().model_error;
  REQUIRE(error.transfer_sigma_per_ln_batch > 0.0);  // the committed file carries one
  REQUIRE(at_one.calibration().batch_measured);
  REQUIRE(at_one.calibration().calibrated_batch == 1);
  CHECK(specsim::prediction_band(at_one, at_one.predict()).transfer_sigma == 0.0);

  // --set workload.batch=16 on the batch-1 measurement: the band is the priors' widened by the
  // model error with the transfer's 16x in quadrature, and says so.
  const specsim::CycleModel at_16(specsim::load_scenario(file, {"workload.batch=16"}, kRoot));
  const auto p = at_16.predict();
  const auto band = specsim::prediction_band(at_16, p);
  CHECK(band.transfer_from_batch == 1);
  CHECK_THAT(band.transfer_sigma, WithinRel(error.transfer_sigma_per_ln_batch * std::log(16.0), 1e-12));
  const auto expected = specsim::with_model_error(specsim::prior_band(at_16, p), p.spec_tokens_per_s,
                                                  specsim::with_batch_transfer(error, 16, 1));
  CHECK(band.p10_tokens_per_s == expected.p10_tokens_per_s);
  CHECK(band.p90_tokens_per_s == expected.p90_tokens_per_s);
  const auto without = specsim::with_model_error(specsim::prior_band(at_16, p), p.spec_tokens_per_s, error);
  CHECK(band.p10_tokens_per_s < without.p10_tokens_per_s);
  CHECK(band.p90_tokens_per_s > without.p90_tokens_per_s);

  // The rule off: the measured batch's band.
  specsim::Scenario off = specsim::load_scenario(file, {"workload.batch=16"}, kRoot);
  off.rules.batch_transfer_error = false;
  const specsim::CycleModel off_model(std::move(off));
  const auto off_band = specsim::prediction_band(off_model, off_model.predict());
  CHECK(off_band.transfer_sigma == 0.0);
  CHECK(off_band.p10_tokens_per_s == without.p10_tokens_per_s);

  // Nothing measured: no batch was carried anywhere.
  specsim::Scenario bare = specsim::load_scenario(file, {"workload.batch=16"}, kRoot);
  bare.measurements = {};
  bare.as_measured.reset();
  const specsim::CycleModel bare_model(std::move(bare));
  CHECK_FALSE(bare_model.calibration().batch_measured);
  CHECK(specsim::prediction_band(bare_model, bare_model.predict()).transfer_sigma == 0.0);

  // The text and JSON say what the band drew for the transfer.
  const auto text = specsim::test::run({"predict", "--set", "workload.batch=16"});
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Contains("is for carrying batch 1's calibration to this batch"));
  const auto json = specsim::test::run({"predict", "--set", "workload.batch=16", "--json"});
  const auto j = nlohmann::json::parse(json.out);
  CHECK_THAT(j["speculative"]["band"]["batch_transfer"]["sigma"].get<double>(),
             WithinRel(error.transfer_sigma_per_ln_batch * std::log(16.0), 1e-9));
  CHECK(j["speculative"]["band"]["batch_transfer"]["from_batch"] == 1);
  CHECK(j["speculative"]["band"]["model_error"]["transfer_sigma_per_ln_batch"].get<double>() ==
        error.transfer_sigma_per_ln_batch);
}

TEST_CASE("transfer error: predict --concurrency draws it at every level but the measured one",
          "[batch_transfer][concurrency]") {
  specsim::Scenario s = specsim::load_scenario(kRoot.root() + "/" + kHome, {}, kRoot);
  s.concurrency = {1, 4, 32};
  const auto cp = specsim::predict_concurrency(s);
  REQUIRE(cp.levels.size() == 3);
  const double per_ln = s.model_error->transfer_sigma_per_ln_batch;
  CHECK(cp.levels[0].spec_band_transfer_sigma == 0.0);
  CHECK_THAT(cp.levels[1].spec_band_transfer_sigma, WithinRel(per_ln * std::log(4.0), 1e-12));
  CHECK_THAT(cp.levels[2].spec_band_transfer_sigma, WithinRel(per_ln * std::log(32.0), 1e-12));
  const auto text = specsim::test::run({"predict", "--concurrency", "1,4"});
  CHECK_THAT(text.out, Contains("at a level away from batch 1, each tail also draws specsim's error on carrying"));
  const auto at_one = specsim::test::run({"predict", "--concurrency", "1"});
  CHECK_THAT(at_one.out, !Contains("at a level away from batch"));
}

TEST_CASE("transfer error: the committed file is the corpus's, each transfer's band held out by source",
          "[batch_transfer][model_error][validate]") {
  const auto report = specsim::validate_corpus(specsim::find_validation_rows({}, kRoot), {}, kRoot);
  REQUIRE(report.model_error.has_value());
  const auto all = specsim::transfer_error_of(report.batch_transfers, "");
  REQUIRE(all.has_value());
  CHECK(report.model_error->transfer_points == all->points);
  CHECK(report.model_error->transfer_sigma_per_ln_batch == all->sigma_per_ln_batch);
  const auto file = specsim::load_model_error(specsim::model_error_file(kRoot));
  CHECK(file.transfer_points == all->points);
  CHECK(file.transfer_sources == all->sources);
  CHECK_THAT(file.transfer_sigma_per_ln_batch, WithinAbs(all->sigma_per_ln_batch, 6e-5));
  // A transfer's band: its own (the measured batch's) widened by the fit set's other sources'
  // transfer error, never narrowed.
  int widened = 0;
  for (const auto& t : report.batch_transfers) {
    if (!t.has_spec()) continue;
    CHECK(t.spec_p10_tokens_per_s <= t.spec_own_p10_tokens_per_s);
    CHECK(t.spec_p90_tokens_per_s >= t.spec_own_p90_tokens_per_s);
    const auto held_out = specsim::transfer_error_of(report.batch_transfers, t.source);
    if (held_out && held_out->sigma_per_ln_batch > 0.0) {
      CHECK(t.spec_p90_tokens_per_s > t.spec_own_p90_tokens_per_s);
      ++widened;
    }
  }
  CHECK(widened > 0);
  // The rule off: every band is its own.
  specsim::ValidateOptions off;
  off.rules.batch_transfer_error = false;
  const auto flipped = specsim::validate_corpus(specsim::find_validation_rows({}, kRoot), off, kRoot);
  for (const auto& t : flipped.batch_transfers) CHECK(t.spec_p10_tokens_per_s == t.spec_own_p10_tokens_per_s);
  CHECK(flipped.model_error->transfer_points == 0);
}
