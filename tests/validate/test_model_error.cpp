// specsim's error beyond its priors (validate_corpus.hpp's model_error_of, models/model-error.yaml):
// worked numbers for the formula, the band it widens, held out by source in validate, the committed
// file recomputed from the corpus, and bad files refused by file and key.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "cli_run.hpp"
#include "specsim/cycle.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/prior_band.hpp"
#include "specsim/validate_corpus.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
const double kZ90 = 1.2815515655446004;

// A row predicted at 100 tok/s that measured 100 exp(r), with a prior band of ln sigma s around it.
specsim::ValidationRow row(double r, double s, const std::string& source) {
  specsim::ValidationRow x;
  x.source.source = source;
  x.predicted_spec_tokens_per_s = 100.0;
  x.measured_spec_tokens_per_s = 100.0 * std::exp(r);
  x.prior_band_p10_tokens_per_s = 100.0 * std::exp(-kZ90 * s);
  x.prior_band_p90_tokens_per_s = 100.0 * std::exp(kZ90 * s);
  return x;
}

struct TempFile {
  fs::path path;
  explicit TempFile(const std::string& text) {
    path = fs::temp_directory_path() / ("specsim-model-error-" + std::to_string(::getpid()) + ".yaml");
    std::ofstream(path) << text;
  }
  ~TempFile() { fs::remove(path); }
};

}  // namespace

TEST_CASE("model error: the residuals' spread beyond the priors' bands, worked numbers", "[model_error]") {
  // Ten rows, residuals -0.20, -0.15, ..., +0.25 (step 0.05), each with a prior band of sigma 0.05,
  // from 3 sources: s0 holds rows 0, 3, 6, 9 (weight 1/4 each), s1 and s2 three rows each (1/3), so
  // every source weighs 1 and the total is 3. Cumulative weight by residual: 0.25, 0.583, 0.917,
  // 1.167, 1.5, 1.833, 2.083, 2.417, 2.75, 3. p10 = the first to reach 0.3: row 1 (-0.15); p50 =
  // the first to reach 1.5: row 4 (0.00); p90 = the first to reach 2.7: row 8 (+0.20). (Unweighted,
  // nearest rank of 10 would give -0.20 for p10.)
  // Small-sample factor: Student's t with 3 - 1 = 2 degrees of freedom at 0.9, 1.885618, over z_0.9
  // 1.281552 = 1.471356.
  // sigma = sqrt((0.35 / 2.563103 x 1.471356)^2 - 0.05^2) = 0.194597;
  // below: sqrt((0.15 / 1.281552 x 1.471356)^2 - 0.05^2) = 0.164798;
  // above: sqrt((0.20 / 1.281552 x 1.471356)^2 - 0.05^2) = 0.224111.
  std::vector<specsim::ValidationRow> rows;
  for (int i = 0; i < 10; ++i) rows.push_back(row(-0.20 + 0.05 * i, 0.05, "s" + std::to_string(i % 3)));
  std::vector<const specsim::ValidationRow*> ptrs;
  for (const auto& r : rows) ptrs.push_back(&r);
  const auto e = specsim::model_error_of(ptrs);
  REQUIRE(e.has_value());
  CHECK(e->rows == 10);
  CHECK(e->sources == 3);
  CHECK_THAT(e->residual_p10, WithinAbs(-0.15, 1e-12));
  CHECK_THAT(e->residual_p50, WithinAbs(0.00, 1e-12));
  CHECK_THAT(e->residual_p90, WithinAbs(0.20, 1e-12));
  CHECK_THAT(e->prior_sigma_rms, WithinRel(0.05, 1e-9));
  CHECK_THAT(e->small_sample_factor, WithinRel(1.471356, 1e-6));
  CHECK_THAT(e->sigma, WithinRel(0.194597, 1e-5));
  CHECK_THAT(e->sigma_below, WithinRel(0.164798, 1e-5));
  CHECK_THAT(e->sigma_above, WithinRel(0.224111, 1e-5));
  // Priors as wide as the residuals leave no model error; too few rows or sources give none.
  // (Priors of sigma 0.25 against the residuals' 0.2009 with the factor.)
  for (auto& r : rows) {
    r.prior_band_p10_tokens_per_s = 100.0 * std::exp(-kZ90 * 0.25);
    r.prior_band_p90_tokens_per_s = 100.0 * std::exp(kZ90 * 0.25);
  }
  CHECK(specsim::model_error_of(ptrs)->sigma == 0.0);
  ptrs.pop_back();
  CHECK_FALSE(specsim::model_error_of(ptrs).has_value());  // 9 rows
  for (auto& r : rows) r.source.source = "one";
  ptrs.push_back(&rows.back());
  CHECK_FALSE(specsim::model_error_of(ptrs).has_value());  // 1 source
}

