// The only entry points that read files. Names resolve inside a data directory (models/...,
// calibration/profiles); anything with a '/' or a .yaml/.json suffix is taken as a path.
// Every failure is a specsim::Error naming file, line, column and key.
#pragma once

#include <string>
#include <vector>

#include "specsim/error.hpp"
#include "specsim/hardware.hpp"
#include "specsim/model_spec.hpp"
#include "specsim/scenario.hpp"
#include "specsim/scenario_fields.hpp"

namespace specsim {

inline constexpr const char* kDefaultScenario = "kimi-k2.5-eagle3-8x-rtx-pro-6000";

enum class DataKind { kModel, kGpu, kTopology, kScenario, kCommProfile, kInterventions, kEngine };

// The data directory: $SPECSIM_DATA_DIR, else <exe>/../share/specsim, else the source tree.
[[nodiscard]] std::string default_data_dir();

class DataDir {
 public:
  explicit DataDir(std::string root = default_data_dir());
  [[nodiscard]] const std::string& root() const { return root_; }
  // A name or a path to an existing file; unknown names list the valid ones.
  [[nodiscard]] std::string resolve(DataKind kind, const std::string& name_or_path) const;
  [[nodiscard]] std::vector<std::string> names(DataKind kind) const;
  // Every file under models/ and calibration/: what a command that loads data may read, and so what
  // its output may not replace (output_file.hpp's own-input refusal).
  [[nodiscard]] std::vector<std::string> files() const;

 private:
  std::string root_;
};

// models/llm/*.yaml, a Hugging Face config.json, or a checkpoint directory holding config.json
// (families and quantization methods: docs/schema.md, llm).
[[nodiscard]] TransformerSpec load_model(const std::string& path);
[[nodiscard]] GpuSpec load_gpu(const std::string& path);
[[nodiscard]] Topology load_topology(const std::string& path);
[[nodiscard]] CommProfile load_comm_profile(const std::string& path);
// models/engines/*.yaml: an engine's speculative overheads with their spread.
[[nodiscard]] EnginePrior load_engine_prior(const std::string& path);
// specsim's held-out error (models/model-error.yaml, scenario.hpp's ModelError) and where a data
// directory keeps it; a scenario loaded from that directory carries it when the file exists.
[[nodiscard]] ModelError load_model_error(const std::string& path);
[[nodiscard]] std::string model_error_file(const DataDir& data);
// validation/split.yaml: the corpus's fit and check sets (scenario.hpp's ValidationSplit).
[[nodiscard]] ValidationSplit load_validation_split(const std::string& path);
[[nodiscard]] std::string validation_split_file(const DataDir& data);

// Loads a scenario by name or path, applies `key=value` patches (dotted paths, units as in the
// file), resolves the model, draft, GPU, topology and profile it names, and validates it all.
[[nodiscard]] Scenario load_scenario(const std::string& name_or_path,
                                     const std::vector<std::string>& patches = {},
                                     const DataDir& data = DataDir());

// Every problem of a scenario after `patches`, each naming its file:line:column and key, or the
// `--set key=value` option its value came from; empty when the scenario loads. The rules are the
// loader's own: load_scenario throws the one problem as it is, or several as one Error
// ("3 problems:" then one line each). Blocks that need a broken one (parallel needs the target
// and the topology) are not checked, so no problem is a consequence of another.
[[nodiscard]] std::vector<Error> scenario_problems(const std::string& name_or_path,
                                                   const std::vector<std::string>& patches = {},
                                                   const DataDir& data = DataDir());

// The same from scenario text in memory; errors name `file_name` (what `specsim init` checks its
// output with before writing it).
[[nodiscard]] Scenario load_scenario_text(const std::string& text, const std::string& file_name,
                                          const DataDir& data = DataDir());

// A value of a field a what-if sets on a loaded scenario (scenario_fields.hpp), parsed as
// parse_field_value does; a table field (comm.profile) has its table read here, once, so that
// setting it on any number of points reads no file.
[[nodiscard]] FieldValue load_field_value(const std::string& key, const std::string& text, const SourceLocation& where,
                                          const DataDir& data = DataDir());

// How many data files (YAML or JSON) this process has read: what-ifs read none after the first
// load, which tests hold them to.
[[nodiscard]] std::size_t data_files_read();

// Validates any data file (the kind is read from the file) and returns it normalised: every key,
// units spelled out, defaults filled in. Throws on the first problem.
[[nodiscard]] std::string check_data_file(const std::string& path, const DataDir& data = DataDir());

}  // namespace specsim
