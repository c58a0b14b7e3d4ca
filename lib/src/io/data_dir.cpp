// The data directory: where it is (default_data_dir), which names each kind of file has in it,
// and the file a name or a path stands for.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "io/readers.hpp"
#include "specsim/load.hpp"

namespace specsim {

using detail::join;
namespace fs = std::filesystem;

namespace {

const char* subdir(DataKind kind) {
  switch (kind) {
    case DataKind::kModel: return "models/llm";
    case DataKind::kGpu: return "models/gpu";
    case DataKind::kTopology: return "models/topology";
    case DataKind::kScenario: return "models/scenarios";
    case DataKind::kCommProfile: return "calibration/profiles";
    case DataKind::kInterventions: return "models/interventions";
    case DataKind::kEngine: return "models/engines";
  }
  return "";
}

const char* kind_word(DataKind kind) {
  switch (kind) {
    case DataKind::kModel: return "model";
    case DataKind::kGpu: return "GPU";
    case DataKind::kTopology: return "topology";
    case DataKind::kScenario: return "scenario";
    case DataKind::kCommProfile: return "comm profile";
    case DataKind::kInterventions: return "intervention catalogue";
    case DataKind::kEngine: return "engine";
  }
  return "";
}

}  // namespace

std::string default_data_dir() {
  if (const char* env = std::getenv("SPECSIM_DATA_DIR"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "specsim";
    if (fs::exists(installed / "models" / "scenarios", ec)) return installed.string();
  }
  return SPECSIM_SOURCE_DATA_DIR;
}

DataDir::DataDir(std::string root) : root_(std::move(root)) {}

std::vector<std::string> DataDir::names(DataKind kind) const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(root_) / subdir(kind), ec)) {
    if (entry.path().extension() == ".yaml") out.push_back(entry.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> DataDir::files() const {
  std::vector<std::string> out;
  for (const char* folder : {"models", "calibration"}) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(fs::path(root_) / folder, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec)) out.push_back(it->path().string());
    }
  }
  return out;
}

std::string DataDir::resolve(DataKind kind, const std::string& name) const {
  const bool path_like = name.find('/') != std::string::npos ||
                         name.ends_with(".yaml") || name.ends_with(".json") || name.ends_with(".yml");
  // The error_code overloads: a name the file system refuses (too long, bad bytes) is a name that
  // does not exist, not a std::filesystem exception (found by fuzz_load).
  std::error_code ec;
  if (path_like) {
    if (!fs::exists(name, ec)) throw Error({name, 0, 0}, "", std::string("no such ") + kind_word(kind) + " file");
    return name;
  }
  const fs::path p = fs::path(root_) / subdir(kind) / (name + ".yaml");
  if (fs::exists(p, ec)) return p.string();
  throw Error(std::string("unknown ") + kind_word(kind) + " '" + name + "' (known in " + root_ + "/" +
              subdir(kind) + ": " + join(names(kind)) + ")");
}

}  // namespace specsim
