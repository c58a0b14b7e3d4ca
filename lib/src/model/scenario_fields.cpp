#include "specsim/scenario_fields.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "specsim/comm_model.hpp"
#include "specsim/model_spec.hpp"
#include "specsim/speculation_method.hpp"
#include "specsim/units.hpp"
#include "model/scenario_bounds.hpp"

namespace specsim {

// kChoice: one of the names choices() gives, held as its index; kBoolean: true or false, held as 1 or 0;
// kFile: the name of a data file (a comm profile, a model, a GPU, a topology), held with what the
// first load read for it (FieldFiles).
enum class FieldKind { kCount, kNumber, kDuration, kChoice, kBoolean, kFile };

struct ScenarioField {
  const char* key;
  FieldKind kind;  // kCount and kNumber are held to kScenarioBounds' range, durations to units::parse's
  bool calibrate = false;  // "calibrate" is a value
  void (*set)(Scenario&, std::optional<double>);
  // The value `s` holds, encoded as set() takes it (nullopt: "calibrate"): what a patch that would
  // change nothing is told apart by.
  std::optional<double> (*get)(const Scenario&);
  std::vector<std::string> (*choices)() = nullptr;  // kChoice only, as the loader lists them
  // kFile only: sets the name and what was read for it (nothing for "": no file), and reads the name back.
  void (*set_file)(Scenario&, const std::string&, const FieldFiles*) = nullptr;
  std::string (*file_name)(const Scenario&) = nullptr;
  bool clearable = false;  // kFile only: "" means no file (a table left out), not an error
};

namespace {

int as_int(std::optional<double> v) { return static_cast<int>(*v); }

std::vector<std::string> mode_names() { return {"graph", "eager", "piecewise"}; }
std::vector<std::string> nccl_algo_names() { return {"auto", "ring", "tree"}; }
std::vector<std::string> nccl_proto_names() { return {"auto", "ll", "ll128", "simple"}; }

std::string kv_cache_dtype_name(const Scenario& s) {
  return s.engine.kv_cache_dtype ? to_string(*s.engine.kv_cache_dtype) : "auto";
}

// The index of `name` among `names` (the loader refused any other name).
double index_of(const std::vector<std::string>& names, const std::string& name) {
  return static_cast<double>(std::find(names.begin(), names.end(), name) - names.begin());
}
LaunchMode mode_at(std::optional<double> v) {
  const LaunchMode modes[] = {LaunchMode::kGraph, LaunchMode::kEager, LaunchMode::kPiecewise};
  return modes[as_int(v)];
}
std::optional<double> mode_index(LaunchMode m) { return index_of(mode_names(), to_string(m)); }
std::string name_at(std::vector<std::string> (*names)(), std::optional<double> v) { return names()[as_int(v)]; }

// A value a getter cannot state as set() takes it (the acceptance's rate of a measured profile):
// unequal to every value, so a patch of it is never taken for one that changes nothing.
constexpr double kUnstated = std::numeric_limits<double>::quiet_NaN();

using Get = std::optional<double>;

const ScenarioField kFields[] = {
    {"workload.batch", FieldKind::kCount, false, [](Scenario& s, auto v) { s.batch = as_int(v); },
     [](const Scenario& s) -> Get { return s.batch; }},
    {"workload.context", FieldKind::kCount, false,
     [](Scenario& s, auto v) { s.context_tokens = std::floor(*v); },
     [](const Scenario& s) -> Get { return s.context_tokens; }},
    {"speculation.num_steps", FieldKind::kCount, false,
     [](Scenario& s, auto v) { s.speculation.shape.num_steps = as_int(v); },
     [](const Scenario& s) -> Get { return s.speculation.shape.num_steps; }},
    {"speculation.eagle_topk", FieldKind::kCount, false,
     [](Scenario& s, auto v) { s.speculation.shape.eagle_topk = as_int(v); },
     [](const Scenario& s) -> Get { return s.speculation.shape.eagle_topk; }},
    {"speculation.num_draft_tokens", FieldKind::kCount, false,
     [](Scenario& s, auto v) { s.speculation.shape.num_draft_tokens = as_int(v); },
     [](const Scenario& s) -> Get { return s.speculation.shape.num_draft_tokens; }},
    // A block drafter's block (speculation.method dflash): a chain of block_size verified tokens.
    {"speculation.block_size", FieldKind::kCount, false,
     [](Scenario& s, auto v) {
       s.speculation.shape.num_steps = as_int(v) - 1;
       s.speculation.shape.num_draft_tokens = as_int(v);
     },
     [](const Scenario& s) -> Get { return s.speculation.shape.num_steps + 1; }},
    {"acceptance.accept", FieldKind::kNumber, false,
     [](Scenario& s, auto v) { s.acceptance = with_accept_rate(std::move(s.acceptance), *v); },
     [](const Scenario&) -> Get { return kUnstated; }},
    {"compute.bandwidth_efficiency", FieldKind::kNumber, true,
     [](Scenario& s, auto v) { s.compute.bandwidth_efficiency = v; },
     [](const Scenario& s) -> Get { return s.compute.bandwidth_efficiency; }},
    {"compute.flop_efficiency", FieldKind::kNumber, false,
     [](Scenario& s, auto v) { s.compute.flop_efficiency = *v; },
     [](const Scenario& s) -> Get { return s.compute.flop_efficiency; }},
    {"compute.routing_skew", FieldKind::kNumber, true,
     [](Scenario& s, auto v) { s.compute.routing_skew = v; },
     [](const Scenario& s) -> Get { return s.compute.routing_skew; }},
    {"compute.expert_bandwidth_efficiency", FieldKind::kNumber, false,
     [](Scenario& s, auto v) { s.compute.expert_bandwidth_efficiency = v; },
     [](const Scenario& s) -> Get { return s.compute.expert_bandwidth_efficiency.value_or(kUnstated); }},
    {"compute.kv_efficiency_decode", FieldKind::kNumber, false,
     [](Scenario& s, auto v) { s.compute.kv_efficiency_decode = v; },
     [](const Scenario& s) -> Get { return s.compute.kv_efficiency_decode.value_or(kUnstated); }},
    {"compute.kv_efficiency_verify", FieldKind::kNumber, false,
     [](Scenario& s, auto v) { s.compute.kv_efficiency_verify = v; },
     [](const Scenario& s) -> Get { return s.compute.kv_efficiency_verify.value_or(kUnstated); }},
    {"compute.kv_verify_ratio", FieldKind::kNumber, false,
     [](Scenario& s, auto v) { s.compute.kv_verify_ratio = *v; },
     [](const Scenario& s) -> Get { return s.compute.kv_verify_ratio; }},
    {"compute.eager_overlap_exponent", FieldKind::kNumber, false,
     [](Scenario& s, auto v) { s.compute.eager_overlap_exponent = v; },
     [](const Scenario& s) -> Get { return s.compute.eager_overlap_exponent.value_or(kUnstated); }},
    {"compute.kernel_floor", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.compute.kernel_floor_s = *v; },
     [](const Scenario& s) -> Get { return s.compute.kernel_floor_s; }},
    {"compute.eager_launch_per_kernel", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.compute.eager_launch_per_kernel_s = *v; },
     [](const Scenario& s) -> Get { return s.compute.eager_launch_per_kernel_s.value_or(kUnstated); }},
    {"compute.graph_launch", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.compute.graph_launch_s = *v; },
     [](const Scenario& s) -> Get { return s.compute.graph_launch_s; }},
    {"compute.eager_multi_token_step", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.compute.eager_multi_token_step_s = *v; },
     [](const Scenario& s) -> Get { return s.compute.eager_multi_token_step_s; }},
    {"compute.multi_token_step", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.compute.multi_token_step_s = *v; },
     [](const Scenario& s) -> Get { return s.compute.multi_token_step_s; }},
    {"compute.per_token_layer", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.compute.per_token_layer_s = *v; },
     [](const Scenario& s) -> Get { return s.compute.per_token_layer_s; }},
    {"comm.scale", FieldKind::kNumber, false, [](Scenario& s, auto v) { s.comm.scale = *v; },
     [](const Scenario& s) -> Get { return s.comm.scale; }},
    {"comm.overlap", FieldKind::kNumber, false, [](Scenario& s, auto v) { s.comm.overlap = *v; },
     [](const Scenario& s) -> Get { return s.comm.overlap; }},
    {"comm.min_channels", FieldKind::kCount, false, [](Scenario& s, auto v) { s.comm.min_channels = as_int(v); },
     [](const Scenario& s) -> Get { return s.comm.min_channels; }},
    {"comm.max_channels", FieldKind::kCount, false, [](Scenario& s, auto v) { s.comm.max_channels = as_int(v); },
     [](const Scenario& s) -> Get { return s.comm.max_channels; }},
    {"comm.eager_overhead_per_op", FieldKind::kDuration, true,
     [](Scenario& s, auto v) { s.comm.eager_overhead_per_op_s = v; },
     [](const Scenario& s) -> Get { return s.comm.eager_overhead_per_op_s; }},
    {"host.decode_per_step", FieldKind::kDuration, true,
     [](Scenario& s, auto v) { s.host.decode_per_step_s = v; },
     [](const Scenario& s) -> Get { return s.host.decode_per_step_s; }},
    {"host.spec_extra_per_cycle", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.host.spec_extra_per_cycle_s = *v; },
     [](const Scenario& s) -> Get { return s.host.spec_extra_per_cycle_s; }},
    {"host.draft_step_overhead", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.host.draft_step_overhead_s = *v; },
     [](const Scenario& s) -> Get { return s.host.draft_step_overhead_s; }},
    {"host.spec_per_request", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.host.spec_per_request_s = *v; },
     [](const Scenario& s) -> Get { return s.host.spec_per_request_s; }},
    {"host.ngram_lookup_per_token", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.host.ngram_lookup_per_token_s = *v; },
     [](const Scenario& s) -> Get { return s.host.ngram_lookup_per_token_s; }},
    // The launch settings an intervention switches (models/interventions): choices and switches as
    // the loader reads them (read_scenario.cpp read_engine, read_comm_block, read_parallel).
    {"engine.decode_mode", FieldKind::kChoice, false,
     [](Scenario& s, auto v) { s.engine.decode_mode = mode_at(v); },
     [](const Scenario& s) -> Get { return mode_index(s.engine.decode_mode); }, mode_names},
    {"engine.verify_mode", FieldKind::kChoice, false,
     [](Scenario& s, auto v) { s.engine.verify_mode = mode_at(v); },
     [](const Scenario& s) -> Get { return mode_index(s.engine.verify_mode); }, mode_names},
    {"engine.draft_mode", FieldKind::kChoice, false,
     [](Scenario& s, auto v) { s.engine.draft_mode = mode_at(v); },
     [](const Scenario& s) -> Get { return mode_index(s.engine.draft_mode); }, mode_names},
    {"engine.kv_cache_dtype", FieldKind::kChoice, false,
     [](Scenario& s, auto v) {
       const std::string name = name_at(kv_cache_dtype_names, v);
       s.engine.kv_cache_dtype = name == "auto" ? std::nullopt : parse_dtype(name);
       adopt_kv_cache_dtype(s);
     },
     [](const Scenario& s) -> Get { return index_of(kv_cache_dtype_names(), kv_cache_dtype_name(s)); },
     kv_cache_dtype_names},
    {"comm.nccl_algo", FieldKind::kChoice, false,
     [](Scenario& s, auto v) { s.comm.nccl_algo = name_at(nccl_algo_names, v); },
     [](const Scenario& s) -> Get { return index_of(nccl_algo_names(), s.comm.nccl_algo); }, nccl_algo_names},
    {"comm.nccl_proto", FieldKind::kChoice, false,
     [](Scenario& s, auto v) { s.comm.nccl_proto = name_at(nccl_proto_names, v); },
     [](const Scenario& s) -> Get { return index_of(nccl_proto_names(), s.comm.nccl_proto); }, nccl_proto_names},
    {"comm.implementation", FieldKind::kChoice, false,
     [](Scenario& s, auto v) { s.comm.implementation = name_at(allreduce_implementation_names, v); },
     [](const Scenario& s) -> Get { return index_of(allreduce_implementation_names(), s.comm.implementation); },
     allreduce_implementation_names},
    {"comm.fuse_residual_norm", FieldKind::kBoolean, false,
     [](Scenario& s, auto v) { s.comm.fuse_residual_norm = *v != 0.0; },
     [](const Scenario& s) -> Get { return s.comm.fuse_residual_norm ? 1.0 : 0.0; }},
    // The target's ranks and stages: parallel_problems holds them to the box and both models' heads,
    // comm_profile_problems the comm tables to tp. A what-if of them is calibrated again.
    {"parallel.tp", FieldKind::kCount, false,
     [](Scenario& s, auto v) { s.parallel.tp = as_int(v); },
     [](const Scenario& s) -> Get { return s.parallel.tp; }},
    {"parallel.pp", FieldKind::kCount, false,
     [](Scenario& s, auto v) { s.parallel.pp = as_int(v); },
     [](const Scenario& s) -> Get { return s.parallel.pp; }},
    // The files a scenario names: read once where the what-if is set up (load_field_value), never
    // per point. The all-reduce tables; the target (its MTP module is the draft of
    // speculation.method mtp); the draft; the GPU; the box, which brings its GPU and all-reduce
    // table where the scenario states none of its own.
    {"comm.profile", FieldKind::kFile, false, nullptr, nullptr, nullptr,
     [](Scenario& s, const std::string& name, const FieldFiles* f) {
       s.comm.profile = name;
       s.comm_profile = f ? f->profile : std::nullopt;
     },
     [](const Scenario& s) { return s.comm.profile; }, true},
    {"comm.custom_profile", FieldKind::kFile, false, nullptr, nullptr, nullptr,
     [](Scenario& s, const std::string& name, const FieldFiles* f) {
       s.comm.custom_profile = name;
       s.custom_profile = f ? f->profile : std::nullopt;
     },
     [](const Scenario& s) { return s.comm.custom_profile; }, true},
    {"model", FieldKind::kFile, false, nullptr, nullptr, nullptr,
     [](Scenario& s, const std::string&, const FieldFiles* f) {
       s.model = *f->model;
       if (s.speculation.kind().source == DraftSource::kTargetMtp) s.draft = mtp_draft(s.model);
       adopt_draft(s);
     },
     [](const Scenario& s) { return s.model.name; }},
    // The draft of a method that drafts from a file (eagle, eagle3, draft_model, dflash): the
    // method stays, draft_problems checks the file against it and the target.
    {"draft", FieldKind::kFile, false, nullptr, nullptr, nullptr,
     [](Scenario& s, const std::string&, const FieldFiles* f) {
       s.draft = *f->draft;
       adopt_draft(s);
     },
     [](const Scenario& s) { return s.draft.name; }},
    {"gpu", FieldKind::kFile, false, nullptr, nullptr, nullptr,
     [](Scenario& s, const std::string&, const FieldFiles* f) { s.gpu = *f->gpu; },
     [](const Scenario& s) { return s.gpu.name; }},
    {"topology", FieldKind::kFile, false, nullptr, nullptr, nullptr,
     [](Scenario& s, const std::string&, const FieldFiles* f) {
       s.topology = *f->topology;
       if (!s.explicit_keys.count("gpu")) s.gpu = *f->gpu;
       if (!s.explicit_keys.count("comm.profile")) {
         s.comm.profile = s.topology.comm_profile;
         s.comm_profile = f->profile;
       }
     },
     [](const Scenario& s) { return s.topology.name; }},
    // 1 or tp (parallel_problems): the draft's heads must divide the ranks it runs on.
    {"parallel.draft_tp", FieldKind::kCount, false,
     [](Scenario& s, auto v) { s.parallel.draft_tp = as_int(v); },
     [](const Scenario& s) -> Get { return s.parallel.draft_ranks(); }},
};

