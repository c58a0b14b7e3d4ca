// nccl-tests logs -> a comm profile (calibration/profiles): what `specsim calibrate nccl` runs, as a
// library call. The logs are read and pooled under one box's rules (one GPU model, one rank count,
// one host set, one launch mode, one NCCL release; `allow_mixed` pools anyway, with a warning), rows
// of equal size merged at their mean, the curve fitted with its per-regime residuals and, with
// `holdout_every`, refitted without every K-th size. Errors name the log, its line and the key.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "specsim/hardware.hpp"
#include "specsim/profile_writer.hpp"

namespace specsim {

struct NcclCalibrationRequest {
  std::vector<std::string> logs;          // nccl-tests output files
  std::string profile_name;               // the profile's `name` (the CLI: the output file's stem)
  std::string collective = "all_reduce";  // all_reduce | all_to_all: which tables make the profile
  std::optional<int> ranks;               // overrides the logs' headers
  std::optional<int> holdout_every;       // also refit without every K-th size
  bool lenient = false;                   // skip malformed rows (a warning each) instead of failing
  bool in_place = false;                  // the in-place time column instead of out-of-place
  bool allow_mixed = false;               // pool logs of different boxes or releases, with a warning
  // Called with each warning as it arises ("path: what"), before a later error can stop the run.
  std::function<void(const std::string&)> warn;
};

struct NcclCalibration {
  CommProfile profile;
  // Files, regimes, hold-out and column; tool, command and date are the caller's to fill.
  CommProfileProvenance provenance;
  std::size_t rows_read = 0;  // rows of every log before equal sizes were merged
  std::string hosts;          // the hosts a multi-node table ran on ("" for one node)
};

[[nodiscard]] NcclCalibration calibrate_nccl(const NcclCalibrationRequest& request);

// What `specsim calibrate nccl` prints after writing `output`: the profile's sizes, ranks and mode,
// the fit's residuals per regime and the hold-out errors.
[[nodiscard]] std::string render_nccl_calibration(const NcclCalibration& calibration, const std::string& output);

}  // namespace specsim
