// What the readers of specsim's data files share. Each kind of file has its reader in a file of
// its own (read_model.cpp, read_hardware.cpp, read_profiles.cpp, read_engine.cpp,
// read_validation.cpp, read_scenario.cpp); load.cpp keeps what each file gives (load.hpp's
// loaders). Here: the small helpers more than one reader applies to a YamlReader, the blocks one
// kind of file borrows from another (a scenario's inline `topology:` has a topology file's keys,
// its `compute:` a compute profile's), and each file's reader for load.cpp. Private to the library.
#pragma once

#include <string>
#include <vector>

#include "specsim/hardware.hpp"
#include "specsim/model_spec.hpp"
#include "specsim/plausibility.hpp"
#include "specsim/scenario.hpp"
#include "specsim/speculation_method.hpp"
#include "util/yaml_reader.hpp"

namespace specsim::detail {

// Counts in model and scenario files: plausibility.hpp's row, so the bound has one home.
inline const int kMaxCount = static_cast<int>(plausible_range(Magnitude::kCount).max);
// The speculation methods specsim knows (speculation_method.hpp's registry), for the lists errors give.
inline const std::vector<std::string>& kMethods = speculation_method_names();

inline std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

inline LaunchMode read_mode(YamlReader& r, const std::string& key, LaunchMode fallback) {
  const std::string s = r.optional_choice(key, {"graph", "eager"}, fallback == LaunchMode::kGraph ? "graph" : "eager");
  return s == "graph" ? LaunchMode::kGraph : LaunchMode::kEager;
}

inline int count(YamlReader& r, const std::string& key, int min = 1) {
  return static_cast<int>(r.integer(key, min, kMaxCount));
}

// Blocks one kind of file shares with another, each defined beside the file it belongs to.
// read_hardware.cpp: the keys of a topology, in a models/topology file or inline under a scenario.
[[nodiscard]] Topology read_topology_keys(YamlReader& r);
// read_profiles.cpp: an NCCL release, in a comm profile or a scenario's `comm:`; the keys of a
// compute profile's `compute:` and of a scenario's.
[[nodiscard]] std::string read_nccl_version(YamlReader& r, const char* key);
void read_compute_keys(YamlReader& c, ComputeSettings& s);
// read_validation.cpp: a validation row's `validation:` header.
[[nodiscard]] ValidationSource read_validation_source(YamlReader& v);

// Each file read whole, once per call; load.cpp keeps what they give by path and stamp.
[[nodiscard]] TransformerSpec load_model_file(const std::string& path);      // read_model.cpp
[[nodiscard]] GpuSpec load_gpu_file(const std::string& path);                // read_hardware.cpp
[[nodiscard]] Topology load_topology_file(const std::string& path);          // read_hardware.cpp
[[nodiscard]] CommProfile load_comm_profile_file(const std::string& path);   // read_profiles.cpp
[[nodiscard]] EnginePrior load_engine_prior_file(const std::string& path);   // read_engine.cpp
[[nodiscard]] ModelError load_model_error_file(const std::string& path);     // read_validation.cpp

}  // namespace specsim::detail
