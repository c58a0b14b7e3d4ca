// The compute model's measured inputs as files give them: forward times from a step-time CSV (what
// `specsim calibrate compute` fits, compute_fit.hpp) and the compute profiles it writes
// (calibration/profiles/*.yaml, kind compute_profile), read here so that the loader needs nothing
// from calibrate/.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "specsim/scenario.hpp"

namespace specsim {

// One measured forward: one TP rank, batch 1, `tokens` new tokens against `context_tokens` cached.
struct ComputeStep {
  std::string model;  // the CSV's model name
  std::string gpu;
  int tp = 1;
  std::optional<int> layers_timed;
  int tokens = 1;
  double context_tokens = 0;
  LaunchMode mode = LaunchMode::kGraph;
  double time_s = 0;
  int line = 0;  // in the CSV, 1-based
};

// Reads `model,gpu,tp,[layers_timed,]tokens,context,mode,time_<unit>` (the unit in the time column's
// name: time_s, time_ms, time_us; other columns are ignored). Errors name file, line and column.
[[nodiscard]] std::vector<ComputeStep> read_compute_steps_csv(const std::string& path);

// A compute profile: calibration/profiles/*.yaml with kind compute_profile.
struct ComputeProfile {
  std::string name;
  std::string description;
  std::string source;
  std::string gpu;           // the GPU it was measured on
  ComputeSettings settings;  // its `compute:` block over the defaults
};

// Defined in io/read_profiles.cpp (it reads YAML through the library's one reader); errors name file, line and key.
[[nodiscard]] ComputeProfile load_compute_profile(const std::string& path);

}  // namespace specsim
