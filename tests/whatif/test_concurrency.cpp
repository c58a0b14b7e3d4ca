#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <atomic>
#include <fstream>
#include <sstream>

#include "cli_run.hpp"
#include "specsim/concurrency.hpp"
#include "specsim/cycle.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/prior_band.hpp"
#include "specsim/whatif.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
const std::string kHome = specsim::kDefaultScenario;  // batch 1, measured plain 82 tok/s
// All fit on the home scenario (32: 102.0 of 102.6 GB per GPU); 64 does not: 74.5 GB of target and
// draft weights + 64 x 0.305 GB of KV (4100 tokens x 70 KB of MLA state, target and draft) + 17.8 GB
// reserve = 111.8 GB > 102.6 GB. The 1,4,16,64 is the infeasible case below.
const std::vector<int> kLevels{1, 4, 16, 32};
const std::string kLevelsText = "1,4,16,32";

using specsim::test::run;

specsim::ConcurrencyPrediction home_levels(const std::string& levels, std::vector<std::string> patches = {}) {
  patches.push_back("workload.concurrency=" + levels);
  return specsim::predict_concurrency(specsim::load_scenario(kHome, patches, kRoot));
}

// The home scenario with `workload.concurrency: [2, 8]` in its file, written under `dir`.
std::string home_with_levels_file(const std::filesystem::path& dir) {
  std::ifstream in(kRoot.resolve(specsim::DataKind::kScenario, kHome));
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  const std::string workload = "workload:\n";
  yaml.insert(yaml.find(workload) + workload.size(), "  concurrency: [2, 8]\n");
  const auto path = dir / "home-with-levels.yaml";
  std::ofstream(path) << yaml;
  return path.string();
}
}  // namespace

TEST_CASE("concurrency: each level is plain predict at batch = c, on the calibration at the file's batch",
          "[concurrency]") {
  const auto cp = home_levels(kLevelsText);
  CHECK(cp.calibrated_batch == 1);
  REQUIRE(cp.levels.size() == kLevels.size());
  for (std::size_t i = 0; i < kLevels.size(); ++i) {
    const int c = kLevels[i];
    const auto& l = cp.levels[i];
    INFO("concurrency " << c);
    REQUIRE(l.concurrency == c);
    REQUIRE(l.feasible());
    // `predict --set workload.batch=c`: the loader keeps the file's scenario as as_measured, so its
    // calibration runs at batch 1 too; the two must agree to rounding.
    const specsim::CycleModel at_c(specsim::load_scenario(kHome, {"workload.batch=" + std::to_string(c)}, kRoot));
    const auto p = at_c.predict();
    CHECK_THAT(l.plain_aggregate_tokens_per_s, WithinRel(p.baseline_tokens_per_s, 1e-12));
    CHECK_THAT(l.spec_aggregate_tokens_per_s, WithinRel(p.spec_tokens_per_s, 1e-12));
    CHECK_THAT(l.speedup, WithinRel(p.speedup, 1e-12));
  }
  // At c = the scenario's batch (1) the level is plain `predict`: host time is calibrated so that
  // plain decoding reproduces the measured 82 tok/s.
  const specsim::CycleModel plain(specsim::load_scenario(kHome, {}, kRoot));
  const auto p = plain.predict();
  CHECK_THAT(cp.levels[0].plain_aggregate_tokens_per_s, WithinRel(p.baseline_tokens_per_s, 1e-12));
  CHECK_THAT(cp.levels[0].spec_aggregate_tokens_per_s, WithinRel(p.spec_tokens_per_s, 1e-12));
  CHECK_THAT(cp.levels[0].plain_aggregate_tokens_per_s, WithinRel(82.0, 1e-9));
}

TEST_CASE("concurrency: measured at batch 32, the level c = 32 is plain predict, others reuse its calibration",
          "[concurrency]") {
  // A validation row measured at batch 32 (AngelSlim issue 163, Qwen3-30B-A3B on 4x H100): plain
  // predict gives 1128.3 and 1262.6 tok/s there (SGLang's custom all-reduce rule, comm.implementation
  // engine); the level c = 32 must be the same prediction.
  const std::string row = std::string(SPECSIM_SOURCE_DIR) +
                          "/validation/angelslim-issue-163-4xh100/as163-qwen3-30b-a3b-eagle3-tp4-bs32-4-4-16.yaml";
  const auto cp = specsim::predict_concurrency(specsim::load_scenario(row, {"workload.concurrency=1,32,128"}, kRoot));
  CHECK(cp.calibrated_batch == 32);
  REQUIRE(cp.levels.size() == 3);
  const specsim::CycleModel plain(specsim::load_scenario(row, {}, kRoot));
  const auto p = plain.predict();
  const auto& at_32 = cp.levels[1];
  REQUIRE(at_32.concurrency == 32);
  CHECK_THAT(at_32.plain_aggregate_tokens_per_s, WithinRel(p.baseline_tokens_per_s, 1e-12));
  CHECK_THAT(at_32.spec_aggregate_tokens_per_s, WithinRel(p.spec_tokens_per_s, 1e-12));
  CHECK_THAT(at_32.spec_aggregate_tokens_per_s, WithinRel(1257.8, 1e-4));  // validate's as163 bs32 row
  // The other levels are `--set workload.batch=c` on the same file: calibrated at 32 too.
  const specsim::CycleModel at_1(specsim::load_scenario(row, {"workload.batch=1"}, kRoot));
  CHECK_THAT(cp.levels[0].spec_aggregate_tokens_per_s, WithinRel(at_1.predict().spec_tokens_per_s, 1e-12));
}

