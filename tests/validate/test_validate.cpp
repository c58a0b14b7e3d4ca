// specsim validate on a small corpus of invented rows (tests/data/valid/validation): the error and
// sign of each row follow from the same prediction `predict` makes, the summaries from the rows,
// and calibrating on a row reproduces that row's measurement exactly.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <filesystem>

#include "cli_run.hpp"
#include "specsim/cycle.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/report.hpp"
#include "specsim/validate_corpus.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

const std::string kRows = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/validation";
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

double predicted_spec(const std::string& file) {
  const specsim::CycleModel model(specsim::load_scenario(file, {}, kRoot));
  return model.predict().spec_tokens_per_s;
}

// A regression baseline written to a directory of the test's own, checked against `report`.
struct BaselineFile {
  const specsim::ValidationReport& report;
  specsim::test::TempDir dir;
  BaselineFile(const specsim::ValidationReport& r, const std::string& name) : report(r), dir(name) {}
  std::string write(const nlohmann::json& j) const {
    const std::string f = (dir.path / "baseline.json").string();
    std::ofstream(f) << j.dump();
    return f;
  }
  // A baseline the guard refuses, the message naming the file, the key and why.
  void refused(const nlohmann::json& j, const std::string& key, const std::string& why) const {
    const std::string f = write(j);
    CHECK_THROWS_WITH(specsim::regressions_against(report, f), Contains(f) && Contains(key) && Contains(why));
  }
};

}  // namespace

TEST_CASE("validate: each row is predict's prediction against the held-out measurement", "[validate]") {
  const auto files = specsim::find_validation_rows({kRows}, kRoot);
  REQUIRE(files.size() == 4);
  const auto report = specsim::validate_corpus(files, {}, kRoot);
  REQUIRE(report.rows.size() == 4);
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& r = report.rows[i];
    INFO(r.name);
    // The measured speculative rate is never an input: the prediction is predict's own.
    CHECK_THAT(r.predicted_spec_tokens_per_s, WithinRel(predicted_spec(files[i]), 1e-12));
    CHECK_THAT(r.error(), WithinAbs(r.predicted_spec_tokens_per_s / r.measured_spec_tokens_per_s - 1.0, 1e-15));
    // The plain step is calibrated to the measured plain rate (host time absorbs the rest).
    CHECK_THAT(r.predicted_plain_tokens_per_s, WithinRel(r.measured_plain_tokens_per_s, 1e-9));
    CHECK(r.interconnect == "single gpu");  // TP1 crosses no link
  }
  // b-chain3 measured 120 tok/s against 140 plain: speculation lost there. With tau 1.6 on an 8B
  // model the model cannot lose by that much, so its sign is wrong; a-chain2 (240 vs 150) is right.
  const auto& b = report.rows[3];
  REQUIRE(b.name == "b-chain3");
  CHECK(b.measured_speedup() < 1.0);
  CHECK(b.sign_right() == (b.predicted_speedup() < 1.0));
  CHECK(report.rows[0].sign_right());
}

TEST_CASE("validate: summaries are the median, worst and sign count of their rows", "[validate]") {
  const auto report = specsim::validate_corpus(specsim::find_validation_rows({kRows}, kRoot), {}, kRoot);
  // The test corpus's split.yaml: run-a (3 rows) fits, run-b (1 row) is checked; every row is
  // scored, so leave-source-out holds all four.
  CHECK_THAT(report.split_file, Catch::Matchers::EndsWith("tests/data/valid/validation/split.yaml"));
  REQUIRE(report.summaries.size() >= 3);
  CHECK(report.summaries[0].group == "check");
  CHECK(report.summaries[0].rows == 1);
  CHECK(report.summaries[1].group == "fit");
  CHECK(report.summaries[1].rows == 3);
  REQUIRE(report.summaries[2].group == "leave-source-out");
  const auto& all = report.summaries[2];
  std::vector<double> e;
  int sign = 0;
  for (const auto& r : report.rows) {
    e.push_back(std::fabs(r.error()));
    sign += r.sign_right() ? 1 : 0;
  }
  std::sort(e.begin(), e.end());
  CHECK(all.rows == 4);
  CHECK_THAT(all.median_abs_error, WithinRel(0.5 * (e[1] + e[2]), 1e-12));  // even count: mean of the middle two
  CHECK_THAT(all.worst_abs_error, WithinRel(e[3], 1e-12));
  CHECK(all.sign_right == sign);
  const auto batch1 = std::find_if(report.summaries.begin(), report.summaries.end(),
                                   [](const auto& s) { return s.group == "batch 1"; });
  REQUIRE(batch1 != report.summaries.end());
  CHECK(batch1->rows == 3);  // a-chain4-bs8 runs batch 8
}

