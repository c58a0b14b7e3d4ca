// Gains between rows of one source (docs/validation.md#pairs): which rows pair, the measured and
// predicted gain of each, and Kendall's tau worked out by hand.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>

#include "cli_run.hpp"
#include "specsim/load.hpp"
#include "specsim/validate_corpus.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
const std::string kRows = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/validation";
}  // namespace

TEST_CASE("pairs: Kendall's tau counts concordant minus discordant pairs over n(n-1)/2", "[pairs]") {
  CHECK(specsim::kendall_tau({1, 2, 3, 4}, {10, 20, 30, 40}) == 1.0);
  CHECK(specsim::kendall_tau({1, 2, 3, 4}, {40, 30, 20, 10}) == -1.0);
  // (1,2,3) against (1,3,2): pairs (1,2) and (1,3) agree, (2,3) disagrees: (2 - 1) / 3.
  CHECK_THAT(specsim::kendall_tau({1, 2, 3}, {1, 3, 2}), WithinAbs(1.0 / 3.0, 1e-15));
  // A tie counts neither way: (1,1,2) against (1,2,3): (1,2) tied, (1,3) and (2,3) agree: 2 / 3.
  CHECK_THAT(specsim::kendall_tau({1, 1, 2}, {1, 2, 3}), WithinAbs(2.0 / 3.0, 1e-15));
  CHECK(specsim::kendall_tau({1}, {1}) == 0.0);
}

TEST_CASE("pairs: rows of one plain run that differ in the draft shape pair, another batch never does", "[pairs]") {
  const auto report = specsim::validate_corpus(specsim::find_validation_rows({kRows}, kRoot), {}, kRoot);
  // run-a: a-chain2 and a-chain3 share the 150 tok/s plain run at batch 1: one pair. a-chain4-bs8
  // runs batch 8 (the workload, not a tuning option); run-b has one row.
  REQUIRE(report.pairs.size() == 1);
  const auto& p = report.pairs[0];
  CHECK(p.before == "a-chain2");
  CHECK(p.after == "a-chain3");
  CHECK(p.setting == "draft shape");
  CHECK(p.change == "2/1/3 -> 3/1/4");
  CHECK(p.set == "fit");
  CHECK_THAT(p.measured_gain, WithinRel(250.0 / 240.0 - 1.0, 1e-12));
  const auto& a = report.rows[0];
  const auto& b = report.rows[1];
  REQUIRE(a.name == "a-chain2");
  CHECK_THAT(p.predicted_gain, WithinRel(b.predicted_spec_tokens_per_s / a.predicted_spec_tokens_per_s - 1.0, 1e-12));
  CHECK(report.rankings.empty());  // two options are a pair, not a ranking
  REQUIRE(report.pair_summaries.size() == 3);
  CHECK(report.pair_summaries[1].group == "fit");
  CHECK(report.pair_summaries[1].pairs == 1);
  CHECK(report.pair_summaries[0].pairs == 0);  // run-b, the check source, has no pair
}

TEST_CASE("pairs: the corpus's K sweeps rank their options, and the JSON carries pairs and rankings",
          "[pairs][validate]") {
  const auto r = specsim::test::run({"validate", "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["pairs"].size() >= 30);
  for (const auto& p : j["pairs"]) {
    CHECK(p["sign_right"] == ((p["measured_gain"].get<double>() > 0) == (p["predicted_gain"].get<double>() > 0)));
  }
  // Every ranking has 3+ options and a tau in [-1, 1].
  REQUIRE(!j["rankings"].empty());
  for (const auto& k : j["rankings"]) {
    CHECK(k["options"].size() >= 3);
    CHECK(std::abs(k["kendall_tau"].get<double>()) <= 1.0);
    CHECK(k["top_pick_right"] == (k["predicted_best"] == k["measured_best"]));
  }
  REQUIRE(j["pair_summary"].size() == 3);
  CHECK(j["pair_summary"][2]["pairs"] == j["pairs"].size());
  const auto text = specsim::test::run({"validate"});
  CHECK_THAT(text.out, Contains("pairs: two rows of one source that differ in one tuning setting") &&
                           Contains("rankings (3+ options on one box)"));
}

TEST_CASE("rank: each gain carries the band of specsim's error on measured gains", "[pairs][rank]") {
  const auto r = specsim::test::run({"rank", "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["gain_band_origin"].is_string());
  CHECK_THAT(j["gain_band_origin"].get<std::string>(), Contains("measured gains of the validation fit set"));
  const auto e = specsim::load_model_error(specsim::model_error_file(kRoot));
  REQUIRE(e.gain_pairs > 0);
  const double now = j["scenario_tokens_per_s"].get<double>();
  for (const auto& x : j["interventions"]) {
    if (!x["feasible"].get<bool>()) {
      CHECK(x["gain_band"].is_null());
      continue;
    }
    INFO(x["name"]);
    // The band is the predicted ratio times exp(p10) and exp(p90) of the fit set's gain residuals.
    const double ratio = x["tokens_per_s"].get<double>() / now;
    CHECK_THAT(x["gain_band"]["p10"].get<double>(), WithinRel(now * (ratio * std::exp(e.gain_residual_p10) - 1.0), 1e-9));
    CHECK_THAT(x["gain_band"]["p90"].get<double>(), WithinRel(now * (ratio * std::exp(e.gain_residual_p90) - 1.0), 1e-9));
    const bool holds_zero = x["gain_band"]["p10"].get<double>() < 0 && x["gain_band"]["p90"].get<double>() > 0;
    CHECK(x["gain_band"]["too_close_to_call"].get<bool>() == holds_zero);
  }
}
