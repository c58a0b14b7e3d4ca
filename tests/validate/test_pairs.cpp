// Gains between rows of one source (docs/validation.md#pairs): which rows pair, the measured and
// predicted gain of each, and Kendall's tau worked out by hand.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <set>

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
  REQUIRE(report.pair_summaries.size() == 5);
  CHECK(report.pair_summaries[1].group == "fit");
  CHECK(report.pair_summaries[4].pairs == 0);  // the test rows change no catalogue setting
  CHECK(report.pair_summaries[1].pairs == 1);
  CHECK(report.pair_summaries[0].pairs == 0);  // run-b, the check source, has no pair
}

namespace {
// A scored check row of one source and box, chain 3 at batch 1: only its name, rates and catalogue
// settings vary.
specsim::ValidationRow settings_row(const std::string& name, double plain, double measured, double predicted,
                                    std::map<std::string, std::string> settings) {
  specsim::ValidationRow r;
  r.name = name;
  r.source.source = "src";
  r.set = "check";
  r.model = "m";
  r.gpu = "g";
  r.engine = "vllm";
  r.draft = "d";
  r.tp = 8;
  r.num_steps = 3;
  r.eagle_topk = 1;
  r.num_draft_tokens = 4;
  r.measured_plain_tokens_per_s = plain;
  r.measured_spec_tokens_per_s = measured;
  r.predicted_spec_tokens_per_s = predicted;
  r.settings = std::move(settings);
  return r;
}
}  // namespace

TEST_CASE("pairs: rows that differ in one catalogue intervention's keys pair as it, two unrelated keys never do",
          "[pairs]") {
  const std::vector<specsim::InterventionKey> keys = {{"comm.implementation", "allreduce-impl", true},
                                                      {"comm.nccl_proto", "nccl-proto", true},
                                                      {"engine.verify_mode", "cuda-graph-verify", false}};
  const auto row = [](const std::string& name, double plain, double measured, double predicted,
                      const std::string& impl, const std::string& proto, const std::string& verify) {
    return settings_row(name, plain, measured, predicted,
                        {{"comm.implementation", impl}, {"comm.nccl_proto", proto}, {"engine.verify_mode", verify}});
  };
  const std::vector<specsim::ValidationRow> rows = {
      row("a", 100, 120, 130, "nccl", "", ""),
      // The all-reduce changes the plain step too: b re-measured it and still pairs with a.
      row("b", 105, 132, 140, "custom_oneshot", "", ""),
      // c differs from a in two keys (implementation and protocol): no pair; from b in the protocol alone.
      row("c", 104, 125, 150, "custom_oneshot", "ll", ""),
      // The verify's launch mode leaves the plain run alone: d shares a's and pairs, e's differs and does not.
      row("d", 100, 60, 65, "nccl", "", "eager"),
      row("e", 90, 55, 60, "nccl", "", "eager"),
  };
  std::vector<specsim::GainPair> pairs;
  std::vector<specsim::OptionRanking> rankings;
  std::vector<specsim::PairSummary> summaries;
  specsim::derive_pairs(rows, keys, pairs, rankings, summaries);
  REQUIRE(pairs.size() == 3);
  std::map<std::string, const specsim::GainPair*> by_setting;
  for (const auto& p : pairs) {
    CHECK(p.intervention);
    by_setting[p.setting] = &p;
  }
  REQUIRE(by_setting.count("allreduce-impl") == 1);
  const auto& impl = *by_setting["allreduce-impl"];
  CHECK(impl.before == "a");
  CHECK(impl.after == "b");
  CHECK(impl.change == "nccl -> custom_oneshot");
  CHECK_THAT(impl.measured_gain, WithinRel(132.0 / 120.0 - 1.0, 1e-12));
  CHECK_THAT(impl.predicted_gain, WithinRel(140.0 / 130.0 - 1.0, 1e-12));
  REQUIRE(by_setting.count("nccl-proto") == 1);
  CHECK(by_setting["nccl-proto"]->before == "b");
  CHECK(by_setting["nccl-proto"]->after == "c");
  CHECK(by_setting["nccl-proto"]->change == "default -> ll");  // a key the file leaves out reads "default"
  REQUIRE(by_setting.count("cuda-graph-verify") == 1);
  CHECK(by_setting["cuda-graph-verify"]->before == "a");
  CHECK(by_setting["cuda-graph-verify"]->after == "d");
  CHECK(rankings.empty());
  // check, fit, all, then by family: no draft-shape pair here, three intervention pairs.
  REQUIRE(summaries.size() == 5);
  CHECK(summaries[0].pairs == 3);
  CHECK(summaries[3].group == "draft/tp");
  CHECK(summaries[3].pairs == 0);
  CHECK(summaries[4].group == "interventions");
  CHECK(summaries[4].pairs == 3);
  // Without the keys the same rows pair on nothing: they share the draft shape, draft and TP.
  specsim::derive_pairs(rows, {}, pairs, rankings, summaries);
  CHECK(pairs.empty());
}