TEST_CASE("validate: calibrating on a row reproduces its measurement, then predicts its source", "[validate]") {
  const std::string a2 = kRows + "/run-a/a-chain2.yaml";
  const double extra = specsim::fit_spec_extra_per_cycle(a2, kRoot);
  const auto fitted = specsim::validate_row(a2, extra, kRoot);
  CHECK_THAT(fitted.predicted_spec_tokens_per_s, WithinRel(fitted.measured_spec_tokens_per_s, 1e-9));

  specsim::ValidateOptions on;
  on.calibrate_on = "a-chain2";
  const auto report = specsim::validate_corpus(specsim::find_validation_rows({kRows}, kRoot), on, kRoot);
  REQUIRE(report.calibration);
  // Only the other rows of run-a: a-chain3 and a-chain4-bs8, each with a-chain2's term.
  REQUIRE(report.calibration->rows.size() == 2);
  for (const auto& c : report.calibration->rows) {
    CHECK(c.row.source.source == "run-a");
    CHECK_THAT(c.row.spec_extra_per_cycle_s, WithinRel(extra, 1e-12));
    CHECK(c.calibrated_on == std::vector<std::string>{"a-chain2"});
  }
}

TEST_CASE("validate: one run calibrates alone and predicts each sibling, never pooled with it", "[validate]") {
  specsim::ValidateOptions all;
  all.calibrate_on = "all";
  const auto report = specsim::validate_corpus(specsim::find_validation_rows({kRows}, kRoot), all, kRoot);
  REQUIRE(report.calibration);
  CHECK(report.calibration->mode == "one run -> siblings");
  // run-b has one row (skipped: nothing else to predict). In run-a each row's siblings are narrowed
  // to its draft, then its batch: a-chain2 <- a-chain3, a-chain3 <- a-chain2, and a-chain4-bs8 (no
  // other batch-8 row) <- each batch-1 row apart: 4 calibrated predictions, each from one run.
  CHECK(report.calibration->sources_skipped == std::vector<std::string>{"run-b (1 row)"});
  REQUIRE(report.calibration->rows.size() == 4);
  const double t2 = specsim::fit_spec_extra_per_cycle(kRows + "/run-a/a-chain2.yaml", kRoot);
  const double t3 = specsim::fit_spec_extra_per_cycle(kRows + "/run-a/a-chain3.yaml", kRoot);
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const auto& c : report.calibration->rows) {
    REQUIRE(c.calibrated_on.size() == 1);
    pairs.emplace_back(c.row.name, c.calibrated_on[0]);
    CHECK(c.row.name != c.calibrated_on[0]);  // a row never predicts itself
    CHECK(c.row.set == "fit");                // run-a is the test split's fit source
    const double used = c.calibrated_on[0] == "a-chain2" ? t2 : t3;
    CHECK_THAT(c.row.spec_extra_per_cycle_s, WithinRel(specsim::transferable_spec_extra(used), 1e-9));
    const auto step = std::find_if(c.row.inputs.begin(), c.row.inputs.end(),
                                   [](const auto& in) { return in.code == "extra"; });
    REQUIRE(step != c.row.inputs.end());
    CHECK(step->origin == specsim::InputOrigin::kCalibrated);
  }
  using P = std::pair<std::string, std::string>;
  CHECK(pairs == std::vector<P>{{"a-chain2", "a-chain3"}, {"a-chain3", "a-chain2"}, {"a-chain4-bs8", "a-chain2"},
                                {"a-chain4-bs8", "a-chain3"}});
  // The calibrated rows are summarized by set, apart from the uncalibrated figures.
  const auto fit = std::find_if(report.calibration->splits.begin(), report.calibration->splits.end(),
                                [](const auto& s) { return s.group == "fit"; });
  REQUIRE(fit != report.calibration->splits.end());
  CHECK(fit->rows == 4);
}

