// The collectives of one forward pass, listed from the model's shape and how the deployment spreads
// it over the box (Parallelism), then priced by the comm layer one operation at a time
// (CommModel::time_s, comm_model.hpp). One forward of q tokens on one rank pays
//
//   T_comm(q) = sum over entries [ count x T_op(bytes, ranks, link) ]
//
// where the entries are (docs/model.md#collectives, docs/references/models.md#tp-collectives):
//
//   all_reduce  tensor-parallel partial sums: allreduce_per_layer per layer (attention o_proj,
//               MLP/MoE down projection) + 1 for a vocab-parallel embedding; S = q x H x act_bytes
//   send        pipeline stages hand the hidden state on: pp - 1 per forward of the target (the
//               draft runs on the last stage); S = q x H x act_bytes
//   all_to_all  expert parallel with an all-to-all backend (parallel.moe_a2a): per MoE layer a
//               dispatch (S = ceil(q / ep) x k x H x 1 B, FP8) and a combine (x 2 B, BF16) in place
//               of the layer's MoE all-reduce (docs/references/models.md#expert-parallel)
//   all_gather, data-parallel attention (parallel.attention_dp) without an all-to-all backend: per
//   reduce_scatter  layer the hidden states of every rank's tokens are gathered before the MLP/MoE
//               and reduce-scattered after it, in place of both of the layer's all-reduces;
//               S = tp x ceil(B / tp) x (q / B) x H x act_bytes, the gathered tensor with every rank
//               padded to the busiest (SGLang's max-len padding, docs/references/models.md#dp-attention)
//
// Collectives with the same operation, message and ranks are one entry with a count, so that a
// forward's communication time is a sum of count x the time of one. An entry names the link class it
// crosses: the box's ring link (Topology::link), the one CommModel prices all of them over.
#pragma once

#include <optional>
#include <vector>

#include "specsim/hardware.hpp"
#include "specsim/model_spec.hpp"
#include "specsim/scenario.hpp"

namespace specsim {

enum class CollectiveOp { kAllReduce, kSend, kAllToAll, kAllGather, kReduceScatter };
// "all_reduce", "send", "all_to_all", "all_gather", "reduce_scatter"
[[nodiscard]] const char* to_string(CollectiveOp op);

struct Collective {
  CollectiveOp op = CollectiveOp::kAllReduce;
  const char* carries = "";  // what it moves, for reports: "tensor-parallel partial sums", ...
  // Bytes of one operation: the tensor an all-reduce reduces (each rank's whole message), the
  // hidden state a send hands on, what the busiest rank sends in an all-to-all, the gathered tensor
  // of an all-gather (the input of a reduce-scatter).
  double bytes = 0.0;
  int ranks = 1;  // ranks taking part: the TP group for an all-reduce or gather, 2 for a send, ep for an all-to-all
  int count = 0;  // operations of this kind in one forward
  LinkClass link = LinkClass::kPxb;
  // Nodes its ranks span (placed node by node from GPU 0): above 1 the operation crosses the network.
  // A send crossing between the nodes of two pipeline stages has 2.
  int nodes = 1;
};

// Which model of the deployment runs the forward: the target (tp ranks, pp stages) or the draft
// (Parallelism::draft_ranks(), on the last stage).
enum class ForwardOf { kTarget, kDraft };

// The message of one TP all-reduce or PP send: q tokens x H x activation bytes.
[[nodiscard]] double activation_message_bytes(const TransformerSpec& model, double tokens);

// The collectives of one forward of `model` over `tokens` tokens of `requests` requests together.
// `embedding_allreduce` is the engine's override of the model file's count (EngineSettings), `link`
// the class of the box's ring link. Entries with a zero count are left out: a TP1 forward has no
// all-reduce. `requests` sizes the padded gather of data-parallel attention only. `gpus_per_node`
// (0: one node) sets each entry's `nodes`; pipeline sends whose stages sit on two nodes are listed
// apart from those inside a node.
[[nodiscard]] std::vector<Collective> forward_collectives(const TransformerSpec& model, ForwardOf of,
                                                          const Parallelism& parallel,
                                                          std::optional<bool> embedding_allreduce, double tokens,
                                                          LinkClass link, int requests = 1,
                                                          int gpus_per_node = 0);

// Operations of kind `op` in a forward's list, counts summed.
[[nodiscard]] int count_of(const std::vector<Collective>& collectives, CollectiveOp op);

}  // namespace specsim
