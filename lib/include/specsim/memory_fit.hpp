// Whether a deployment fits in GPU memory: what one GPU holds, part by part, against its capacity
// (docs/model.md#memory-fit, docs/references/engine-memory.md):
//
//   weights     = W_target / (tp x pp) + W_draft / tp            (as stored, scales included)
//   KV cache    = B x S(context + n) x layers / pp  (target)  +  B x S(context + n) x layers (draft)
//                 S = attention state one request keeps per layer at that many tokens, on one rank
//   activations = vLLM only: T x (2 I / tp + 4 H) x act_bytes + seqs x vocab x 4 B  (its profile run)
//   reserve     = (1 - f) x capacity, f = vLLM's gpu_memory_utilization or SGLang's mem_fraction_static
//   fits when weights + KV cache + activations + reserve <= capacity
//
// n is the tokens one verify adds per request (num_draft_tokens). SGLang keeps activations and CUDA
// graphs in its reserve, so it has no activation part; vLLM profiles them inside its fraction.
#pragma once

#include <string>
#include <vector>

#include "specsim/scenario.hpp"

namespace specsim {

struct MemoryPart {
  std::string name;   // "target weights", "target KV cache", "draft weights", "draft KV cache", ...
  double bytes = 0.0;  // on one GPU
  std::string basis;  // how it was sized, for people
};

struct MemoryFit {
  std::string gpu;               // models/gpu name
  int batch = 1;                 // requests whose KV cache is held
  double capacity_bytes = 0.0;   // one GPU's memory (GpuSpec::memory_bytes)
  double engine_fraction = 0.0;  // f above
  std::string engine_rule;       // where f comes from
  std::vector<MemoryPart> parts;  // the reserve last
  [[nodiscard]] double used_bytes() const;
  [[nodiscard]] bool fits() const { return used_bytes() <= capacity_bytes; }
  [[nodiscard]] double over_bytes() const { return used_bytes() - capacity_bytes; }
};

// The scenario at its own batch (workload.batch).
[[nodiscard]] MemoryFit memory_fit(const Scenario& s);
// The scenario at `batch` requests decoded together (a concurrency point).
[[nodiscard]] MemoryFit memory_fit(const Scenario& s, int batch);

// "needs 98.1 GB per GPU, 72.3 GB more than the 25.8 GB of one rtx-4090 (TP8): target weights
// 84.2 GB (...), ...": what does not fit and by how much, every part with its size.
[[nodiscard]] std::string describe_overflow(const Scenario& s, const MemoryFit& fit);

// Throws specsim::Error at the scenario's file when memory_fit(s) does not fit.
void require_memory_fit(const Scenario& s);

}  // namespace specsim