TEST_CASE("validate: a negative fitted per-cycle term is carried to other rows as 0, with a warning", "[validate]") {
  CHECK(specsim::transferable_spec_extra(-7e-3) == 0.0);
  CHECK(specsim::transferable_spec_extra(2e-3) == 2e-3);
  // run-a with a-chain3 measured far faster than any cycle the model allows (250 -> 3,000 tok/s):
  // its fit is negative, so a-chain2, calibrated on it alone (same batch), gets 0 and a warning.
  specsim::test::TempDir dir("specsim-validate-negative");
  fs::create_directories(dir.path / "run-a");
  for (const char* name : {"a-chain2.yaml", "a-chain4-bs8.yaml"}) {
    fs::copy_file(kRows + "/run-a/" + name, dir.path / "run-a" / name);
  }
  std::ofstream(dir.path / "run-a" / "a-chain3.yaml")
      << specsim::test::replaced_once(specsim::test::read_text(kRows + "/run-a/a-chain3.yaml"),
                                      "tokens_per_s: 250tok/s", "tokens_per_s: 3000tok/s");

  const double t2 = specsim::fit_spec_extra_per_cycle((dir.path / "run-a" / "a-chain2.yaml").string(), kRoot);
  const double t3 = specsim::fit_spec_extra_per_cycle((dir.path / "run-a" / "a-chain3.yaml").string(), kRoot);
  REQUIRE(t2 > 0);
  REQUIRE(t3 < 0);
  specsim::ValidateOptions all;
  all.calibrate_on = "all";
  const auto report = specsim::validate_corpus(specsim::find_validation_rows({dir.path.string()}, kRoot), all, kRoot);
  REQUIRE(report.calibration);
  const auto negative_notes = [](const specsim::ValidationRow& r) {
    return std::count_if(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
      return w.find("1 of the 1 calibrating rows fit a negative per-cycle term") != std::string::npos;
    });
  };
  const auto& chain2 = report.calibration->rows[0];
  REQUIRE(chain2.row.name == "a-chain2");
  CHECK(chain2.row.spec_extra_per_cycle_s == 0.0);
  CHECK(negative_notes(chain2.row) == 1);
  // a-chain3 itself, calibrated on a-chain2 (positive), is not warned.
  const auto& chain3 = report.calibration->rows[1];
  CHECK_THAT(chain3.row.spec_extra_per_cycle_s, WithinRel(t2, 1e-9));
  CHECK(negative_notes(chain3.row) == 0);
}

TEST_CASE("validate: a row is called only where its band clears the plain rate", "[validate][call]") {
  const auto report = specsim::validate_corpus(specsim::find_validation_rows({kRows}, kRoot), {}, kRoot);
  int called = 0, right = 0;
  for (const auto& r : report.rows) {
    INFO(r.name);
    const bool clear = r.band_p10_tokens_per_s > r.predicted_plain_tokens_per_s ||
                       r.band_p90_tokens_per_s < r.predicted_plain_tokens_per_s;
    CHECK(r.called() == clear);
    if (r.called()) {
      ++called;
      const bool pays = r.band_p10_tokens_per_s > r.predicted_plain_tokens_per_s;
      CHECK(r.call_right() == (pays == (r.measured_speedup() > 1.0)));
      right += r.call_right() ? 1 : 0;
    } else {
      CHECK_FALSE(r.call_right());
    }
  }
  // b-chain3 lost (120 against 140 plain tok/s) where the point says it pays (sign wrong); its band
  // holds the plain rate, so predict commits to neither.
  const auto b = std::find_if(report.rows.begin(), report.rows.end(), [](const auto& r) { return r.name == "b-chain3"; });
  REQUIRE(b != report.rows.end());
  CHECK_FALSE(b->sign_right());
  CHECK(b->call() == specsim::SpeculationCall::kTooClose);
  const auto& lso = report.summaries[2];
  REQUIRE(lso.group == "leave-source-out");
  CHECK(lso.called == called);
  CHECK(lso.called_right == right);
  const auto j = nlohmann::json::parse(specsim::render_validation(report, specsim::Format::kJson));
  CHECK(j["summary"][2]["called"] == called);
  CHECK(j["rows"][3]["call"] == "too close to call");
  CHECK(j["rows"][3]["call_right"].is_null());

  // The guard: a call that turns wrong is a regression, whatever the sign count does.
  const BaselineFile baseline(report, "specsim-validate-call-baseline");
  const std::string f = baseline.write(j);
  specsim::ValidationReport worse = report;
  worse.summaries[2].called += 1;  // one more committed call, and it is wrong
  const auto out = specsim::regressions_against(worse, f);
  CHECK(std::any_of(out.begin(), out.end(), [](const std::string& w) {
    return w.find("leave-source-out: wrong calls among those predict commits to 1, baseline 0") != std::string::npos;
  }));
  nlohmann::json bad = j;
  bad["summary"][2]["called_right"] = called + 1;
  baseline.refused(bad, "summary[2].called_right", "at most");
}

