#include "specsim/scenario_writer.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"
#include "specsim/model_spec.hpp"
#include "specsim/topo_import.hpp"
#include "specsim/units.hpp"

namespace specsim {

namespace fs = std::filesystem;

namespace {

// Comments start in this column after a key (as in the shipped scenarios) and wrap before kWidth.
constexpr std::size_t kCommentColumn = 36;
constexpr std::size_t kWidth = 100;

// The defaults a scenario without the key gets, for the comments (scenario.hpp holds the values).
constexpr int kAssumedBatch = 1;
constexpr long long kAssumedContext = 2048;
constexpr int kAssumedSteps = 3;

// The method row (speculation_method.hpp) that --method names: whether it names a draft file, the
// first position's acceptance init assumes and the source of that assumption.
const SpeculationMethod& init_method(const std::string& name) {
  if (const SpeculationMethod* m = find_speculation_method(name)) return *m;
  std::string known;
  for (const std::string& n : speculation_method_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error({"--method", 0, 0}, "speculation.method", "'" + name + "' is not a speculation method (" + known + ")");
}

// DataDir::resolve's rule: a name, or a path when it has a '/' or a data-file suffix.
bool path_like(const std::string& s) {
  return s.find('/') != std::string::npos || s.ends_with(".yaml") || s.ends_with(".yml") || s.ends_with(".json");
}

// A YAML scalar: plain when it is a simple name or path, double-quoted otherwise.
std::string scalar(const std::string& s) {
  bool plain = !s.empty();
  for (const char c : s) {
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/');
  }
  if (plain) return s;
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// `# text` lines at `indent`, wrapped at word boundaries before kWidth.
std::string comment(const std::string& text, int indent = 0) {
  const std::string lead = std::string(static_cast<std::size_t>(indent), ' ') + "# ";
  std::string out;
  std::istringstream paragraphs(text);
  for (std::string paragraph; std::getline(paragraphs, paragraph);) {
    // An indented line is a YAML sample: kept as it is.
    if (paragraph.starts_with(" ")) {
      out += lead + paragraph + "\n";
      continue;
    }
    // A list item's continuation lines are indented under its text.
    const std::string hang = paragraph.starts_with("- ") ? "  " : "";
    std::istringstream words(paragraph);
    std::string line;
    for (std::string w; words >> w;) {
      if (!line.empty() && lead.size() + line.size() + 1 + w.size() > kWidth) {
        out += lead + line + "\n";
        line = hang;
      }
      line += (line.empty() || line == hang ? "" : " ") + w;
    }
    out += lead + line + "\n";
  }
  return out;
}

// `key: value` at `indent`, with a short comment after it in kCommentColumn (or on the line above
// when it would run past kWidth).
std::string entry(const std::string& key, const std::string& value, const std::string& note, int indent = 0) {
  std::string line = std::string(static_cast<std::size_t>(indent), ' ') + key + ": " + value;
  if (note.empty()) return line + "\n";
  const std::size_t column = std::max(kCommentColumn, line.size() + 1);
  if (column + 2 + note.size() > kWidth) return comment(note, indent) + line + "\n";
  return line + std::string(column - line.size(), ' ') + "# " + note + "\n";
}

std::string fixed(double v, int digits) { return units::format_fixed(v, digits); }

// An option's value that names a file: a data-directory name as given, a path made absolute (a
// scenario's relative paths resolve from wherever specsim runs, not from the scenario's folder).
std::string file_ref(const std::string& given) {
  std::error_code ec;
  if (!path_like(given) && !fs::is_directory(given, ec)) return given;
  return fs::absolute(given).lexically_normal().string();
}

struct Resolved {
  std::string ref;   // what the scenario's key holds
  std::string where; // where it comes from, for the comment
};

// A model by name, file or checkpoint directory; errors name the option.
Resolved resolve_model(const std::string& given, const char* option, const char* key, const DataDir& data,
                       TransformerSpec& out) {
  if (given.empty()) throw Error({option, 0, 0}, key, "required: a models/llm name, a model file or a checkpoint directory");
  try {
    std::error_code ec;
    const bool directory = fs::is_directory(given, ec);
    const std::string path = directory ? given : data.resolve(DataKind::kModel, given);
    out = load_model(path);
    if (directory) return {file_ref(given), "checkpoint directory (config.json)"};
    if (path_like(given)) return {file_ref(given), "model file"};
    return {given, "models/llm/" + given + ".yaml"};
  } catch (const Error& e) {
    throw Error({option, 0, 0}, key, e.what());
  }
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error({path, 0, 0}, "", "cannot open file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A models/topology YAML document holds a map; `nvidia-smi topo -m` output never parses as one.
bool is_topology_file(const std::string& text) {
  try {
    const YAML::Node root = YAML::Load(text);
    return root.IsMap() && root["kind"];
  } catch (const YAML::Exception&) {
    return false;
  }
}

// The keys of an imported topology, indented under the scenario's `topology:` (the file's
// schema_version and kind lines dropped: the scenario's header covers them).
std::string inline_topology(const Topology& t, const std::string& source) {
  std::istringstream lines(render_topology_yaml(t, source, ""));
  std::string out;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.starts_with("schema_version:") || line.starts_with("kind:")) continue;
    out += "  " + line + "\n";
  }
  return out;
}

// The option of init that wrote a scenario key, for an error the written file gives.
std::string scenario_option(const ScenarioInit& init, const std::string& key_path) {
  if (key_path.rfind("acceptance", 0) == 0) {
    return init.accept_length ? "--accept-length" : init.draft_acceptance_rate ? "--draft-acceptance-rate" : "--accept";
  }
  // The more specific keys first: the first prefix that matches names the option.
  static const std::pair<const char*, const char*> kOptions[] = {
      {"model", "--model"},
      {"draft", "--draft"},
      {"topology", "--topology"},
      {"gpu", "--gpu"},
      {"engine", "--engine"},
      {"parallel", "--tp"},
      {"workload.batch", "--batch"},
      {"workload.context", "--context"},
      {"speculation.num_steps", "--num-steps"},
      {"speculation.eagle_topk", "--topk"},
      {"speculation.num_draft_tokens", "--num-draft-tokens"},
      {"speculation", "--method"},
      {"measurements.baseline.prompt_tokens", "--prompt-tokens"},
      {"measurements.baseline.output_tokens", "--output-tokens"},
      {"measurements.baseline.tpot", "--plain-tpot"},
      {"measurements.baseline", "--plain-rate"},
  };
  for (const auto& [key, option] : kOptions) {
    if (key_path.rfind(key, 0) == 0) return option;
  }
  return "";
}

// The value the launch (`--from-command`, `--env`) gives a scenario key, and where it came from;
// empty when there is no launch or it does not say.
std::string launch_value(const ScenarioInit& init, const std::string& key) {
  if (!init.launch) return "";
  auto it = init.launch->values.find(key);
  return it == init.launch->values.end() ? "" : it->second;
}
std::string launch_origin(const ScenarioInit& init, const std::string& key) {
  return init.launch && init.launch->origins.count(key) ? "--from-command: " + init.launch->origins.at(key) : "";
}

// `key: value` from the launch, at the key's leaf, when the launch gives it.
std::string launch_entry(const ScenarioInit& init, const std::string& key, int indent = 2) {
  const std::string value = launch_value(init, key);
  if (value.empty()) return "";
  return entry(key.substr(key.rfind('.') + 1), scalar(value), launch_origin(init, key), indent);
}

// The method init writes: --method, else the launch's.
std::string init_method_name(const ScenarioInit& init) {
  return init.method.empty() ? launch_value(init, "speculation.method") : init.method;
}

// Whether that method names a draft model (its row's needs_draft_file; MTP drafts with the target's
// own modules and n-gram lookup with none). A launch that states no method: the EAGLE-3 default.
bool needs_draft(const ScenarioInit& init) {
  const std::string method = init_method_name(init);
  return method.empty() || init_method(method).needs_draft_file();
}

// What a scenario written by `specsim init` names, loaded and checked, with where each comes from.
struct InitParts {
  TransformerSpec model;
  TransformerSpec draft;
  Resolved model_ref;
  Resolved draft_ref;
  EnginePrior engine;
  GpuSpec gpu;
  std::string gpu_ref;         // --gpu as the scenario's key holds it; empty without --gpu
  Topology topology;
  std::string topology_block;  // the scenario's `topology` key, or the imported block
  bool imported = false;       // the topology came from `nvidia-smi topo -m` output
  std::optional<CommProfile> profile;  // the all-reduce table the box brings, when TP > 1
  std::string method;          // --method, or what the draft is
};

// What a draft file is: a DFlash drafter, an EAGLE head of either version, else a full model.
DraftSource draft_source_of(const TransformerSpec& draft) {
  if (draft.dflash) return DraftSource::kDflash;
  if (draft.eagle3) return draft.eagle3->version == 1 ? DraftSource::kEagleHead : DraftSource::kEagle3Head;
  return DraftSource::kDraftModel;
}

// The method: --method, else what --draft is (a DFlash drafter, an EAGLE head, a full model), else
// mtp for a model with MTP layers. A method that takes no draft file refuses one.
std::string pick_init_method(const ScenarioInit& init, const TransformerSpec& model, const TransformerSpec* draft) {
  if (const std::string launched = launch_value(init, "speculation.method"); !launched.empty() && init.method.empty()) {
    return init_method(launched).name;
  }
  if (!init.method.empty()) {
    const SpeculationMethod& m = init_method(init.method);
    if (!m.needs_draft_file() && !init.draft.empty()) {
      throw Error({"--draft", 0, 0}, "draft", std::string("--method ") + m.name + " drafts without a draft model (" +
                                                  (m.source == DraftSource::kTargetMtp ? "the model's own MTP layers" : "prompt lookup") +
                                                  "): leave --draft out");
    }
    if (m.needs_draft_file() && init.draft.empty()) {
      throw Error({"--draft", 0, 0}, "draft", std::string("required with --method ") + m.name);
    }
    return m.name;
  }
  if (draft == nullptr) {
    if (model.mtp_layers > 0) return method_for_draft(DraftSource::kTargetMtp).name;
    throw Error({"--draft", 0, 0}, "draft", "required: '" + model.name + "' has no MTP layers; give --draft, or "
                                            "--method " + method_for_draft(DraftSource::kPromptLookup).name +
                                            " for prompt lookup");
  }
  return method_for_draft(draft_source_of(*draft)).name;
}

// The engine: its prior file must exist, since the engine overheads come from it.
EnginePrior load_init_engine(const ScenarioInit& init, const DataDir& data) {
  if (init.engine.empty()) throw Error({"--engine", 0, 0}, "engine.name", "required: a models/engines name");
  try {
    return load_engine_prior(data.resolve(DataKind::kEngine, init.engine));
  } catch (const Error& e) {
    throw Error({"--engine", 0, 0}, "engine.name", e.what());
  }
}

// The GPU given on the command line, if any.
void load_init_gpu(const ScenarioInit& init, const DataDir& data, InitParts& parts) {
  if (init.gpu.empty()) return;
  try {
    parts.gpu = load_gpu(data.resolve(DataKind::kGpu, init.gpu));
  } catch (const Error& e) {
    throw Error({"--gpu", 0, 0}, "gpu", e.what());
  }
  parts.gpu_ref = path_like(init.gpu) ? file_ref(init.gpu) : init.gpu;
}

// `nvidia-smi topo -m` output as the scenario's inline topology; the GPU model comes from --gpu.
void import_init_topology(const ScenarioInit& init, const DataDir& data, InitParts& parts) {
  parts.imported = true;
  if (init.gpu.empty()) {
    std::string known;
    for (const auto& n : data.names(DataKind::kGpu)) known += (known.empty() ? "" : ", ") + n;
    throw Error({"--gpu", 0, 0}, "topology.gpu",
                "required with nvidia-smi topo -m output (" + init.topology +
                    "), which does not name the GPU model; pass --gpu NAME (known: " + known + ")");
  }
  TopoImportOptions options;
  options.gpu = parts.gpu.name;
  options.p2p = parts.gpu.p2p_supported;
  options.pcie_generation = parts.gpu.pcie_generation;
  options.name = fs::path(init.topology).stem().string();
  parts.topology = import_topo(init.topology, options);  // nvidia-smi topo -m or rocm-smi --showtopo
  const std::string file = fs::path(init.topology).filename().string();
  parts.topology_block =
      comment("The box, imported from " + file +
              " (nvidia-smi topo -m): links and numa come from that output; gpu is --gpu; p2p and "
              "pcie_generation are the GPU file's p2p_supported and pcie_generation (assumption: topo -m shows "
              "neither; `nvidia-smi topo -p2p r` shows whether P2P is granted, docs/references/hardware.md#consumer-p2p). "
              "No measured all-reduce table is known for it.") +
      "topology:\n" + inline_topology(parts.topology, "nvidia-smi topo -m: " + file);
}

// The box: a topology file by name or path, or `nvidia-smi topo -m` output imported inline; the
// topology's GPU unless --gpu replaces it.
void load_init_topology(const ScenarioInit& init, const DataDir& data, InitParts& parts) {
  if (init.topology.empty()) {
    throw Error({"--topology", 0, 0}, "topology",
                "required: a models/topology name or file, or saved `nvidia-smi topo -m` output");
  }
  // A bare file name (`topo.txt`, saved in the working directory) is a file when one is there:
  // topology names have no extension and none is a file here by accident.
  std::error_code ec;
  const bool file = path_like(init.topology) || fs::is_regular_file(init.topology, ec);
  try {
    if (!file || is_topology_file(read_text(init.topology))) {
      const std::string path = data.resolve(DataKind::kTopology, init.topology);
      parts.topology = load_topology(path);
      const Topology& t = parts.topology;
      const std::string where = file ? "topology file" : "models/topology/" + init.topology + ".yaml";
      parts.topology_block = entry("topology", scalar(file_ref(init.topology)),
                                   where + ": " + std::to_string(t.gpus) + " GPUs, ring link " + link_name(t.link, t.nvlinks));
    } else {
      import_init_topology(init, data, parts);
    }
  } catch (const Error& e) {
    if (e.where().file == "--gpu") throw;
    throw Error({"--topology", 0, 0}, "topology", e.what());
  }
  if (init.gpu.empty()) {
    try {
      parts.gpu = load_gpu(data.resolve(DataKind::kGpu, parts.topology.gpu));
    } catch (const Error& e) {
      throw Error({"--topology", 0, 0}, "topology.gpu", e.what());
    }
  }
}

// Tensor parallelism: the box must hold it and the heads must split over it.
void check_init_tp(const ScenarioInit& init, const InitParts& parts) {
  if (init.tp < 1) throw Error({"--tp", 0, 0}, "parallel.tp", "= " + std::to_string(init.tp) + ": must be >= 1");
  if (init.tp > parts.topology.gpus) {
    throw Error({"--tp", 0, 0}, "parallel.tp",
                "= " + std::to_string(init.tp) + ": the topology '" + parts.topology.name + "' has only " +
                    std::to_string(parts.topology.gpus) + " GPUs");
  }
  for (const TransformerSpec* m : {&parts.model, &parts.draft}) {
    if (m->layers == 0) continue;  // no draft model (mtp, ngram)
    try {
      (void)check_tensor_parallel(*m, init.tp);
    } catch (const Error& e) {
      throw Error({"--tp", 0, 0}, "parallel.tp", e.what());
    }
  }
}

InitParts load_init_parts(const ScenarioInit& init, const DataDir& data) {
  InitParts parts;
  parts.model_ref = resolve_model(init.model, "--model", "model", data, parts.model);
  if (!init.draft.empty()) parts.draft_ref = resolve_model(init.draft, "--draft", "draft", data, parts.draft);
  parts.method = pick_init_method(init, parts.model, init.draft.empty() ? nullptr : &parts.draft);
  parts.engine = load_init_engine(init, data);
  load_init_gpu(init, data, parts);
  load_init_topology(init, data, parts);
  check_init_tp(init, parts);
  if (init.tp > 1 && !parts.topology.comm_profile.empty()) {
    parts.profile = load_comm_profile(data.resolve(DataKind::kCommProfile, parts.topology.comm_profile));
  }
  return parts;
}

// schema_version, kind, name, description and source.
std::string init_header(const ScenarioInit& init, const InitParts& parts, int batch) {
  const TransformerSpec& model = parts.model;
  // mtp and ngram name no draft: the method stands in for it.
  const std::string draft = init_method(parts.method).needs_draft_file() ? parts.draft.name : parts.method;
  const std::string draft_short = draft.rfind(model.name, 0) == 0 ? draft : model.name + "-" + draft;
  const std::string name =
      init.name.empty() ? draft_short + "-" + parts.topology.name + "-tp" + std::to_string(init.tp) : init.name;
  std::ostringstream y;
  y << "schema_version: 1\nkind: scenario\n";
  y << "name: " << scalar(name) << "\n";
  y << "description: "
    << scalar(model.name + " + " + draft + " on " + parts.topology.name + " (" + parts.gpu.name + "), TP" +
              std::to_string(init.tp) + ", " + parts.engine.name + ", batch " + std::to_string(batch))
    << "\n";
  y << "source: "
    << scalar("written by `" + (init.command.empty() ? std::string("specsim init") : init.command) +
              "`; nothing measured yet: every value says whether it is an input, a prior (with its source) or an "
              "assumption")
    << "\n\n";
  return y.str();
}

// The files the scenario names: model, draft, topology and GPU; and what rank tries there.
std::string init_files(const ScenarioInit& init, const InitParts& parts) {
  const TransformerSpec& model = parts.model;
  const TransformerSpec& draft = parts.draft;
  std::string y;
  y += comment(model.description.empty() ? model.name : model.description);
  y += entry("model", scalar(parts.model_ref.ref), parts.model_ref.where);
  if (!init_method(parts.method).needs_draft_file()) {
    y += comment(init_method(parts.method).source == DraftSource::kTargetMtp ? "draft: none; speculation.method mtp drafts with the model's own "
                                         "multi-token-prediction layers"
                                       : "draft: none; speculation.method ngram proposes by prompt lookup on the host");
  } else {
    const std::string target = draft.eagle3 ? draft.eagle3->target : draft.dflash ? draft.dflash->target : "";
    y += comment(draft.description.empty() ? draft.name : draft.description);
    y += entry("draft", scalar(parts.draft_ref.ref), parts.draft_ref.where + (target.empty() ? "" : "; trained for " + target));
  }
  y += parts.topology_block;
  if (!init.gpu.empty() && !parts.imported) {
    y += entry("gpu", scalar(parts.gpu_ref), "--gpu: replaces the topology's " + parts.topology.gpu);
  }
  // rank's catalogue: the one for any box, with what this box's topology file adds.
  y += comment(std::string("interventions: `specsim rank` tries models/interventions/any-box.yaml where its preconditions "
                           "hold") +
               (parts.imported || parts.topology.interventions.empty()
                    ? ""
                    : ", and what models/topology/" + parts.topology.name + ".yaml measured on this box"));
  return y;
}

std::string init_parallel_and_workload(const ScenarioInit& init, int batch, long long context) {
  std::string y = "\nparallel:\n";
  const bool tp_from_launch = launch_value(init, "parallel.tp") == std::to_string(init.tp);
  y += entry("tp", std::to_string(init.tp), tp_from_launch ? launch_origin(init, "parallel.tp") : "--tp", 2);
  for (const char* key : {"parallel.pp", "parallel.ep", "parallel.moe_a2a", "parallel.attention_dp", "parallel.draft_tp"}) {
    y += launch_entry(init, key);
  }
  y += "\nworkload:\n";
  y += entry("batch", std::to_string(batch),
             init.batch ? "--batch" : "assumption: one request at a time (--batch sets it)", 2);
  y += entry("context", std::to_string(context),
             init.context ? "--context" : "assumption: a chat turn's KV cache per request (--context sets it)", 2);
  return y;
}

// The launch's CUDA graphs: eager everywhere under the engine's switch that turns them off, else
// graphs (the engines' default); the graph sizes, memory share and async scheduling it states.
std::string launch_modes(const ScenarioInit& init) {
  const bool eager = launch_value(init, "engine.decode_mode") == "eager";
  const std::string note =
      eager ? launch_origin(init, "engine.decode_mode") : "--from-command: no switch turns CUDA graphs off (the default)";
  std::string y = comment("The launch's CUDA graphs. A verify shape left out of graph capture runs several times slower "
                          "(docs/references/specdec.md#verify-graph-capture): set verify_mode: eager if the server "
                          "log says so.",
                          2);
  for (const char* key : {"decode_mode", "verify_mode", "draft_mode"}) y += entry(key, eager ? "eager" : "graph", note, 2);
  y += launch_entry(init, "engine.cuda_graph_max_batch") + launch_entry(init, "engine.memory_fraction") +
       launch_entry(init, "engine.kv_cache_dtype") + launch_entry(init, "engine.moe_backend");
  if (!launch_value(init, "engine.async_scheduling.speculative").empty()) {
    y += "  async_scheduling:\n" + launch_entry(init, "engine.async_scheduling.speculative", 4);
  }
  return y;
}

// The speculative worker version: --spec-version, else the launch's SGLANG_ENABLE_SPEC_V2; where
// neither says and the engine file prices versions apart, a comment naming the default it takes.
// --spec-version on an engine whose file has no versions is refused at the option.
std::string init_spec_version(const EnginePrior& engine, const ScenarioInit& init) {
  if (engine.cycle_overhead_by_version.empty()) {
    if (!init.spec_version.empty()) {
      throw Error({"--spec-version", 0, 0}, "spec_version",
                  init.spec_version + ": models/engines/" + engine.name + ".yaml prices no speculative worker versions");
    }
    return "";
  }
  if (!init.spec_version.empty()) return entry("spec_version", init.spec_version, "--spec-version", 2);
  if (!launch_value(init, "engine.spec_version").empty()) return launch_entry(init, "engine.spec_version");
  std::string others;
  for (const auto& [version, term] : engine.cycle_overhead_by_version) others += (others.empty() ? "" : ", ") + version;
  return comment("spec_version: not stated, so the engine file's default " + engine.default_spec_version +
                     " prices the speculative worker; set " + others +
                     " (init --spec-version) where the build runs it (models/engines/" + engine.name +
                     ".yaml says which builds run which).",
                 2);
}

// Launch modes and the draft cycle's shape, as the engine runs them by default.
std::string init_engine(const EnginePrior& engine, const ScenarioInit& init) {
  std::string y = "\nengine:\n";
  y += entry("name", engine.name,
             std::string(init.launch ? "--from-command: the launch's engine" : "--engine") +
                 "; its speculative overheads are the priors of models/engines/" + engine.name + ".yaml",
             2);
  if (init.launch) {
    y += launch_modes(init);
  } else {
    // The engine file's reason (models/engines/<name>.yaml `init.launch_modes`), else one that names
    // no engine.
    y += comment(!engine.init.launch_modes.empty()
                     ? engine.init.launch_modes
                     : "Assumption: CUDA graphs everywhere (models/engines/" + engine.name +
                           ".yaml states no launch default). A verify shape left out of graph capture runs several "
                           "times slower (docs/references/specdec.md#verify-graph-capture): set verify_mode: eager "
                           "if the server log says so.",
                 2);
  }
  if (!init.launch) {
    y += entry("decode_mode", "graph", "assumption (above)", 2);
    y += entry("verify_mode", "graph", "assumption (above)", 2);
    y += entry("draft_mode", "graph", "assumption (above)", 2);
  }
  y += init_spec_version(engine, init);
  if (!engine.init.first_draft.empty()) {
    y += comment(engine.init.first_draft, 2);
    y += entry("extend_yields_first_draft", "true", "(above)", 2);
  } else {
    y += entry("extend_yields_first_draft", "true",
               "assumption: the first draft forward over the accepted tokens yields draft token 1 (models/engines/" +
                   engine.name + ".yaml does not say)",
               2);
  }
  return y;
}

// A draft-shape key as stated: init's own option (--num-steps, --topk, --num-draft-tokens), else
// the launch's value with its flag; an empty value where neither says.
struct StatedValue {
  std::string value;
  std::string origin;
};

StatedValue stated_shape(const ScenarioInit& init, const std::string& key) {
  const std::optional<int>& given = key == "speculation.num_steps"    ? init.num_steps
                                    : key == "speculation.eagle_topk" ? init.eagle_topk
                                                                      : init.num_draft_tokens;
  if (given) return {std::to_string(*given), scenario_option(init, key) + ": as published"};
  return {launch_value(init, key), launch_origin(init, key)};
}

bool shape_given(const ScenarioInit& init) { return init.num_steps || init.eagle_topk || init.num_draft_tokens; }

// The draft's shape as the options and the launch state it; assumptions where both are silent. A
// chain's draft tokens are num_steps + 1 unless an option says otherwise (the loader then says
// whether that shape exists).
std::string stated_speculation(const ScenarioInit& init) {
  const StatedValue steps = stated_shape(init, "speculation.num_steps");
  const StatedValue topk = stated_shape(init, "speculation.eagle_topk");
  const StatedValue tokens = stated_shape(init, "speculation.num_draft_tokens");
  const auto silent = [&](const std::string& option) {
    return init.launch ? std::string("the launch does not say") : option + " not given";
  };
  std::string y = steps.value.empty()
                      ? entry("num_steps", std::to_string(kAssumedSteps), "assumption: " + silent("--num-steps"), 2)
                      : entry("num_steps", scalar(steps.value), steps.origin, 2);
  y += topk.value.empty() ? entry("eagle_topk", "1", "assumption: a chain (" + silent("--topk") + ")", 2)
                          : entry("eagle_topk", scalar(topk.value), topk.origin, 2);
  const int k = steps.value.empty() ? kAssumedSteps : std::stoi(steps.value);
  const bool chain = topk.value.empty() || topk.value == "1";
  // What the loader would otherwise settle silently: a chain's token count, a tree's missing one.
  if (chain && init.num_draft_tokens && *init.num_draft_tokens != k + 1) {
    throw Error({"--num-draft-tokens", 0, 0}, "speculation.num_draft_tokens",
                std::to_string(*init.num_draft_tokens) + " with a chain of " + std::to_string(k) + " steps, which verifies " +
                    std::to_string(k + 1) + ": give --topk for a tree, or leave --num-draft-tokens out");
  }
  if (!chain && tokens.value.empty()) {
    throw Error({"--num-draft-tokens", 0, 0}, "speculation.num_draft_tokens",
                "required with a tree (top-k " + topk.value + "): the draft tokens the engine keeps and verifies "
                "(SGLang's --speculative-num-draft-tokens)");
  }
  if (chain && !init.num_draft_tokens && tokens.value != std::to_string(k + 1)) {
    return y + entry("num_draft_tokens", std::to_string(k + 1), "chain: num_steps + 1", 2);
  }
  return tokens.value.empty() ? y : y + entry("num_draft_tokens", scalar(tokens.value), tokens.origin, 2);
}

// A block drafter's block: the one it was trained on, which SGLang reads from the draft's config
// (--speculative-num-draft-tokens inferred) and vLLM's recipes pass as num_speculative_tokens =
// block_size - 1 (docs/references/specdec.md#dflash).
std::string init_block(const TransformerSpec& draft, const EnginePrior& engine) {
  const int block = draft.dflash ? draft.dflash->block_size : 16;
  const std::string how = engine.init.block.empty() ? "" : ", " + engine.name + "'s default for it (" + engine.init.block + ")";
  std::string y = comment("The drafter's trained block" + how +
                              ". `specsim sweep --concurrency 1,8,32 --vary speculation.block_size=4,8,12,16` shows "
                              "which block pays per concurrency.",
                          2);
  return y + entry("block_size", std::to_string(block), "the draft's block_size (above)", 2);
}

std::string init_speculation(const std::string& method, const TransformerSpec& draft, const EnginePrior& engine,
                             const ScenarioInit& init) {
  const SpeculationMethod& m = init_method(method);
  if (m.drafts_block && shape_given(init)) {
    const char* option = init.num_steps ? "--num-steps" : init.eagle_topk ? "--topk" : "--num-draft-tokens";
    throw Error({option, 0, 0}, "speculation", "method " + method + " drafts one block of the drafter's trained size, "
                "not steps or a tree: leave " + option + " out (`specsim predict --set speculation.block_size=N` "
                "tries another block)");
  }
  if (!launch_value(init, "speculation.method").empty() && !m.drafts_block) {
    return "\nspeculation:\n" + launch_entry(init, "speculation.method") + stated_speculation(init) +
           launch_entry(init, "speculation.parallel_drafting");
  }
  std::string why = "--method";
  if (m.needs_draft_file()) why = std::string("--draft is ") + draft_file_kind(m.source);
  if (!launch_value(init, "speculation.method").empty()) why = launch_origin(init, "speculation.method");
  std::string y = "\nspeculation:\n" + entry("method", method, why, 2);
  if (m.drafts_block) return y + init_block(draft, engine);
  if (shape_given(init)) return y + stated_speculation(init);
  const std::string recipes = engine.init.chain.empty() ? "" : " (" + engine.init.chain + ")";
  y += comment(std::string("Assumption: a chain of ") + std::to_string(kAssumedSteps) + " draft tokens" + recipes +
                   ". `specsim sweep --vary speculation.num_steps=1..6` shows which depth pays on this box.",
               2);
  y += entry("num_steps", std::to_string(kAssumedSteps), "assumption (above)", 2);
  y += entry("eagle_topk", "1", "assumption: a chain", 2);
  y += entry("num_draft_tokens", std::to_string(kAssumedSteps + 1), "chain: num_steps + 1", 2);
  return y;
}

std::string init_acceptance(const ScenarioInit& init, const std::string& method) {
  const SpeculationMethod& m = init_method(method);
  std::string y = "\nacceptance:\n";
  if (init.accept_length) {
    return y + entry("tokens_per_cycle", fixed(*init.accept_length, 3),
                     "--accept-length: measured tokens per cycle (tau, the bonus token included)", 2);
  }
  if (init.draft_acceptance_rate) {
    return y + entry("draft_acceptance_rate", fixed(*init.draft_acceptance_rate, 3),
                     "--draft-acceptance-rate: accepted / drafted tokens at this draft shape, tau = 1 + rate x "
                     "(num_draft_tokens - 1) (docs/acceptance.md#rates)",
                     2);
  }
  if (init.accept) {
    y += entry("accept", fixed(*init.accept, 3), "--accept: the first draft position's acceptance", 2);
  } else {
    y += entry("accept", fixed(m.init.accept, 2),
               std::string("assumption: ") + m.init.accept_source + "; --accept or `specsim acceptance LOG` gives the real one",
               2);
  }
  y += comment("No depth_profile: every position accepts at the same conditional rate, Leviathan et al.'s constant "
               "chain (docs/references/specdec.md#closed-forms). Assumption; EAGLE-3's measured conditional rates stay "
               "roughly flat with depth (docs/references/specdec.md#depth-decay).",
               2);
  return y;
}

// compute: left unset, so the priors apply; the comment says which.
std::string init_compute(const TransformerSpec& model) {
  return "\n" +
         comment("compute: not set, so specsim's priors apply and `specsim predict` prints each one as a prior:\n"
                 "- bandwidth_efficiency 0.84: BF16 GEMV/GEMM at M <= 64 on every GPU in NVIDIA AIConfigurator's "
                 "kernel data (docs/references/measured-compute.md#gemm-efficiency).\n"
                 "- eager_launch_per_kernel 17.39us and eager_overlap_exponent 2.91: plain PyTorch on one H200 "
                 "(docs/model.md#launch-modes); graph_launch 5us priced as one launch (assumption).\n"
                 "- flop_efficiency 0.5 and kernel_floor 3us: specsim's defaults (assumption; they matter at large "
                 "batches and for many small kernels).\n" +
                 std::string(model.moe ? "- routing_skew 1: uniform routing over the experts, an upper bound on the "
                                         "experts one forward reads (docs/references/models.md#distinct-experts); "
                                         "`routing_skew: calibrate` fits it from a measured verify.\n"
                                       : "") +
                 "Set a key under `compute:` to replace a prior (docs/schema.md, scenario).");
}

// The all-reduce: none at TP1; else NCCL, priced by the box's measured table when it has one.
std::string init_comm(const ScenarioInit& init, const std::optional<CommProfile>& profile) {
  std::string y = "\n";
  if (init.tp == 1) return y + comment("comm: one GPU (TP1), no all-reduce.");
  y += "comm:\n";
  if (launch_value(init, "comm.implementation").empty()) {
    y += entry("implementation", "nccl",
               "assumption: NCCL all-reduces; engines switch to their own one-shot kernel on some boxes "
               "(docs/references/nccl.md#custom-allreduce)",
               2);
  } else {
    y += launch_entry(init, "comm.implementation");
  }
  for (const char* key : {"comm.nccl_algo", "comm.nccl_proto", "comm.min_channels", "comm.max_channels"}) {
    y += launch_entry(init, key);
  }
  if (!profile) {
    y += comment("No measured all-reduce table for this box: NCCL's own cost model prices each all-reduce "
                 "(prior, docs/references/nccl.md#tuning-model), and `specsim predict` marks it UNCALIBRATED. "
                 "`specsim calibrate nccl` on an all_reduce_perf log of this box gives a table (docs/calibration.md).",
                 2);
  } else if (profile->ranks == init.tp) {
    y += comment("The all-reduce table is the topology's comm_profile, " + profile->name + ": measured at " +
                     std::to_string(profile->ranks) + " ranks in " + to_string(profile->mode) +
                     " mode (calibration/profiles/" + profile->name + ".yaml).",
                 2);
  } else {
    y += comment("The topology's comm_profile, " + profile->name + ", was measured at " +
                     std::to_string(profile->ranks) + " ranks, not " + std::to_string(init.tp) +
                     ": NCCL's cost model carries it to " + std::to_string(init.tp) +
                     " ranks (prior, lib/include/specsim/comm_scaling.hpp), marked UNCALIBRATED.",
                 2);
    y += entry("rank_scaling", "nccl", "prior: NCCL's model ratio from the measured rank count", 2);
  }
  if (init.tp > 1) {
    const std::string table = profile && !profile->nccl_version.empty()
                                  ? "the table was measured under " + profile->nccl_version
                                  : std::string("no table states one");
    y += comment("Not set: nccl_version, the NCCL release this deployment runs (" + table +
                     "). Set, it makes predict warn on a table from another minor release "
                     "(docs/references/nccl.md#versions).",
                 2);
  }
  return y;
}

// host: left unset, so the engine's priors apply; the comment gives them with their spread.
std::string init_host(const EnginePrior& engine) {
  // Without a measured plain rate the plain step's host time is the engine's prior (ModelRules
  // host_prior_without_step), else 0.
  const std::string step_host =
      engine.plain_step_host
          ? "without a measured plain rate, the prior of models/engines/" + engine.name + ".yaml, " +
                units::format_duration(engine.plain_step_host->value_s) + " (p10-p90 " +
                units::format_duration(engine.plain_step_host->p10_s) + " to " +
                units::format_duration(engine.plain_step_host->p90_s) + ")"
          : "0 without a measured plain rate (models/engines/" + engine.name + ".yaml gives no plain_step_host prior)";
  return "\n" +
         comment("host: not set.\n"
                 "- decode_per_step, the engine's host time per plain step: " + step_host +
                 "; measurements.baseline calibrates it.\n"
                 "- spec_extra_per_cycle " +
                 units::format_duration(engine.cycle_overhead.value_s) + " (p10-p90 " +
                 units::format_duration(engine.cycle_overhead.p10_s) + " to " +
                 units::format_duration(engine.cycle_overhead.p90_s) + ") and draft_step_overhead " +
                 units::format_duration(engine.draft_step_overhead.value_s) + " (" +
                 units::format_duration(engine.draft_step_overhead.p10_s) + " to " +
                 units::format_duration(engine.draft_step_overhead.p90_s) + "): the prior of models/engines/" +
                 engine.name + ".yaml, whose spread `specsim predict` prints as a p10-p90 band. A value set here "
                 "replaces the prior and its band.");
}

// measurements: the plain rate init was given, if any; the comment shows the shape of each.
std::string init_measurements(const ScenarioInit& init, const InitParts& parts) {
  const std::string shapes =
      "Each measurement calibrates part of the model (docs/calibration.md):\n"
      "measurements:\n"
      "  topology: " + (parts.imported ? std::string("NAME") : parts.topology.name) +
      "           (the box they were taken on)\n"
      "  baseline: {tokens_per_s: 100tok/s}     (plain decoding: the host time per step)\n"
      "  verify: {step, allreduce_count, allreduce_total, compute, tokens_per_request, mode}\n"
      "  speculative: {tokens_per_s: 150tok/s, held_out: true}     (compared with, never an input)";
  if (init.plain_rate.empty()) return "\n" + comment("measurements: none yet. " + shapes);
  std::string y = "\n" + comment(shapes) + "measurements:\n  baseline:\n" +
                  entry("tokens_per_s", scalar(init.plain_rate),
                        "--plain-rate: the measured plain rate over the batch; it calibrates the host time per step", 4);
  if (init.plain_end_to_end) {
    y += entry("includes_prefill", "true",
               "--plain-end-to-end: output tokens over wall time, prefill included; the residual is charged per "
               "output token (docs/model.md#prefill)",
               4);
  }
  if (init.prompt_tokens) y += entry("prompt_tokens", std::to_string(*init.prompt_tokens), "--prompt-tokens: mean per request", 4);
  if (init.output_tokens) y += entry("output_tokens", std::to_string(*init.output_tokens), "--output-tokens: mean per request", 4);
  if (!init.plain_tpot.empty()) {
    y += entry("tpot", scalar(init.plain_tpot), "--plain-tpot: the same run's mean time per output token", 4);
  }
  return y;
}

// The smallest tensor-parallel degree of the box at which `s` fits in memory, if any (the heads of
// the model and the draft split over it).
std::optional<int> smallest_fitting_tp(Scenario s) {
  for (int tp = 1; tp <= s.topology.gpus; ++tp) {
    try {
      (void)check_tensor_parallel(s.model, tp);
      if (s.draft.layers > 0) (void)check_tensor_parallel(s.draft, tp);
    } catch (const Error&) {
      continue;
    }
    s.parallel.tp = tp;
    if (memory_fit(s).fits()) return tp;
  }
  return std::nullopt;
}

// The launch line as read and what in it no scenario key holds: listed, never dropped.
std::string init_launch(const ScenarioInit& init) {
  if (!init.launch) return "";
  std::string y = comment("Read from the launch (`init --from-command`): " + init.launch->command);
  if (!init.launch->adjusted.empty()) {
    y += comment("Adjusted by the engine (the scenario holds what it runs):");
    for (const auto& a : init.launch->adjusted) y += comment("- " + a);
  }
  if (!init.launch->read_as.empty()) {
    y += comment("Read as:");
    for (const auto& r : init.launch->read_as) y += comment("- " + r);
  }
  if (init.launch->unmodelled.empty()) return y + "\n";
  y += comment("Not modelled (no scenario key holds these; specsim predicts as if they were absent):");
  for (const auto& u : init.launch->unmodelled) y += comment("- " + u);
  return y + "\n";
}

// What is returned must load, and fit in memory as predict requires (require_memory_fit): a problem
// the checks above missed is reported with its option (--from-command where the launch gave the
// key); a deployment that does not fit names the smallest tp that does.
void check_init_loads(const std::string& text, const ScenarioInit& init, const DataDir& data) {
  Scenario s;
  try {
    s = load_scenario_text(text, "<specsim init>", data);
  } catch (const Error& e) {
    const bool from_launch = !e.key_path().empty() && !launch_value(init, e.key_path()).empty();
    const std::string option = from_launch ? "--from-command" : scenario_option(init, e.key_path());
    if (option.empty()) throw;
    throw Error({option, 0, 0}, e.key_path(), e.message());
  }
  if (const MemoryFit fit = memory_fit(s); !fit.fits()) {
    const std::optional<int> tp = smallest_fitting_tp(s);
    const std::string hint = tp ? "; the smallest tp that fits on " + s.topology.name + " is " + std::to_string(*tp) +
                                      " (--tp " + std::to_string(*tp) + ")"
                                : "; no tp of " + s.topology.name + " fits it: a box with more or larger GPUs, "
                                  "or a quantized model";
    throw Error({"--tp", 0, 0}, "parallel.tp", describe_overflow(s, fit) + hint);
  }
}

}  // namespace

std::string render_scenario_init(const ScenarioInit& init, const DataDir& data) {
  const InitParts parts = load_init_parts(init, data);
  const int batch = init.batch.value_or(kAssumedBatch);
  const long long context = init.context.value_or(kAssumedContext);
  const std::string text = init_header(init, parts, batch) + init_launch(init) + init_files(init, parts) +
                           init_parallel_and_workload(init, batch, context) + init_engine(parts.engine, init) +
                           init_speculation(parts.method, parts.draft, parts.engine, init) +
                           init_acceptance(init, parts.method) + init_compute(parts.model) +
                           init_comm(init, parts.profile) + init_host(parts.engine) + init_measurements(init, parts);
  check_init_loads(text, init, data);
  return text;
}

std::vector<std::string> init_methods() { return speculation_method_names(); }

namespace {

// The last part of a launch's weights, lower-cased: "Qwen/Qwen3-8B" -> "qwen3-8b".
std::string lower_stem(const std::string& given) {
  std::string stem = fs::path(given).filename().string();
  for (char& c : stem) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return stem;
}

// The models/llm name or checkpoint directory a launch's weights stand for; "" when none.
std::string weights_name(const std::string& given, const DataDir& data) {
  if (given.starts_with("<path-to-") && given.ends_with(">")) return given.substr(9, given.size() - 10);
  std::error_code ec;
  if (fs::is_directory(given, ec) && fs::exists(fs::path(given) / "config.json", ec)) return given;
  const std::string stem = lower_stem(given);
  const auto names = data.names(DataKind::kModel);
  return std::find(names.begin(), names.end(), stem) != names.end() ? stem : "";
}

// The longest models/llm name that a launch's weights extend as NAME-SUFFIX ("Qwen/Qwen3-235B-A22B-FP8":
// qwen3-235b-a22b), and the suffix ("fp8"); both "" where none does.
std::pair<std::string, std::string> known_prefix(const std::string& given, const DataDir& data) {
  const std::string stem = lower_stem(given);
  std::string near;
  for (const auto& n : data.names(DataKind::kModel)) {
    if (stem.size() > n.size() + 1 && stem.starts_with(n + "-") && n.size() > near.size()) near = n;
  }
  if (near.empty()) return {};
  return {near, stem.substr(near.size() + 1)};
}

// The known model a launch's weights are a tuned build of, where their name is its name plus a
// suffix every part of which names a tuning or a release ("-Instruct", "-Instruct-2507", "-Chat",
// "-it", "-Base"): the same shape and stored dtypes. "" otherwise (a quantized build, "-FP8", is not).
std::string tuned_build_of(const std::string& given, const DataDir& data) {
  const auto [name, suffix] = known_prefix(given, data);
  if (name.empty()) return "";
  std::istringstream parts(suffix);
  for (std::string part; std::getline(parts, part, '-');) {
    const bool release = part.size() == 4 && std::all_of(part.begin(), part.end(), [](unsigned char c) {
                           return std::isdigit(c) != 0;
                         });
    if (!release && part != "instruct" && part != "chat" && part != "it" && part != "base" && part != "thinking") {
      return "";
    }
  }
  return name;
}

// Where a launch's weights are a known model's name with a build's suffix ("Qwen/Qwen3-235B-A22B-FP8":
// qwen3-235b-a22b and "fp8"), what a user who passes that name gets: the known file's weight dtypes,
// which the build's may not be, and what prices its own. "" where no known name is a prefix of the
// weights' name.
std::string near_known_model(const std::string& given, const std::string& option, const DataDir& data) {
  const auto [near, suffix] = known_prefix(given, data);
  if (near.empty()) return "";
  const TransformerSpec m = load_model(data.resolve(DataKind::kModel, near));
  const std::string stored = m.moe ? std::string(to_string(m.weights.experts)) + " experts and " +
                                         to_string(m.weights.dense_mlp) + " dense layers"
                                   : std::string(to_string(m.weights.dense_mlp)) + " weights";
  return "it reads as " + near + " with '-" + suffix + "', a build models/llm does not hold; " +
         near + ".yaml stores " + stored + ", which that build's weights may not be (a quantized build reads "
         "fewer bytes a step); its checkpoint directory (config.json with its quantization_config) as " + option +
         " prices its own weights";
}

std::string resolve_weights(const std::string& given, const char* what, const char* option, const DataDir& data) {
  const std::string name = weights_name(given, data);
  if (!name.empty()) return name;
  std::string known;
  for (const auto& n : data.names(DataKind::kModel)) known += (known.empty() ? "" : ", ") + n;
  std::string near = std::string(what) == "model" ? near_known_model(given, option, data) : "";
  if (!near.empty()) near = "; " + near;
  throw Error({"--from-command", 0, 0}, what,
              "the launch's " + std::string(what) + " '" + given + "' is no models/llm name, `<path-to-NAME>` "
              "placeholder or checkpoint directory with config.json here" + near + ": pass " + option +
                  " NAME (known: " + known + ")");
}

}  // namespace

ScenarioInit init_from_launch(ScenarioInit init, const LaunchReading& launch, const DataDir& data) {
  init.engine = to_string(launch.engine);
  if (auto it = launch.values.find("parallel.tp"); it != launch.values.end() && init.tp == 0) init.tp = std::stoi(it->second);
  if (init.tp == 0) init.tp = 1;
  const bool model_given = !init.model.empty();
  const bool known_weights = !weights_name(launch.model, data).empty();
  const std::string tuned = known_weights ? "" : tuned_build_of(launch.model, data);
  if (!model_given) init.model = tuned.empty() ? resolve_weights(launch.model, "model", "--model", data) : tuned;
  init.launch = launch;
  if (!model_given && !tuned.empty()) {
    init.launch->read_as.push_back("the launch's weights '" + launch.model + "' are read as models/llm/" + tuned +
                                    ".yaml: a tuned build of it, the same shape and stored dtypes (--model NAME "
                                    "names another file)");
  }
  // --model in place of weights no models/llm name stands for: said, with what the file stores.
  if (model_given && !launch.model.empty() && !known_weights && tuned != init.model) {
    const std::string near = near_known_model(launch.model, "--model", data);
    init.launch->unmodelled.push_back(
        "the launch's weights '" + launch.model + "' are priced as --model " + init.model + ": " +
        (near.empty() ? "models/llm has no file of that name, and a build with other weights than the file's "
                        "reads other bytes a step"
                      : near));
  }
  if (init.draft.empty() && needs_draft(init)) {
    const std::string method = init_method_name(init);
    if (method.empty() && launch.draft.empty()) {
      throw Error({"--from-command", 0, 0}, "speculation.method",
                  "the launch runs no speculative decoding (no speculative flag): pass --method (and --draft NAME "
                  "for a method that drafts from a file) to say what to predict against this plain launch");
    }
    if (launch.draft.empty()) {
      throw Error({"--from-command", 0, 0}, "draft", "the launch names no draft weights for method " + method + ": pass --draft NAME");
    }
    init.draft = resolve_weights(launch.draft, "draft", "--draft", data);
  }
  return init;
}

}  // namespace specsim
