#include "specsim/memory_fit.hpp"

#include <algorithm>
#include <cmath>

#include "specsim/error.hpp"
#include "specsim/units.hpp"

namespace specsim {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

std::string gb(double bytes) { return units::format_fixed(bytes / 1e9, 1) + " GB"; }

// How an engine splits a GPU: the fraction it lets its own allocations use, and what it counts in
// it. docs/references/engine-memory.md gives each rule with its source.
struct EngineRule {
  double fraction = 0.9;
  std::string source;
  bool profiles_activations = false;  // vLLM: activations are inside the fraction
};

// SGLang's default mem_fraction_static (python/sglang/srt/server_args.py,
// ServerArgs._handle_gpu_memory_settings), in the MB of torch's total_memory / 2^20 it works in:
// the chunked-prefill size and CUDA-graph batch follow the GPU's memory and TP, then
//   reserved = 512 + 1.5 max(chunked_prefill, 2048) + 2 cuda_graph_max_bs + tp pp / 8 x 1024,
//   at least 10 GiB above 60 GiB, plus 2 GiB for an EAGLE or MTP draft and its graphs;
//   f = round((gpu_mem - reserved) / gpu_mem, 3).
double sglang_static_fraction(double capacity_bytes, int tp, int pp) {
  const double mem = capacity_bytes / kMiB;
  int chunk = 16384;
  int graph_bs = 512;
  if (mem < 20 * 1024.0) {
    chunk = 2048, graph_bs = 8;
  } else if (mem < 35 * 1024.0) {
    chunk = 2048, graph_bs = tp < 4 ? 24 : 80;
  } else if (mem < 60 * 1024.0) {
    chunk = 4096, graph_bs = tp < 4 ? 32 : 160;
  } else if (mem < 160 * 1024.0) {
    chunk = 8192, graph_bs = tp < 4 ? 256 : 512;
  }
  double reserved = 512.0 + 1.5 * std::max(chunk, 2048) + 2.0 * graph_bs + tp * pp / 8.0 * 1024.0;
  if (mem > 60 * 1024.0) reserved = std::max(reserved, 10 * 1024.0);
  reserved += 2 * 1024.0;
  return std::round((mem - reserved) / mem * 1000.0) / 1000.0;
}

// The rule the engine file names (behaviour.memory_rule); an engine that names none is priced with
// vLLM's profile run, and the report says so.
EngineRule engine_rule(const Scenario& s) {
  EngineRule rule;
  using Rule = EngineBehaviour::MemoryRule;
  const Rule kind = s.engine.behaviour.memory_rule;
  if (kind == Rule::kStaticFraction) {
    rule.fraction = sglang_static_fraction(s.gpu.memory_bytes, s.parallel.tp, s.parallel.pp);
    rule.source = "SGLang's mem_fraction_static default for this GPU, TP and a draft";
  } else {
    rule.profiles_activations = true;
    rule.source = kind == Rule::kProfileRun ? "vLLM's gpu_memory_utilization default"
                                            : "vLLM's gpu_memory_utilization default (no memory rule for engine '" +
                                                  s.engine.name + "')";
  }
  if (s.engine.memory_fraction) {
    rule.fraction = *s.engine.memory_fraction;
    rule.source = "engine.memory_fraction";
  }
  return rule;
}

// vLLM's profile run: one forward over max_num_batched_tokens tokens and a sampler over
// max_num_seqs rows of fp32 logits. Its defaults for the API server (vllm/engine/arg_utils.py,
// EngineArgs.get_batch_defaults): 8192 tokens and 1024 sequences on a GPU of 70 GiB or more that is
// not an A100, else 2048 and 256. The forward's live tensors are taken as the MLP's gate and up
// outputs (2 I / tp, I the widest FFN a token runs: its experts and shared experts) and four
// hidden-sized buffers per token (estimate).
MemoryPart vllm_activations(const Scenario& s) {
  const bool large = s.gpu.memory_bytes >= 70 * kGiB && s.gpu.name.find("a100") == std::string::npos;
  const double tokens = large ? 8192 : 2048;
  const double seqs = large ? 1024 : 256;
  const TransformerSpec& m = s.model;
  double ffn = m.dense_layers > 0 ? m.intermediate_size : 0.0;
  if (m.moe) ffn = std::max(ffn, double(m.moe->experts_per_token + m.moe->shared_experts) * m.moe->expert_intermediate_size);
  const double forward = tokens * (2.0 * ffn / s.parallel.tp + 4.0 * m.hidden_size) * bytes_per_param(m.activation_dtype);
  const double sampler = seqs * m.vocab_size * 4.0;
  return {"activations", forward + sampler,
          "vLLM's profile run: " + units::format_fixed(tokens, 0) + " tokens x (2 x " + units::format_fixed(ffn, 0) +
              " / tp + 4 x " + std::to_string(m.hidden_size) + ") x " +
              units::format_fixed(bytes_per_param(m.activation_dtype), 0) + " B + " + units::format_fixed(seqs, 0) +
              " x " + std::to_string(m.vocab_size) + " fp32 logits"};
}

// Attention state of `batch` requests over all of `m`'s layers on one rank, at `tokens` each.
double kv_bytes(const TransformerSpec& m, int tp, int batch, double tokens) {
  return double(batch) * m.attention_cache_bytes_per_layer(tp, tokens) * m.layers;
}

std::string kv_basis(const TransformerSpec& m, int batch, double tokens, int pp) {
  std::string out = std::to_string(batch) + " x " + units::format_fixed(tokens, 0) + " tokens x " +
                    std::to_string(m.layers) + " layers, " + to_string(m.kv_dtype());
  if (m.attention.sparse()) out += " latents + " + units::format_fixed(m.indexer_bytes_per_token_layer(), 0) + " B indexer keys";
  if (pp > 1) out += ", / pp " + std::to_string(pp);
  return out;
}

}  // namespace

