#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <thread>
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

// Whether the SIGINT handler stops being `before` within 10 s: the sweep started on another thread
// has installed its own.
bool handler_replaced(const struct sigaction& before) {
  for (int i = 0; i < 10000; ++i) {
    struct sigaction now {};
    sigaction(SIGINT, nullptr, &now);
    if (now.sa_handler != before.sa_handler) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
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
  // 1 + topk + (num_steps - 1) * topk^2 tokens, so many are skipped and counted.
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

TEST_CASE("sweep: a draft and acceptance grid takes the fast path and matches the model point by point",
          "[sweep]") {
  // Speed is bench/bench_predict.cpp's BM_Sweep (10^5 points; CI builds Debug, no timing here).
  std::vector<specsim::SweepAxis> axes{specsim::parse_vary("speculation.num_steps=1..4"),
                                       specsim::parse_vary("speculation.eagle_topk=1,2"),
                                       specsim::parse_vary("speculation.num_draft_tokens=2..9"),
                                       specsim::parse_vary("acceptance.accept=0.5,0.7,0.9")};
  const auto r = specsim::sweep(specsim::kDefaultScenario, {}, axes, kRoot);
  CHECK(r.fast_path);
  CHECK(r.total == 4 * 2 * 8 * 3);
  CHECK(r.evaluated == r.total);
  CHECK_FALSE(r.interrupted);
  // Valid shapes: chains (topk 1) verify num_steps + 1 tokens, one per num_steps = 4; SGLang trees
  // (topk 2) verify 2 .. 1 + topk + (num_steps - 1) topk^2 = 3, 7, 11, 15 tokens, of which 2..9
  // holds 2 + 6 + 8 + 8 = 24. (4 + 24) x 3 rates = 84.
  CHECK(r.points.size() == 84);
  CHECK(r.invalid == r.total - 84);
  const specsim::CycleModel model(specsim::load_scenario(specsim::kDefaultScenario, {}, kRoot));
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    const auto& p = r.points[i];
    if (i > 0) CHECK(p.tokens_per_s <= r.points[i - 1].tokens_per_s);
    specsim::DraftShape sp = model.scenario().speculation.shape;
    sp.num_steps = std::stoi(p.values[0]);
    sp.eagle_topk = std::stoi(p.values[1]);
    sp.num_draft_tokens = std::stoi(p.values[2]);
    const auto acc = specsim::with_accept_rate(model.scenario().acceptance, std::stod(p.values[3]));
    INFO(p.values[0] << " " << p.values[1] << " " << p.values[2] << " " << p.values[3]);
    CHECK_THAT(p.tokens_per_s, WithinRel(model.predict(sp, acc).spec_tokens_per_s, 1e-12));
  }
}

TEST_CASE("sweep: other keys reload the scenario, bad --vary values are errors", "[sweep]") {
  const auto j = run_json({"sweep", "--vary", "topology=8x-rtx-pro-6000-pcie5,8x-rtx-pro-6000-pcie5-switch", "--json"});
  CHECK(j["points"].size() == 2);
  const Run bad = run({"sweep", "--vary", "speculation.num_steps=a..b"});
  CHECK(bad.code == specsim::cli::kExitInput);
  CHECK_THAT(bad.err, Contains("--vary") && Contains("a range is two integers"));
  const Run word = run({"sweep", "--vary", "speculation.num_steps=two"});
  CHECK(word.code == specsim::cli::kExitInput);
  CHECK_THAT(word.err, Contains("--vary: speculation.num_steps: expected an integer, got 'two'"));
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

TEST_CASE("sweep: no valid point is an error on stderr naming the key, a key on two axes is refused",
          "[sweep][invalid]") {
  // An unknown key is refused before the grid runs (it once exited 0 with "plain decoding 0.0 tok/s").
  const Run unknown = run({"sweep", "--vary", "nosuch=1,2"});
  CHECK(unknown.code == specsim::cli::kExitInput);
  CHECK(unknown.out.empty());
  CHECK_THAT(unknown.err, Contains("--vary: nosuch: unknown key"));
  // A value out of a field's range is an error of the option, before the grid.
  const Run range = run({"sweep", "--vary", "speculation.num_steps=0,65", "--json"});
  CHECK(range.code == specsim::cli::kExitInput);
  CHECK(range.out.empty());
  CHECK_THAT(range.err, Contains("--vary: speculation.num_steps: = 0: must be in [1, 64]"));
  // Valid values, no valid combination: a tree of 2 steps x top-2 verifies at most 1 + 2 + 1 x 4 = 7 tokens.
  const Run shapes = run({"sweep", "--vary", "speculation.eagle_topk=2", "--vary", "speculation.num_steps=2",
                          "--vary", "speculation.num_draft_tokens=10,11", "--json"});
  CHECK(shapes.code == specsim::cli::kExitInput);
  CHECK(shapes.out.empty());
  CHECK_THAT(shapes.err, Contains("none of the 2 points is valid") &&
                             Contains("speculation.num_draft_tokens: = 10: must lie in [2, 1 + topk + (num_steps - 1) * topk^2] = [2, 7]"));
  const Run twice = run({"sweep", "--vary", "speculation.num_steps=1,2", "--vary", "speculation.num_steps=3,4"});
  CHECK(twice.code == specsim::cli::kExitInput);
  CHECK_THAT(twice.err, Contains("--vary: speculation.num_steps: given on two axes"));
}

TEST_CASE("sweep: a stop request returns the points done so far, best first", "[sweep]") {
  std::vector<specsim::SweepAxis> axes{specsim::parse_vary("speculation.num_steps=1..8"),
                                       specsim::parse_vary("speculation.eagle_topk=1,2,4,8"),
                                       specsim::parse_vary("speculation.num_draft_tokens=2..64")};
  std::atomic<bool> stop{false};
  // Progress is reported after each block of 256 points: stop at the first report. Other workers
  // finish the point they are on.
  const auto r = specsim::sweep(specsim::kDefaultScenario, {}, axes, kRoot,
                                [&](std::size_t, std::size_t) { stop = true; }, &stop);
  CHECK(r.interrupted);
  CHECK(r.total == 8 * 4 * 63);
  CHECK(r.evaluated >= 256);
  CHECK(r.evaluated < r.total);
  CHECK(r.points.size() + r.invalid == r.evaluated);
  REQUIRE_FALSE(r.points.empty());
  for (std::size_t i = 1; i < r.points.size(); ++i) CHECK(r.points[i].tokens_per_s <= r.points[i - 1].tokens_per_s);
}

TEST_CASE("sweep: keep bounds the points held, the counts and first invalid cover every point (issue 36)", "[sweep][memory]") {
  const auto same_point = [](const specsim::SweepPoint& a, const specsim::SweepPoint& b) {
    CHECK(a.values == b.values);
    CHECK(a.tokens_per_s == b.tokens_per_s);
    CHECK(a.infeasible == b.infeasible);
  };
  const auto same_counts = [](const specsim::SweepResult& a, const specsim::SweepResult& b) {
    CHECK(a.valid == b.valid);
    CHECK(a.invalid == b.invalid);
    CHECK(a.infeasible == b.infeasible);
    CHECK(a.evaluated == b.evaluated);
    CHECK(a.invalid_example == b.invalid_example);
    CHECK(a.baseline_tokens_per_s == b.baseline_tokens_per_s);
    CHECK(a.plain_low_tokens_per_s == b.plain_low_tokens_per_s);
    CHECK(a.plain_high_tokens_per_s == b.plain_high_tokens_per_s);
  };
  // The 2016-point draft grid (many invalid combinations, several workers): the top 3 kept alone are
  // the first 3 of every point sorted, ties in grid order either way.
  const std::vector<specsim::SweepAxis> draft{specsim::parse_vary("speculation.num_steps=1..8"),
                                              specsim::parse_vary("speculation.eagle_topk=1,2,4,8"),
                                              specsim::parse_vary("speculation.num_draft_tokens=2..64")};
  const auto all = specsim::sweep(specsim::kDefaultScenario, {}, draft, kRoot);
  const auto top = specsim::sweep(specsim::kDefaultScenario, {}, draft, kRoot, {}, nullptr, 3);
  REQUIRE(all.points.size() == all.valid);
  REQUIRE(top.points.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) same_point(top.points[i], all.points[i]);
  same_counts(top, all);
  CHECK(top.invalid > 0);
  // Batch 64 does not fit (cli test "mark points that do not fit"): 2 feasible points, then the first
  // infeasible one in grid order fills the third place, as in the full listing.
  const std::vector<specsim::SweepAxis> batch{specsim::parse_vary("workload.batch=1,64"),
                                              specsim::parse_vary("speculation.num_steps=2,3")};
  const auto all_b = specsim::sweep(specsim::kDefaultScenario, {}, batch, kRoot);
  const auto top_b = specsim::sweep(specsim::kDefaultScenario, {}, batch, kRoot, {}, nullptr, 3);
  REQUIRE(all_b.infeasible == 2);
  REQUIRE(top_b.points.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) same_point(top_b.points[i], all_b.points[i]);
  CHECK(top_b.points[2].values == std::vector<std::string>{"64", "2"});
  same_counts(top_b, all_b);
}

TEST_CASE("sweep: JSON and CSV list every point, the best N with --top, and refuse more than 10^6 without it", "[sweep][memory]") {
  const auto all = run_json({"sweep", "--vary", "speculation.num_steps=1..8", "--json"});
  const auto top = run_json({"sweep", "--vary", "speculation.num_steps=1..8", "--json", "--top", "2"});
  REQUIRE(all["points"].size() == 8);
  CHECK_FALSE(all.contains("valid"));
  REQUIRE(top["points"].size() == 2);
  CHECK(top["points"][0] == all["points"][0]);
  CHECK(top["points"][1] == all["points"][1]);
  CHECK(top["valid"] == 8);
  const Run csv = run({"sweep", "--vary", "speculation.num_steps=1..8", "--csv", "--top", "3"});
  REQUIRE(csv.code == 0);
  CHECK(std::count(csv.out.begin(), csv.out.end(), '\n') == 1 + 3);  // the header, 3 rows
  // 1001 x 1000 = 1,001,000 points, over the 10^6 a listing holds: refused before the grid runs
  // (at ~10 us a point it would run for seconds first).
  const auto started = std::chrono::steady_clock::now();
  const Run big = run({"sweep", "--vary", "workload.context=1000..2000", "--vary", "host.decode_per_step=1us..1000us:1000", "--json"});
  CHECK(big.code == specsim::cli::kExitUsage);
  CHECK_THAT(big.err, Contains("--json") && Contains("1001000 points exceed the 1000000") && Contains("--top N") &&
                         Contains("--stream"));
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
  CHECK(run({"sweep", "--vary", "workload.context=1000..2000", "--vary", "host.decode_per_step=1us..1000us:1000", "--csv"}).code ==
        specsim::cli::kExitUsage);
}

TEST_CASE("sweep: SIGINT prints the partial table and exits 130", "[sweep][signal]") {
  // 2,000,000 points take seconds even on sweep's fast path; SIGINT is sent as soon as the sweep's
  // handler is in place, so only the first points are done.
  const std::string values = "1000ns..3000ns:2000000";
  struct sigaction before {};
  REQUIRE(sigaction(SIGINT, nullptr, &before) == 0);
  auto result = std::async(std::launch::async, [&] { return run({"sweep", "--vary", "compute.kernel_floor=" + values}); });
  REQUIRE(handler_replaced(before));
  REQUIRE(kill(getpid(), SIGINT) == 0);
  const Run r = result.get();
  CHECK(r.code == specsim::cli::kExitInterrupted);
  CHECK_THAT(r.out, Contains("specsim sweep: INTERRUPTED after ") && Contains(" of 2000000 points") &&
                        Contains("compute.kernel_floor  tok/s"));
  CHECK_THAT(r.err, Contains("sweep interrupted (SIGINT) after"));
  // The previous handler is back.
  struct sigaction after {};
  sigaction(SIGINT, nullptr, &after);
  CHECK(after.sa_handler == before.sa_handler);
}

TEST_CASE("sweep: axes that move plain decoding show the plain rate per row", "[sweep]") {
  // kernel_floor is a per-kernel GPU cost: the plain step pays it too, while the host time stays
  // calibrated on the file's value. A draft-only axis leaves one plain rate for the grid.
  const Run moved = run({"sweep", "--vary", "compute.kernel_floor=1us,10us"});
  REQUIRE(moved.code == 0);
  CHECK_THAT(moved.out, Contains("(per row)") && Contains("plain tok/s"));
  const Run draft = run({"sweep", "--vary", "speculation.num_steps=2,3"});
  REQUIRE(draft.code == 0);
  CHECK_THAT(draft.out, Contains("plain decoding 82.0 tok/s\n"));
  CHECK_THAT(draft.out, !Contains("plain tok/s"));
  const auto j = run_json({"sweep", "--vary", "compute.kernel_floor=1us,10us", "--json"});
  REQUIRE(j["points"].size() == 2);
  CHECK(j["points"][0]["baseline_tokens_per_s"].get<double>() > j["points"][1]["baseline_tokens_per_s"].get<double>());
}

TEST_CASE("rank: an intervention with several bad values names them all (issue 14)", "[rank][invalid]") {
  specsim::InterventionCatalogue catalogue;
  catalogue.name = "two broken values";
  specsim::Intervention iv;
  iv.name = "broken";
  iv.patches = {"workload.batch=0", "parallel.tp=3"};
  catalogue.interventions.push_back(iv);
  const auto report = specsim::rank(specsim::kDefaultScenario, {}, catalogue, kRoot, 4);
  // The catalogue's one entry, beside those the default box's topology file adds.
  const auto broken = std::find_if(report.ranked.begin(), report.ranked.end(),
                                   [](const specsim::RankedIntervention& r) { return r.intervention.name == "broken"; });
  REQUIRE(broken != report.ranked.end());
  CHECK_FALSE(broken->feasible);
  // Batch 0 against its bound, tp = 3 against the 64 attention heads of Kimi K2.5 and of its
  // EAGLE-3 head (the draft runs at the target's TP): one reason, every line.
  CHECK_THAT(broken->reason, Contains("3 problems:") && Contains("--set workload.batch=0: workload.batch") &&
                                          Contains("--set parallel.tp=3: parallel.tp: tp = 3 on kimi-k2.5:") &&
                                          Contains("--set parallel.tp=3: parallel.tp: tp = 3 on kimi-k2.5-eagle3:"));
}

namespace {

// The lines of `text`, each with its newline.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line + "\n");
  return lines;
}

}  // namespace

TEST_CASE("sweep --stream: the CSV rows the listing prints, byte for byte, in grid order", "[sweep][stream]") {
  // Batch 64 does not fit (2 of the 4 points are INFEASIBLE rows); accept moves the figures.
  for (const std::vector<std::string>& axes :
       {std::vector<std::string>{"--vary", "speculation.num_steps=1..3", "--vary", "acceptance.accept=0.6,0.8"},
        std::vector<std::string>{"--vary", "workload.batch=1,64", "--vary", "speculation.num_steps=2,3"}}) {
    std::vector<std::string> args = {"sweep"};
    args.insert(args.end(), axes.begin(), axes.end());
    args.push_back("--csv");
    const Run listed = run(args);
    args.push_back("--stream");
    const Run streamed = run(args);
    REQUIRE(listed.code == 0);
    REQUIRE(streamed.code == 0);
    CHECK(streamed.err == listed.err);  // the INFEASIBLE count on stderr, as before
    const auto want = lines_of(listed.out);
    auto got = lines_of(streamed.out);
    const bool batch = axes[1] == "workload.batch=1,64";
    REQUIRE(got.size() == want.size());
    REQUIRE(got.size() == (batch ? 1u + 4 : 1u + 6));  // the header, then 4 or 6 points
    CHECK(got.front() == want.front());  // the header
    // Grid order: the odometer over the axes, the last fastest (1,0.6 / 1,0.8 / 2,0.6 ... or
    // 1,2 / 1,3 / 64,2 / 64,3).
    std::vector<std::string> order;
    for (std::size_t i = 1; i < got.size(); ++i) order.push_back(got[i].substr(0, got[i].find(',', got[i].find(',') + 1)));
    if (batch) {
      CHECK(order == std::vector<std::string>{"1,2", "1,3", "64,2", "64,3"});
    } else {
      CHECK(order == std::vector<std::string>{"1,0.6", "1,0.8", "2,0.6", "2,0.8", "3,0.6", "3,0.8"});
    }
    // The same rows as the best-first listing, each byte for byte.
    std::sort(got.begin() + 1, got.end());
    auto sorted_want = want;
    std::sort(sorted_want.begin() + 1, sorted_want.end());
    CHECK(got == sorted_want);
  }
}

TEST_CASE("sweep --stream: JSON with order grid, the listing's points and counts", "[sweep][stream]") {
  const std::vector<std::string> grid = {"sweep", "--vary", "workload.batch=1,64", "--vary", "speculation.num_steps=2,3",
                                         "--json"};
  nlohmann::json listed = run_json(grid);
  std::vector<std::string> args = grid;
  args.push_back("--stream");
  nlohmann::json streamed = run_json(args);
  CHECK(streamed["order"] == "grid");
  REQUIRE(streamed["points"].size() == 4);
  CHECK(streamed["points"][0]["set"]["workload.batch"] == "1");
  CHECK(streamed["points"][2]["feasible"] == false);  // batch 64, in grid order
  auto sorted = [](nlohmann::json points) {
    std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.dump() < b.dump(); });
    return points;
  };
  CHECK(sorted(streamed["points"]) == sorted(listed["points"]));
  // Every other key as the listing gives it (baseline, invalid, invalid_example, infeasible).
  streamed.erase("points");
  streamed.erase("order");
  listed.erase("points");
  CHECK(streamed == listed);
  CHECK(streamed["infeasible"] == 2);
  // The library hands the points over in grid order, the same ones a full sweep keeps.
  const std::vector<specsim::SweepAxis> axes{specsim::parse_vary("workload.batch=1,64"),
                                             specsim::parse_vary("speculation.num_steps=2,3")};
  std::vector<specsim::SweepPoint> handed;
  const auto r = specsim::sweep(specsim::kDefaultScenario, {}, axes, kRoot, {}, nullptr, 0,
                                [&handed](const specsim::SweepPoint& p) { handed.push_back(p); });
  CHECK(r.points.empty());  // keep 0: nothing held
  REQUIRE(handed.size() == 4);
  CHECK(handed[1].values == std::vector<std::string>{"1", "3"});
  CHECK(handed[3].infeasible != "");
  CHECK(r.valid == 4);
  CHECK(r.infeasible == 2);
}

