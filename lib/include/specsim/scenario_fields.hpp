// The keys of a scenario that a what-if can change on a loaded Scenario value, without reading a
// file again: the draft shape, acceptance, workload, the compute, comm and host terms, the launch
// settings interventions switch (launch modes, NCCL_ALGO/PROTO, the all-reduce implementation, the
// draft's TP), the target's TP and stages, and the all-reduce tables (read once, by
// load_field_value in load.hpp). Sweeps and rank parse each value once and set it on a copy of the
// loaded scenario; every other key goes through the loader (load_scenario with a `--set` patch).
//
// Values are read as in a scenario file (units, "calibrate" where the file allows it) and within
// the same ranges; tests/model/test_scenario_fields.cpp checks each key against the loader at its bounds.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "specsim/error.hpp"
#include "specsim/scenario.hpp"

namespace specsim {

struct ScenarioField;

// What the first load read for a file field's value (load_field_value): the file it names and
// those it brings along (a topology's GPU and all-reduce table).
struct FieldFiles {
  std::optional<CommProfile> profile;
  std::optional<TransformerSpec> model;
  std::optional<TransformerSpec> draft;
  std::optional<GpuSpec> gpu;
  std::optional<Topology> topology;
};

// One parsed value of one field: `value` empty means "calibrate".
struct FieldValue {
  const ScenarioField* field = nullptr;
  std::optional<double> value;
  // A file field (comm.profile, model, gpu, topology): the name, and what was read for it ("" and
  // none: no file).
  std::string name;
  std::shared_ptr<const FieldFiles> files;
  // `key*=factor` (parse_field_scale): `value` is the factor, applied to the value held when set.
  bool scale = false;
};

// Whether `key` (dotted, as in a scenario file) is a field of the table.
[[nodiscard]] bool is_scenario_field(const std::string& key);
[[nodiscard]] std::vector<std::string> scenario_field_keys();
// The keys calibration solves for when the scenario leaves them open, and whose set value wins
// over the calibrated one: compute.bandwidth_efficiency, compute.routing_skew,
// comm.eager_overhead_per_op, host.decode_per_step.
[[nodiscard]] bool is_calibrated_key(const std::string& key);
// Whether a value of `key` changes what calibration computes (a calibrated key or a measurement).
[[nodiscard]] bool field_affects_calibration(const std::string& key);
// Whether `key` names a data file (comm.profile, comm.custom_profile, model, gpu, topology): its
// value is read by load_field_value (load.hpp), once, where the what-if is set up.
[[nodiscard]] bool is_file_field(const std::string& key);

// Parses `text` for `key`; throws specsim::Error at `where` (e.g. {"--vary", 0, 0}) naming the key
// when the text is malformed or out of the key's range.
[[nodiscard]] FieldValue parse_field_value(const std::string& key, const std::string& text,
                                           const SourceLocation& where);

// `key*=factor` for a number, duration or count field: `text` is the factor (>= 0), applied by
// set_field to the value the scenario holds then, within the key's range (a count is rounded).
[[nodiscard]] FieldValue parse_field_scale(const std::string& key, const std::string& text, const SourceLocation& where);

[[nodiscard]] const char* field_key(const FieldValue& v);
// The value `s` holds at field `key`, as a patch would write it ("4", "graph", "3.2 ms"); "" when
// `key` is no field.
[[nodiscard]] std::string field_text(const Scenario& s, const std::string& key);

// Whether `s` holds the value already (a patch of it would change nothing).
[[nodiscard]] bool field_holds(const Scenario& s, const FieldValue& v);

// Sets the value on `s`, records the key as set by a patch (explicit_keys, patched_keys) and
// derives what the loader derives from it (a chain verifies num_steps + 1 tokens). The rules that
// join several fields are what_if_problems' (scenario_rules.hpp), the loader's own.
void set_field(Scenario& s, const FieldValue& v);

// What a draft that fits its target (draft_problems) takes from it, as the loader and a what-if of
// the target derive it: a DFlash drafter's LM head is the target's own; a draft trained for another
// model of the same shape is noted; both take the engine's KV cache dtype.
void adopt_draft(Scenario& s);

// The engine caches target and draft in its one KV dtype: engine.kv_cache_dtype set on both models.
void adopt_kv_cache_dtype(Scenario& s);

// engine.kv_cache_dtype's choices: "auto" (the model's activation dtype) and the dtypes a KV cache is
// priced in.
[[nodiscard]] std::vector<std::string> kv_cache_dtype_names();

}  // namespace specsim