TEST_CASE("validate: the regression guard compares against a committed summary", "[validate]") {
  const auto report = specsim::validate_corpus(specsim::find_validation_rows({kRows}, kRoot), {}, kRoot);
  const BaselineFile baseline(report, "specsim-validate-baseline");
  nlohmann::json same = nlohmann::json::parse(specsim::render_validation(report, specsim::Format::kJson));
  CHECK(specsim::regressions_against(report, baseline.write(same)).empty());
  // summary[2] is leave-source-out: every scored row, each band fitted without its own source.
  REQUIRE(same["summary"][2]["group"] == "leave-source-out");
  const auto& lso = report.summaries[2];

  nlohmann::json better = same;
  better["summary"][2]["median_abs_error"] = lso.median_abs_error - 0.05;  // 5 points better
  REQUIRE(lso.median_band_width > 0.10);
  better["summary"][2]["median_band_width"] = lso.median_band_width - 0.10;  // 10 points wider now: past 5
  const auto worse = specsim::regressions_against(report, baseline.write(better));
  CHECK_THAT(worse.at(0), Contains("leave-source-out: median |error|"));
  CHECK(std::any_of(worse.begin(), worse.end(),
                    [](const std::string& w) { return w.find("median band width") != std::string::npos; }));

  nlohmann::json fewer = same;
  fewer["summary"][2]["rows"] = 3;
  fewer["summary"][2]["sign_right"] = 0;
  fewer["summary"][2]["called"] = 0;
  fewer["summary"][2]["called_right"] = 0;
  fewer["summary"][2]["in_band"] = 0;
  CHECK_THAT(specsim::regressions_against(report, baseline.write(fewer)).at(0), Contains("4 rows, the baseline has 3"));

  // A baseline that guards nothing is refused, naming the file and the key.
  baseline.refused(nlohmann::json{{"rows", 1}}, "summary", "non-empty `summary` array");
  nlohmann::json empty = same;
  empty["summary"] = nlohmann::json::array();
  baseline.refused(empty, "summary", "non-empty");
  nlohmann::json no_check = same;
  no_check["summary"].erase(0);
  baseline.refused(no_check, "summary", "no 'check' group");
  nlohmann::json twice = same;
  twice["summary"].push_back(same["summary"][2]);
  baseline.refused(twice, "group", "appears twice");
  nlohmann::json negative = same;
  negative["summary"][2]["sign_right"] = -1;
  baseline.refused(negative, "summary[2].sign_right", ">= 0");
  nlohmann::json too_many = same;
  too_many["summary"][2]["in_band"] = lso.rows + 1;
  baseline.refused(too_many, "summary[2].in_band", "at most");
  nlohmann::json no_rows = same;
  no_rows["summary"][2]["rows"] = 0;
  baseline.refused(no_rows, "summary[2].rows", ">= 1");
  nlohmann::json inverted = same;
  inverted["summary"][2]["median_abs_error"] = lso.worst_abs_error + 0.1;
  baseline.refused(inverted, "summary[2].median_abs_error", "above the group's worst");
}

