// GPU time of one forward pass on one tensor-parallel rank, from the model's shape and the GPU's
// datasheet: a roofline with calibrated efficiency per layer kind plus a fixed GPU-side cost per
// kernel (DESIGN.md "The model"):
//
//   T_layer(q) = max(bytes(q) / (eta_bw * BW), flops(q) / (eta_f * F)) + kernels * t_kernel
//
// bytes = weights read on this rank + KV cache read; for MoE the weights read grow with the
// distinct experts the q tokens touch, E_touched(q) = E * (1 - (1 - k/E)^q) under uniform routing
// (models.md 1.4). That is why verifying 4 tokens on an MoE is not free. The rule of thumb behind
// the defaults: BF16 GEMV streams weights at ~84% of peak plus ~3 us per kernel
// (measured-compute.md 1.2, fitted to NVIDIA AIConfigurator's kernel database).
#pragma once

#include "specsim/hardware.hpp"
#include "specsim/model_spec.hpp"
#include "specsim/scenario.hpp"

namespace specsim {

// Expected distinct experts touched by `tokens` tokens, each picking k of E uniformly; `skew` < 1
// shrinks the effective token count for routing that favours some experts.
[[nodiscard]] double expected_distinct_experts(int experts, int per_token, double tokens, double skew = 1.0);

class ComputeModel {
 public:
  ComputeModel(const TransformerSpec& model, const GpuSpec& gpu, int tp, int batch,
               double context_tokens, const ComputeSettings& settings, double bandwidth_efficiency,
               double routing_skew);

  // GPU-side time of one forward over `tokens` tokens in total (batch x tokens per request).
  [[nodiscard]] double gpu_time_s(double tokens) const;
  // Weight and KV bytes read by one rank in that forward.
  [[nodiscard]] double bytes_read(double tokens) const;
  [[nodiscard]] int kernels() const;
  // Host-side launch cost of the forward: one graph replay, or one launch per kernel when eager.
  [[nodiscard]] double launch_s(LaunchMode mode) const;
  // The forward's non-communication time: GPU work and host launches overlap in eager mode.
  [[nodiscard]] double local_time_s(double tokens, LaunchMode mode) const;

 private:
  struct Part {
    double bytes_fixed = 0;      // read whatever the token count
    double bytes_per_expert = 0; // MoE: per distinct expert touched
    double flops_per_token = 0;
  };
  const TransformerSpec* model_;
  double bw_;     // eta_bw * BW
  double flops_;  // eta_f * F for the weight dtype in use
  int tp_;
  int batch_;
  double context_;
  ComputeSettings settings_;
  double skew_;
  Part dense_layer_, moe_layer_, head_;
  double kv_bytes_per_layer_ = 0;        // one request's KV cache, one layer, one rank
  double attention_flops_per_token_ = 0; // per layer, scores and values against the context
};

}  // namespace specsim