TEST_CASE("concurrency: per request = 1/T_step and tau/T_cycle, aggregate = c x per request, tau fixed",
          "[concurrency]") {
  const auto cp = home_levels(kLevelsText);
  const double tau = cp.levels.front().tokens_per_cycle;
  for (const auto& l : cp.levels) {
    INFO("concurrency " << l.concurrency);
    const double c = l.concurrency;
    // Plain: one token per request per step; speculative: tau tokens per request per cycle.
    CHECK_THAT(l.plain_per_request_tokens_per_s(), WithinRel(1.0 / l.plain_step_s, 1e-12));
    CHECK_THAT(l.spec_per_request_tokens_per_s(), WithinRel(l.tokens_per_cycle / l.cycle_s, 1e-12));
    CHECK_THAT(l.plain_aggregate_tokens_per_s, WithinRel(c / l.plain_step_s, 1e-12));
    CHECK_THAT(l.spec_aggregate_tokens_per_s, WithinRel(c * l.tokens_per_cycle / l.cycle_s, 1e-12));
    CHECK_THAT(l.speedup, WithinRel(l.spec_aggregate_tokens_per_s / l.plain_aggregate_tokens_per_s, 1e-12));
    // Acceptance is per request: the same tau at every level.
    CHECK_THAT(l.tokens_per_cycle, WithinRel(tau, 1e-12));
  }
}

TEST_CASE("concurrency: each level carries predict's band at batch = c, the transfers none", "[concurrency][band]") {
  const auto cp = home_levels(kLevelsText);
  for (const auto& l : cp.levels) {
    INFO("concurrency " << l.concurrency);
    REQUIRE(l.has_band());
    // The same draws as `predict --set workload.batch=c` shows (prediction_band, seeds 1 and 2).
    const specsim::CycleModel at_c(
        specsim::load_scenario(kHome, {"workload.batch=" + std::to_string(l.concurrency)}, kRoot));
    const auto p = at_c.predict();
    const auto band = specsim::prediction_band(at_c, p);
    CHECK(l.spec_p10_aggregate_tokens_per_s == band.p10_tokens_per_s);
    CHECK(l.spec_p90_aggregate_tokens_per_s == band.p90_tokens_per_s);
    CHECK(l.spec_p10_aggregate_tokens_per_s < l.spec_aggregate_tokens_per_s);
    CHECK(l.spec_p90_aggregate_tokens_per_s > l.spec_aggregate_tokens_per_s);
  }
  // At c = 1 the band is predict's on the file: 43.3 - 60.5 tok/s around 54.6 (README's home figures).
  CHECK_THAT(cp.levels[0].spec_p10_aggregate_tokens_per_s, WithinRel(43.3, 0.01));
  CHECK_THAT(cp.levels[0].spec_p90_aggregate_tokens_per_s, WithinRel(60.5, 0.01));
  // The corpus's batch transfers compare plain rates only: no band is drawn there.
  const auto skipped = specsim::predict_concurrency(
      specsim::load_scenario(kHome, {"workload.concurrency=" + kLevelsText}, kRoot), specsim::LevelBands::kSkip);
  for (const auto& l : skipped.levels) {
    CHECK_FALSE(l.has_band());
    CHECK(l.spec_aggregate_tokens_per_s == cp.levels[&l - skipped.levels.data()].spec_aggregate_tokens_per_s);
  }
}