double MemoryFit::used_bytes() const {
  double sum = 0.0;
  for (const auto& p : parts) sum += p.bytes;
  return sum;
}

MemoryFit memory_fit(const Scenario& s) { return memory_fit(s, s.batch); }

MemoryFit memory_fit(const Scenario& s, int batch) {
  MemoryFit fit;
  fit.gpu = s.gpu.name;
  fit.capacity_bytes = s.gpu.memory_bytes;
  fit.batch = batch;
  const EngineRule rule = engine_rule(s);
  fit.engine_fraction = rule.fraction;
  fit.engine_rule = rule.source;
  // A request's cache holds its context and the tokens one verify appends.
  const double tokens = s.context_tokens + s.speculation.shape.num_draft_tokens;
  const int ranks = s.parallel.tp * s.parallel.pp;
  const TransformerSpec& m = s.model;
  // A sparse-attention indexer is replicated: every rank of a stage holds its stage's indexers whole
  // (vLLM's Indexer, docs/references/models.md#sparse-attention).
  const double indexer_bytes = m.indexer_params() * m.indexer_layers() * bytes_per_param(m.weights.attention);
  const std::string indexers_basis = indexer_bytes > 0 ? " + indexers " + gb(indexer_bytes) + " replicated" : "";
  if (s.parallel.data_parallel_attention()) {
    // Data-parallel attention (docs/references/models.md#dp-attention): every rank of a stage holds
    // 1 / (tp / dp) of the attention weights (whole when dp = tp) and that share of the heads of the
    // KV cache of its group's ceil(B / dp) requests.
    const int dp = s.parallel.attention_dp_ranks();
    const int group = s.parallel.attention_tp();
    const double attention_bytes = m.mean_attention_params() * m.layers * bytes_per_param(m.weights.attention);
    const int requests = (batch + dp - 1) / dp;
    const std::string held = group > 1 ? " / " + std::to_string(group) + " per DP group (attention TP)" : " replicated";
    const double per_rank_bytes =
        (m.weight_bytes() - attention_bytes) / ranks + ((attention_bytes - indexer_bytes) / group + indexer_bytes) / s.parallel.pp;
    fit.parts.push_back({"target weights", per_rank_bytes,
                         units::format_fixed(m.total_params() / 1e9, 1) + "B params as stored, " +
                             gb(m.weight_bytes() - attention_bytes) + " / " + std::to_string(ranks) + " ranks + attention " +
                             gb(attention_bytes - indexer_bytes) + held + " (DP attention)" + indexers_basis});
    fit.parts.push_back({"target KV cache", kv_bytes(m, group, requests, tokens) / s.parallel.pp,
                         kv_basis(m, requests, tokens, s.parallel.pp) + ", ceil(" + std::to_string(batch) + " / dp " +
                             std::to_string(dp) + ") requests per rank"});
  } else {
    fit.parts.push_back({"target weights", (m.weight_bytes() - indexer_bytes) / ranks + indexer_bytes / s.parallel.pp,
                         units::format_fixed(m.total_params() / 1e9, 1) + "B params as stored, " +
                             gb(m.weight_bytes() - indexer_bytes) + " / " + std::to_string(ranks) + " ranks" + indexers_basis});
    fit.parts.push_back({"target KV cache", kv_bytes(m, s.parallel.tp, batch, tokens) / s.parallel.pp,
                         kv_basis(m, batch, tokens, s.parallel.pp)});
  }
  if (s.speculation.runs_draft_forwards()) {  // ngram's prompt lookup holds no weights or cache
    const int draft_tp = s.parallel.draft_ranks();
    fit.parts.push_back({"draft weights", s.draft.weight_bytes() / draft_tp,
                         gb(s.draft.weight_bytes()) + " / tp " + std::to_string(draft_tp)});
    if (s.parallel.data_parallel_attention()) {
      // The draft's attention runs data-parallel as the target's does (SGLang's DP attention covers
      // the draft worker): each rank caches its group's ceil(B / dp) requests, not the batch.
      const int dp = s.parallel.attention_dp_ranks();
      const int requests = (batch + dp - 1) / dp;
      fit.parts.push_back({"draft KV cache", kv_bytes(s.draft, s.parallel.attention_tp(), requests, tokens),
                           kv_basis(s.draft, requests, tokens, 1) + ", ceil(" + std::to_string(batch) + " / dp " +
                               std::to_string(dp) + ") requests per rank"});
    } else {
      fit.parts.push_back({"draft KV cache", kv_bytes(s.draft, draft_tp, batch, tokens), kv_basis(s.draft, batch, tokens, 1)});
    }
  }
  if (rule.profiles_activations) fit.parts.push_back(vllm_activations(s));
  fit.parts.push_back({"engine reserve", (1.0 - rule.fraction) * s.gpu.memory_bytes,
                       "1 - " + units::format_fixed(rule.fraction, 3) + " of the GPU (" + rule.source + ")"});
  return fit;
}

std::string describe_overflow(const Scenario& s, const MemoryFit& fit) {
  std::string out = "does not fit in GPU memory: needs " + gb(fit.used_bytes()) + " per GPU, " + gb(fit.over_bytes()) +
                    " more than the " + gb(fit.capacity_bytes) + " of one " + fit.gpu + " (TP" + std::to_string(s.parallel.tp) +
                    (s.parallel.pp > 1 ? " x PP" + std::to_string(s.parallel.pp) : "") + ", batch " + std::to_string(fit.batch) +
                    ", context " + units::format_fixed(s.context_tokens, 0) + "):";
  for (std::size_t i = 0; i < fit.parts.size(); ++i) {
    const MemoryPart& p = fit.parts[i];
    out += std::string(i ? "," : "") + " " + p.name + " " + gb(p.bytes) + " (" + p.basis + ")";
  }
  return out;
}

void require_memory_fit(const Scenario& s) {
  const MemoryFit fit = memory_fit(s);
  if (!fit.fits()) throw Error({s.file, 0, 0}, "", describe_overflow(s, fit));
}

}  // namespace specsim
