// GPU time of one forward pass on one tensor-parallel rank, from the model's shape and the GPU's
// datasheet: a roofline with calibrated efficiency per layer kind plus a fixed GPU-side cost per
// kernel (docs/model.md#equations):
//
//   T_layer(q) = max(W / (eta_bw * BW) + E_touched(q) * W_expert / (eta_e * BW), q * f_w / (eta_f * F))
//              + max(KV(C) / (eta_kv(q) * BW), q * f_attn(C) / (eta_f * F))
//              + kernels * t_kernel + [q > 1] * t_step + q * t_token
//
// GEMMs and attention are separate kernels, so each gets its own roofline and their times add.
// eta_kv differs for one query token (a split-KV decode kernel) and several (a prefill-style
// kernel that does not split the KV length at batch 1: h200-forward.conditions.yaml), t_step is
// the jump from GEMV to GEMM at q = 2, t_token the per-token cost of the elementwise kernels.
// Calibrated values come from `specsim calibrate compute` (compute_fit.hpp,
// docs/compute-calibration.md); the defaults (eta_e = eta_kv = eta_bw, t_step = t_token = 0) are
// the plain roofline.
//
// bytes = weights read on this rank + KV cache read; for MoE the weights read grow with the
// distinct experts the q tokens touch, E_touched(q) = E * (1 - (1 - k/E)^q) under uniform routing
// (docs/references/models.md#distinct-experts). That is why verifying 4 tokens on an MoE is not free. The rule of thumb behind
// the defaults: BF16 GEMV streams weights at ~84% of peak plus ~3 us per kernel
// (docs/references/measured-compute.md#gemm-efficiency, fitted to NVIDIA AIConfigurator's kernel database).
#pragma once

#include "specsim/hardware.hpp"
#include "specsim/model_spec.hpp"
#include "specsim/scenario.hpp"

namespace specsim {

// Kernels a full-attention layer launches outside the graphs in piecewise mode: the KV-cache write
// and the attention kernel (an estimate: vLLM's attention custom op runs both).
inline constexpr int kPiecewiseAttentionKernels = 2;

// Independent routing draws among `tokens` tokens of `requests` requests (docs/model.md#equations):
// a request's w = tokens / requests consecutive tokens share experts, 1 + (w - 1) skew draws, while
// different requests route independently, so q = requests (1 + (w - 1) skew). skew 1 gives q = tokens.
[[nodiscard]] double routing_draws(double tokens, double requests, double skew);

// Expected distinct experts touched by `tokens` tokens of `requests` requests, each picking k of E
// uniformly, E (1 - (1 - k/E)^q) with q = routing_draws; `skew` < 1 shrinks the draws within a
// request for routing that favours the experts its previous tokens chose.
[[nodiscard]] double expected_distinct_experts(int experts, int per_token, double tokens, double skew = 1.0,
                                               double requests = 1.0);

// Expert parallelism: the expected distinct experts hit on the busiest of `ranks` ranks, each holding
// m = experts / ranks whole experts (docs/references/models.md#expert-parallel):
//   p = 1 - (1 - k/E)^q, q = routing_draws            one expert hit, as in expected_distinct_experts
//   X_r ~ Binomial(m, p)                               experts hit on rank r
//   E[max_r X_r] = sum_{j=0}^{m-1} (1 - F(j)^ranks)    the ranks taken as independent (an approximation)
// One rank gives expected_distinct_experts.
[[nodiscard]] double expected_max_experts_per_rank(int experts, int per_token, double tokens, int ranks,
                                                   double skew = 1.0, double requests = 1.0);

// What one rank of the target holds and runs (Parallelism::ep, moe_a2a, attention_dp), as its
// compute sees it.
struct RankPlacement {
  // 1: every routed expert sliced over the TP ranks. ep > 1: experts / ep whole experts per rank, and
  // a layer waits for the rank whose tokens hit most of its own.
  int ep = 1;
  // An all-to-all backend leaves no all-reduce to sum shared-expert slices: each rank holds and runs
  // them whole (SGLang's deepseek_v2.py under DeepEP).
  bool shared_experts_whole = false;
  // Data-parallel attention over this many ranks (1 = attention sharded by TP): each rank reads the
  // attention weights whole and runs all heads for its own ceil(batch / attention_dp) requests, over
  // only their KV cache; the busiest rank sets the layer's time (docs/references/models.md#dp-attention).
  int attention_dp = 1;
};
[[nodiscard]] RankPlacement rank_placement(const Parallelism& parallel);

// The parts of one forward the fit in compute_fit.cpp needs, each linear in one fitted parameter
// while the forward is memory-bound (q <= 64 on the measured models).
struct ForwardTerms {
  double weight_bytes = 0;   // attention, dense MLP, shared experts, router, LM head, per rank
  double expert_bytes = 0;   // routed experts touched, per rank
  double kv_bytes = 0;       // KV cache read by attention
  double weight_flops = 0;   // GEMM flops, experts included
  double attention_flops = 0;
  int kernels = 0;
  int layers = 0;
  bool multi_token_request = false;  // > 1 query token per request: the verify attention kernel
};

class ComputeModel {
 public:
  ComputeModel(const TransformerSpec& model, const GpuSpec& gpu, int tp, int batch,
               double context_tokens, const ComputeSettings& settings, double bandwidth_efficiency,
               double routing_skew, const RankPlacement& placement = {});

