#include "specsim/collectives.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace specsim {

namespace {

// DeepEP's dispatch sends FP8 activations and its combine returns BF16 ones, as in DeepSeek's
// deployment and DeepEP's benchmarks (docs/references/models.md#expert-parallel, S14); FP8's
// per-128-channel scales (~3%) are left out.
constexpr double kDispatchBytesPerValue = 1.0;
constexpr double kCombineBytesPerValue = 2.0;

constexpr std::pair<MoeA2aBackend, const char*> kMoeA2aNames[] = {{MoeA2aBackend::kNone, "none"},
                                                                  {MoeA2aBackend::kDeepep, "deepep"}};

}  // namespace

const char* to_string(MoeA2aBackend b) {
  for (const auto& [backend, name] : kMoeA2aNames) {
    if (backend == b) return name;
  }
  return "none";
}

std::optional<MoeA2aBackend> parse_moe_a2a_backend(const std::string& text) {
  for (const auto& [backend, name] : kMoeA2aNames) {
    if (text == name) return backend;
  }
  return std::nullopt;
}

std::vector<std::string> moe_a2a_backend_names() {
  std::vector<std::string> names;
  for (const auto& [backend, name] : kMoeA2aNames) names.emplace_back(name);
  return names;
}

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all_reduce";
    case CollectiveOp::kSend: return "send";
    case CollectiveOp::kAllToAll: return "all_to_all";
    case CollectiveOp::kAllGather: return "all_gather";
    case CollectiveOp::kReduceScatter: return "reduce_scatter";
  }
  return "all_reduce";
}

double activation_message_bytes(const TransformerSpec& m, double tokens) {
  return tokens * m.hidden_size * bytes_per_param(m.activation_dtype);
}

namespace {

// Pipeline sends between consecutive stages of `tp` GPUs each, stage k on GPUs [k tp, (k+1) tp):
// the one from stage k to k+1 crosses nodes when GPUs (k+1) tp - 1 and (k+1) tp sit on two nodes.
void add_pipeline_sends(std::vector<Collective>& out, const Parallelism& parallel, double bytes, LinkClass link,
                        int gpus_per_node) {
  int crossing = 0;
  for (int k = 0; gpus_per_node > 0 && k + 1 < parallel.pp; ++k) {
    const int first_next = (k + 1) * parallel.tp;
    if ((first_next - 1) / gpus_per_node != first_next / gpus_per_node) ++crossing;
  }
  if (parallel.pp - 1 - crossing > 0) {
    out.push_back({CollectiveOp::kSend, "hidden state to the next pipeline stage", bytes, 2, parallel.pp - 1 - crossing, link});
  }
  if (crossing > 0) {
    out.push_back({CollectiveOp::kSend, "hidden state to the next pipeline stage, on another node (network)", bytes, 2,
                   crossing, link, 2});
  }
}

}  // namespace

std::vector<Collective> forward_collectives(const TransformerSpec& model, ForwardOf of, const Parallelism& parallel,
                                            std::optional<bool> embedding_allreduce, double tokens, LinkClass link,
                                            int requests, int gpus_per_node) {
  std::vector<Collective> out;
  // Nodes that `ranks` GPUs from GPU 0 span.
  const auto span = [&](int ranks) { return gpus_per_node > 0 && ranks > gpus_per_node ? (ranks + gpus_per_node - 1) / gpus_per_node : 1; };
  const double bytes = activation_message_bytes(model, tokens);
  const int ranks = of == ForwardOf::kTarget ? parallel.tp : parallel.draft_ranks();
  // An all-to-all backend moves the target's tokens to its experts' ranks and back; the draft keeps TP.
  const bool all_to_all = of == ForwardOf::kTarget && model.moe && parallel.runs_all_to_all();
  // Data-parallel attention leaves attention (and the embedding, on the attention-TP group of one)
  // without an all-reduce; the MLP/MoE blocks gather every rank's tokens and reduce-scatter them back.
  const bool attention_dp = of == ForwardOf::kTarget && parallel.data_parallel_attention() && ranks > 1;
  if (ranks > 1 && !attention_dp) {
    // TP1 or a replicated draft: the ranks never talk.
    const CollectiveCounts& c = model.collectives;
    int count = c.allreduce_per_layer * model.layers + (embedding_allreduce.value_or(c.embedding_allreduce) ? 1 : 0);
    if (all_to_all) count -= model.moe_layers();  // the combine ends each MoE block instead
    if (count > 0) out.push_back({CollectiveOp::kAllReduce, "tensor-parallel partial sums", bytes, ranks, count, link, span(ranks)});
  }
  if (attention_dp) {
    // The gathered tensor: every group's slot padded to the busiest group's ceil(B / dp) requests
    // (SGLang's max-len padding, the CUDA-graph default; docs/references/models.md#dp-attention).
    const int b = std::max(1, requests);
    const int dp = parallel.attention_dp;
    const int group = parallel.attention_tp();
    const double slot_tokens = std::ceil(double(b) / dp) * tokens / b;
    const double gathered = activation_message_bytes(model, dp * slot_tokens);
    const int blocks = all_to_all ? model.dense_layers : model.layers;  // DeepEP's MoE layers dispatch instead
    if (blocks > 0 && group > 1) {
      // Attention TP inside each group: the group's partial attention outputs are summed and split
      // over its ranks before the gather, and each rank's piece of the result is gathered back
      // inside the group after the scatter (dp_gather_partial, dp_reduce_scatter_tensor).
      const double slot = activation_message_bytes(model, slot_tokens);
      out.push_back({CollectiveOp::kReduceScatter, "DP attention: the group's attention partial sums split over it",
                     slot, group, blocks, link, span(group)});
      out.push_back({CollectiveOp::kAllGather, "DP attention: the group's MLP/MoE output pieces joined", slot, group,
                     blocks, link, span(group)});
    }
    if (blocks > 0) {
      out.push_back({CollectiveOp::kAllGather, "DP attention: every group's tokens gathered for the MLP/MoE", gathered,
                     ranks, blocks, link, span(ranks)});
      out.push_back({CollectiveOp::kReduceScatter, "DP attention: MLP/MoE partial sums back to their ranks", gathered,
                     ranks, blocks, link, span(ranks)});
    }
  }
  if (all_to_all) {
    // With no all-reduce after the MoE block the tokens are split over the ranks before it: the
    // busiest dispatches ceil(q / ep) tokens, each to its k experts (an estimate, no merging of two
    // experts on one rank).
    const double values = std::ceil(tokens / parallel.ep) * model.moe->experts_per_token * model.hidden_size;
    const int layers = model.moe_layers();
    out.push_back({CollectiveOp::kAllToAll, "MoE dispatch: tokens to their experts' ranks (FP8)",
                   values * kDispatchBytesPerValue, parallel.ep, layers, link, span(parallel.ep)});
    out.push_back({CollectiveOp::kAllToAll, "MoE combine: expert outputs back (BF16)", values * kCombineBytesPerValue,
                   parallel.ep, layers, link, span(parallel.ep)});
  }
  if (of == ForwardOf::kTarget && parallel.pp > 1) add_pipeline_sends(out, parallel, bytes, link, gpus_per_node);
  return out;
}

int count_of(const std::vector<Collective>& collectives, CollectiveOp op) {
  int n = 0;
  for (const Collective& c : collectives) {
    if (c.op == op) n += c.count;
  }
  return n;
}

}  // namespace specsim
