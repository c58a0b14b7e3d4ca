// specsim priors: the registry (priors.hpp) and the band's engine terms as the command prints them,
// every row read from the table itself.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

#include "cli_run.hpp"
#include "specsim/prior_band.hpp"
#include "specsim/priors.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("priors: the text lists every prior with its value, spread, what it feeds and its source",
          "[cli][priors]") {
  const auto r = specsim::test::run({"priors"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, StartsWith("specsim priors: " + std::to_string(specsim::priors().size()) + " figures"));
  for (const specsim::Prior& p : specsim::priors()) {
    INFO(p.key);
    CHECK_THAT(r.out, Contains(std::string(p.label) + " (" + std::string(p.key) + "): "));
    CHECK_THAT(r.out, Contains("  feeds: " + std::string(p.feeds) + "\n"));
    CHECK_THAT(r.out, Contains("(" + std::string(p.source) + ")\n"));
  }
  // A duration in its unit, a ratio as a number: 17.39 us rounds to 17.4 us at three digits.
  CHECK_THAT(r.out,
             Contains("eager launch per kernel (compute.eager_launch_per_kernel): 17.4 us, p10-p90 5 us to 40 us\n"));
  CHECK_THAT(r.out, Contains("bandwidth efficiency (compute.bandwidth_efficiency): 0.84, p10-p90 0.79 to 0.86\n"));
  CHECK_THAT(r.out, Contains("  draws above 1 are cut there\n"));  // the verify KV ratio
  for (const specsim::EngineTerm& t : specsim::engine_terms()) {
    CHECK_THAT(r.out, Contains("  " + std::string(t.label) + " (" + std::string(t.key) + "): "));
  }
  // The readings: each with what settles it, and in JSON in the registry's order.
  for (const specsim::CalibrationReading& reading : specsim::calibration_readings()) {
    CHECK_THAT(r.out, Contains("  " + std::string(reading.label) + " (" + std::string(reading.key) +
                               "): the point reads " + std::string(reading.point)));
    CHECK_THAT(r.out, Contains("; settled by " + std::string(reading.settles)));
  }
  const auto j = nlohmann::ordered_json::parse(specsim::test::run({"priors", "--json"}).out);
  REQUIRE(j["readings"].size() == specsim::calibration_readings().size());
  CHECK(j["readings"][0]["key"] == "end_to_end_residual");
  CHECK(j["readings"][0]["weight"].get<double>() == 0.5);
}

TEST_CASE("priors: JSON holds each row's numbers exactly, CSV a row per prior", "[cli][priors]") {
  const auto r = specsim::test::run({"priors", "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::ordered_json::parse(r.out);
  const auto rows = specsim::priors();
  REQUIRE(j["priors"].size() == rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = j["priors"][i];
    INFO(rows[i].key);
    CHECK(row.begin().key() == "key");  // scripts read the names in this order
    CHECK(row["key"] == std::string(rows[i].key));
    CHECK(row["value"].get<double>() == rows[i].estimate.value);
    CHECK(row["p10"].get<double>() == rows[i].estimate.p10);
    CHECK(row["p90"].get<double>() == rows[i].estimate.p90);
    CHECK(row["drawn"].get<bool>() == rows[i].drawn());
    CHECK(row["source"] == std::string(rows[i].source));
  }
  const auto of = [&](const std::string& key) {
    for (const auto& row : j["priors"]) {
      if (row["key"] == key) return row;
    }
    FAIL("no prior " << key);
    return nlohmann::ordered_json();
  };
  // An infinite cut is no cut: left out, where JSON has no infinity.
  CHECK(of("compute.kv_verify_ratio")["draw_max"].get<double>() == 1.0);
  CHECK_FALSE(of("compute.kv_verify_ratio").contains("draw_min"));
  CHECK(of("compute.bandwidth_efficiency")["second_reading"]["weight"].get<double>() == 0.5);
  CHECK(j["engine_terms"].size() == specsim::engine_terms().size());

  const auto csv = specsim::test::run({"priors", "--format", "csv"});
  REQUIRE(csv.code == 0);
  CHECK_THAT(csv.out, StartsWith("key,label,value,p10,p90,unit,drawn,draw_min,draw_max,feeds,source,evidence\n"));
  CHECK(std::count(csv.out.begin(), csv.out.end(), '\n') == long(rows.size()) + 1);
}
