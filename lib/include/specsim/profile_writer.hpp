// Writes calibration profiles: the YAML that load_comm_profile reads back, with a `provenance:`
// mapping that says which files (by SHA-256), which tool and which fit produced it. Files are
// written with write_file_atomically (output_file.hpp).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "specsim/comm_curve.hpp"
#include "specsim/hardware.hpp"

namespace specsim {

// One measurement file a profile was fitted on.
struct ProfileSourceFile {
  std::string path;                          // as given on the command line
  std::string sha256;                        // lower-case hex of the file's bytes
  std::string nccl_version;                  // from the log; empty when it does not say
  std::string nccl_tests_version;            // from the log; empty when it does not say
  std::map<std::string, std::string> env;    // NCCL_* reported by NCCL_DEBUG=INFO output
  std::vector<std::string> notes;            // the log's own `## key: value` header lines
  int rows_used = 0;
  int rows_skipped = 0;                      // malformed rows dropped with --lenient
};

struct CommProfileProvenance {
  std::string tool;                          // "specsim 0.1.0"
  std::string command;                       // the command line that wrote the profile
  std::string date_utc;                      // ISO 8601, "2025-06-05T12:00:00Z"
  std::string column;                        // "out_of_place" or "in_place"
  std::vector<ProfileSourceFile> files;
  std::vector<Regime> regimes;               // the fit on all points, with its residuals
  std::optional<HoldoutReport> holdout;
};

// The profile as YAML (schema_version 1, kind comm_profile): sizes in exact binary units where
// they divide (8KiB, 128MiB) and in B otherwise; times in us with six significant digits.
[[nodiscard]] std::string render_comm_profile_yaml(const CommProfile& profile,
                                                   const CommProfileProvenance& provenance);

// Current UTC time as ISO 8601 with a Z suffix.
[[nodiscard]] std::string utc_now_iso8601();

}  // namespace specsim
