#include "specsim/scenario_fields.hpp"

#include <algorithm>
#include <cmath>
#include <span>

#include "specsim/units.hpp"
#include "model/scenario_bounds.hpp"

namespace specsim {

enum class FieldKind { kCount, kNumber, kDuration };

struct ScenarioField {
  const char* key;
  FieldKind kind;  // kCount and kNumber are held to kScenarioBounds' range, durations to units::parse's
  bool calibrate = false;  // "calibrate" is a value
  void (*set)(Scenario&, std::optional<double>);
};

namespace {

int as_int(std::optional<double> v) { return static_cast<int>(*v); }

const ScenarioField kFields[] = {
    {"workload.batch", FieldKind::kCount, false, [](Scenario& s, auto v) { s.batch = as_int(v); }},
    {"workload.context", FieldKind::kCount, false,
     [](Scenario& s, auto v) { s.context_tokens = std::floor(*v); }},
    {"speculation.num_steps", FieldKind::kCount, false,
     [](Scenario& s, auto v) { s.speculation.shape.num_steps = as_int(v); }},
    {"speculation.eagle_topk", FieldKind::kCount, false,
     [](Scenario& s, auto v) { s.speculation.shape.eagle_topk = as_int(v); }},
    {"speculation.num_draft_tokens", FieldKind::kCount, false,
     [](Scenario& s, auto v) { s.speculation.shape.num_draft_tokens = as_int(v); }},
    // A block drafter's block (speculation.method dflash): a chain of block_size verified tokens.
    {"speculation.block_size", FieldKind::kCount, false,
     [](Scenario& s, auto v) {
       s.speculation.shape.num_steps = as_int(v) - 1;
       s.speculation.shape.num_draft_tokens = as_int(v);
     }},
    {"acceptance.accept", FieldKind::kNumber, false,
     [](Scenario& s, auto v) { s.acceptance = with_accept_rate(std::move(s.acceptance), *v); }},
    {"compute.bandwidth_efficiency", FieldKind::kNumber, true,
     [](Scenario& s, auto v) { s.compute.bandwidth_efficiency = v; }},
    {"compute.flop_efficiency", FieldKind::kNumber, false,
     [](Scenario& s, auto v) { s.compute.flop_efficiency = *v; }},
    {"compute.routing_skew", FieldKind::kNumber, true,
     [](Scenario& s, auto v) { s.compute.routing_skew = v; }},
    {"compute.expert_bandwidth_efficiency", FieldKind::kNumber, false,
     [](Scenario& s, auto v) { s.compute.expert_bandwidth_efficiency = v; }},
    {"compute.kv_efficiency_decode", FieldKind::kNumber, false,
     [](Scenario& s, auto v) { s.compute.kv_efficiency_decode = v; }},
    {"compute.kv_efficiency_verify", FieldKind::kNumber, false,
     [](Scenario& s, auto v) { s.compute.kv_efficiency_verify = v; }},
    {"compute.kv_verify_ratio", FieldKind::kNumber, false,
     [](Scenario& s, auto v) { s.compute.kv_verify_ratio = *v; }},
    {"compute.eager_overlap_exponent", FieldKind::kNumber, false,
     [](Scenario& s, auto v) { s.compute.eager_overlap_exponent = v; }},
    {"compute.kernel_floor", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.compute.kernel_floor_s = *v; }},
    {"compute.eager_launch_per_kernel", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.compute.eager_launch_per_kernel_s = *v; }},
    {"compute.graph_launch", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.compute.graph_launch_s = *v; }},
    {"compute.eager_multi_token_step", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.compute.eager_multi_token_step_s = *v; }},
    {"compute.multi_token_step", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.compute.multi_token_step_s = *v; }},
    {"compute.per_token_layer", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.compute.per_token_layer_s = *v; }},
    {"comm.scale", FieldKind::kNumber, false, [](Scenario& s, auto v) { s.comm.scale = *v; }},
    {"comm.overlap", FieldKind::kNumber, false, [](Scenario& s, auto v) { s.comm.overlap = *v; }},
    {"comm.min_channels", FieldKind::kCount, false, [](Scenario& s, auto v) { s.comm.min_channels = as_int(v); }},
    {"comm.max_channels", FieldKind::kCount, false, [](Scenario& s, auto v) { s.comm.max_channels = as_int(v); }},
    {"comm.eager_overhead_per_op", FieldKind::kDuration, true,
     [](Scenario& s, auto v) { s.comm.eager_overhead_per_op_s = v; }},
    {"host.decode_per_step", FieldKind::kDuration, true,
     [](Scenario& s, auto v) { s.host.decode_per_step_s = v; }},
    {"host.spec_extra_per_cycle", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.host.spec_extra_per_cycle_s = *v; }},
    {"host.draft_step_overhead", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.host.draft_step_overhead_s = *v; }},
    {"host.spec_per_request", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.host.spec_per_request_s = *v; }},
    {"host.ngram_lookup_per_token", FieldKind::kDuration, false,
     [](Scenario& s, auto v) { s.host.ngram_lookup_per_token_s = *v; }},
};