TEST_CASE("concurrency: an end-to-end plain rate warns that its residual is charged unchanged at every level",
          "[concurrency][warning]") {
  // SpecForge issue 339 (Qwen3-30B-A3B, 2x H100, batch 1): the plain rate is output tokens over wall
  // time with no TPOT or lengths. Its 480 us per output token beyond the forward is read at batch 1.
  const std::string row = std::string(SPECSIM_SOURCE_DIR) + "/validation/specforge-issue-339-2xh100/sf339-qwen3-30b-a3b-eagle3-tp2-bs1-3-1-4.yaml";
  const auto levels = [&](const std::string& list) {
    return specsim::predict_concurrency(specsim::load_scenario(row, {"workload.concurrency=" + list}, kRoot));
  };
  const auto count = [](const std::vector<std::string>& ws, const std::string& part) {
    return std::count_if(ws.begin(), ws.end(), [&](const std::string& w) { return w.find(part) != std::string::npos; });
  };
  const auto far = levels("1,32");
  // The calibration's own warning (the two readings), once for both levels, then the transfer's.
  CHECK(count(far.warnings, "the plain rate is end to end with no TPOT") == 1);
  CHECK(count(far.warnings, "is end to end (prefill included): 480 us per output token") == 1);
  CHECK(count(far.warnings, "charged unchanged at every level") == 1);
  CHECK(count(far.warnings, "or the plain benchmark's mean TPOT with its prompt and output lengths") == 1);
  CHECK_THAT(far.warnings.back(), Contains("docs/validation.md#batch-transfer"));
  // A concurrency sweep carries the same calibration to each level, with the same warnings.
  const auto sweep = specsim::sweep_by_concurrency(row, {"workload.concurrency=1,32"}, {}, kRoot);
  CHECK(sweep.warnings == far.warnings);
  const auto swept = run({"sweep", "--scenario", row, "--concurrency", "1,32", "--json"});
  REQUIRE(swept.code == 0);
  CHECK(nlohmann::json::parse(swept.out)["warnings"] == far.warnings);
  CHECK_THAT(run({"sweep", "--scenario", row, "--concurrency", "1,32"}).out,
             Contains("\n  warning: the plain rate at batch 1 is end to end (prefill included)"));
  // Only the measured batch: nothing is carried anywhere.
  const auto here = levels("1");
  CHECK(count(here.warnings, "charged unchanged at every level") == 0);
  CHECK(count(here.warnings, "the plain rate is end to end with no TPOT") == 1);

  // With the stated lengths and no TPOT (PR 10, MiniMax-M2.7 NVFP4 on 2 RTX PRO 6000, 2048 prompt and
  // 512 output tokens): the priced prefill, 320 us per output token at batch 1, is scaled to each
  // level; the rest, 516 us, is carried as read.
  const std::string pr10 =
      std::string(SPECSIM_SOURCE_DIR) + "/validation/rtx6kpro-pr10-minimax-m27-2x/pr10-minimax-m27-nvfp4-eagle3-tp2-c1-random2k512.yaml";
  const auto priced = specsim::predict_concurrency(specsim::load_scenario(pr10, {"workload.concurrency=1,8"}, kRoot));
  CHECK(count(priced.warnings, "of the 837 us per output token it holds beyond the forwards, the stated prompts' "
                               "prefill (320 us) is scaled to each level's batch, and the rest (516 us: batch tails, "
                               "or host work) is read at batch 1 and charged unchanged at every level") == 1);
  CHECK(count(priced.warnings, "or the plain benchmark's mean TPOT, would settle it") == 1);
  // With the plain benchmark's TPOT as well (vLLM scripts, Qwen3-32B, batch 1: 34.17 ms against an
  // end-to-end 34.25 ms), the 100 us per output token it leaves is all the priced prefill: scaled,
  // nothing is carried as read, and nothing is said.
  const std::string vscripts =
      std::string(SPECSIM_SOURCE_DIR) + "/validation/vllm-scripts-qwen3-32b-h100/vscripts-qwen3-32b-draft1.7b-k3-c1-mtbench.yaml";
  const auto tpot = specsim::predict_concurrency(specsim::load_scenario(vscripts, {"workload.concurrency=1,16"}, kRoot));
  CHECK(count(tpot.warnings, "charged unchanged at every level") == 0);
  // Without its lengths, the same residual is batch tails and prefill unpriced: carried as read, and
  // only a rate at a level settles it.
  const specsim::test::TempDir tmp("specsim-concurrency-tpot");
  const auto file = tmp.path / "no-lengths.yaml";
  std::string text = specsim::test::read_text(vscripts);
  for (const std::string key : {"    prompt_tokens:", "    output_tokens:"}) {
    const auto at = text.find(key);
    REQUIRE(at != std::string::npos);
    text.erase(at, text.find('\n', at) + 1 - at);
  }
  std::ofstream(file) << text;
  const auto unpriced =
      specsim::predict_concurrency(specsim::load_scenario(file.string(), {"workload.concurrency=1,16"}, kRoot));
  REQUIRE(count(unpriced.warnings, "charged unchanged at every level") == 1);
  CHECK(count(unpriced.warnings, "(prefill, batch tails) read at batch 1") == 1);
  CHECK(count(unpriced.warnings, "the plain rate measured at one of the levels would settle it") == 1);

  // A plain step time (the home scenario's 82 tok/s is a decode rate): no transfer warning.
  CHECK(count(home_levels(kLevelsText).warnings, "charged unchanged") == 0);
}

