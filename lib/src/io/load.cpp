// load.hpp's loaders of the files a scenario names (model, GPU, topology, comm profile, engine,
// model error): each file is read by its reader (read_*.cpp, through readers.hpp) and what it
// gives is kept by path and stamp. load.hpp's other entry points live with what they read: the
// data directory in data_dir.cpp, scenarios in read_scenario.cpp, the validation split in
// read_validation.cpp, check_data_file in check.cpp.
#include "specsim/load.hpp"

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "io/readers.hpp"
#include "util/yaml_reader.hpp"

namespace specsim {

using detail::YamlReader;
namespace fs = std::filesystem;

namespace {

// A regular file's size and modification time: a file edited since it was read reads again.
struct FileStamp {
  std::uintmax_t bytes = 0;
  fs::file_time_type written;
  bool operator==(const FileStamp&) const = default;
};

std::optional<FileStamp> stamp_of(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;  // a pipe reads once; its text is kept elsewhere
  FileStamp s;
  s.bytes = fs::file_size(path, ec);
  if (ec) return std::nullopt;
  s.written = fs::last_write_time(path, ec);
  if (ec) return std::nullopt;
  return s;
}

// What `read` gives for `path`, kept by path and stamp: what-ifs (rank's interventions, sweep
// points off the fast path) load the same model, GPU, topology, profiles and engine file for every
// scenario they build, and the value a file gives is a function of its bytes. A file that fails is
// not kept (it fails again, with the same message).
template <class T>
T remembered(const std::string& path, T (*read)(const std::string&)) {
  static std::mutex mutex;
  static std::map<std::string, std::pair<FileStamp, T>> kept;
  const std::optional<FileStamp> stamp = stamp_of(path);
  if (!stamp) return read(path);
  {
    const std::lock_guard<std::mutex> lock(mutex);
    const auto it = kept.find(path);
    if (it != kept.end() && it->second.first == *stamp) return it->second.second;
  }
  T value = read(path);
  const std::lock_guard<std::mutex> lock(mutex);
  kept.insert_or_assign(path, std::pair<FileStamp, T>{*stamp, value});
  return value;
}

}  // namespace

TransformerSpec load_model(const std::string& path) {
  std::error_code ec;
  // A Hugging Face checkpoint directory is kept as its config.json, which is what is read.
  if (fs::is_directory(path, ec)) return remembered((fs::path(path) / "config.json").string(), detail::load_model_file);
  return remembered(path, detail::load_model_file);
}
GpuSpec load_gpu(const std::string& path) { return remembered(path, detail::load_gpu_file); }
Topology load_topology(const std::string& path) { return remembered(path, detail::load_topology_file); }
CommProfile load_comm_profile(const std::string& path) { return remembered(path, detail::load_comm_profile_file); }
EnginePrior load_engine_prior(const std::string& path) { return remembered(path, detail::load_engine_prior_file); }
ModelError load_model_error(const std::string& path) { return remembered(path, detail::load_model_error_file); }

std::size_t data_files_read() { return YamlReader::files_read(); }

}  // namespace specsim