// The keys whose value calibration reads (CycleModel::calibrate_with_overrides takes a set value
// over the calibrated one; the rest of calibration runs on the scenario as measured).
constexpr const char* kCalibratedKeys[] = {"compute.bandwidth_efficiency", "compute.routing_skew",
                                           "compute.expert_bandwidth_efficiency", "comm.eager_overhead_per_op",
                                           "host.decode_per_step"};
// Keys that move the box calibration prices the run on (the ranks, the stages, the all-reduce
// tables): a what-if of them is calibrated again, from the measurements as they were taken.
constexpr const char* kRecalibratedKeys[] = {"parallel.tp", "parallel.pp", "comm.profile", "comm.custom_profile",
                                             "model", "gpu", "topology"};

const ScenarioField* find_field(const std::string& key) {
  const auto it = std::find_if(std::begin(kFields), std::end(kFields), [&](const ScenarioField& f) { return key == f.key; });
  return it == std::end(kFields) ? nullptr : &*it;
}

std::string show(double v) {
  std::string s = units::format_fixed(v, 6);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

bool is_scenario_field(const std::string& key) { return find_field(key) != nullptr; }

std::vector<std::string> scenario_field_keys() {
  std::vector<std::string> keys;
  for (const ScenarioField& f : kFields) keys.emplace_back(f.key);
  return keys;
}

bool is_calibrated_key(const std::string& key) {
  return std::any_of(std::begin(kCalibratedKeys), std::end(kCalibratedKeys), [&](const char* k) { return key == k; });
}

bool field_affects_calibration(const std::string& key) {
  return key.rfind("measurements.", 0) == 0 || is_calibrated_key(key) ||
         std::any_of(std::begin(kRecalibratedKeys), std::end(kRecalibratedKeys), [&](const char* k) { return key == k; });
}

bool is_file_field(const std::string& key) {
  const ScenarioField* f = find_field(key);
  return f != nullptr && f->kind == FieldKind::kFile;
}

FieldValue parse_field_value(const std::string& key, const std::string& text, const SourceLocation& where) {
  const ScenarioField* f = find_field(key);
  if (f == nullptr) throw Error(where, key, "not a field a what-if can set on a loaded scenario");
  FieldValue out;
  out.field = f;
  if (f->kind == FieldKind::kFile) {
    if (text.empty() && !f->clearable) throw Error(where, key, "names a file: give its name");
    out.name = text;  // the file is load_field_value's to read
    return out;
  }
  if (f->calibrate && text == "calibrate") return out;
  if (f->kind == FieldKind::kChoice) {
    const std::vector<std::string> names = f->choices();
    if (std::find(names.begin(), names.end(), text) == names.end()) {
      std::string valid;
      for (const auto& n : names) valid += (valid.empty() ? "" : ", ") + n;
      throw Error(where, key, "'" + text + "' is not one of: " + valid);
    }
    out.value = index_of(names, text);
    return out;
  }
  if (f->kind == FieldKind::kBoolean) {
    if (text != "true" && text != "false") throw Error(where, key, "expected true or false, got '" + text + "'");
    out.value = text == "true" ? 1.0 : 0.0;
    return out;
  }
  if (f->kind == FieldKind::kDuration) {
    try {
      out.value = units::parse(text, units::Quantity::kDuration);
    } catch (const Error& e) {
      throw Error(where, key, e.message());
    }
    return out;
  }
  std::size_t used = 0;
  double v = 0.0;
  try {
    v = f->kind == FieldKind::kCount ? static_cast<double>(std::stoll(text, &used)) : std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v)) {
    throw Error(where, key, std::string(f->kind == FieldKind::kCount ? "expected an integer" : "expected a finite number") +
                                ", got '" + text + "'");
  }
  const detail::ScenarioBound& b = *detail::find_scenario_bound(f->key);
  if (v < b.min || v > b.max) {
    throw Error(where, key, "= " + text + ": must be in [" + show(b.min) + ", " + show(b.max) + "]");
  }
  out.value = v;
  return out;
}