TEST_CASE("model error: its two rules, each source once and the small-sample factor, flipped", "[model_error][rules]") {
  // The worked rows above.
  std::vector<specsim::ValidationRow> rows;
  for (int i = 0; i < 10; ++i) rows.push_back(row(-0.20 + 0.05 * i, 0.05, "s" + std::to_string(i % 3)));
  std::vector<const specsim::ValidationRow*> ptrs;
  for (const auto& r : rows) ptrs.push_back(&r);
  specsim::ModelRules rules;
  rules.model_error_per_source = false;
  rules.model_error_small_sample = false;
  // Both off: nearest rank of 10 rows, p10 the 1st (-0.20), p90 the 9th (+0.20); z_0.9 alone.
  // sigma_r = 0.40 / (2 x 1.28155) = 0.15606; sigma = sqrt(0.15606^2 - 0.05^2) = 0.14784.
  const auto plain = specsim::model_error_of(ptrs, rules);
  REQUIRE(plain.has_value());
  CHECK_THAT(plain->residual_p10, WithinAbs(-0.20, 1e-12));
  CHECK_THAT(plain->residual_p90, WithinAbs(0.20, 1e-12));
  CHECK(plain->small_sample_factor == 1.0);
  CHECK_THAT(plain->sigma, WithinRel(0.14784, 1e-4));
  // The factor alone: the same quantiles, sigma = sqrt((0.15606 x 1.471356)^2 - 0.05^2) = 0.224111.
  rules.model_error_small_sample = true;
  const auto t_only = specsim::model_error_of(ptrs, rules);
  CHECK_THAT(t_only->residual_p10, WithinAbs(-0.20, 1e-12));
  CHECK_THAT(t_only->sigma, WithinRel(0.224111, 1e-5));
  // One source of all ten rows among three is weighted as one source, not ten: with s0 holding
  // rows 0-7 (1/8 each) and s1, s2 rows 8 and 9, the cumulative weights are 0.125 .. 1, 2, 3 and
  // p90 (2.7) falls on row 9 (+0.25), p10 (0.3) on row 2 (-0.10).
  for (int i = 0; i < 10; ++i) rows[i].source.source = i < 8 ? "s0" : (i == 8 ? "s1" : "s2");
  rules.model_error_per_source = true;
  const auto weighted = specsim::model_error_of(ptrs, rules);
  CHECK_THAT(weighted->residual_p10, WithinAbs(-0.10, 1e-12));
  CHECK_THAT(weighted->residual_p90, WithinAbs(0.25, 1e-12));
  rules.model_error_per_source = false;
  const auto by_row = specsim::model_error_of(ptrs, rules);
  CHECK_THAT(by_row->residual_p10, WithinAbs(-0.20, 1e-12));
  CHECK_THAT(by_row->residual_p90, WithinAbs(0.20, 1e-12));
}