  // GPU-side time of one forward over `tokens` tokens in total (batch x tokens per request).
  [[nodiscard]] double gpu_time_s(double tokens) const;
  // Weight and KV bytes read by one rank in that forward.
  [[nodiscard]] double bytes_read(double tokens) const;
  [[nodiscard]] int kernels() const;
  [[nodiscard]] ForwardTerms terms(double tokens) const;
  // Host-side launch cost of the forward: one graph replay, or one launch per kernel when eager.
  [[nodiscard]] double launch_s(LaunchMode mode) const;
  // Host time of one eager forward over `tokens` tokens: the launches plus, once a request has
  // more than one query token, eager_multi_token_step per layer.
  [[nodiscard]] double eager_host_s(double tokens) const;
  // GPU time a piecewise forward adds by waiting at each full-attention layer's eager part.
  [[nodiscard]] double piecewise_gpu_wait_s() const;
  // The forward's non-communication time. Graph: the GPU work plus one replay launch. Eager: host
  // launches race the GPU, (gpu^p + host^p)^(1/p) with p = eager_overlap_exponent (the prior
  // kPriorEagerOverlapExponent when unset; max(gpu, host) at kPerfectOverlapExponent), and never
  // below gpu + the first launch.
  [[nodiscard]] double local_time_s(double tokens, LaunchMode mode) const;

 private:
  struct Part {
    double bytes_fixed = 0;      // read whatever the token count
    double bytes_per_expert = 0; // MoE: per distinct expert touched
    double flops_per_token = 0;
  };
  [[nodiscard]] int kernels_per_dense_layer() const;
  [[nodiscard]] int kernels_per_moe_layer() const;
  // Routed experts this rank reads per MoE layer over `tokens` tokens: distinct experts touched
  // (their 1/tp slices), or under expert parallelism the busiest rank's whole ones.
  [[nodiscard]] double experts_read(double tokens) const;

  const TransformerSpec* model_;
  double bw_;     // eta_bw * BW
  double bw_expert_;     // eta_e * BW
  double bw_kv_decode_;  // eta_kv * BW, one query token per request
  double bw_kv_verify_;  // eta_kv * BW, several
  double flops_;  // eta_f * F for the weight dtype in use
  int tp_;
  int batch_;
  double context_;
  ComputeSettings settings_;
  double skew_;
  int ep_ = 1;
  double kv_requests_ = 1;  // requests whose KV cache the busiest rank reads: batch, or ceil(batch / dp)
  Part dense_layer_, moe_layer_, head_;
  double kv_bytes_per_layer_ = 0;        // one request's KV cache, one layer, one rank
  double state_write_bytes_per_layer_ = 0;  // one request's linear-attention state written back, per kept token
  // The attention state the busiest rank moves in one layer for `tokens`: every request's KV cache
  // and linear-attention states read once, and a linear state written per token a request runs.
  [[nodiscard]] double state_bytes_per_layer(double tokens) const;
  double attention_flops_per_token_ = 0; // per layer, scores and values against the context
};

}  // namespace specsim