TEST_CASE("concurrency: the priced prefill of an end-to-end rate grows with the level's batch", "[concurrency][rules]") {
  // vLLM scripts, Qwen3-32B on one H100 at batch 1: the end-to-end step (34.25 ms) less the TPOT
  // (34.17 ms) leaves ~100 us per output token, all of it the stated prompt's prefill (76 tokens over
  // 256 output tokens). At batch 16 each step carries 16 / 256 prefills instead of 1 / 256: the
  // charge per output token is 16 times, 1.5 ms more per step; with the rule off it stays.
  const std::string row =
      std::string(SPECSIM_SOURCE_DIR) + "/validation/vllm-scripts-qwen3-32b-h100/vscripts-qwen3-32b-draft1.7b-k3-c1-mtbench.yaml";
  const auto at = [&](int batch, bool rule) {
    specsim::Scenario s = specsim::load_scenario(row, {"workload.batch=" + std::to_string(batch)}, kRoot);
    s.rules.prefill_scales_with_batch = rule;
    return specsim::CycleModel(std::move(s));
  };
  const auto one = at(1, true);
  const double prefill = one.calibration().prefill_per_output_token_s;
  CHECK(one.calibration().calibrated_batch == 1);
  CHECK(prefill == one.calibration().host_per_output_token_s);  // the whole residual is priced prefill
  CHECK_THAT(prefill, WithinRel(1.0e-4, 0.05));
  CHECK(at(1, false).calibration().host_decode_s.value == one.calibration().host_decode_s.value);
  const auto sixteen = at(16, true);
  const auto kept = at(16, false);
  CHECK_THAT(sixteen.calibration().host_per_output_token_s, WithinRel(16.0 * prefill, 1e-12));
  CHECK_THAT(sixteen.calibration().host_decode_s.value - kept.calibration().host_decode_s.value,
             WithinRel(15.0 * prefill, 1e-9));
  CHECK_THAT(sixteen.calibration().host_decode_s.origin, Contains("at batch 16 the priced prefill"));
  CHECK(sixteen.predict().baseline_tokens_per_s < kept.predict().baseline_tokens_per_s);
  // The speculative cycle pays the per-output-token part tau times: it grows by 15 x prefill x tau.
  const auto p = sixteen.predict();
  const auto q = kept.predict();
  CHECK_THAT(p.cycle_s - q.cycle_s, WithinRel(15.0 * prefill * p.tokens_per_cycle, 1e-9));
}

TEST_CASE("concurrency: on the home scenario each request gets slower as c rises", "[concurrency]") {
  // A larger batch reads the same weights once for more requests, but more KV, bigger all-reduces and
  // c x (k + 1) verify tokens per cycle: per-request rates fall, the aggregate rises.
  // Predicted per request, c = 1, 4, 16, 32: plain 82.0, 60.1, 29.2, 19.9 tok/s; speculative 56.8,
  // 44.7, 29.8, 22.1 tok/s; speculative aggregate 56.8, 178.8, 477.1, 706.4 tok/s. The skew
  // calibrated on one request's verify does not join different requests' tokens: 4 requests decode
  // over 4 routing draws, 31.0 of Kimi's 384 experts per layer (docs/model.md#equations).
  const auto cp = home_levels(kLevelsText);
  CHECK_THAT(cp.levels[1].plain_aggregate_tokens_per_s, WithinRel(240.33, 1e-3));  // 4 x 60.1
  for (std::size_t i = 1; i < cp.levels.size(); ++i) {
    const auto& lo = cp.levels[i - 1];
    const auto& hi = cp.levels[i];
    INFO("concurrency " << lo.concurrency << " -> " << hi.concurrency);
    CHECK(hi.spec_per_request_tokens_per_s() < lo.spec_per_request_tokens_per_s());
    CHECK(hi.plain_per_request_tokens_per_s() < lo.plain_per_request_tokens_per_s());
    CHECK(hi.spec_aggregate_tokens_per_s > lo.spec_aggregate_tokens_per_s);
  }
}

TEST_CASE("concurrency: a level over memory is INFEASIBLE with its reason, one alone is an error",
          "[concurrency]") {
  // Kimi-K2.5 keeps 576 MLA values x 2 B x 61 layers = 70 KB per token per request on every rank:
  // 100000 requests of 4096 tokens need ~29 TB per GPU of 96 GB.
  const auto cp = home_levels("1,100000");
  REQUIRE(cp.levels.size() == 2);
  CHECK(cp.levels[0].feasible());
  CHECK_FALSE(cp.levels[1].feasible());
  CHECK_THAT(cp.levels[1].infeasible, Contains("does not fit in GPU memory") && Contains("batch 100000"));
  CHECK(cp.levels[1].spec_aggregate_tokens_per_s == 0.0);
  CHECK_FALSE(cp.levels[1].memory.fits());
  CHECK_THROWS_WITH(home_levels("100000"), Contains("does not fit in GPU memory"));

  const auto r = run({"predict", "--concurrency", "1,100000"});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Contains("100000  INFEASIBLE: does not fit in GPU memory"));
  const auto s = run({"sweep", "--concurrency", "1,100000", "--json"});
  REQUIRE(s.code == 0);
  const auto j = nlohmann::json::parse(s.out);
  CHECK(j["concurrency"][1]["feasible"] == false);
  CHECK(j["concurrency"][1]["best"].is_null());
  CHECK_THAT(j["concurrency"][1]["infeasible"].get<std::string>(), Contains("does not fit in GPU memory"));
}

