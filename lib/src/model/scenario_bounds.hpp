// The range of every bounded number in a scenario, held once. The loader reads each key with it
// and checks them all before reading (scenario_problems reports every broken one); a what-if that
// sets a value on a loaded scenario (scenario_fields.cpp) holds it to the same range.
#pragma once

#include <string_view>

namespace specsim::detail {

// Efficiencies are effective fit parameters: a fitted profile may put part of each GEMM's fixed
// cost into t_kernel and report eta_bw somewhat above 1 (docs/compute-calibration.md); twice the
// datasheet is past anything a fit of real data gives and catches typos such as 84 for 0.84.
inline constexpr double kMaxEffectiveEfficiency = 2.0;

struct ScenarioBound {
  const char* key;  // dotted path
  double min;
  double max;
  bool integer;
  bool calibrate = false;  // "calibrate" is a value
};

inline constexpr ScenarioBound kScenarioBounds[] = {
    {"parallel.tp", 1, 1024, true},
    {"parallel.pp", 1, 1024, true},
    {"parallel.draft_tp", 1, 1024, true},
    {"parallel.ep", 1, 1024, true},
    {"workload.batch", 1, 1'000'000, true},
    {"workload.context", 0, 100'000'000, true},
    {"speculation.num_steps", 1, 64, true},
    {"speculation.eagle_topk", 1, 64, true},
    {"speculation.num_draft_tokens", 2, 4096, true},
    // A block drafter's block: the last verified token and block_size - 1 mask slots, so at least 2;
    // at most num_steps' 64 + 1.
    {"speculation.block_size", 2, 65, true},
    {"acceptance.accept", 0, 1, false},
    {"acceptance.tokens_per_cycle", 1, 1e6, false},
    {"acceptance.draft_acceptance_rate", 0, 1, false},
    {"compute.bandwidth_efficiency", 0.01, kMaxEffectiveEfficiency, false, true},
    {"compute.flop_efficiency", 0.01, 1.0, false},
    {"compute.routing_skew", 0.01, 1.0, false, true},
    {"compute.expert_bandwidth_efficiency", 0.01, kMaxEffectiveEfficiency, false},
    {"compute.kv_efficiency_decode", 0.01, kMaxEffectiveEfficiency, false},
    {"compute.kv_efficiency_verify", 0.01, kMaxEffectiveEfficiency, false},
    {"compute.kv_verify_ratio", 0.05, 1.0, false},
    // p = 1 adds the two times; p -> infinity is the max. Past 1000 the two are indistinguishable.
    {"compute.eager_overlap_exponent", 1.0, 1000.0, false},
    {"comm.min_channels", 0, 64, true},
    {"comm.max_channels", 0, 64, true},
    {"comm.scale", 0, 1e6, false},
    {"comm.overlap", 0, 1, false},
    {"engine.memory_fraction", 0.01, 1, false},
    {"engine.cuda_graph_max_batch", 1, 1'000'000, true},
    {"measurements.verify.tokens_per_request", 1, 4096, true},
};

// The bound of `key`, or nullptr when the key has none.
constexpr const ScenarioBound* find_scenario_bound(std::string_view key) {
  for (const ScenarioBound& b : kScenarioBounds) {
    if (key == b.key) return &b;
  }
  return nullptr;
}

}  // namespace specsim::detail