TEST_CASE("sweep --stream: only with CSV or JSON, not with --top, --emit or concurrency levels", "[sweep][stream]") {
  const std::vector<std::string> grid = {"sweep", "--vary", "speculation.num_steps=1..3", "--stream"};
  auto with = [&grid](std::vector<std::string> extra) {
    std::vector<std::string> args = grid;
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  };
  const Run text = with({});
  CHECK(text.code == specsim::cli::kExitUsage);
  CHECK_THAT(text.err, Contains("--stream") && Contains("give --csv or --json"));
  CHECK(with({"--csv", "--top", "2"}).code == specsim::cli::kExitUsage);
  CHECK_THAT(with({"--json", "--emit", "vllm"}).err, Contains("--emit needs the best point"));
  CHECK_THAT(with({"--csv", "--concurrency", "1,4"}).err, Contains("a concurrency sweep prints a row per level"));
}

TEST_CASE("sweep -o: the output goes to the file atomically, and inputs and failed writes leave files as they were",
          "[sweep][output]") {
  specsim::test::TempDir dir("specsim_test_sweep_output");
  const std::string grid_csv = (dir.path / "grid.csv").string();
  const std::vector<std::string> grid = {"sweep", "--vary", "speculation.num_steps=1..3", "--vary",
                                         "acceptance.accept=0.6,0.8", "--csv", "--stream"};
  const Run printed = run(grid);
  std::vector<std::string> args = grid;
  args.insert(args.end(), {"-o", grid_csv});
  const Run written = run(args);
  REQUIRE(written.code == 0);
  CHECK(written.out.empty());
  CHECK(specsim::test::read_text(grid_csv) == printed.out);
  // The listing and the text go to a file too.
  const Run text = run({"sweep", "--vary", "speculation.num_steps=1..3", "-o", grid_csv});
  REQUIRE(text.code == 0);
  CHECK_THAT(specsim::test::read_text(grid_csv), Contains("specsim sweep: 3 valid"));
  // The scenario read is refused as the output, by name or by path; it stays as it was.
  const std::string scenario = std::string(SPECSIM_SOURCE_DIR) + "/models/scenarios/" + specsim::kDefaultScenario + ".yaml";
  const std::string before = specsim::test::read_text(scenario);
  const Run own = run({"sweep", "--vary", "speculation.num_steps=1..3", "--csv", "--stream", "-o", scenario});
  CHECK(own.code == specsim::cli::kExitInput);
  CHECK_THAT(own.err, Contains("is the input") && Contains("of this command"));
  CHECK(specsim::test::read_text(scenario) == before);
  // A value of --vary that names a file is an input too.
  const std::string model = std::string(SPECSIM_SOURCE_DIR) + "/models/llm/llama-3.1-8b.yaml";
  CHECK(run({"sweep", "--vary", "model=" + model, "--csv", "-o", model}).code == specsim::cli::kExitInput);
  // 1,001,000 points, which the best-first listing refuses, are accepted streamed; a write that
  // fails stops the grid at the first full buffer (64 KiB, ~1000 rows), not after it ran.
  const auto started = std::chrono::steady_clock::now();
  const Run full = run({"sweep", "--vary", "workload.context=1000..2000", "--vary", "host.decode_per_step=1us..1000us:1000",
                        "--csv", "--stream", "-o", "/dev/full", "--force"});
  CHECK(full.code == specsim::cli::kExitInput);
  CHECK_THAT(full.err, Contains("-o /dev/full: write failed: No space left on device"));
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(60));
}