TEST_CASE("concurrency sweep: the best K per level is plain sweep's at workload.batch = c", "[concurrency]") {
  const auto cs = specsim::sweep_by_concurrency(kHome, {"workload.concurrency=" + kLevelsText}, {}, kRoot);
  REQUIRE(cs.keys == std::vector<std::string>{"speculation.num_steps"});
  REQUIRE(cs.levels.size() == kLevels.size());
  for (std::size_t i = 0; i < kLevels.size(); ++i) {
    const int c = kLevels[i];
    INFO("concurrency " << c);
    const auto plain = specsim::sweep(kHome, {"workload.batch=" + std::to_string(c)},
                                      {specsim::default_concurrency_axis()}, kRoot);
    const auto& best = cs.levels[i].best;
    CHECK(cs.levels[i].points == 8);  // num_steps 1..8
    CHECK(best.values == plain.points.front().values);
    CHECK_THAT(best.tokens_per_s, WithinRel(plain.points.front().tokens_per_s, 1e-12));
  }
  // stops_paying_at is the lowest level from which no level's best shape beats plain decoding.
  if (cs.stops_paying_at) {
    for (const auto& l : cs.levels) {
      if (l.concurrency >= *cs.stops_paying_at) CHECK_FALSE(l.pays());
    }
  }
}

TEST_CASE("concurrency: bad levels name the file, line and key, nothing on stdout", "[concurrency]") {
  const std::string dir = std::string(SPECSIM_TEST_DATA_DIR) + "/invalid/scenario/";
  const auto zero = run({"predict", "--scenario", dir + "concurrency-zero.yaml"});
  CHECK(zero.code == 1);
  CHECK(zero.out.empty());
  CHECK_THAT(zero.err, Contains("concurrency-zero.yaml:13:") &&
                           Contains("workload.concurrency: item 2 = 0: must be in [1, 1000000]"));
  const auto dup = run({"sweep", "--scenario", dir + "concurrency-duplicate.yaml"});
  CHECK(dup.code == 1);
  CHECK(dup.out.empty());
  CHECK_THAT(dup.err, Contains("concurrency-duplicate.yaml:13:") && Contains("repeats item 2"));
  // --concurrency is `--set workload.concurrency=...`: the same rules, naming the option's text.
  const auto cli_zero = run({"predict", "--concurrency", "0"});
  CHECK(cli_zero.code == 1);
  CHECK(cli_zero.out.empty());
  CHECK_THAT(cli_zero.err, Contains("--set workload.concurrency=0: workload.concurrency: item 1 = 0"));
  const auto cli_dup = run({"sweep", "--concurrency", "4,4"});
  CHECK(cli_dup.code == 1);
  CHECK_THAT(cli_dup.err, Contains("item 2 = 4 repeats item 1"));
  const auto cli_empty = run({"predict", "--concurrency", "1,,4"});
  CHECK(cli_empty.code == 1);
  CHECK_THAT(cli_empty.err, Contains("item 2: expected an integer, got ''"));
}

TEST_CASE("concurrency: a patched workload.batch conflicts with the levels", "[concurrency]") {
  CHECK_THROWS_WITH(home_levels("1,4", {"workload.batch=4"}),
                    Contains("workload.batch: conflicts with workload.concurrency") && Contains("(1)"));
  const auto vary = run({"sweep", "--concurrency", "1,4", "--vary", "workload.batch=1,2"});
  CHECK(vary.code == 1);
  CHECK_THAT(vary.err, Contains("--vary: workload.batch: conflicts with workload.concurrency"));
  const auto axis = run({"sweep", "--vary", "workload.concurrency=1,4"});
  CHECK(axis.code == 1);
  CHECK_THAT(axis.err, Contains("--vary: workload.concurrency: not an axis: give the levels with --concurrency"));
  // A library caller that fills the levels in itself meets the loader's rules too.
  auto s = specsim::load_scenario(kHome, {}, kRoot);
  s.concurrency = {4, 0};
  CHECK_THROWS_WITH(specsim::predict_concurrency(s), Contains("workload.concurrency: level 0: must be >= 1"));
  s.concurrency = {4, 1, 4};
  CHECK_THROWS_WITH(specsim::predict_concurrency(s), Contains("level 4 is listed twice"));
  s.concurrency = {};
  CHECK_THROWS_WITH(specsim::predict_concurrency(s), Contains("workload.concurrency: no levels"));
  // Without levels, --vary stays required.
  const auto none = run({"sweep"});
  CHECK(none.code == 2);
  CHECK_THAT(none.err, Contains("--vary is required"));
}