// The keys whose value calibration reads (CycleModel::calibrate_with_overrides takes a set value
// over the calibrated one; the rest of calibration runs on the scenario as measured).
constexpr const char* kCalibratedKeys[] = {"compute.bandwidth_efficiency", "compute.routing_skew",
                                           "comm.eager_overhead_per_op", "host.decode_per_step"};

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
  return key.rfind("measurements.", 0) == 0 || is_calibrated_key(key);
}

FieldValue parse_field_value(const std::string& key, const std::string& text, const SourceLocation& where) {
  const ScenarioField* f = find_field(key);
  if (f == nullptr) throw Error(where, key, "not a field a what-if can set on a loaded scenario");
  FieldValue out{f, std::nullopt};
  if (f->calibrate && text == "calibrate") return out;
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

void set_field(Scenario& s, const FieldValue& v) {
  v.field->set(s, v.value);
  s.explicit_keys.insert(v.field->key);
  s.patched_keys.insert(v.field->key);
}

namespace {
// The loader's rules for a block drafter's shape (load.cpp read_block_shape), on values: its block
// is speculation.block_size, and no other method has one.
std::string block_shape_problem(const Scenario& s) {
  if (!s.speculation.drafts_block()) {
    return s.patched_keys.count("speculation.block_size")
               ? "speculation.block_size is a block drafter's key (speculation.method dflash); " +
                     s.speculation.method + " states num_steps, eagle_topk and num_draft_tokens"
               : "";
  }
  for (const char* key : {"speculation.num_steps", "speculation.eagle_topk", "speculation.num_draft_tokens"}) {
    if (s.patched_keys.count(key)) {
      return std::string("speculation.method dflash drafts one block per cycle: vary speculation.block_size, not ") + key;
    }
  }
  return "";
}
}  // namespace

std::string settle_fields(Scenario& s) {
  if (std::string problem = block_shape_problem(s); !problem.empty()) return problem;
  DraftShape& sp = s.speculation.shape;
  const bool tokens_given = s.patched_keys.count("speculation.num_draft_tokens") > 0;
  if (sp.eagle_topk == 1 && !tokens_given) sp.num_draft_tokens = sp.num_steps + 1;
  if (sp.eagle_topk == 1) {
    if (tokens_given && sp.num_draft_tokens != sp.num_steps + 1) return "a chain verifies num_steps + 1 tokens";
  } else if (const std::string problem = num_draft_tokens_problem(sp); !problem.empty()) {
    return "speculation.num_draft_tokens " + problem;
  }
  if (s.speculation.parallel_drafting && sp.eagle_topk > 1) {
    return "speculation.parallel_drafting drafts a chain: speculation.eagle_topk must be 1";
  }
  if (!s.compute.bandwidth_efficiency && !s.compute.routing_skew) {
    return "only one of bandwidth_efficiency and routing_skew can be 'calibrate'";
  }
  if (s.comm.min_channels && s.comm.max_channels && s.comm.min_channels > s.comm.max_channels) {
    return "comm.min_channels must not exceed max_channels";
  }
  // The loader's rules for n-gram lookup (load.cpp read_speculation_shape, read_host), on values.
  if (s.speculation.method == "ngram" && sp.eagle_topk > 1) {
    return "speculation.method ngram proposes one chain by prompt lookup: speculation.eagle_topk must be 1";
  }
  if (s.speculation.method != "ngram" && s.patched_keys.count("host.ngram_lookup_per_token")) {
    return "host.ngram_lookup_per_token prices speculation.method ngram's prompt lookup; this scenario drafts with " +
           s.speculation.method;
  }
  return "";
}

}  // namespace specsim
