// The reader of models/engines/*.yaml: an engine's speculative overheads, each a prior with its
// p10-p90 spread, per worker version where they differ, the methods its evidence holds for, and
// what the engine does whatever the method (`behaviour:`).
#include <algorithm>
#include <string>
#include <vector>

#include "io/readers.hpp"
#include "specsim/engine_flags.hpp"
#include "specsim/scenario.hpp"
#include "specsim/units.hpp"
#include "util/yaml_reader.hpp"

namespace specsim {

using detail::join;
using detail::kMethods;
using detail::YamlReader;
using units::Quantity;

namespace {

EnginePrior::Term read_prior_term(YamlReader& t) {
  EnginePrior::Term out;
  out.value_s = t.quantity("value", Quantity::kDuration);
  out.p10_s = t.quantity("p10", Quantity::kDuration);
  out.p90_s = t.quantity("p90", Quantity::kDuration);
  if (out.value_s < 0 || out.p10_s < 0) t.fail("p10", "overheads cannot be negative");
  if (!(out.p10_s <= out.value_s && out.value_s <= out.p90_s)) t.fail("value", "must lie within [p10, p90]");
  t.ignore("source");
  t.finish();
  return out;
}

// A list of speculation methods at `key`, each one specsim knows.
std::vector<std::string> read_methods(YamlReader& r, const std::string& key) {
  std::vector<std::string> methods = r.optional_names(key);
  for (const auto& m : methods) {
    if (std::find(kMethods.begin(), kMethods.end(), m) == kMethods.end()) {
      r.fail(key, "'" + m + "' is not a speculation method (" + join(kMethods) + ")");
    }
  }
  return methods;
}

// `behaviour.async_scheduling:` of an engine file: whether the plain run is asynchronous by default,
// and the methods whose speculative run is (docs/model.md#async-scheduling).
EngineBehaviour::AsyncDefault read_async_default(YamlReader& a) {
  EngineBehaviour::AsyncDefault out;
  out.plain = a.boolean("plain");
  out.methods = read_methods(a, "methods");
  a.string("source");
  a.finish();
  return out;
}

// `behaviour.custom_allreduce:` whether the engine runs a custom all-reduce kernel of its own, and
// the compute-capability majors where it aborts in CUDA graph capture.
void read_custom_allreduce(YamlReader& c, EngineBehaviour& b) {
  b.custom_allreduce = c.boolean("runs_by_default");
  if (c.has("aborts_in_graph_capture_on")) {
    for (long long major : c.integers("aborts_in_graph_capture_on", 1, 99)) {
      b.custom_allreduce_aborts_in_capture.push_back(static_cast<int>(major));
    }
  }
  if (!b.custom_allreduce && !b.custom_allreduce_aborts_in_capture.empty()) {
    c.fail("aborts_in_graph_capture_on", "needs runs_by_default: true (a kernel the engine does not run cannot abort)");
  }
  c.string("source");
  c.finish();
}

// `behaviour.expert_kernel:` the compute-capability majors and expert dtypes on which the engine's
// routed-expert kernel streams at the prior compute.expert_bandwidth_efficiency.
EngineBehaviour::ExpertKernel read_expert_kernel(YamlReader& k) {
  EngineBehaviour::ExpertKernel out;
  for (long long major : k.integers("compute_capability_majors", 1, 99)) out.compute_capability_majors.push_back(int(major));
  for (const std::string& name : k.texts("experts")) {
    const std::optional<Dtype> dtype = parse_dtype(name);
    if (!dtype) k.fail("experts", "unknown dtype '" + name + "' (one of " + dtype_names() + ")");
    out.experts.push_back(*dtype);
  }
  if (out.experts.empty()) k.fail("experts", "needs at least one dtype");
  out.backends = k.optional_names("backends");
  if (out.backends.empty()) k.fail("backends", "needs the engine's name for the measured kernel (e.g. [flashinfer_cutlass])");
  for (const std::string& name : out.backends) {
    if (name != moe_backend_name(name)) k.fail("backends", "'" + name + "': write it as '" + moe_backend_name(name) + "'");
  }
  k.string("source");
  k.finish();
  return out;
}

// `behaviour:` what the engine does whatever the method (EngineBehaviour; docs/schema.md#engine-files).
// Every key is optional; each block states its `source:`.
EngineBehaviour read_engine_behaviour(YamlReader& r) {
  EngineBehaviour b;
  if (auto c = r.optional_child("custom_allreduce")) read_custom_allreduce(*c, b);
  if (auto m = r.optional_child("memory_rule")) {
    const std::string kind = m->choice("kind", {"static_fraction", "profile_run"});
    b.memory_rule = kind == "static_fraction" ? EngineBehaviour::MemoryRule::kStaticFraction
                                              : EngineBehaviour::MemoryRule::kProfileRun;
    m->string("source");
    m->finish();
  }
  if (auto p = r.optional_child("parallel_drafting")) {
    b.parallel_drafting = p->boolean("supported");
    p->string("source");
    p->finish();
  }
  if (auto a = r.optional_child("async_scheduling")) b.async_scheduling = read_async_default(*a);
  if (auto k = r.optional_child("expert_kernel")) b.expert_kernel = read_expert_kernel(*k);
  r.finish();
  return b;
}

// `default_spec_version:` the worker version the top-level cycle_overhead was measured on, and
// `spec_versions:` the other versions' per-cycle priors, each `{version, cycle_overhead, source}`.
void read_spec_versions(YamlReader& r, EnginePrior& e) {
  e.default_spec_version = r.optional_string("default_spec_version", "");
  if (!r.has("spec_versions")) return;
  if (e.default_spec_version.empty()) r.fail("spec_versions", "needs default_spec_version: the version cycle_overhead holds");
  for (YamlReader& v : r.sequence("spec_versions")) {
    const std::string name = v.string("version");
    if (name == e.default_spec_version) v.fail("version", "'" + name + "' is default_spec_version: its prior is cycle_overhead");
    for (const auto& [known, term] : e.cycle_overhead_by_version) {
      if (known == name) v.fail("version", "'" + name + "' is listed twice");
    }
    YamlReader c = v.child("cycle_overhead");
    e.cycle_overhead_by_version.emplace_back(name, read_prior_term(c));
    v.ignore("source");
    v.finish();
  }
}

}  // namespace

EnginePrior detail::load_engine_prior_file(const std::string& path) {
  YamlReader r = YamlReader::load_file(path);
  r.expect_header("engine");
  EnginePrior e;
  e.name = r.string("name");
  r.optional_string("description", "");
  e.source = r.string("source");
  {
    YamlReader c = r.child("cycle_overhead");
    e.cycle_overhead = read_prior_term(c);
  }
  {
    YamlReader d = r.child("draft_step_overhead");
    e.draft_step_overhead = read_prior_term(d);
  }
  if (auto h = r.optional_child("plain_step_host")) e.plain_step_host = read_prior_term(*h);
  if (auto q = r.optional_child("spec_per_request")) e.spec_per_request = read_prior_term(*q);
  read_spec_versions(r, e);
  e.methods = read_methods(r, "methods");
  if (auto b = r.optional_child("behaviour")) e.behaviour = read_engine_behaviour(*b);
  if (auto i = r.optional_child("init")) {
    e.init.launch_modes = i->optional_string("launch_modes", "");
    e.init.first_draft = i->optional_string("first_draft", "");
    e.init.chain = i->optional_string("chain", "");
    e.init.block = i->optional_string("block", "");
    i->finish();
  }
  r.finish();
  const auto name = [&e](EnginePrior::Term& t) {
    t.origin = "prior: engine " + e.name + ", p10-p90 " + units::format_duration(t.p10_s) + " to " +
               units::format_duration(t.p90_s) + " (models/engines/" + e.name + ".yaml)";
  };
  for (EnginePrior::Term* t : {&e.cycle_overhead, &e.draft_step_overhead}) name(*t);
  if (e.plain_step_host) name(*e.plain_step_host);
  if (e.spec_per_request) name(*e.spec_per_request);
  for (auto& [version, term] : e.cycle_overhead_by_version) name(term);
  return e;
}

}  // namespace specsim