TEST_CASE("concurrency CLI: predict and sweep views, the option wins over the file", "[concurrency][cli]") {
  const auto pj = nlohmann::json::parse(run({"predict", "--concurrency", "1,4", "--json"}).out);
  CHECK(pj["calibrated_at_batch"] == 1);
  CHECK(pj["note"] == "calibrated at batch 1 (workload.batch, where the measurements were taken), reused at every level");
  // Speculation loses at every level on the home scenario (56.8 vs 82.0 tok/s at 1, 46.2 vs 71.9 at 4).
  CHECK(pj["stops_paying_at"] == 1);
  CHECK(pj["payoff"] == "speculation does not pay at any feasible level: plain decoding is faster");
  REQUIRE(pj["concurrency"].size() == 2);
  CHECK(pj["concurrency"][1]["concurrency"] == 4);
  CHECK_THAT(pj["concurrency"][1]["speculative"]["aggregate_tokens_per_s"].get<double>(),
             WithinRel(4 * pj["concurrency"][1]["speculative"]["per_request_tokens_per_s"].get<double>(), 1e-12));
  // Each level's band, and the calibration's warning (the home plain step's two readings).
  for (const auto& level : pj["concurrency"]) {
    CHECK(level["speculative"]["p10_aggregate_tokens_per_s"].get<double>() <
          level["speculative"]["aggregate_tokens_per_s"].get<double>());
    CHECK(level["speculative"]["p90_aggregate_tokens_per_s"].get<double>() >
          level["speculative"]["aggregate_tokens_per_s"].get<double>());
  }
  REQUIRE(pj.contains("warnings"));
  CHECK_THAT(pj["warnings"][0].get<std::string>(), Contains("leaves 4.52 ms beyond the modelled forward at batch 1"));
  const auto pt = run({"predict", "--concurrency", "1,4"});
  CHECK_THAT(pt.out, Contains("calibrated at batch 1 (workload.batch, where the measurements were taken), reused"));
  CHECK_THAT(pt.out, Contains("plain tok/s/req  spec tok/s/req  plain tok/s  spec tok/s  spec p10-p90"));
  CHECK_THAT(pt.out, Contains("  43-60 "));
  CHECK_THAT(pt.out, Contains("spec p10-p90: predict's band at each level"));
  // Each level's call: the whole band below the plain rate at both (43-60 against 82.0 tok/s at 1).
  CHECK_THAT(pt.out, Contains("speedup  call   memory per GPU") && Contains("0.665x  loses"));
  for (const auto& level : pj["concurrency"]) CHECK(level["speculative"]["call"] == "loses");
  // At 16 the point (466.4 against 467.8 plain tok/s) still loses, but the band (331-600) holds the
  // plain rate: the verdict says so.
  const auto p16 = nlohmann::json::parse(run({"predict", "--concurrency", "1,4,16", "--json"}).out);
  CHECK(p16["concurrency"][2]["speculative"]["call"] == "too close to call");
  CHECK(p16["payoff"] == "speculation does not pay at any feasible level: plain decoding is faster; too close to "
                         "call at concurrency 16 (the band holds the plain rate)");
  CHECK_THAT(pt.out, Contains("warning: the measured plain step (12.2 ms) leaves 4.52 ms"));
  const auto pc = run({"predict", "--concurrency", "1,4", "--format", "csv"});
  CHECK_THAT(pc.out, Contains("speculative.p10_aggregate_tokens_per_s,speculative.p90_aggregate_tokens_per_s"));

  // The acceptance criterion of issue 16: best K per concurrency, `concurrency[].best` in JSON. On
  // the home scenario 64 requests of 4096 tokens do not fit (kLevels above): best is null there.
  const auto sj = nlohmann::json::parse(run({"sweep", "--concurrency", "1,4,16,64", "--json"}).out);
  CHECK(sj["calibrated_at_batch"] == 1);
  REQUIRE(sj["concurrency"].size() == 4);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& level = sj["concurrency"][i];
    REQUIRE(level.contains("best"));
    CHECK(level["best"]["set"].contains("speculation.num_steps"));
    CHECK(level["best"]["tokens_per_s"].get<double>() > 0.0);
  }
  CHECK(sj["concurrency"][3]["concurrency"] == 64);
  CHECK(sj["concurrency"][3]["best"].is_null());
  CHECK(sj["concurrency"][3]["feasible"] == false);
  const auto st = run({"sweep", "--concurrency", "1,4,16,64"});
  CHECK(st.code == 0);
  CHECK_THAT(st.out, Contains("the best speculation.num_steps per concurrency level"));
  CHECK_THAT(st.out, Contains("calibrated at batch 1 (workload.batch, where the measurements were taken)"));
  CHECK_THAT(st.out, Contains("64  INFEASIBLE at every point: does not fit in GPU memory"));

  // CSV: a row per level, concurrency first; a level where nothing fits has empty figures.
  const auto csv = run({"sweep", "--concurrency", "1,64", "--csv"});
  CHECK(csv.code == 0);
  CHECK_THAT(csv.out, Contains("concurrency,speculation.num_steps,tokens_per_s,per_request_tokens_per_s,"));
  CHECK_THAT(csv.out, Contains("\n64,,,,,,\n"));
  CHECK_THAT(csv.err, Contains("1 of 2 levels do not fit in GPU memory at any point"));

  const specsim::test::TempDir tmp("specsim-concurrency-file");
  const std::string file = home_with_levels_file(tmp.path);
  const auto from_file = nlohmann::json::parse(run({"predict", "--scenario", file, "--json"}).out);
  REQUIRE(from_file["concurrency"].size() == 2);
  CHECK(from_file["concurrency"][0]["concurrency"] == 2);
  const auto option_wins = nlohmann::json::parse(run({"predict", "--scenario", file, "--concurrency", "16", "--json"}).out);
  REQUIRE(option_wins["concurrency"].size() == 1);
  CHECK(option_wins["concurrency"][0]["concurrency"] == 16);
  // A file with levels makes sweep a concurrency sweep, --vary optional.
  const auto file_sweep = nlohmann::json::parse(run({"sweep", "--scenario", file, "--json"}).out);
  CHECK(file_sweep["concurrency"].size() == 2);
}