TEST_CASE("validate: the regression guard holds the check set's pairs too", "[validate][pairs]") {
  auto report = specsim::validate_corpus(specsim::find_validation_rows({kRows}, kRoot), {}, kRoot);
  // The test corpus pairs in its fit set only: give the check group figures to guard.
  REQUIRE(report.pair_summaries[0].group == "check");
  auto& check = report.pair_summaries[0];
  check.pairs = 10;
  check.median_gain_error_points = 5.0;
  check.sign_right = 8;
  check.called = 4;
  check.called_right = 3;
  check.in_band = 9;
  const BaselineFile baseline(report, "specsim-validate-pair-baseline");
  const nlohmann::json same = nlohmann::json::parse(specsim::render_validation(report, specsim::Format::kJson));
  CHECK(specsim::regressions_against(report, baseline.write(same)).empty());
  // A baseline from before the pairs guards the rows alone.
  nlohmann::json rows_only = same;
  rows_only.erase("pair_summary");
  CHECK(specsim::regressions_against(report, baseline.write(rows_only)).empty());

  nlohmann::json better = same;
  better["pair_summary"][0]["median_gain_error_points"] = 3.5;  // 1.5 points better than now: past 1
  better["pair_summary"][0]["sign_right"] = 10;                 // two more right: past 1
  better["pair_summary"][0]["called_right"] = 4;                // one sign committed to is wrong now, none then
  better["pair_summary"][0]["in_band"] = 10;                    // one more inside: within 2
  const auto worse = specsim::regressions_against(report, baseline.write(better));
  REQUIRE(worse.size() == 3);
  CHECK_THAT(worse[0], Contains("check pairs: median |gain error| 5.0 points, baseline 3.5"));
  CHECK_THAT(worse[1], Contains("check pairs: gain sign right in 8 pairs, baseline 10"));
  CHECK_THAT(worse[2], Contains("check pairs: wrong signs among those rank commits to 1, baseline 0"));

  nlohmann::json fewer = same;
  fewer["pair_summary"][0]["pairs"] = 9;
  fewer["pair_summary"][0]["sign_right"] = 8;
  CHECK_THAT(specsim::regressions_against(report, baseline.write(fewer)).at(0), Contains("check pairs: 10 pairs, the baseline has 9"));

  nlohmann::json too_many = same;
  too_many["pair_summary"][0]["sign_right"] = 11;
  baseline.refused(too_many, "pair_summary[0].sign_right", "at most the group's 10 pairs");
  nlohmann::json called_more = same;
  called_more["pair_summary"][0]["called_right"] = 5;  // of 4 called
  baseline.refused(called_more, "pair_summary[0].called_right", "at most the 4 pairs called");
  nlohmann::json not_array = same;
  not_array["pair_summary"] = 3;
  baseline.refused(not_array, "pair_summary", "expected an array");
}

TEST_CASE("validate: the regression guard holds the batch transfers too", "[validate][batch_transfer]") {
  const auto report = specsim::validate_corpus(specsim::find_validation_rows({kRows}, kRoot), {}, kRoot);
  // The test corpus has one transfer, run-a's batch 1 -> 8, in its fit set: the `all` group guards it.
  const auto& all = report.batch_transfer_summaries.at(2);
  REQUIRE(all.group == "all");
  REQUIRE(all.points == 1);
  const BaselineFile baseline(report, "specsim-validate-transfer-baseline");
  const nlohmann::json same = nlohmann::json::parse(specsim::render_validation(report, specsim::Format::kJson));
  CHECK(specsim::regressions_against(report, baseline.write(same)).empty());
  nlohmann::json before = same;
  before.erase("batch_transfer_summary");  // a baseline from before the transfers guards the rest
  CHECK(specsim::regressions_against(report, baseline.write(before)).empty());

  nlohmann::json better = same;
  better["batch_transfer_summary"][2]["median_abs_error"] = all.median_abs_error - 0.02;  // past the 1-point margin
  better["batch_transfer_summary"][2]["worst_abs_error"] = all.worst_abs_error - 0.02;    // within 3 points
  const auto worse = specsim::regressions_against(report, baseline.write(better));
  REQUIRE(worse.size() == 1);
  CHECK_THAT(worse[0], Contains("all batch transfers: median |error|"));

  nlohmann::json more = same;
  more["batch_transfer_summary"][2]["points"] = 2;
  CHECK_THAT(specsim::regressions_against(report, baseline.write(more)).at(0),
             Contains("all batch transfers: 1 points, the baseline has 2"));
  nlohmann::json inverted = same;
  inverted["batch_transfer_summary"][2]["median_abs_error"] = all.worst_abs_error + 0.1;
  baseline.refused(inverted, "batch_transfer_summary[2].median_abs_error", "above the group's worst");
  nlohmann::json not_array = same;
  not_array["batch_transfer_summary"] = 3;
  baseline.refused(not_array, "batch_transfer_summary", "expected an array");
}