TEST_CASE("pairs: the data directory's catalogue names the intervention keys, the draft shape and TP left out",
          "[pairs]") {
  const auto keys = specsim::intervention_keys(kRoot);
  std::map<std::string, specsim::InterventionKey> by_key;
  for (const auto& k : keys) by_key[k.key] = k;
  // models/interventions/any-box.yaml: custom-oneshot-allreduce is in group allreduce-impl.
  REQUIRE(by_key.count("comm.implementation") == 1);
  CHECK(by_key["comm.implementation"].kind == "allreduce-impl");
  CHECK(by_key["comm.implementation"].plain_too);
  // The launch modes are one kind (public pairs switch graphs off for every forward at once); only
  // the decode's runs the plain step.
  for (const char* key : {"engine.decode_mode", "engine.verify_mode", "engine.draft_mode"}) {
    REQUIRE(by_key.count(key) == 1);
    CHECK(by_key[key].kind == "cuda-graphs");
  }
  CHECK(by_key["engine.decode_mode"].plain_too);
  CHECK_FALSE(by_key["engine.verify_mode"].plain_too);
  CHECK(by_key.count("parallel.draft_tp") == 1);
  CHECK(by_key.count("engine.async_scheduling.speculative") == 1);  // an engine setting no catalogue tries
  CHECK(by_key.count("speculation.num_steps") == 0);  // draft shape: its own pairs
  CHECK(by_key.count("parallel.tp") == 0);
  CHECK(by_key.count("comm.profile") == 0);  // patched only beside parallel.tp (tp4-pp2)
}