TEST_CASE("concurrency sweep: Llama-3.1-8B on one H200, the best K falls with load and speculation stops paying",
          "[concurrency]") {
  // Batch 1 verifies k + 1 tokens almost for free (the step is weight-bound), so a long draft wins;
  // at 64 and 256 requests the verify's c x (k + 1) tokens cost real compute and KV reads, shorter
  // drafts win and from 256 plain decoding is faster (predicted: K 6 at 1..16, K 3 at 64 and 256,
  // speedup 1.09x at 64, 0.90x at 256).
  const auto cs = specsim::sweep_by_concurrency("llama-3.1-8b-eagle3-1x-h200", {"workload.concurrency=1,16,64,256"},
                                                {}, kRoot);
  REQUIRE(cs.levels.size() == 4);
  for (const auto& l : cs.levels) REQUIRE(l.feasible());
  const auto k = [&](std::size_t i) { return std::stoi(cs.levels[i].best.values.at(0)); };
  CHECK(k(0) > k(2));  // the best draft is shorter under load
  CHECK(k(2) >= k(3));
  CHECK(cs.levels[0].pays());
  CHECK(cs.levels[2].pays());
  CHECK_FALSE(cs.levels[3].pays());
  REQUIRE(cs.stops_paying_at.has_value());
  CHECK(*cs.stops_paying_at == 256);
  const auto text = run({"sweep", "--scenario", "llama-3.1-8b-eagle3-1x-h200", "--concurrency", "1,16,64,256"});
  CHECK_THAT(text.out, Contains("speculation stops paying at concurrency 256"));
}

TEST_CASE("concurrency sweep: condition axes make buckets, each with its best K per level", "[concurrency]") {
  const std::vector<std::string> levels{"workload.concurrency=1,8"};
  const specsim::SweepAxis context{"workload.context", {"2048", "32768"}};
  const auto buckets = specsim::sweep_by_workload(kHome, levels, {context}, kRoot);
  REQUIRE(buckets.size() == 2);
  for (std::size_t b = 0; b < 2; ++b) {
    INFO("bucket " << b);
    CHECK(buckets[b].condition_keys == std::vector<std::string>{"workload.context"});
    CHECK(buckets[b].condition_values == std::vector<std::string>{context.values[b]});
    CHECK(buckets[b].keys == std::vector<std::string>{"speculation.num_steps"});  // the default axis
    // Each bucket is the concurrency sweep of the scenario at that context.
    const auto alone = specsim::sweep_by_concurrency(kHome, {levels[0], "workload.context=" + context.values[b]}, {}, kRoot);
    REQUIRE(alone.levels.size() == buckets[b].levels.size());
    for (std::size_t i = 0; i < alone.levels.size(); ++i) {
      CHECK(alone.levels[i].infeasible == buckets[b].levels[i].infeasible);
      CHECK(alone.levels[i].best.values == buckets[b].levels[i].best.values);
      CHECK(alone.levels[i].best.tokens_per_s == buckets[b].levels[i].best.tokens_per_s);
    }
    CHECK(alone.stops_paying_at == buckets[b].stops_paying_at);
  }
  // 8 requests of 32k tokens do not fit the home box (KV): that level is infeasible in its bucket only.
  CHECK(buckets[0].levels[1].feasible());
  CHECK_THAT(buckets[1].levels[1].infeasible, Contains("does not fit in GPU memory"));

  // Two condition axes: every combination, the first axis outermost; the settings axis stays the grid.
  const auto grid = specsim::sweep_by_workload(
      kHome, levels, {{"workload.context", {"2048", "8192"}}, {"speculation.num_steps", {"1", "2", "3"}},
                      {"acceptance.accept", {"0.6", "0.8"}}},
      kRoot);
  REQUIRE(grid.size() == 4);
  const std::vector<std::vector<std::string>> order{{"2048", "0.6"}, {"2048", "0.8"}, {"8192", "0.6"}, {"8192", "0.8"}};
  for (std::size_t b = 0; b < 4; ++b) {
    CHECK(grid[b].condition_values == order[b]);
    CHECK(grid[b].keys == std::vector<std::string>{"speculation.num_steps"});
    CHECK(grid[b].levels.front().points == 3);
  }
  // Without condition axes: one sweep, no conditions.
  const auto one = specsim::sweep_by_workload(kHome, levels, {}, kRoot);
  REQUIRE(one.size() == 1);
  CHECK(one.front().condition_keys.empty());
}