TEST_CASE("model error: each tail takes off the priors' spread on its own side", "[model_error]") {
  // The ten rows above, each with a prior band that only reaches up: p10 at the point (100 tok/s),
  // p90 at 100 exp(2 z_0.9 x 0.05), as a second reading that only raises a prediction draws it. The
  // symmetric rms is still 0.05 (the band's ln width over 2 z_0.9), but below the point the priors
  // spread nothing and above it 2 x 0.05 = 0.1 (ln(p90 / point) / z_0.9):
  // below: 0.15 / 1.281552 x 1.471356 = 0.172216, less 0 = 0.172216;
  // above: sqrt((0.20 / 1.281552 x 1.471356)^2 - 0.1^2) = sqrt(0.229622^2 - 0.01) = 0.206702.
  std::vector<specsim::ValidationRow> rows;
  for (int i = 0; i < 10; ++i) {
    specsim::ValidationRow r = row(-0.20 + 0.05 * i, 0.05, "s" + std::to_string(i % 3));
    r.prior_band_p10_tokens_per_s = 100.0;
    r.prior_band_p90_tokens_per_s = 100.0 * std::exp(2.0 * kZ90 * 0.05);
    rows.push_back(r);
  }
  std::vector<const specsim::ValidationRow*> ptrs;
  for (const auto& r : rows) ptrs.push_back(&r);
  const auto e = specsim::model_error_of(ptrs);
  REQUIRE(e.has_value());
  CHECK_THAT(e->prior_sigma_rms, WithinRel(0.05, 1e-9));
  CHECK_THAT(e->prior_sigma_below_rms, WithinAbs(0.0, 1e-12));
  CHECK_THAT(e->prior_sigma_above_rms, WithinRel(0.1, 1e-9));
  CHECK_THAT(e->sigma_below, WithinRel(0.172216, 1e-5));
  CHECK_THAT(e->sigma_above, WithinRel(0.206702, 1e-5));
}

TEST_CASE("model error: the band widens by exp(+-z90 sigma) and keeps the priors' band", "[model_error][prior_band]") {
  // Every prior set: no prior spread, so the band is the prediction times exp(sigma z) alone:
  // p10/p90 = point x exp(-+1.28155 x 0.1) = point x 0.8797 / 1.1367 (4000 draws: within 1%).
  const std::string file = kRoot.root() + "/validation/vllm-pr-16035-llama3-8b/vllm16035-llama3-8b-eagle1-k2-bs1.yaml";
  // (and the end-to-end plain rate's second reading switched off).
  specsim::Scenario s = specsim::load_scenario(
      file,
      {"compute.bandwidth_efficiency=0.84", "compute.kv_verify_ratio=0.5", "compute.multi_token_step=5us",
       "host.spec_extra_per_cycle=0.3ms", "host.draft_step_overhead=0.1ms"},
      kRoot);
  s.rules.end_to_end_band_readings = false;
  const specsim::CycleModel model(std::move(s));
  const auto p = model.predict();
  const auto priors = specsim::prior_band(model, p);
  REQUIRE(priors.terms.empty());
  specsim::ModelError e;
  e.sigma = e.sigma_below = e.sigma_above = 0.1;
  const auto band = specsim::with_model_error(priors, p.spec_tokens_per_s, e);
  CHECK_THAT(band.p10_tokens_per_s, WithinRel(p.spec_tokens_per_s * 0.8797, 0.01));
  CHECK_THAT(band.p90_tokens_per_s, WithinRel(p.spec_tokens_per_s * 1.1367, 0.01));
  CHECK(band.priors_p10_tokens_per_s == p.spec_tokens_per_s);
  CHECK(band.model_error->sigma == 0.1);
  // A split normal: each tail its own sigma. Below 0.1, above 0.05: p90 = point x exp(1.28155 x 0.05)
  // = point x 1.0662, p10 as before.
  e.sigma_above = 0.05;
  const auto split = specsim::with_model_error(priors, p.spec_tokens_per_s, e);
  CHECK_THAT(split.p10_tokens_per_s, WithinRel(p.spec_tokens_per_s * 0.8797, 0.01));
  CHECK_THAT(split.p90_tokens_per_s, WithinRel(p.spec_tokens_per_s * 1.0662, 0.01));
  // Both sigmas 0 leave the band as it was.
  e.sigma = e.sigma_below = e.sigma_above = 0.0;
  CHECK(specsim::with_model_error(priors, p.spec_tokens_per_s, e).p90_tokens_per_s == p.spec_tokens_per_s);
  // Loaded from the repository, a scenario carries models/model-error.yaml and predict's band draws it.
  REQUIRE(model.scenario().model_error.has_value());
  CHECK(model.scenario().model_error->origin == "models/model-error.yaml");
  const auto shown = specsim::prediction_band(model, p);
  // The fit set's residuals lie mostly below the predictions: the lower tail widens, the upper may not.
  CHECK(shown.p10_tokens_per_s < p.spec_tokens_per_s);
  CHECK(shown.p90_tokens_per_s >= p.spec_tokens_per_s);
}