TEST_CASE("sweep --stream -o: SIGINT keeps the points done in a complete JSON file and exits 130",
          "[sweep][signal][stream]") {
  specsim::test::TempDir dir("specsim_test_sweep_sigint");
  const std::string out = (dir.path / "grid.json").string();
  // 2,000,000 points take seconds even on sweep's fast path (about 5 us a point), far more than the
  // 200 ms the test waits before SIGINT.
  const std::string values = "1000ns..3000ns:2000000";
  struct sigaction before {};
  REQUIRE(sigaction(SIGINT, nullptr, &before) == 0);
  auto result = std::async(std::launch::async, [&] {
    return run({"sweep", "--vary", "compute.kernel_floor=" + values, "--json", "--stream", "-o", out});
  });
  REQUIRE(handler_replaced(before));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // a few points first
  REQUIRE(kill(getpid(), SIGINT) == 0);
  const Run r = result.get();
  CHECK(r.code == specsim::cli::kExitInterrupted);
  CHECK_THAT(r.err, Contains("sweep interrupted (SIGINT) after") && Contains("written to " + out));
  const auto j = nlohmann::json::parse(specsim::test::read_text(out));
  CHECK(j["interrupted"] == true);
  CHECK(j["total"] == 2000000);
  CHECK(j["evaluated"].get<std::size_t>() < 2000000);
  // Every point evaluated is in the file (none is invalid here).
  CHECK(j["points"].size() == j["evaluated"].get<std::size_t>());
}
