#include "specsim/preconditions.hpp"

#include <algorithm>
#include <utility>
#include <variant>

#include "specsim/comm_model.hpp"
#include "specsim/engine_flags.hpp"
#include "specsim/error.hpp"
#include "specsim/suggest.hpp"

namespace specsim {

namespace {

std::string yes(bool b) { return b ? "true" : "false"; }
std::vector<std::string> booleans() { return {"true", "false"}; }
std::vector<std::string> link_names() { return {"pcie", "nvlink", "xgmi", "network"}; }
std::vector<std::string> vendor_names() { return {"nvidia", "amd"}; }
std::vector<std::string> mode_names() { return {"graph", "eager", "piecewise"}; }
std::vector<std::string> methods() { return speculation_method_names(); }

template <std::size_t... I>
std::vector<std::string> kind_names(std::index_sequence<I...>) {
  return {std::string(to_string(AcceptanceKind(std::in_place_index<I>)))...};
}
std::vector<std::string> acceptance_kinds() {
  return kind_names(std::make_index_sequence<std::variant_size_v<AcceptanceKind>>{});
}

std::string link_of(const Scenario& s) {
  if (s.topology.nodes_spanned(s.parallel.tp) > 1) return "network";
  switch (s.topology.link) {
    case LinkClass::kNvlink: return "nvlink";
    case LinkClass::kXgmi: return "xgmi";
    default: return "pcie";
  }
}

// The engine's own custom all-reduce (its file's behaviour.custom_allreduce: vLLM's and SGLang's
// CustomAllreduce) starts on this box and runs: their guards pass (comm_model.hpp
// engine_custom_guard_refusal) and the kernel does not abort in graph capture on this GPU (vLLM's on
// sm_12x). docs/references/nccl.md#engine-custom-allreduce.
bool engine_custom_runs(const Scenario& s) {
  return s.engine.behaviour.custom_allreduce && s.parallel.tp > 1 &&
         engine_custom_guard_refusal(s).empty() && !vllm_custom_aborts_in_capture(s);
}

const std::vector<ScenarioFact> kFacts = {
    {"link", "the class of the links the TP group's all-reduces cross: network across nodes, else the box's ring link",
     link_names, link_of},
    {"p2p", "the GPUs reach each other's memory peer to peer (the topology's p2p and the GPU's p2p_supported)", booleans,
     [](const Scenario& s) { return yes(s.topology.p2p && s.gpu.p2p_supported); }},
    {"gpu_vendor", "nvidia (CUDA, NCCL) or amd (ROCm, RCCL)", vendor_names,
     [](const Scenario& s) { return std::string(is_amd(s.gpu.architecture) ? "amd" : "nvidia"); }},
    {"gpu_arch", "the GPU file's architecture", gpu_arch_names,
     [](const Scenario& s) { return std::string(to_string(s.gpu.architecture)); }},
    {"compute_capability", "CUDA compute capability x 10 (sm_120: 120); 0 where the GPU file gives none (AMD)", nullptr,
     [](const Scenario& s) { return std::to_string(s.gpu.compute_capability); }},
    {"fp8", "the GPU has FP8 tensor cores (its file gives fp8_flops)", booleans,
     [](const Scenario& s) { return yes(s.gpu.fp8_flop_per_s.has_value()); }},
    {"engine", "engine.name", engine_names, [](const Scenario& s) { return s.engine.name; }},
    {"method", "speculation.method", methods, [](const Scenario& s) { return s.speculation.method; }},
    // A measured tau holds at the draft shape it was measured at; every other kind gives a rate per
    // depth, which prices another shape (docs/acceptance.md).
    {"acceptance", "the kind of the scenario's acceptance (docs/acceptance.md)", acceptance_kinds,
     [](const Scenario& s) { return std::string(to_string(s.acceptance.kind)); }},
    {"draft_forwards", "the method runs draft forwards (every method but ngram)", booleans,
     [](const Scenario& s) { return yes(s.speculation.runs_draft_forwards()); }},
    {"parallel_drafting", "speculation.parallel_drafting", booleans,
     [](const Scenario& s) { return yes(s.speculation.parallel_drafting); }},
    {"tp", "parallel.tp", nullptr, [](const Scenario& s) { return std::to_string(s.parallel.tp); }},
    {"tensor_parallel", "parallel.tp > 1: the target's forwards run all-reduces", booleans,
     [](const Scenario& s) { return yes(s.parallel.tp > 1); }},
    {"multi_node", "the deployment's GPUs (tp x pp) span more than one node", booleans,
     [](const Scenario& s) { return yes(s.topology.nodes_spanned(s.parallel.gpus()) > 1); }},
    {"engine_custom_allreduce", "vLLM's or SGLang's own custom all-reduce starts and runs here", booleans,
     [](const Scenario& s) { return yes(engine_custom_runs(s)); }},
    {"decode_mode", "engine.decode_mode", mode_names,
     [](const Scenario& s) { return std::string(to_string(s.engine.decode_mode)); }},
    {"verify_mode", "engine.verify_mode", mode_names,
     [](const Scenario& s) { return std::string(to_string(s.engine.verify_mode)); }},
    {"draft_mode", "engine.draft_mode", mode_names,
     [](const Scenario& s) { return std::string(to_string(s.engine.draft_mode)); }},
    {"implementation", "comm.implementation", allreduce_implementation_names,
     [](const Scenario& s) { return s.comm.implementation; }},
};

}  // namespace

const std::vector<ScenarioFact>& scenario_facts() { return kFacts; }

const ScenarioFact* find_scenario_fact(const std::string& key) {
  const auto it = std::find_if(kFacts.begin(), kFacts.end(), [&](const ScenarioFact& f) { return key == f.key; });
  return it == kFacts.end() ? nullptr : &*it;
}

std::string scenario_fact(const Scenario& s, const std::string& key) {
  const ScenarioFact* f = find_scenario_fact(key);
  if (f == nullptr) throw Error("'" + key + "' is not a scenario fact a precondition can test");
  return f->read(s);
}

std::string fact_value_problem(const std::string& key, const std::string& value) {
  const ScenarioFact* f = find_scenario_fact(key);
  if (f == nullptr) {
    std::vector<std::string> keys;
    std::string known;
    for (const auto& k : kFacts) {
      keys.emplace_back(k.key);
      known += (known.empty() ? "" : ", ") + keys.back();
    }
    const auto near = closest(key, keys);
    return "not a scenario fact a precondition can test" + (near ? " (did you mean '" + *near + "'?)" : std::string()) +
           "; the facts: " + known;
  }
  if (f->values == nullptr) {
    const bool whole = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
    return whole ? "" : "'" + value + "' is not a whole number";
  }
  const std::vector<std::string> values = f->values();
  if (std::find(values.begin(), values.end(), value) != values.end()) return "";
  std::string valid;
  for (const auto& v : values) valid += (valid.empty() ? "" : ", ") + v;
  return "'" + value + "' is not one of: " + valid;
}

bool holds(const Condition& condition, const Scenario& s) {
  if (condition.always()) return true;
  return std::any_of(condition.any.begin(), condition.any.end(), [&](const std::vector<Precondition>& all) {
    return std::all_of(all.begin(), all.end(), [&](const Precondition& p) {
      const std::string value = scenario_fact(s, p.key);
      return std::find(p.values.begin(), p.values.end(), value) != p.values.end();
    });
  });
}

std::string to_string(const Condition& condition) {
  if (condition.always()) return "always";
  std::string out;
  for (std::size_t a = 0; a < condition.any.size(); ++a) {
    out += a ? " | " : "";
    for (std::size_t i = 0; i < condition.any[a].size(); ++i) {
      const Precondition& p = condition.any[a][i];
      out += (i ? ", " : "") + p.key + ": ";
      if (p.values.size() == 1) {
        out += p.values[0];
        continue;
      }
      out += "[";
      for (std::size_t v = 0; v < p.values.size(); ++v) out += (v ? ", " : "") + p.values[v];
      out += "]";
    }
  }
  return out;
}

std::string for_box(const std::string& text, const Scenario& s) {
  static const std::string kLibrary = "{library}";
  std::string out = text;
  for (auto at = out.find(kLibrary); at != std::string::npos; at = out.find(kLibrary, at)) {
    out.replace(at, kLibrary.size(), collective_library(s.gpu.architecture));
  }
  return out;
}

}  // namespace specsim
