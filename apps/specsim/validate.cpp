// specsim validate: the validation corpus (validation/) predicted row by row against its held-out
// measurements, with summaries; optionally calibrated on rows of the same source, and guarded
// against a committed baseline summary (CI).
#include <CLI/CLI.hpp>

#include <filesystem>
#include <ostream>

#include "choices.hpp"
#include "cli.hpp"
#include "format_option.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/output_file.hpp"
#include "specsim/report.hpp"
#include "specsim/validate_corpus.hpp"

namespace specsim::cli {

namespace {

struct ValidateOptions {
  std::vector<std::string> paths;
  std::string calibrate_on;
  std::string split;
  std::string baseline;
  std::string write_model_error;
  bool ablate = false;
  Format format = Format::kText;
};

// What a validate run reads, which --write-model-error must never replace: the rows, the baseline,
// the split, and every data file a row can load (models/, calibration/ of the data directory), but
// models/model-error.yaml, the file the option exists to rewrite (validate never reads it for a row).
std::vector<std::string> files_read(const std::vector<std::string>& rows, const ValidateOptions& o) {
  std::vector<std::string> read = rows;
  if (!o.baseline.empty()) read.push_back(o.baseline);
  if (!o.split.empty()) read.push_back(o.split);
  const DataDir data;
  read.push_back(validation_split_file(data));
  const std::filesystem::path error_file = std::filesystem::weakly_canonical(model_error_file(data));
  for (const std::string& file : data.files()) {
    std::error_code ec;
    if (std::filesystem::weakly_canonical(file, ec) != error_file) read.push_back(file);
  }
  return read;
}

void run_validate(const ValidateOptions& o, Io& io) {
  specsim::ValidateOptions vo;
  vo.calibrate_on = o.calibrate_on;
  vo.split_file = o.split;
  const std::vector<std::string> rows = find_validation_rows(o.paths);
  if (o.ablate) {
    io.out << render_ablation(ablate_rules(rows, vo), o.format);
    return;
  }
  const OutputOptions output{.inputs = files_read(rows, o), .option = "--write-model-error"};
  if (!o.write_model_error.empty()) check_output_target(o.write_model_error, output);
  const ValidationReport report = validate_corpus(rows, vo);
  if (!o.write_model_error.empty()) {
    if (!report.model_error) {
      throw Error("--write-model-error: " + std::to_string(report.rows.size()) + " rows are too few to measure "
                  "specsim's error (at least " + std::to_string(kMinModelErrorRows) + " rows of " +
                  std::to_string(kMinModelErrorSources) + " sources)");
    }
    write_file_atomically(o.write_model_error, model_error_yaml(*report.model_error),
                          output,
                          [](const std::string& tmp) { (void)load_model_error(tmp); });
  }
  // Compared before anything is printed, so a bad baseline file leaves stdout empty.
  std::vector<std::string> worse;
  if (!o.baseline.empty()) worse = regressions_against(report, o.baseline);
  io.out << render_validation(report, o.format);
  if (!worse.empty()) {
    std::string message = "the corpus summary is worse than the baseline " + o.baseline + ":";
    for (const auto& w : worse) message += "\n  " + w;
    throw Error(message);
  }
}

}  // namespace

void setup_validate(CLI::App& app, Io& io) {
  auto opts = std::make_shared<ValidateOptions>();
  CLI::App* sub = app.add_subcommand(
      "validate", "Predict every row of the validation corpus against its held-out measurement");
  sub->add_option("paths", opts->paths, "Row files or folders (default: the data directory's validation/)");
  sub->add_option("--calibrate-on", opts->calibrate_on,
                  "Fit the per-cycle engine term on this row and predict the rest of its source; "
                  "'all' = each row's run alone predicts its siblings (docs/validation.md#one-run-calibration)")
      ->check(non_empty());
  sub->add_option("--split", opts->split,
                  "The fit/check split (default: validation/split.yaml of the data directory; "
                  "docs/validation.md#fit-and-check-sets)")
      ->check(CLI::ExistingFile);
  sub->add_option("--baseline", opts->baseline,
                  "Fail (exit 1) when the summary is worse than this `validate --json` output by more "
                  "than the regression margins")
      ->check(CLI::ExistingFile);
  sub->add_option("--write-model-error", opts->write_model_error,
                  "Write specsim's error beyond the priors over these rows (models/model-error.yaml, "
                  "docs/validation.md#model-error) to this file");
  CLI::Option* ablate =
      sub->add_flag("--ablate", opts->ablate,
                    "Flip each calibration rule in turn and print the check, fit and leave-source-out figures "
                    "with and without it (docs/validation.md#ablation)");
  ablate->excludes(sub->get_option("--calibrate-on"))
      ->excludes(sub->get_option("--baseline"))
      ->excludes(sub->get_option("--write-model-error"));
  add_format_option(*sub, opts->format, {.csv_flag = true});
  sub->callback([opts, &io]() { run_validate(*opts, io); });
}

}  // namespace specsim::cli
