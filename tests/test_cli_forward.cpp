#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <sstream>

#include "cli.hpp"
#include "cli_run.hpp"
#include "specsim/load.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {

using specsim::test::Result;
using specsim::test::run;

}  // namespace

TEST_CASE("forward: JSON points from the H200 torch profile", "[forward]") {
  const Result r = run({"forward", "--model", "llama-3.1-8b", "--gpu", "h200", "--tp", "1", "--tokens", "1,2,4,8",
                        "--ctx", "1024", "--profile", "h200-torch-compute", "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::ordered_json::parse(r.out);
  REQUIRE(j.size() == 1);
  REQUIRE(j["points"].size() == 4);
  // Scripts read these names in this order.
  CHECK(j["points"][0].begin().key() == "tokens");
  CHECK(j["points"][0]["tokens"] == 1);
  // h200-forward-interleaved.csv, llama-3.1-8b graph, context 1024: 5.9317 ms at 1 token,
  // 6.3815 ms at 8; the profile's fit residual there is within its 11% worst case.
  CHECK_THAT(j["points"][0]["time_s"].get<double>(), WithinRel(5.9317e-3, 0.11));
  CHECK_THAT(j["points"][3]["time_s"].get<double>(), WithinRel(6.3815e-3, 0.11));
  // Monotone in tokens.
  for (int i = 1; i < 4; ++i) CHECK(j["points"][i]["time_s"] > j["points"][i - 1]["time_s"]);
}

TEST_CASE("forward: --decode-step fixes the 1-token time", "[forward]") {
  // eta_bw is solved (TOMS 748) so the 1-token forward is the measured step; 70B at TP8 measured
  // 12.10 ms in graph mode (h200-forward.csv).
  const Result r = run({"forward", "--model", "llama-3.3-70b", "--gpu", "h200", "--tp", "8", "--tokens", "1,4",
                        "--ctx", "1024", "--decode-step", "12.10ms", "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK_THAT(j["points"][0]["time_s"].get<double>(), WithinRel(12.10e-3, 1e-9));
  CHECK(j["points"][1]["time_s"].get<double>() >= j["points"][0]["time_s"].get<double>());
  // A step faster than the kernel floors allow even at 200% bandwidth is refused with the reason.
  const Result fast = run({"forward", "--model", "llama-3.3-70b", "--gpu", "h200", "--tp", "8", "--tokens", "1",
                           "--ctx", "1024", "--decode-step", "10us"});
  CHECK(fast.code == specsim::cli::kExitInput);
  CHECK_THAT(fast.err, Contains("faster than the model allows"));
  const Result unitless = run({"forward", "--model", "llama-3.3-70b", "--gpu", "h200", "--tp", "8", "--tokens", "1",
                               "--ctx", "1024", "--decode-step", "12.1"});
  CHECK(unitless.code == specsim::cli::kExitInput);
  CHECK_THAT(unitless.err, Contains("--decode-step"));
}

TEST_CASE("forward: a scenario's compute.profile replaces defaults, its own keys win", "[forward]") {
  const specsim::Scenario plain = specsim::load_scenario(specsim::kDefaultScenario);
  const specsim::Scenario profiled =
      specsim::load_scenario(specsim::kDefaultScenario, {"compute.profile=h200-torch-compute"});
  CHECK(profiled.compute.profile == "h200-torch-compute");
  CHECK(profiled.compute.kernels_per_dense_layer == 30);  // from the profile
  CHECK(profiled.compute.kv_efficiency_verify.has_value());
  // The default scenario sets kernel_floor itself, so it keeps its own value over the profile's.
  CHECK(profiled.compute.kernel_floor_s == plain.compute.kernel_floor_s);
  const specsim::Scenario patched = specsim::load_scenario(
      specsim::kDefaultScenario, {"compute.profile=h200-torch-compute", "compute.multi_token_step=1us"});
  CHECK_THAT(patched.compute.multi_token_step_s, WithinRel(1e-6, 1e-12));
  CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, {"compute.profile=no-such-profile"}),
                    Contains("compute.profile") && Contains("h200-torch-compute"));
}
