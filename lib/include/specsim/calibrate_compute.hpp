// A CSV of measured forward times -> a compute profile (calibration/profiles, kind
// compute_profile): what `specsim calibrate compute` runs, as a library call. Each CSV model name
// resolves to a model file beside the CSV (or in `models_dir`), else to the data directory's
// models/llm; rows of a name neither holds are skipped and listed. One profile is one GPU. The fit
// is fit_compute's (compute_fit.hpp); docs/compute-calibration.md explains it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "specsim/compute_fit.hpp"
#include "specsim/load.hpp"

namespace specsim {

struct ComputeCalibrationRequest {
  std::string steps;         // the step-time CSV
  std::string profile_name;  // the profile's `name` (the CLI: the output file's stem)
  std::string models_dir;    // empty: the CSV's directory
  std::string description;   // empty: "compute terms fitted on <csv>"
  ComputeFitOptions fit;
};

struct ComputeCalibration {
  ComputeProfile profile;
  ComputeFitResult fit;
  // Source, model files and skipped rows; tool, command and date are the caller's to fill.
  ComputeProfileProvenance provenance;
  std::vector<std::string> files_read;  // the CSV, then every model and GPU file it needed
};

[[nodiscard]] ComputeCalibration calibrate_compute(const ComputeCalibrationRequest& request,
                                                   const DataDir& data = DataDir());

// What `specsim calibrate compute` prints once the profile is written to `output`: rows used and
// skipped, the fitted terms, the residuals and the held-out errors per model and mode.
[[nodiscard]] std::string render_compute_calibration(const ComputeCalibration& calibration, const std::string& output);

}  // namespace specsim