TEST_CASE("concurrency sweep: a condition is not a setting to pick per level", "[concurrency][invalid]") {
  const std::vector<std::string> levels{"workload.concurrency=1,8"};
  CHECK_THROWS_WITH(specsim::sweep_by_concurrency(kHome, levels, {{"workload.context", {"2048", "4096"}}}, kRoot),
                    Contains("workload.context: is a condition of the deployment, not a setting to pick per level"));
  CHECK_THROWS_WITH(specsim::sweep_by_workload(kHome, levels, {{"workload.concurrency", {"1", "2"}}}, kRoot),
                    Contains("workload.concurrency: not an axis: give the levels with --concurrency"));
  CHECK_THROWS_WITH(specsim::sweep_by_workload(kHome, levels, {{"workload.context", {"1024"}}, {"workload.context", {"2048"}}},
                                               kRoot),
                    Contains("workload.context: given on two axes"));
  CHECK_THROWS_WITH(specsim::sweep_by_workload(kHome, levels, {{"workload.batch", {"1", "2"}}}, kRoot),
                    Contains("conflicts with workload.concurrency: each level sets the batch"));
}

TEST_CASE("concurrency sweep CLI: a table per context, one JSON object, one CSV table", "[concurrency][cli]") {
  const std::vector<std::string> args{"sweep", "--concurrency", "1,8", "--vary", "workload.context=2048,8192"};
  const auto text = run(args);
  INFO(text.err);
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Contains("the best speculation.num_steps per concurrency level, for each workload.context") &&
                           Contains("  workload.context = 2048\n") && Contains("  workload.context = 8192\n"));
  auto with = [&](const char* format) {
    auto a = args;
    a.push_back(format);
    return run(a);
  };
  const auto json = nlohmann::json::parse(with("--json").out);
  CHECK(json["condition_keys"] == nlohmann::json::array({"workload.context"}));
  REQUIRE(json["buckets"].size() == 2);
  CHECK(json["buckets"][1]["conditions"]["workload.context"] == "8192");
  CHECK(json["buckets"][1]["concurrency"][1]["best"]["set"].contains("speculation.num_steps"));
  const std::string csv = with("--csv").out;
  CHECK(csv.starts_with("workload.context,concurrency,speculation.num_steps,tokens_per_s,"));
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 2 * 2);  // header + 2 contexts x 2 levels
  CHECK_THAT(csv, Contains("\n8192,8,"));
}

TEST_CASE("concurrency sweep: one cap on every evaluation, and a stop keeps the levels done", "[concurrency][sweep]") {
  // 1000 levels x 20,000 points = 2 x 10^7 evaluations: refused before any runs (each grid alone
  // is under the per-grid cap).
  std::string many = "workload.concurrency=";
  for (int c = 1; c <= 1000; ++c) many += (c > 1 ? "," : "") + std::to_string(c);
  CHECK_THROWS_WITH(specsim::sweep_by_workload(kHome, {many}, {specsim::parse_vary("compute.bandwidth_efficiency=0.5..0.9:20000")},
                                               kRoot),
                    Contains("1000 levels x 20000") && Contains("exceed 10^7 evaluations"));
  // A stop set before the first level: nothing evaluated, interrupted said.
  std::atomic<bool> stop{true};
  const auto stopped = specsim::sweep_by_workload(kHome, {"workload.concurrency=1,2,4"},
                                                  {specsim::parse_vary("speculation.num_steps=1..3")}, kRoot, &stop);
  REQUIRE(stopped.size() == 1);
  CHECK(stopped[0].interrupted);
  CHECK(stopped[0].levels.empty());
  stop = false;
  const auto whole = specsim::sweep_by_workload(kHome, {"workload.concurrency=1,2,4"},
                                                {specsim::parse_vary("speculation.num_steps=1..3")}, kRoot, &stop);
  CHECK_FALSE(whole[0].interrupted);
  CHECK(whole[0].levels.size() == 3);
}
