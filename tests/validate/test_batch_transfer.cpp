// The plain rate at a higher batch of one deployment, predicted from its lowest batch
// (docs/validation.md#batch-transfer): which rows transfer, the prediction `predict --concurrency`
// gives, the error and the summaries.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "cli_run.hpp"
#include "specsim/concurrency.hpp"
#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/prior_band.hpp"
#include "specsim/report.hpp"
#include "specsim/validate_corpus.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
const std::string kRows = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/validation";

const specsim::BatchTransferSummary& group(const std::vector<specsim::BatchTransferSummary>& s, const std::string& name) {
  const auto it = std::find_if(s.begin(), s.end(), [&](const auto& g) { return g.group == name; });
  REQUIRE(it != s.end());
  return *it;
}
}  // namespace

TEST_CASE("batch transfer: the lowest batch's plain run predicts the higher batch as predict --concurrency does",
          "[batch_transfer]") {
  const auto report = specsim::validate_corpus(specsim::find_validation_rows({kRows}, kRoot), {}, kRoot);
  // run-a measured plain decoding at batch 1 (a-chain2 and a-chain3, 150 tok/s) and batch 8
  // (a-chain4-bs8, 1000 tok/s) on one box, context and engine; run-b at batch 1 only.
  REQUIRE(report.batch_transfers.size() == 1);
  const auto& t = report.batch_transfers[0];
  CHECK(t.source == "run-a");
  CHECK(t.set == "fit");
  CHECK(t.from_row == "a-chain2");  // the first row at the lowest batch, in file order
  CHECK(t.from_batch == 1);
  CHECK(t.to_row == "a-chain4-bs8");
  CHECK(t.to_batch == 8);
  CHECK(t.measured_plain_tokens_per_s == 1000.0);
  // What a user gets from the batch-1 row: predict --concurrency 8.
  specsim::Scenario s = specsim::load_scenario(kRows + "/run-a/a-chain2.yaml", {}, kRoot);
  s.concurrency = {8};
  const auto level = specsim::predict_concurrency(s).levels.at(0);
  CHECK_THAT(t.predicted_plain_tokens_per_s, WithinRel(level.plain_aggregate_tokens_per_s, 1e-12));
  CHECK_THAT(t.error(), WithinRel(level.plain_aggregate_tokens_per_s / 1000.0 - 1.0, 1e-12));

  const auto& fit = group(report.batch_transfer_summaries, "fit");
  CHECK(fit.points == 1);
  CHECK(fit.sources == 1);
  CHECK_THAT(fit.median_abs_error, WithinRel(std::fabs(t.error()), 1e-12));
  CHECK_THAT(fit.mean_signed_error, WithinRel(t.error(), 1e-12));
  CHECK(fit.worst_point == "a-chain2 -> a-chain4-bs8");
  CHECK(group(report.batch_transfer_summaries, "check").points == 0);
  CHECK(group(report.batch_transfer_summaries, "all").points == 1);
}

TEST_CASE("batch transfer: the higher batch's speculative rate on the lowest batch's calibration, with its band",
          "[batch_transfer][band]") {
  const auto report = specsim::validate_corpus(specsim::find_validation_rows({kRows}, kRoot), {}, kRoot);
  REQUIRE(report.batch_transfers.size() == 1);
  const auto& t = report.batch_transfers[0];
  REQUIRE(t.has_spec());
  // a-chain4-bs8's own speculative run (its acceptance, 4 steps, batch 8), calibrated on a-chain2's
  // plain run at batch 1: the row's scenario with the lower row's file as the one measured.
  specsim::Scenario to = specsim::load_validation_row(kRows + "/run-a/a-chain4-bs8.yaml", kRoot);
  to.as_measured = std::make_shared<const specsim::Scenario>(
      specsim::load_scenario(kRows + "/run-a/a-chain2.yaml", {}, kRoot));
  to.model_error.reset();
  const specsim::CycleModel model(std::move(to));
  const auto p = model.predict();
  CHECK(t.measured_spec_tokens_per_s == *model.scenario().measurements.speculative_tokens_per_s);
  CHECK_THAT(t.predicted_spec_tokens_per_s, WithinRel(p.spec_tokens_per_s, 1e-12));
  CHECK_THAT(t.spec_error(), WithinRel(p.spec_tokens_per_s / t.measured_spec_tokens_per_s - 1.0, 1e-12));
  // Two fit sources leave too few rows for a model error (kMinModelErrorRows): the band is the
  // priors' alone, as predict's would be, and it holds the point.
  const auto band = specsim::prior_band(model, p);
  CHECK(t.spec_p10_tokens_per_s == band.p10_tokens_per_s);
  CHECK(t.spec_p90_tokens_per_s == band.p90_tokens_per_s);
  CHECK(t.spec_p10_tokens_per_s < t.predicted_spec_tokens_per_s);
  CHECK(t.spec_p90_tokens_per_s > t.predicted_spec_tokens_per_s);
  const auto& fit = group(report.batch_transfer_summaries, "fit");
  CHECK(fit.spec_points == 1);
  CHECK_THAT(fit.spec_median_abs_error, WithinRel(std::fabs(t.spec_error()), 1e-12));
  CHECK(fit.spec_in_band == (t.spec_in_band() ? 1 : 0));
  CHECK_THAT(fit.spec_median_band_width,
             WithinRel((t.spec_p90_tokens_per_s - t.spec_p10_tokens_per_s) / t.predicted_spec_tokens_per_s, 1e-12));
  CHECK(group(report.batch_transfer_summaries, "check").spec_points == 0);
}