FieldValue parse_field_scale(const std::string& key, const std::string& text, const SourceLocation& where) {
  const ScenarioField* f = find_field(key);
  if (f == nullptr) throw Error(where, key, "not a field a what-if can set on a loaded scenario");
  if (f->kind != FieldKind::kNumber && f->kind != FieldKind::kDuration && f->kind != FieldKind::kCount) {
    throw Error(where, key, "only a number, a duration or a count can be scaled");
  }
  std::size_t used = 0;
  double factor = 0.0;
  try {
    factor = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(factor) || factor < 0) {
    throw Error(where, key, "expected a non-negative factor after '*=', got '" + text + "'");
  }
  FieldValue out;
  out.field = f;
  out.value = factor;
  out.scale = true;
  return out;
}

const char* field_key(const FieldValue& v) { return v.field->key; }

std::vector<std::string> kv_cache_dtype_names() { return {"auto", "bf16", "fp16", "fp8", "int8"}; }

void adopt_kv_cache_dtype(Scenario& s) {
  s.model.kv_cache_dtype = s.engine.kv_cache_dtype;
  s.draft.kv_cache_dtype = s.engine.kv_cache_dtype;
}

void adopt_draft(Scenario& s) {
  adopt_kv_cache_dtype(s);
  std::string trained_for;
  if (s.draft.dflash) {
    s.draft.weights.lm_head = s.model.weights.lm_head;
    trained_for = s.draft.dflash->target;
  } else if (s.draft.eagle3) {
    trained_for = s.draft.eagle3->target;
  }
  if (!trained_for.empty() && trained_for != s.model.name) {
    s.notes.push_back("the draft '" + s.draft.name + "' was trained for '" + trained_for + "', not '" + s.model.name +
                      "': its shapes fit, but its acceptance on this model is not measured");
  }
}