TEST_CASE("model error: the committed models/model-error.yaml is the corpus's, each row's band held out by source",
          "[model_error][validate]") {
  // After a model or corpus change: specsim validate --write-model-error models/model-error.yaml.
  const auto report = specsim::validate_corpus(specsim::find_validation_rows({}, kRoot), {}, kRoot);
  REQUIRE(report.model_error.has_value());
  const auto file = specsim::load_model_error(specsim::model_error_file(kRoot));
  CHECK(file.rows == report.model_error->rows);
  CHECK(file.sources == report.model_error->sources);
  CHECK_THAT(file.sigma, WithinAbs(report.model_error->sigma, 6e-5));
  CHECK_THAT(file.residual_p10, WithinAbs(report.model_error->residual_p10, 6e-5));
  CHECK_THAT(file.residual_p90, WithinAbs(report.model_error->residual_p90, 6e-5));
  CHECK_THAT(file.prior_sigma_rms, WithinAbs(report.model_error->prior_sigma_rms, 6e-5));
  CHECK_THAT(file.small_sample_factor, WithinAbs(report.model_error->small_sample_factor, 6e-5));
  CHECK_THAT(file.sigma_below, WithinAbs(report.model_error->sigma_below, 6e-5));
  CHECK_THAT(file.sigma_above, WithinAbs(report.model_error->sigma_above, 6e-5));
  // The gain error: the fit set's pairs only.
  int fit_pairs = 0;
  for (const auto& p : report.pairs) fit_pairs += p.set == "fit";
  CHECK(file.gain_pairs == fit_pairs);
  CHECK(report.model_error->gain_pairs == fit_pairs);
  CHECK_THAT(file.gain_residual_p10, WithinAbs(report.model_error->gain_residual_p10, 6e-5));
  CHECK_THAT(file.gain_residual_p90, WithinAbs(report.model_error->gain_residual_p90, 6e-5));
  // The file is the fit set's alone: no check-set row enters it.
  int fit_rows = 0;
  for (const auto& r : report.rows) fit_rows += r.set == "fit";
  CHECK(file.rows == fit_rows);
  CHECK(fit_rows < int(report.rows.size()));
  // Each row's error comes from the fit set's rows of other sources only, and widens its priors' band.
  for (const auto& r : report.rows) {
    std::vector<const specsim::ValidationRow*> others;
    for (const auto& o : report.rows) {
      if (o.set == "fit" && o.source.source != r.source.source) others.push_back(&o);
    }
    REQUIRE(r.model_error.has_value());
    CHECK(r.model_error->rows == int(others.size()));
    CHECK(r.model_error->sigma_below == specsim::model_error_of(others)->sigma_below);
    CHECK(r.model_error->sigma_above == specsim::model_error_of(others)->sigma_above);
    CHECK(r.band_p10_tokens_per_s <= r.prior_band_p10_tokens_per_s * 1.0001);
    CHECK(r.band_p90_tokens_per_s >= r.prior_band_p90_tokens_per_s * 0.9999);
  }
  CHECK(report.summaries.front().in_band >= report.summaries.front().in_prior_band);
}

