#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <chrono>
#include <sstream>

#include "cli.hpp"
#include "cli_run.hpp"
#include "specsim/load.hpp"
#include "specsim/whatif.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

using specsim::test::run;
using Run = specsim::test::Result;

nlohmann::json run_json(std::vector<std::string> args) {
  const Run r = run(std::move(args));
  INFO(r.err);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(r.out);
}
}  // namespace

TEST_CASE("rank: the default catalogue, Tree with graph capture infeasible, a plan", "[rank]") {
  const auto j = run_json({"rank", "--json"});
  const auto& list = j["interventions"];
  REQUIRE(list.size() >= 15);
  bool tree_seen = false;
  double previous = 1e300;
  bool feasible_block = true;
  for (const auto& e : list) {
    for (const char* k : {"name", "tokens_per_s", "gain", "feasible", "reason"}) CHECK(e.contains(k));
    if (e["name"] == "nccl-algo-tree") {
      tree_seen = true;
      CHECK_FALSE(e["feasible"].get<bool>());
      CHECK_THAT(e["reason"].get<std::string>(), Contains("CUDA graph capture"));
    }
    // Feasible ones come first, sorted by gain.
    if (!e["feasible"].get<bool>()) {
      feasible_block = false;
      continue;
    }
    CHECK(feasible_block);
    CHECK(e["gain"].get<double>() <= previous);
    previous = e["gain"].get<double>();
  }
  CHECK(tree_seen);
  // Each gain is the intervention's tokens/s minus the scenario's own.
  const double now = j["scenario_tokens_per_s"].get<double>();
  CHECK_THAT(list[0]["gain"].get<double>(), WithinRel(list[0]["tokens_per_s"].get<double>() - now, 1e-9));
  // The calibrated story: 172 us of eager overhead sits in each verify all-reduce, so capturing
  // the verify in a CUDA graph is the first thing to try.
  CHECK(list[0]["name"] == "cuda-graph-verify");
  REQUIRE(j["path"].size() >= 1);
  CHECK(j["path"][0]["name"] == "cuda-graph-verify");
  // Each plan step gains over the previous one.
  double level = now;
  for (const auto& step : j["path"]) {
    CHECK(step["tokens_per_s"].get<double>() > level);
    level = step["tokens_per_s"].get<double>();
  }
}

TEST_CASE("rank: an intervention's prediction equals predict with its patches", "[rank]") {
  const auto j = run_json({"rank", "--json", "--path-steps", "0"});
  for (const auto& e : j["interventions"]) {
    if (!e["feasible"].get<bool>()) continue;
    std::vector<std::string> args{"predict", "--json"};
    for (const auto& p : e["patches"]) {
      args.push_back("--set");
      args.push_back(p.get<std::string>());
    }
    INFO(e["name"]);
    CHECK_THAT(run_json(args)["speculative"]["tokens_per_s"].get<double>(),
               WithinRel(e["tokens_per_s"].get<double>(), 1e-12));
  }
}

TEST_CASE("sweep: the draft grid agrees point by point with predict", "[sweep]") {
  const auto j = run_json({"sweep", "--vary", "speculation.num_steps=1..8", "--vary", "speculation.eagle_topk=1,2,4,8",
                           "--vary", "speculation.num_draft_tokens=2..64", "--json"});
  const auto& points = j["points"];
  // 8 x 4 x 63 = 2016 combinations; chains need num_draft_tokens = num_steps + 1 and trees at most
  // 1 + num_steps * topk^2 tokens, so many are skipped and counted.
  CHECK(points.size() + j["invalid"].get<std::size_t>() == 2016);
  REQUIRE(points.size() > 100);
  for (std::size_t i = 1; i < points.size(); ++i) {
    CHECK(points[i]["tokens_per_s"].get<double>() <= points[i - 1]["tokens_per_s"].get<double>());
  }
  // Every 40th point through the whole-process path.
  for (std::size_t i = 0; i < points.size(); i += 40) {
    const auto& set = points[i]["set"];
    const auto p = run_json({"predict", "--json", "--set", "speculation.num_steps=" + set["speculation.num_steps"].get<std::string>(),
                             "--set", "speculation.eagle_topk=" + set["speculation.eagle_topk"].get<std::string>(),
                             "--set", "speculation.num_draft_tokens=" + set["speculation.num_draft_tokens"].get<std::string>()});
    INFO(set.dump());
    CHECK_THAT(p["speculative"]["tokens_per_s"].get<double>(), WithinRel(points[i]["tokens_per_s"].get<double>(), 1e-12));
  }
}

TEST_CASE("sweep: 10^5 configurations in under a second", "[sweep][perf]") {
  std::vector<specsim::SweepAxis> axes{specsim::parse_vary("speculation.num_steps=1..8"),
                                       specsim::parse_vary("speculation.eagle_topk=1,2,4,8"),
                                       specsim::parse_vary("speculation.num_draft_tokens=2..64"),
                                       specsim::parse_vary("acceptance.accept=0..49")};
  for (auto& v : axes[3].values) v = std::to_string(0.5 + std::stoi(v) * 0.01);  // 0.50 .. 0.99
#ifndef NDEBUG
  axes[3].values.resize(5);  // unoptimised builds time a tenth of the grid; the bar is for release
#endif
  const auto start = std::chrono::steady_clock::now();
  const auto r = specsim::sweep(specsim::kDefaultScenario, {}, axes, kRoot);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(r.points.size() + r.invalid == 8 * 4 * 63 * axes[3].values.size());
  CHECK(r.fast_path);
  WARN("sweep of " << 8 * 4 * 63 * axes[3].values.size() << " configurations: " << s << " s");
#ifdef NDEBUG
  CHECK(s < 1.0);
#endif
}

TEST_CASE("sweep: other keys reload the scenario, bad --vary values are errors", "[sweep]") {
  const auto j = run_json({"sweep", "--vary", "topology=8x-rtx-pro-6000-pcie5,8x-rtx-pro-6000-pcie5-switch", "--json"});
  CHECK(j["points"].size() == 2);
  const Run bad = run({"sweep", "--vary", "speculation.num_steps=a..b"});
  CHECK(bad.code == specsim::cli::kExitInput);
  CHECK_THAT(bad.err, Contains("--vary") && Contains("a range is two integers"));
  const Run word = run({"sweep", "--vary", "speculation.num_steps=two"});
  CHECK(word.code == specsim::cli::kExitInput);
  CHECK_THAT(word.err, Contains("'two' is not a count"));
}

TEST_CASE("patches: --set key*=factor scales the current value with its unit", "[set]") {
  // kernel_floor is 1.3us in the default scenario: *=2 gives 2.6us.
  const auto s = specsim::load_scenario(specsim::kDefaultScenario, {"compute.kernel_floor*=2"}, kRoot);
  CHECK_THAT(s.compute.kernel_floor_s, WithinRel(2.6e-6, 1e-12));
  CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, {"comm.scale*=2"}, kRoot),
                    Contains("cannot scale a key the scenario does not set"));
  CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, {"compute.kernel_floor*=x"}, kRoot),
                    Contains("expected a non-negative factor"));
}