std::string field_text(const Scenario& s, const std::string& key) {
  const ScenarioField* f = find_field(key);
  if (f == nullptr) return "";
  if (f->kind == FieldKind::kFile) return f->file_name(s);
  const Get v = f->get(s);
  if (!v) return "calibrate";
  switch (f->kind) {
    case FieldKind::kChoice: return f->choices()[std::size_t(*v)];
    case FieldKind::kBoolean: return *v != 0.0 ? "true" : "false";
    case FieldKind::kDuration: return units::format_duration(*v);
    default: return show(*v);
  }
}

bool field_holds(const Scenario& s, const FieldValue& v) {
  if (v.scale) return v.value == 1.0;
  if (v.field->kind == FieldKind::kFile) return v.field->file_name(s) == v.name;
  return v.field->get(s) == v.value;
}

void set_field(Scenario& s, const FieldValue& v) {
  if (v.field->kind == FieldKind::kFile) {
    if (!v.name.empty() && !v.files) {
      throw Error(std::string("internal: ") + v.field->key + " '" + v.name + "' was set without its file (load_field_value reads it)");
    }
    v.field->set_file(s, v.name, v.files.get());
  } else if (v.scale) {
    const Get held = v.field->get(s);
    const SourceLocation where{std::string("--set ") + v.field->key + "*=" + show(*v.value), 0, 0};
    if (!held) throw Error(where, v.field->key, "cannot scale 'calibrate': set a value first");
    double scaled = *held * *v.value;
    if (v.field->kind == FieldKind::kCount) scaled = std::round(scaled);
    if (const auto* b = detail::find_scenario_bound(v.field->key); b && (scaled < b->min || scaled > b->max)) {
      throw Error(where, v.field->key, "= " + show(scaled) + " after scaling: must be in [" + show(b->min) + ", " + show(b->max) + "]");
    }
    v.field->set(s, scaled);
  } else {
    v.field->set(s, v.value);
  }
  s.explicit_keys.insert(v.field->key);
  s.patched_keys.insert(v.field->key);
  // What the loader derives from the set values: a chain verifies num_steps + 1 tokens (unless a
  // patch states another count, which speculation_problems then refuses); `attention_dp: true`
  // follows tp.
  DraftShape& sp = s.speculation.shape;
  if (!s.speculation.drafts_block() && sp.eagle_topk == 1 && !s.patched_keys.count("speculation.num_draft_tokens")) {
    sp.num_draft_tokens = sp.num_steps + 1;
  }
  if (s.parallel.attention_dp_all) s.parallel.attention_dp = s.parallel.tp;
}

}  // namespace specsim