TEST_CASE("cli: validate prints text, JSON and CSV from one report", "[validate][cli]") {
  const auto text = specsim::test::run({"validate", kRows});
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Contains("specsim validate: 4 measured deployments") && Contains("median|e|") &&
                           Contains("b-chain3") && Contains("batch > 1"));
  const auto json = specsim::test::run({"validate", kRows, "--json"});
  REQUIRE(json.code == 0);
  const auto j = nlohmann::json::parse(json.out);
  CHECK(j["rows"].size() == 4);
  CHECK(j["rows"][0]["source"]["url"] == "https://example.org/specsim-test-corpus");
  CHECK(j["rows"][0]["inputs"][0]["origin"] == "measured");
  const auto csv = specsim::test::run({"validate", kRows, "--csv", "--calibrate-on", "all"});
  REQUIRE(csv.code == 0);
  // header, rows, calibrated rows, the one pair (a-chain2 -> a-chain3), the one batch transfer
  CHECK(std::count(csv.out.begin(), csv.out.end(), '\n') == 1 + 4 + 4 + 1 + 1);

  const auto unknown = specsim::test::run({"validate", kRows, "--calibrate-on", "nosuch"});
  CHECK(unknown.code == 1);
  CHECK_THAT(unknown.err, Contains("--calibrate-on: no row named 'nosuch'") && Contains("a-chain2"));
  CHECK(unknown.out.empty());
}

TEST_CASE("calibration: a speculative run that is not held out calibrates the per-cycle term", "[validate]") {
  const std::string a2 = kRows + "/run-a/a-chain2.yaml";
  // held_out: false turns the measured 240 tok/s into an input: the model then reproduces it.
  const specsim::CycleModel model(specsim::load_scenario(a2, {"measurements.speculative.held_out=false"}, kRoot));
  const auto p = model.predict();
  CHECK_THAT(p.spec_tokens_per_s, WithinRel(240.0, 1e-9));
  CHECK_THAT(model.calibration().spec_extra_per_cycle_s.origin, Catch::Matchers::StartsWith("calibrated"));
  CHECK_THAT(model.calibration().spec_extra_per_cycle_s.value,
             WithinRel(specsim::fit_spec_extra_per_cycle(a2, kRoot), 1e-12));
  // A value the scenario sets still wins over the measurement.
  const specsim::CycleModel set(specsim::load_scenario(
      a2, {"measurements.speculative.held_out=false", "host.spec_extra_per_cycle=1ms"}, kRoot));
  CHECK(set.calibration().spec_extra_per_cycle_s.value == 1e-3);
  CHECK(set.calibration().spec_extra_per_cycle_s.origin == "set");
}

TEST_CASE("calibration: an end-to-end plain rate charges the step's residual per output token", "[validate]") {
  // a-chain3: 150 tok/s plain at batch 1, tau 2.8. Measured end to end, the residual h of the plain
  // step (6.67 ms minus the modelled forward) is paid per output token: a cycle emitting tau tokens
  // pays h * tau of it, instead of h once.
  const std::string row = kRows + "/run-a/a-chain3.yaml";
  const specsim::CycleModel step(specsim::load_scenario(row, {}, kRoot));
  const specsim::CycleModel e2e(specsim::load_scenario(row, {"measurements.baseline.includes_prefill=true"}, kRoot));
  const auto ps = step.predict();
  const auto pe = e2e.predict();
  const double h = e2e.calibration().host_decode_s.value;
  REQUIRE(e2e.calibration().host_per_output_token_s == h);  // all of it
  CHECK_THAT(h, WithinRel(step.calibration().host_decode_s.value, 1e-12));  // the same residual
  CHECK_THAT(pe.baseline_tokens_per_s, WithinRel(150.0, 1e-9));            // plain still reproduced
  CHECK_THAT(pe.spec_host_s - ps.spec_host_s, WithinRel(h * (pe.tokens_per_cycle - 1.0), 1e-9));
  // Break-even is still the fixed point tau* = T_cycle(tau*) / T_base.
  const double tau = pe.breakeven_tokens_per_cycle;
  CHECK_THAT(e2e.cycle_s(tau) / e2e.baseline_step_s(), WithinRel(tau, 1e-6));
}

