#include "specsim/calibrate_compute.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>

#include "specsim/error.hpp"
#include "specsim/sha256.hpp"

namespace specsim {

namespace {

namespace fs = std::filesystem;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// The file describing what a CSV model name timed, in `dir`: NAME.yaml (specsim's model file),
// NAME.json (a Hugging Face config.json saved under the name) or NAME/config.json (a checkpoint
// directory), in that order: load_model reads all three, as everywhere a model is named
// (docs/schema.md). Empty when there is none.
std::optional<std::string> model_file_for(const std::string& name, const fs::path& dir) {
  std::error_code ec;  // a model name the file system refuses (too long) is not found, not a throw
  for (const fs::path& candidate : {dir / (name + ".yaml"), dir / (name + ".json"), dir / name / "config.json"}) {
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
  }
  return std::nullopt;
}

// The rows whose model has a file, each with its model and GPU; the files read and rows skipped go
// into `c`.
class RowReader {
 public:
  RowReader(const ComputeCalibrationRequest& r, const DataDir& data, ComputeCalibration& c)
      : r_(r), data_(data), c_(c),
        models_dir_(r.models_dir.empty() ? fs::path(r.steps).parent_path() : fs::path(r.models_dir)) {}

  std::vector<ComputeFitInput> read(const std::vector<ComputeStep>& steps) {
    std::vector<ComputeFitInput> rows;
    for (const ComputeStep& s : steps) {
      const std::optional<TransformerSpec>& m = model(s.model);
      if (!m) {
        ++skipped_[s.model];
        continue;
      }
      if (s.layers_timed && *s.layers_timed != m->layers) {
        throw Error({r_.steps, s.line, 0}, "layers_timed",
                    std::to_string(*s.layers_timed) + " layers timed, but the model file for '" + s.model + "' has " +
                        std::to_string(m->layers) + " (describe the timed stack in " +
                        (models_dir_ / (s.model + ".yaml")).string() + ")");
      }
      rows.push_back({s, *m, gpu(s)});
    }
    for (const auto& [name, n] : skipped_) {
      c_.provenance.skipped.push_back(name + ": " + std::to_string(n) + " rows (no model file " + name + ".yaml, " +
                                      name + ".json or " + name + "/config.json in " + models_dir_.string() +
                                      ", nor " + name + ".yaml in models/llm)");
    }
    return rows;
  }

  std::string gpu_name_;

 private:
  // A CSV model name resolves to a model file in the models directory (model_file_for), else to
  // the data directory's models/llm/<name>.yaml; a name neither holds has no model.
  const std::optional<TransformerSpec>& model(const std::string& name) {
    if (auto it = models_.find(name); it != models_.end()) return it->second;
    std::optional<std::string> path = model_file_for(name, models_dir_);
    std::error_code ec;  // a model name the file system refuses (too long) is not found, not a throw
    if (!path && fs::exists(fs::path(data_.root()) / "models" / "llm" / (name + ".yaml"), ec)) {
      path = data_.resolve(DataKind::kModel, name);
    }
    if (!path) return models_[name] = std::nullopt;
    // Named by where it sits in the data directory when it sits there, not by this machine's path.
    std::string shown = *path;
    if (path->starts_with(data_.root() + "/")) shown = path->substr(data_.root().size() + 1);
    c_.files_read.push_back(*path);
    c_.provenance.model_files.push_back(name + " -> " + shown + " (sha256 " + sha256_file_hex(*path) + ")");
    return models_[name] = load_model(*path);
  }

  // One profile is one GPU: the first row's.
  const GpuSpec& gpu(const ComputeStep& s) {
    const std::string g = lower(s.gpu);
    if (!gpus_.count(g)) {
      const std::string path = data_.resolve(DataKind::kGpu, g);
      gpus_.emplace(g, load_gpu(path));
      c_.files_read.push_back(path);
    }
    if (gpu_name_.empty()) gpu_name_ = g;
    if (g != gpu_name_) {
      throw Error({r_.steps, s.line, 0}, "gpu", "'" + s.gpu + "': one profile is one GPU (first rows: " + gpu_name_ + ")");
    }
    return gpus_.at(g);
  }

  const ComputeCalibrationRequest& r_;
  const DataDir& data_;
  ComputeCalibration& c_;
  fs::path models_dir_;
  std::map<std::string, std::optional<TransformerSpec>> models_;
  std::map<std::string, GpuSpec> gpus_;
  std::map<std::string, int> skipped_;
};

}  // namespace

ComputeCalibration calibrate_compute(const ComputeCalibrationRequest& r, const DataDir& data) {
  ComputeCalibration c;
  c.files_read.push_back(r.steps);
  const std::vector<ComputeStep> steps = read_compute_steps_csv(r.steps);
  c.provenance.source_path = r.steps;
  c.provenance.source_sha256 = sha256_file_hex(r.steps);
  RowReader reader(r, data, c);
  const std::vector<ComputeFitInput> rows = reader.read(steps);
  c.provenance.rows_used = int(rows.size());
  if (rows.empty()) throw Error({r.steps, 0, 0}, "model", "no row names a model with a model file");
  c.fit = fit_compute(rows, r.fit);
  ComputeProfile& p = c.profile;
  p.name = r.profile_name;
  p.gpu = reader.gpu_name_;
  p.description = r.description.empty() ? "compute terms fitted on " + fs::path(r.steps).filename().string() : r.description;
  p.source = r.steps + " (see its .conditions.yaml)";
  p.settings = c.fit.settings;
  return c;
}

}  // namespace specsim
