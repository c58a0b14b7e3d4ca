#include "specsim/compute_model.hpp"

#include <algorithm>
#include <cmath>

namespace specsim {

double routing_draws(double tokens, double requests, double skew) {
  // Fewer tokens than requests (a fractional extend): each token is a request of its own.
  if (requests <= 0.0 || tokens <= requests) return tokens;
  return requests * (1.0 + (tokens / requests - 1.0) * skew);
}

double expected_distinct_experts(int experts, int per_token, double tokens, double skew, double requests) {
  if (experts <= 0 || tokens <= 0) return 0.0;
  const double miss = 1.0 - double(per_token) / experts;
  return experts * (1.0 - std::pow(miss, routing_draws(tokens, requests, skew)));
}

double expected_max_experts_per_rank(int experts, int per_token, double tokens, int ranks, double skew,
                                     double requests) {
  if (ranks <= 1) return expected_distinct_experts(experts, per_token, tokens, skew, requests);
  if (experts <= 0 || tokens <= 0) return 0.0;
  const double p = 1.0 - std::pow(1.0 - double(per_token) / experts, routing_draws(tokens, requests, skew));
  const int m = experts / ranks;
  if (p >= 1.0) return m;
  // Binomial(m, p) term by term: pmf(j + 1) = pmf(j) (m - j) / (j + 1) p / (1 - p).
  double pmf = std::pow(1.0 - p, m);
  double cdf = 0.0;
  double busiest = 0.0;
  for (int j = 0; j < m; ++j) {
    cdf += pmf;
    busiest += 1.0 - std::pow(std::min(cdf, 1.0), ranks);
    pmf *= double(m - j) / (j + 1) * p / (1.0 - p);
  }
  return busiest;
}

RankPlacement rank_placement(const Parallelism& parallel) {
  return {parallel.ep, parallel.ep > 1 && parallel.moe_a2a != MoeA2aBackend::kNone, parallel.attention_dp_ranks()};
}

ComputeModel::ComputeModel(const TransformerSpec& model, const GpuSpec& gpu, int tp, int batch,
                           double context_tokens, const ComputeSettings& settings,
                           double bandwidth_efficiency, double routing_skew, const RankPlacement& placement)
    : model_(&model),
      bw_(bandwidth_efficiency * gpu.memory_bandwidth_bytes_per_s),
      bw_expert_(settings.expert_bandwidth_efficiency.value_or(bandwidth_efficiency) * gpu.memory_bandwidth_bytes_per_s),
      bw_kv_decode_(settings.kv_efficiency_decode.value_or(bandwidth_efficiency) * gpu.memory_bandwidth_bytes_per_s),
      bw_kv_verify_(settings.kv_efficiency_verify.value_or(settings.kv_efficiency_decode.value_or(bandwidth_efficiency) *
                                                           settings.kv_verify_ratio) *
                    gpu.memory_bandwidth_bytes_per_s),
      tp_(std::max(1, tp)),
      batch_(std::max(1, batch)),
      context_(context_tokens),
      settings_(settings),
      skew_(routing_skew),
      ep_(std::max(1, placement.ep)) {
  // FP8 tensor cores only help when the dense weights are FP8; everything else runs BF16 math.
  const bool fp8_math = model.weights.dense_mlp == Dtype::kFp8 && gpu.fp8_flop_per_s;
  flops_ = settings.flop_efficiency * (fp8_math ? *gpu.fp8_flop_per_s : gpu.bf16_flop_per_s);
  const double r = tp_;
  const WeightDtypes& w = model.weights;
  // Attention under TP: a 1/r slice of the weights and heads for every request. Under data-parallel
  // attention over dp groups of r / dp ranks: a 1/(r/dp) slice (the whole weights, all heads, when
  // dp = r) for the busiest group's ceil(B / dp) of the B requests, a share ceil(B / dp) / B of the
  // batch's tokens (at B = 1 one group works, the rest wait).
  const int dp = std::max(1, placement.attention_dp);
  const int attn_tp = std::max(1, tp_ / dp);
  const double attn_ranks = attn_tp;
  kv_requests_ = dp > 1 ? std::ceil(double(batch_) / dp) : double(batch_);
  const double attn_token_share = dp > 1 ? kv_requests_ / batch_ / attn_tp : 1.0 / r;
  // A sparse-attention indexer is replicated: every rank of a group holds and runs all of it for the
  // group's tokens (docs/references/models.md#sparse-attention).
  const double indexer_token_share = dp > 1 ? kv_requests_ / batch_ : 1.0;
  const double indexer_params = model.indexer_params() * model.indexer_layers() / model.layers;
  const double split_attention_params = model.mean_attention_params() - indexer_params;
  const double attn_bytes = (split_attention_params / attn_ranks + indexer_params) * bytes_per_param(w.attention);
  const double attn_flops = 2.0 * (split_attention_params * attn_token_share + indexer_params * indexer_token_share);
  dense_layer_.bytes_fixed = attn_bytes + model.dense_mlp_params() * bytes_per_param(w.dense_mlp) / r;
  dense_layer_.flops_per_token = attn_flops + 2.0 * model.dense_mlp_params() / r;
  if (model.moe) {
    const MoeSpec& e = *model.moe;
    const double expert = model.expert_params();
    const double router = double(model.hidden_size) * e.experts * 2.0;  // bf16 gate, replicated
    // Expert parallelism over ep groups holds whole experts on each group, each expert split over the
    // group's tp / ep ranks (whole on one rank when ep = tp), and with an all-to-all backend whole
    // shared experts (docs/references/models.md#expert-parallel); GEMM flops stay split over the ranks.
    const double expert_ranks = ep_ > 1 ? r / ep_ : r;
    const double shared_ranks = placement.shared_experts_whole ? 1.0 : r;
    moe_layer_.bytes_fixed =
        attn_bytes + e.shared_experts * expert * bytes_per_param(w.shared_experts) / shared_ranks + router;
    moe_layer_.bytes_per_expert = expert * bytes_per_param(w.experts) / expert_ranks;
    moe_layer_.flops_per_token = attn_flops + 2.0 * (e.experts_per_token + e.shared_experts) * expert / r +
                                 2.0 * double(model.hidden_size) * e.experts;
  }
  head_.bytes_fixed = model.lm_head_params() * bytes_per_param(w.lm_head) / r;
  head_.flops_per_token = 2.0 * model.lm_head_params() / r;
  // A draft head's input projection (EAGLE fc, MTP eh_proj), bf16, counted with the head. An MTP
  // module's eh_proj is a plain nn.Linear in SGLang and vLLM, so every rank holds and reads all of
  // it (docs/references/mtp.md#module).
  const double projection = model.draft_input_params();
  const double projection_ranks = model.mtp_module ? 1.0 : r;
  head_.bytes_fixed += projection * 2.0 / projection_ranks;
  head_.flops_per_token += 2.0 * projection / projection_ranks;
  kv_bytes_per_layer_ = model.attention_state_bytes_per_layer(attn_tp, context_);
  // A linear-attention layer writes its updated state back: once per plain step, and once per
  // verified token in a verify, where the engines keep a state per position to roll back to the
  // last accepted one (vLLM's GDN spec_state_indices_tensor, num_speculative_tokens + 1 columns;
  // docs/references/models.md#hybrid-attention).
  state_write_bytes_per_layer_ = model.linear_state_bytes_per_layer(attn_tp);
  // QK^T and PV over the context: 2 * 2 * heads_per_rank * head_dim flops per context token; under
  // data-parallel attention all heads for the busiest rank's share of the tokens.
  const AttentionSpec& a = model.attention;
  const double heads_per_rank =
      dp > 1 ? a.heads * kv_requests_ / batch_ / attn_tp : std::max(1.0, double(a.heads) / r);
  const double dim = a.kind == AttentionKind::kMla ? (a.kv_lora_rank + a.qk_rope_head_dim) : a.head_dim;
  attention_flops_per_token_ = 4.0 * heads_per_rank * dim * model.attended_context(context_) +
                               model.indexer_flops_per_token(context_) * indexer_token_share;
}

double ComputeModel::state_bytes_per_layer(double tokens) const {
  const double per_request = std::max(1.0, tokens / batch_);
  return kv_requests_ * (kv_bytes_per_layer_ + per_request * state_write_bytes_per_layer_);
}

double ComputeModel::bytes_read(double tokens) const {
  const TransformerSpec& m = *model_;
  const double kv = state_bytes_per_layer(tokens);
  double bytes = m.dense_layers * (dense_layer_.bytes_fixed + kv) + head_.bytes_fixed;
  if (m.moe) {
    const double touched = experts_read(tokens);
    bytes += m.moe_layers() * (moe_layer_.bytes_fixed + touched * moe_layer_.bytes_per_expert + kv);
  }
  return bytes;
}

ForwardTerms ComputeModel::terms(double tokens) const {
  const TransformerSpec& m = *model_;
  ForwardTerms t;
  const double kv = state_bytes_per_layer(tokens);
  t.weight_bytes = m.dense_layers * dense_layer_.bytes_fixed + head_.bytes_fixed;
  t.weight_flops = tokens * (m.dense_layers * dense_layer_.flops_per_token + head_.flops_per_token);
  if (m.moe) {
    const double touched = experts_read(tokens);
    t.weight_bytes += m.moe_layers() * moe_layer_.bytes_fixed;
    t.expert_bytes = m.moe_layers() * touched * moe_layer_.bytes_per_expert;
    t.weight_flops += tokens * m.moe_layers() * moe_layer_.flops_per_token;
  }
  t.kv_bytes = m.layers * kv;
  t.attention_flops = m.layers * tokens * attention_flops_per_token_;
  t.kernels = kernels();
  t.layers = m.layers;
  t.multi_token_request = tokens / batch_ > 1.0;
  return t;
}

double ComputeModel::gpu_time_s(double tokens) const {
  const TransformerSpec& m = *model_;
  const double kv = state_bytes_per_layer(tokens);
  const double bw_kv = tokens / batch_ > 1.0 ? bw_kv_verify_ : bw_kv_decode_;
  // Per layer: GEMM roofline + attention roofline + fixed costs (header comment).
  const double attention = std::max(kv / bw_kv, tokens * attention_flops_per_token_ / flops_);
  const double fixed = (tokens > 1.0 ? settings_.multi_token_step_s : 0.0) + tokens * settings_.per_token_layer_s;
  auto layer = [&](const Part& p, double expert_bytes, int kernels) {
    const double gemm = std::max(p.bytes_fixed / bw_ + expert_bytes / bw_expert_, tokens * p.flops_per_token / flops_);
    return gemm + attention + fixed + kernels * settings_.kernel_floor_s;
  };
  double t = m.dense_layers * layer(dense_layer_, 0.0, kernels_per_dense_layer());
  if (m.moe) {
    const double touched = experts_read(tokens);
    t += m.moe_layers() * layer(moe_layer_, touched * moe_layer_.bytes_per_expert, kernels_per_moe_layer());
  }
  t += std::max(head_.bytes_fixed / bw_, tokens * head_.flops_per_token / flops_) +
       m.kernels.per_forward * settings_.kernel_floor_s;
  return t;
}

double ComputeModel::experts_read(double tokens) const {
  const MoeSpec& e = *model_->moe;
  // The forward's tokens belong to batch_ requests: routing is shared within a request and
  // independent across requests.
  return ep_ > 1 ? expected_max_experts_per_rank(e.experts, e.experts_per_token, tokens, ep_, skew_, batch_)
                 : expected_distinct_experts(e.experts, e.experts_per_token, tokens, skew_, batch_);
}

int ComputeModel::kernels_per_dense_layer() const {
  return settings_.kernels_per_dense_layer.value_or(model_->kernels.per_dense_layer);
}

int ComputeModel::kernels_per_moe_layer() const {
  return settings_.kernels_per_moe_layer.value_or(model_->kernels.per_moe_layer);
}

int ComputeModel::kernels() const {
  const TransformerSpec& m = *model_;
  return m.dense_layers * kernels_per_dense_layer() + m.moe_layers() * kernels_per_moe_layer() +
         m.kernels.per_forward;
}

double ComputeModel::launch_s(LaunchMode mode) const {
  switch (mode) {
    case LaunchMode::kGraph: return settings_.graph_launch_s;
    case LaunchMode::kEager: return kernels() * settings_.eager_launch_per_kernel_or_prior_s();
    case LaunchMode::kPiecewise: {
      // One graph replay per piece between attention layers, and each full-attention layer's
      // kernels (KV-cache write and attention, kPiecewiseAttentionKernels) launched by the host.
      const int attention_layers = model_->full_attention_layers();
      return (attention_layers + 1) * settings_.graph_launch_s +
             attention_layers * settings_.piecewise_attention_kernels.value_or(kPiecewiseAttentionKernels) *
                 settings_.eager_launch_per_kernel_or_prior_s();
    }
  }
  return settings_.graph_launch_s;
}

double ComputeModel::piecewise_gpu_wait_s() const {
  return model_->full_attention_layers() *
         settings_.piecewise_gpu_per_attention_s.value_or(kPriorPiecewiseGpuPerAttentionS.value);
}

double ComputeModel::eager_host_s(double tokens) const {
  const bool multi_token_request = tokens / batch_ > 1.0;
  return launch_s(LaunchMode::kEager) +
         (multi_token_request ? model_->layers * settings_.eager_multi_token_step_s : 0.0);
}

double ComputeModel::local_time_s(double tokens, LaunchMode mode) const {
  // Piecewise: the device also waits at each eager attention part, host ahead or not.
  const double gpu = gpu_time_s(tokens) + (mode == LaunchMode::kPiecewise ? piecewise_gpu_wait_s() : 0.0);
  if (mode == LaunchMode::kGraph) return gpu + launch_s(mode);
  // Eager (and the eager attention of piecewise graphs): the host launches kernel after kernel, or
  // piece after piece, while the GPU runs those already queued. With
  // perfect overlap the slower side sets the pace; where the two are close the GPU starves
  // whenever a run of short kernels outpaces the host, which the p-norm adds back (smaller p,
  // more loss). Written as hi * (1 + (lo/hi)^p)^(1/p) so that large p cannot overflow. Without a
  // measured or set p the prior's applies (docs/model.md#launch-modes). Either way the GPU cannot
  // start streaming weights before the host has launched the kernels ahead of the first that reads
  // them (eager: the model's kernels.launches_before_weights, 1 unless the forward opens with router
  // or dispatch kernels; piecewise: the first piece's graph), so eager and piecewise never cost less
  // than the gpu time plus those launches. Perfect overlap (p infinite) is what a measured eager
  // compute is taken as, launches included.
  const double host = mode == LaunchMode::kEager ? eager_host_s(tokens) : launch_s(mode);
  const double hi = std::max(gpu, host), lo = std::min(gpu, host);
  const double p = settings_.eager_overlap_exponent_or_prior();
  if (std::isinf(p) || hi <= 0.0) return hi;
  const double launches_ahead_s =
      mode == LaunchMode::kEager
          ? model_->kernels.launches_before_weights * settings_.eager_launch_per_kernel_or_prior_s()
          : settings_.graph_launch_s;
  return std::max(hi * std::pow(1.0 + std::pow(lo / hi, p), 1.0 / p), gpu + launches_ahead_s);
}

}  // namespace specsim