TEST_CASE("model error: a bad file is refused by file and key, and validate writes one only from enough rows",
          "[model_error][cli]") {
  const std::string good = R"(schema_version: 1
kind: model_error
source: "test"
rows: 12
sources: 3
residual_ln: {p10: -0.2, p50: 0.0, p90: 0.1}
prior_sigma_rms: 0.05
sigma: 0.08
)";
  {
    TempFile f(good);
    CHECK(specsim::load_model_error(f.path.string()).sigma == 0.08);
  }
  const auto refused = [&](const std::string& from, const std::string& to, const std::string& key) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    TempFile f(text);
    CHECK_THROWS_WITH(specsim::load_model_error(f.path.string()), Contains(f.path.string()) && Contains(key));
  };
  refused("sigma: 0.08", "sigma: 2", "sigma");
  refused("sources: 3", "sources: 13", "sources");
  refused("p50: 0.0", "p50: 0.3", "p50");
  refused("rows: 12\n", "", "rows");
  refused("sigma: 0.08", "sigma: 0.08\nspread: 1", "spread");
  refused("sigma: 0.08", "sigma: 0.08\ngain_residual_ln: {pairs: 3, p10: 0.2, p90: 0.1}", "gain_residual_ln.p10");
  refused("sigma: 0.08", "sigma: 0.08\ngain_residual_ln: {pairs: 0, p10: -0.1, p90: 0.1}", "gain_residual_ln.pairs");
  // Student's t over the normal at 0.9 lies in [1, 2.4] (two sources give 2.4).
  refused("sigma: 0.08", "sigma: 0.08\nsmall_sample_factor: 0.9", "small_sample_factor");
  // The batch-transfer error (docs/validation.md#transfer-error): its sources among its points, a
  // sigma per unit ln batch below 1, nothing else.
  const std::string transfer = "sigma: 0.08\nbatch_transfer: {points: 10, sources: 8, sigma_per_ln_batch: 0.07}";
  {
    TempFile f(good + "batch_transfer: {points: 10, sources: 8, sigma_per_ln_batch: 0.07}\n");
    const auto e = specsim::load_model_error(f.path.string());
    CHECK(e.transfer_points == 10);
    CHECK(e.transfer_sources == 8);
    CHECK(e.transfer_sigma_per_ln_batch == 0.07);
  }
  {
    TempFile f(good);
    CHECK(specsim::load_model_error(f.path.string()).transfer_points == 0);  // none known
  }
  const auto refused_transfer = [&](const std::string& from, const std::string& to, const std::string& key) {
    std::string block = transfer;
    block.replace(block.find(from), from.size(), to);
    refused("sigma: 0.08", block, key);
  };
  refused_transfer("sources: 8", "sources: 11", "batch_transfer.sources");
  refused_transfer("sigma_per_ln_batch: 0.07", "sigma_per_ln_batch: 1.5", "batch_transfer.sigma_per_ln_batch");
  refused_transfer("points: 10", "points: 0", "batch_transfer.points");
  refused_transfer("0.07}", "0.07, slope: 1}", "batch_transfer.slope");
  {
    TempFile f(good + "small_sample_factor: 1.064\n");
    CHECK(specsim::load_model_error(f.path.string()).small_sample_factor == 1.064);
  }
  {
    TempFile without(good);
    CHECK(specsim::load_model_error(without.path.string()).small_sample_factor == 1.0);  // older files: not applied
  }

  // Four invented rows of two sources are too few: an error, and no file.
  const fs::path out = fs::temp_directory_path() / ("specsim-model-error-out-" + std::to_string(::getpid()) + ".yaml");
  const auto few = specsim::test::run({"validate", std::string(SPECSIM_TEST_DATA_DIR) + "/valid/validation",
                                       "--write-model-error", out.string()});
  CHECK(few.code == 1);
  CHECK_THAT(few.err, Contains("--write-model-error") && Contains("too few"));
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("model error: a scenario's band.model_error wins over the file, 0 leaves the priors' band",
          "[model_error][prior_band]") {
  const std::string file = kRoot.root() + "/validation/vllm-pr-16035-llama3-8b/vllm16035-llama3-8b-eagle1-k2-bs1.yaml";
  const specsim::CycleModel set(specsim::load_scenario(file, {"band.model_error=0.2"}, kRoot));
  REQUIRE(set.scenario().model_error.has_value());
  CHECK(set.scenario().model_error->sigma == 0.2);
  CHECK(set.scenario().model_error->origin == "set");
  CHECK(set.scenario().model_error->rows == 0);  // not the corpus's rows
  const auto p = set.predict();
  const auto wide = specsim::prediction_band(set, p);
  // exp(1.28155 x 0.2) = 1.292: the set sigma alone takes p90 / p10 past 1.29^2 = 1.67.
  CHECK(wide.p90_tokens_per_s / wide.p10_tokens_per_s > 1.6);
  const specsim::CycleModel off(specsim::load_scenario(file, {"band.model_error=0"}, kRoot));
  const auto priors = specsim::prediction_band(off, off.predict());
  CHECK(priors.p10_tokens_per_s == priors.priors_p10_tokens_per_s);
  CHECK(priors.p90_tokens_per_s == priors.priors_p90_tokens_per_s);
  const auto text = specsim::test::run({"predict", "--scenario", file, "--set", "band.model_error=0.2"});
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Contains("band.model_error: sigma 0.200"));
  const auto bad = specsim::test::run({"predict", "--scenario", file, "--set", "band.model_error=3"});
  CHECK(bad.code != 0);
  CHECK_THAT(bad.err, Contains("band.model_error"));
}