TEST_CASE("pairs: the corpus's K sweeps rank their options, and the JSON carries pairs and rankings",
          "[pairs][validate]") {
  const auto r = specsim::test::run({"validate", "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["pairs"].size() >= 30);
  int check_called = 0, check_called_right = 0;
  for (const auto& p : j["pairs"]) {
    CHECK(p["sign_right"] == ((p["measured_gain"].get<double>() > 0) == (p["predicted_gain"].get<double>() > 0)));
    // Every check pair has a band (the fit set's pairs, none of its own source); rank commits to a
    // sign exactly where the band is clear of 0.
    if (p["set"] == "check") REQUIRE(p["gain_band"].is_object());
    if (!p["gain_band"].is_object()) continue;
    const double lo = p["gain_band"]["p10"], hi = p["gain_band"]["p90"], predicted = p["predicted_gain"];
    CHECK(lo <= predicted + 1e-12);  // the fit residuals' p10 is below 0 and p90 above, on this corpus
    CHECK(hi >= predicted - 1e-12);
    CHECK(p["called"] == (lo > 0.0 || hi < 0.0));
    if (p["set"] == "check" && p["called"].get<bool>()) {
      ++check_called;
      check_called_right += p["sign_right"].get<bool>() ? 1 : 0;
    }
  }
  CHECK(j["pair_summary"][0]["called"] == check_called);
  CHECK(j["pair_summary"][0]["called_right"] == check_called_right);
  // Every ranking has 3+ options and a tau in [-1, 1].
  REQUIRE(!j["rankings"].empty());
  for (const auto& k : j["rankings"]) {
    CHECK(k["options"].size() >= 3);
    CHECK(std::abs(k["kendall_tau"].get<double>()) <= 1.0);
    CHECK(k["top_pick_right"] == (k["predicted_best"] == k["measured_best"]));
  }
  REQUIRE(j["pair_summary"].size() == 5);
  CHECK(j["pair_summary"][2]["pairs"] == j["pairs"].size());
  // The families split every pair: draft/tp plus interventions is all.
  CHECK(j["pair_summary"][3]["pairs"].get<std::size_t>() + j["pair_summary"][4]["pairs"].get<std::size_t>() == j["pairs"].size());
  int interventions = 0;
  for (const auto& p : j["pairs"]) interventions += p["intervention"].get<bool>() ? 1 : 0;
  CHECK(j["pair_summary"][4]["pairs"] == interventions);
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
  // Which to try first: on the home box CUDA graphs for the verify lead every other option beyond
  // the error (119 tok/s against at most 59), so nothing is too close to it.
  REQUIRE(j["interventions"][0]["name"] == "cuda-graph-verify");
  CHECK(j["too_close_to_top"].empty());
  CHECK_THAT(r.out, !Contains("try first"));  // JSON only here
  const auto text = specsim::test::run({"rank"});
  CHECK_THAT(text.out, Contains("try first: cuda-graph-verify, ahead of every other option beyond specsim's error"));
  // Past the first step the plan's options are close: on the box with CUDA graphs for the verify,
  // the top pick's lead over each listed option is within exp(p90) = e^0.202.
  const auto after = specsim::test::run({"rank", "--json", "--set", "engine.verify_mode=graph"});
  REQUIRE(after.code == 0);
  const auto k = nlohmann::json::parse(after.out);
  const double top = k["interventions"][0]["tokens_per_s"].get<double>();
  std::set<std::string> close(k["too_close_to_top"].begin(), k["too_close_to_top"].end());
  REQUIRE_FALSE(close.empty());
  for (std::size_t i = 1; i < k["interventions"].size(); ++i) {
    const auto& x = k["interventions"][i];
    if (!x["feasible"].get<bool>()) continue;
    const double lead = top / x["tokens_per_s"].get<double>();
    INFO(x["name"] << " lead " << lead);
    CHECK(close.count(x["name"].get<std::string>()) ==
          std::size_t(lead * std::exp(e.gain_residual_p10) <= 1.0 && lead * std::exp(e.gain_residual_p90) >= 1.0));
  }
}

namespace {
specsim::GainPair gain_pair(const std::string& source, const std::string& set, double measured, double predicted) {
  return {source, set, "draft shape", false, "x", "y", "2/1/3 -> 3/1/4", measured, predicted, std::nullopt};
}
}  // namespace

TEST_CASE("pairs: a gain band draws on the fit set's other sources and says when rank commits to a sign",
          "[pairs]") {
  std::vector<specsim::GainPair> pairs;
  // Source A, fit: ten pairs predicted flat, measured residuals ln(1 + m) = 0.01 .. 0.10.
  for (int i = 1; i <= 10; ++i) pairs.push_back(gain_pair("A", "fit", std::exp(0.01 * i) - 1.0, 0.0));
  pairs.push_back(gain_pair("B", "fit", 0.10, 0.20));    // residual ln(1.1 / 1.2) = -0.0870
  pairs.push_back(gain_pair("C", "check", 0.08, 0.05));  // a sign rank commits to, right
  pairs.push_back(gain_pair("C", "check", 0.03, -0.02)); // a sign too close to call, wrong
  std::vector<specsim::OptionRanking> no_rankings;
  specsim::add_gain_bands(pairs, no_rankings);

  // A's pairs have one residual of another fit source (B's): below the 10 a band needs.
  for (int i = 0; i < 10; ++i) CHECK_FALSE(pairs[std::size_t(i)].gain_band);
  // B's: A's ten residuals both ways; |r| = 0.01 .. 0.10, its nearest-rank p80 the 8th, 0.08:
  // 1.2 e^-0.08 - 1 = 0.10776 .. 1.2 e^0.08 - 1 = 0.29995; committed (clear of 0), measured +10% just
  // outside.
  REQUIRE(pairs[10].gain_band);
  CHECK_THAT(pairs[10].gain_band->first, WithinAbs(1.2 * std::exp(-0.08) - 1.0, 1e-12));
  CHECK_THAT(pairs[10].gain_band->second, WithinAbs(1.2 * std::exp(0.08) - 1.0, 1e-12));
  CHECK(pairs[10].called());
  CHECK_FALSE(pairs[10].band_holds());
  // C's: eleven residuals, |r| = 0.01 .. 0.10 and B's 0.0870: sorted 0.01 .. 0.08, 0.087, 0.09, 0.10,
  // the p80 the 9th (ceil(8.8)), 0.087 = ln(1.2 / 1.1). 1.05 e^-0.087 - 1 = -0.0375 .. +0.1455 holds 0
  // and +8%; 0.98 e^-0.087 - 1 = -0.1017 .. +0.0691 holds 0 and +3%: rank calls neither.
  const double q = std::log(1.2 / 1.1);
  REQUIRE(pairs[11].gain_band);
  CHECK_THAT(pairs[11].gain_band->first, WithinAbs(1.05 * std::exp(-q) - 1.0, 1e-12));
  CHECK_THAT(pairs[11].gain_band->second, WithinAbs(1.05 * std::exp(q) - 1.0, 1e-12));
  CHECK_FALSE(pairs[11].called());
  CHECK(pairs[11].band_holds());
  REQUIRE(pairs[12].gain_band);
  CHECK_THAT(pairs[12].gain_band->first, WithinAbs(0.98 * std::exp(-q) - 1.0, 1e-12));
  CHECK_FALSE(pairs[12].called());
  CHECK_FALSE(pairs[12].sign_right());
  CHECK(pairs[12].band_holds());
  // A pair's band does not depend on which row the file lists first: the reversed pair's band is
  // the reverse of the band (1 / (1 + g) over each end).
  auto reversed = pairs;
  reversed[11] = gain_pair("C", "check", 1.0 / 1.08 - 1.0, 1.0 / 1.05 - 1.0);
  specsim::add_gain_bands(reversed, no_rankings);
  REQUIRE(reversed[11].gain_band);
  CHECK_THAT(1.0 + reversed[11].gain_band->first, WithinRel(1.0 / (1.0 + pairs[11].gain_band->second), 1e-12));
  CHECK_THAT(1.0 + reversed[11].gain_band->second, WithinRel(1.0 / (1.0 + pairs[11].gain_band->first), 1e-12));

  // A ranking of C's options predicted at 100, 95 and 70 tok/s, measured best the second: against
  // the pick, 0.95 e^0.087 = 1.036 holds 1 (too close to call), 0.70 e^0.087 = 0.764 does not.
  specsim::OptionRanking k;
  k.source = "C";
  k.set = "check";
  k.options = {"o1", "o2", "o3"};
  k.predicted = {100.0, 95.0, 70.0};
  k.measured = {90.0, 96.0, 60.0};
  k.predicted_best = "o1";
  k.measured_best = "o2";
  std::vector<specsim::OptionRanking> rankings = {k};
  specsim::add_gain_bands(pairs, rankings);
  CHECK(rankings[0].shortlist == std::vector<std::string>{"o1", "o2"});
  CHECK(rankings[0].shortlist_holds_best);

  const auto summaries = specsim::summarize_pairs(pairs, rankings);
  CHECK(summaries[0].with_shortlist == 1);
  CHECK(summaries[0].shortlist_holds_best == 1);
  CHECK(summaries[0].shortlisted_options == 2);
  CHECK(summaries[0].shortlist_ranking_options == 3);
  REQUIRE(summaries[0].group == "check");
  CHECK(summaries[0].with_band == 2);
  CHECK(summaries[0].called == 0);
  CHECK(summaries[0].called_right == 0);
  CHECK(summaries[0].in_band == 2);
  CHECK(summaries[0].sign_right == 1);
  REQUIRE(summaries[1].group == "fit");
  CHECK(summaries[1].with_band == 1);
  CHECK(summaries[1].called == 1);
  CHECK(summaries[1].called_right == 1);
  CHECK(summaries[1].in_band == 0);
}