TEST_CASE("calibration: a measured TPOT splits an end-to-end residual into per-step and per-token parts", "[validate]") {
  // a-chain3 at 140 tok/s end to end is a 7.143 ms step per token, against a modelled forward of
  // 6.46 ms. With a measured TPOT of 6.8 ms the decode step is 6.8 ms: its 0.34 ms over the forward
  // is host work paid once per cycle, and the 0.343 ms the end-to-end step adds (prefill, tails)
  // is paid per output token, tau times. Without the TPOT all 0.683 ms is paid tau times.
  const std::string row = kRows + "/run-a/a-chain3.yaml";
  const std::vector<std::string> e2e_patches{"measurements.baseline.tokens_per_s=140tok/s",
                                             "measurements.baseline.includes_prefill=true"};
  auto tpot_patches = e2e_patches;
  tpot_patches.push_back("measurements.baseline.tpot=6.8ms");
  const specsim::CycleModel e2e(specsim::load_scenario(row, e2e_patches, kRoot));
  const specsim::CycleModel tpot(specsim::load_scenario(row, tpot_patches, kRoot));
  const auto pe = e2e.predict();
  const auto pt = tpot.predict();
  const auto& cal = tpot.calibration();
  CHECK_THAT(pt.baseline_tokens_per_s, WithinRel(140.0, 1e-9));  // plain still reproduced
  CHECK_THAT(cal.host_per_output_token_s, WithinRel(1.0 / 140.0 - 6.8e-3, 1e-9));
  CHECK_THAT(cal.host_decode_s.origin, Catch::Matchers::Contains("measured TPOT 6.8 ms"));
  const double h = cal.host_decode_s.value;  // the same whole residual as without the TPOT
  CHECK_THAT(h, WithinRel(e2e.calibration().host_decode_s.value, 1e-12));
  CHECK(h > cal.host_per_output_token_s);
  const double tau = pt.tokens_per_cycle;
  CHECK_THAT(pe.spec_host_s - pt.spec_host_s, WithinRel((h - cal.host_per_output_token_s) * (tau - 1.0), 1e-9));
  CHECK(pt.spec_tokens_per_s > pe.spec_tokens_per_s);
  // Break-even is still the fixed point tau* = T_cycle(tau*) / T_base.
  const double star = pt.breakeven_tokens_per_cycle;
  CHECK_THAT(tpot.cycle_s(star) / tpot.baseline_step_s(), WithinRel(star, 1e-6));
}

TEST_CASE("load: a TPOT needs an end-to-end rate and cannot exceed its step", "[validate]") {
  const std::string yaml = specsim::test::read_text(kRows + "/run-a/a-chain3.yaml");
  specsim::test::TempDir dir("specsim-tpot");
  const auto message = [&](const std::string& baseline) {
    const std::string file = (dir.path / "tpot.yaml").string();
    std::ofstream(file) << specsim::test::replaced_once(yaml, "    tokens_per_s: 150tok/s\n", baseline);
    try {
      (void)specsim::load_scenario(file, {}, kRoot);
    } catch (const specsim::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string alone = message("    tokens_per_s: 150tok/s\n    tpot: 6.2ms\n");
  CHECK_THAT(alone, Catch::Matchers::Contains("tpot.yaml:32"));
  CHECK_THAT(alone, Catch::Matchers::Contains("tpot"));
  CHECK_THAT(alone, Catch::Matchers::Contains("includes_prefill: true"));
  // 150 tok/s at batch 1 is 6.667 ms per token end to end; 7 ms of decode alone is impossible.
  const std::string longer = message("    tokens_per_s: 150tok/s\n    includes_prefill: true\n    tpot: 7ms\n");
  CHECK_THAT(longer, Catch::Matchers::Contains("tpot.yaml:33"));
  CHECK_THAT(longer, Catch::Matchers::Contains("longer than the end-to-end step"));
  CHECK(message("    tokens_per_s: 150tok/s\n    includes_prefill: true\n    tpot: 6.6ms\n") == "no error");
}

TEST_CASE("load: a scenario without an engine block takes every engine default", "[validate]") {
  // b-chain3 states only engine.name: sglang, which is the default; without the block it is the same.
  const std::string yaml = specsim::test::replaced_once(specsim::test::read_text(kRows + "/run-b/b-chain3.yaml"),
                                                        "engine:\n  name: sglang\n", "");
  specsim::test::TempDir dir("specsim-no-engine");
  const std::string file = (dir.path / "no-engine.yaml").string();
  std::ofstream(file) << yaml;
  const specsim::CycleModel without(specsim::load_scenario(file, {}, kRoot));
  const specsim::CycleModel with(specsim::load_scenario(kRows + "/run-b/b-chain3.yaml", {}, kRoot));
  CHECK(without.scenario().engine.name == "sglang");
  CHECK(without.predict().spec_tokens_per_s == with.predict().spec_tokens_per_s);
}
