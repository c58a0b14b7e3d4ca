#include "specsim/collectives.hpp"

namespace specsim {

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all_reduce";
    case CollectiveOp::kSend: return "send";
  }
  return "all_reduce";
}

double activation_message_bytes(const TransformerSpec& m, double tokens) {
  return tokens * m.hidden_size * bytes_per_param(m.activation_dtype);
}

std::vector<Collective> forward_collectives(const TransformerSpec& model, ForwardOf of, const Parallelism& parallel,
                                            std::optional<bool> embedding_allreduce, double tokens, LinkClass link) {
  std::vector<Collective> out;
  const double bytes = activation_message_bytes(model, tokens);
  const int ranks = of == ForwardOf::kTarget ? parallel.tp : parallel.draft_ranks();
  if (ranks > 1) {
    // TP1 or a replicated draft: the ranks never talk.
    const CollectiveCounts& c = model.collectives;
    const int count = c.allreduce_per_layer * model.layers + (embedding_allreduce.value_or(c.embedding_allreduce) ? 1 : 0);
    if (count > 0) out.push_back({CollectiveOp::kAllReduce, "tensor-parallel partial sums", bytes, ranks, count, link});
  }
  if (of == ForwardOf::kTarget && parallel.pp > 1) {
    out.push_back({CollectiveOp::kSend, "hidden state to the next pipeline stage", bytes, 2, parallel.pp - 1, link});
  }
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
