// specsim validate: the validation corpus (validation/) predicted row by row against its held-out
// measurements, with summaries; optionally calibrated on rows of the same source, and guarded
// against a committed baseline summary (CI).
#include <CLI/CLI.hpp>

#include <ostream>

#include "cli.hpp"
#include "format_option.hpp"
#include "specsim/error.hpp"
#include "specsim/report.hpp"
#include "specsim/validate_corpus.hpp"

namespace specsim::cli {

namespace {

struct ValidateOptions {
  std::vector<std::string> paths;
  std::string calibrate_on;
  std::string baseline;
  Format format = Format::kText;
};

void run_validate(const ValidateOptions& o, Io& io) {
  specsim::ValidateOptions vo;
  vo.calibrate_on = o.calibrate_on;
  const ValidationReport report = validate_corpus(find_validation_rows(o.paths), vo);
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
                  "'all' = leave-one-out: each row from the rest of its deployment (docs/validation.md#leave-one-out)");
  sub->add_option("--baseline", opts->baseline,
                  "Fail (exit 1) when the summary is worse than this `validate --json` output by more "
                  "than the regression margins")
      ->check(CLI::ExistingFile);
  add_format_option(*sub, opts->format, {.csv_flag = true});
  sub->callback([opts, &io]() { run_validate(*opts, io); });
}

}  // namespace specsim::cli
