#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <sstream>

#include "cli.hpp"
#include "cli_run.hpp"
#include "specsim/load.hpp"
#include "specsim/whatif.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

specsim::Scenario scenario(const std::vector<std::string>& patches = {}) {
  return specsim::load_scenario(specsim::kDefaultScenario, patches, kRoot);
}

nlohmann::json run_json(std::vector<std::string> args) {
  const auto r = specsim::test::run(std::move(args));
  INFO(r.err);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(r.out);
}
}  // namespace

TEST_CASE("breakeven: tau* is the fixed point of T_cycle(tau) / T_base", "[breakeven]") {
  const specsim::CycleModel model(scenario());
  const auto b = specsim::breakeven(model);
  const double t_base = model.baseline_step_s();
  CHECK_THAT(b.tokens_per_cycle, WithinRel(model.cycle_s(b.tokens_per_cycle) / t_base, 1e-9));
  // With the default depth profile even a perfect first position gives tau = 1 + 1 + 0.529 +
  // 0.529 * 0.300 = 2.688 < tau*: speculation cannot pay on this box while the verify runs eager.
  CHECK_FALSE(b.accept.has_value());
  CHECK(b.speculative_tokens_per_s_at_accept_1 < model.predict().baseline_tokens_per_s);
}

TEST_CASE("breakeven: the root equals plain decoding for a constant chain", "[breakeven]") {
  const specsim::CycleModel model(scenario({"acceptance.depth_profile=1"}));
  const auto b = specsim::breakeven(model);
  REQUIRE(b.accept.has_value());
  const auto p = model.predict(specsim::with_accept_rate(model.scenario().acceptance, *b.accept));
  CHECK_THAT(p.spec_tokens_per_s, WithinRel(p.baseline_tokens_per_s, 1e-6));
  // At the root, tau equals the break-even tau (both say T_cycle / T_base).
  CHECK_THAT(p.tokens_per_cycle, WithinRel(b.tokens_per_cycle, 1e-6));
}

TEST_CASE("breakeven: JSON keys and num_steps 1..8", "[breakeven][cli]") {
  const auto j = run_json({"breakeven", "--json", "--set", "acceptance.depth_profile=1"});
  CHECK(j.contains("accept"));
  CHECK(j.contains("tokens_per_cycle"));
  REQUIRE(j["by_num_steps"].size() == 8);
  for (int k = 0; k < 8; ++k) CHECK(j["by_num_steps"][k]["num_steps"] == k + 1);
  // One draft step can emit at most 2 tokens: below tau* = 2.87 it never pays here.
  CHECK(j["by_num_steps"][0]["accept"].is_null());
}

TEST_CASE("monte carlo: the mean agrees with the closed form within its 99% interval", "[monte_carlo][cycle]") {
  const specsim::CycleModel model(scenario());
  specsim::MonteCarloOptions o;
  o.seed = 7;
  o.num_requests = 1000;
  const auto r = specsim::monte_carlo(model, model.scenario().acceptance, o);
  CHECK(r.num_cycles == 100000);
  const double closed = model.predict().tokens_per_cycle;
  CHECK(r.mean_tokens_per_cycle_interval.low <= closed);
  CHECK(closed <= r.mean_tokens_per_cycle_interval.high);
  // Same seed, same answer.
  CHECK(specsim::monte_carlo(model, model.scenario().acceptance, o).mean_tokens_per_cycle == r.mean_tokens_per_cycle);
}

TEST_CASE("predict --monte-carlo reports the spread and --acceptance-log uses pooled rates", "[monte_carlo][cli]") {
  const auto j = run_json({"predict", "--monte-carlo", "200", "--seed", "3", "--json"});
  const auto& mc = j["monte_carlo"];
  CHECK(mc["cycles"] == 20000);
  CHECK(mc["tokens_per_s"]["p10"].get<double>() <= mc["tokens_per_s"]["p50"].get<double>());
  CHECK(mc["tokens_per_s"]["p50"].get<double>() <= mc["tokens_per_s"]["p90"].get<double>());
  const std::string log = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/logs/vllm_v1_pr24127.log";
  const auto from_log = run_json({"predict", "--acceptance-log", log, "--json"});
  // vLLM logs unconditional rates 0.983, 0.949, 0.915, ... for five positions; the default
  // scenario drafts 3, so tau = 1 + 0.983 + 0.949 + 0.915 = 3.847, and the cut is said, not silent.
  CHECK_THAT(from_log["speculative"]["tokens_per_cycle"].get<double>(), WithinRel(3.847, 1e-9));
  REQUIRE(from_log.contains("warnings"));
  CHECK(from_log["warnings"] == nlohmann::json::array(
                                    {"the measured acceptance has 5 positions and the scenario drafts 3: positions 4-5 not "
                                     "used (set speculation.num_steps=5 to use them)"}));
  const auto text = specsim::test::run({"predict", "--acceptance-log", log});
  CHECK_THAT(text.out, Contains("warning: the measured acceptance has 5 positions and the scenario drafts 3: positions "
                                "4-5 not used"));
  // Drafting 5, all five are used and nothing is noted.
  const auto five = run_json({"predict", "--acceptance-log", log, "--json", "--set", "speculation.num_steps=5",
                              "--set", "speculation.num_draft_tokens=6"});
  CHECK_FALSE(five.contains("warnings"));
  // Drafting more than measured repeats the last conditional rate, and says so.
  const auto two = run_json({"predict", "--accept-per-position", "0.8,0.7", "--json"});
  CHECK(two["warnings"] == nlohmann::json::array(
                              {"the measured acceptance has 2 positions and the scenario drafts 3: position 3 repeats position 2's "
                               "conditional rate"}));
}

TEST_CASE("acceptance: JSON summary keys", "[acceptance][cli]") {
  const std::string log = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/logs/vllm_v1_pr24127.log";
  const auto j = run_json({"acceptance", log, "--json"});
  CHECK_THAT(j["tokens_per_cycle"].get<double>(), WithinRel(5.44, 1e-3));
  CHECK(j["per_position"].size() == 5);
  CHECK(j["lines"] == 1);
}

TEST_CASE("acceptance: mixed draft lengths and engines warn in text and JSON", "[acceptance][cli]") {
  const std::string dir = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/logs/";
  const auto j = run_json({"acceptance", dir + "vllm_v1_pr24127.log", dir + "llamacpp_pr24536.log", "--json"});
  REQUIRE(j["warnings"].size() == 2);
  CHECK_THAT(j["warnings"][0].get<std::string>(), Contains("positions 4-5 are left out"));
  const auto text = specsim::test::run({"acceptance", dir + "vllm_v1_pr24127.log", dir + "llamacpp_pr24536.log"});
  CHECK_THAT(text.out, Contains("warning: records log 3 to 5 per-position rates") &&
                           Contains("warning: lines from different engines pooled together"));
  // A /metrics scrape reads like a log.
  const auto m = run_json({"acceptance", dir + "vllm_metrics_pr24127_interval.prom", "--json"});
  CHECK_THAT(m["tokens_per_cycle"].get<double>(), WithinRel(1.0 + 262.0 / 59.0, 1e-9));
  CHECK(m["formats"] == "vllm-metrics");
}