TEST_CASE("batch transfer: rows at another context or measured another way never transfer", "[batch_transfer]") {
  const std::string bs8 = specsim::test::read_text(kRows + "/run-a/a-chain4-bs8.yaml");
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"  context: 1024", "  context: 4096"},
           {"    tokens_per_s: 1000tok/s", "    tokens_per_s: 1000tok/s\n    includes_prefill: true"},
           {"  name: sglang", "  name: vllm"}}) {
    specsim::test::TempDir dir("specsim-batch-transfer");
    std::filesystem::create_directories(dir.path / "run-a");
    for (const char* f : {"a-chain2.yaml", "a-chain3.yaml"}) {
      std::filesystem::copy_file(kRows + "/run-a/" + f, dir.path / "run-a" / f);
    }
    std::ofstream(dir.path / "run-a" / "a-chain4-bs8.yaml") << specsim::test::replaced_once(bs8, from, to);
    const auto report = specsim::validate_corpus(specsim::find_validation_rows({dir.path.string()}, kRoot), {}, kRoot);
    INFO(to);
    CHECK(report.batch_transfers.empty());
    CHECK(group(report.batch_transfer_summaries, "all").points == 0);
  }
}

TEST_CASE("batch transfer: text, JSON and CSV carry every transfer and the summaries", "[batch_transfer][report]") {
  const auto report = specsim::validate_corpus(specsim::find_validation_rows({kRows}, kRoot), {}, kRoot);
  const std::string text = specsim::render_validation(report, specsim::Format::kText);
  CHECK_THAT(text, Contains("batch transfer: the plain rate at a higher batch of one deployment"));
  CHECK_THAT(text, Contains("a-chain4-bs8"));
  CHECK_THAT(text, Contains("1 -> 8"));
  const auto j = nlohmann::json::parse(specsim::render_validation(report, specsim::Format::kJson));
  REQUIRE(j["batch_transfers"].size() == 1);
  CHECK(j["batch_transfers"][0]["from_row"] == "a-chain2");
  CHECK_THAT(j["batch_transfers"][0]["error"].get<double>(), WithinRel(report.batch_transfers[0].error(), 1e-12));
  REQUIRE(j["batch_transfer_summary"].size() == 3);
  CHECK(j["batch_transfer_summary"][1]["group"] == "fit");
  const auto& spec = j["batch_transfers"][0]["speculative"];
  CHECK_THAT(spec["error"].get<double>(), WithinRel(report.batch_transfers[0].spec_error(), 1e-12));
  CHECK(spec["measured_inside"] == report.batch_transfers[0].spec_in_band());
  CHECK(j["batch_transfer_summary"][1]["speculative"]["points"] == 1);
  CHECK_THAT(text, Contains("spec: points  median |error|    bias   band (width)"));
  const std::string csv = specsim::render_validation(report, specsim::Format::kCsv);
  CHECK_THAT(csv, Contains("batch transfers,fit,a-chain4-bs8,run-a,"));
}
