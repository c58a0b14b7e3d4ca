#include "specsim/model_spec.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include "specsim/error.hpp"

namespace specsim {

namespace {
struct DtypeInfo {
  Dtype dtype;
  const char* name;
  double bytes;
};
// Scale overheads: int4 group 32 with a bf16 scale = 0.5 + 2/32; group 64 = 0.5 + 2/64; group 128 =
// 0.5 + 2/128; NVFP4 = 0.5 + 1/16 (fp8 scale per 16); MXFP4 = 0.5 + 1/32 (e8m0 per 32); fp8 with
// 128x128 fp32 block scales = 1 + 4/16384. int8 and int4-channel: one scale per output row, left out.
// AWQ and GPTQ also store a 4-bit zero point per group (+0.25/128 B at group 128), left out too.
constexpr std::array kDtypes{
    DtypeInfo{Dtype::kFp32, "fp32", 4.0},          DtypeInfo{Dtype::kBf16, "bf16", 2.0},
    DtypeInfo{Dtype::kFp16, "fp16", 2.0},          DtypeInfo{Dtype::kFp8, "fp8", 1.0 + 4.0 / 16384.0},
    DtypeInfo{Dtype::kInt8, "int8", 1.0},          DtypeInfo{Dtype::kInt4G32, "int4-g32", 0.5625},
    DtypeInfo{Dtype::kInt4G64, "int4-g64", 0.53125}, DtypeInfo{Dtype::kInt4G128, "int4-g128", 0.515625},
    DtypeInfo{Dtype::kInt4Channel, "int4-channel", 0.5}, DtypeInfo{Dtype::kNvfp4, "nvfp4", 0.5625},
    DtypeInfo{Dtype::kMxfp4, "mxfp4", 0.53125}};

// All layers' attention parameters: layers x attention_params() unless some layers are linear or
// reuse another layer's sparse-attention picks (no indexer of their own).
double attention_params_all_layers(const TransformerSpec& m) {
  const double without_indexer = double(m.full_attention_layers() - m.indexer_layers()) * m.indexer_params();
  if (m.layer_attention.linear_layers == 0) return m.layers * m.attention_params() - without_indexer;
  return m.full_attention_layers() * m.attention_params() + m.layer_attention.linear_layers * m.linear_attention_params() -
         without_indexer;
}
}  // namespace

double bytes_per_param(Dtype d) {
  for (const auto& i : kDtypes) {
    if (i.dtype == d) return i.bytes;
  }
  return 2.0;
}

const char* to_string(Dtype d) {
  for (const auto& i : kDtypes) {
    if (i.dtype == d) return i.name;
  }
  return "?";
}

std::optional<Dtype> parse_dtype(const std::string& text) {
  for (const auto& i : kDtypes) {
    if (text == i.name) return i.dtype;
  }
  return std::nullopt;
}

std::string dtype_names() {
  std::string out;
  for (const auto& i : kDtypes) out += (out.empty() ? "" : ", ") + std::string(i.name);
  return out;
}

double TransformerSpec::attention_params() const {
  const double h = hidden_size;
  const AttentionSpec& a = attention;
  if (a.kind == AttentionKind::kMla) {
    // MLA (docs/references/models.md#layer-params): H*q_lora + q_lora*heads*(nope+rope) + H*(kv_lora+rope)
    //                      + kv_lora*heads*(nope+v) + heads*v*H; without q LoRA, H*heads*(nope+rope).
    const double qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    const double q = a.q_lora_rank > 0 ? h * a.q_lora_rank + double(a.q_lora_rank) * a.heads * qk
                                       : h * a.heads * qk;
    return q + h * (a.kv_lora_rank + a.qk_rope_head_dim) +
           double(a.kv_lora_rank) * a.heads * (a.qk_nope_head_dim + a.v_head_dim) +
           double(a.heads) * a.v_head_dim * h + indexer_params();
  }
  // GQA: H*(heads + 2 kv)*d + heads*d*H. EAGLE-3's qkv projection reads [embedding; hidden], 2H.
  // An output gate doubles the query projection.
  const double qkv_in = eagle3 && eagle3->version == 3 ? 2.0 * h : h;
  const double q_heads = a.output_gate ? 2.0 * a.heads : a.heads;
  return qkv_in * (q_heads + 2.0 * a.kv_heads) * a.head_dim + double(a.heads) * a.head_dim * h;
}

double TransformerSpec::linear_attention_params() const {
  if (layer_attention.linear_layers == 0) return 0.0;
  // Gated DeltaNet (docs/references/models.md#hybrid-attention): in_proj_qkvz H*(2 nk dk + 2 nv dv),
  // in_proj_ba H*2 nv, a depthwise conv over q, k, v of (2 nk dk + nv dv)*kernel, out_proj nv dv*H.
  const LinearAttentionSpec& l = layer_attention.linear;
  const double h = hidden_size;
  const double qk = double(l.key_heads) * l.key_head_dim;
  const double v = double(l.value_heads) * l.value_head_dim;
  return h * (2.0 * qk + 2.0 * v + 2.0 * l.value_heads) + (2.0 * qk + v) * l.conv_kernel + v * h;
}

double TransformerSpec::mean_attention_params() const { return attention_params_all_layers(*this) / layers; }

int TransformerSpec::indexer_layers() const {
  if (!attention.sparse()) return 0;
  return attention.index_layers > 0 ? attention.index_layers : full_attention_layers();
}

double TransformerSpec::indexer_params() const {
  const AttentionSpec& a = attention;
  if (!a.sparse()) return 0.0;
  // wq_b q_lora*(n*d) + wk H*d + weights_proj H*n + k_norm (a LayerNorm) 2d
  // (docs/references/models.md#sparse-attention).
  const double n = a.index_heads;
  const double d = a.index_head_dim;
  return a.q_lora_rank * n * d + double(hidden_size) * (d + n) + 2.0 * d;
}

double TransformerSpec::dense_mlp_params() const { return 3.0 * hidden_size * double(intermediate_size); }

double TransformerSpec::expert_params() const {
  return moe ? 3.0 * hidden_size * double(moe->expert_intermediate_size) : 0.0;
}

double TransformerSpec::lm_head_params() const {
  const double vocab = eagle3 ? eagle3->draft_vocab_size : vocab_size;
  return vocab * hidden_size;
}

double TransformerSpec::draft_input_params() const {
  const double h = hidden_size;
  if (eagle3) return double(eagle3->aux_hidden_states) * h * h;  // fc
  if (mtp_module) return 2.0 * h * h;                            // eh_proj
  if (dflash) return double(dflash->taps()) * dflash->target_hidden_size * h;  // fc
  return 0.0;
}

// Stored parameters: an MTP module's or a DFlash drafter's LM head is the target's, stored once with
// the target (the DeepSeek-V3 weights list the module's 11.5B "unique" parameters without the shared
// embedding and head, docs/references/mtp.md#module; a DFlash checkpoint holds fc, hidden_norm, its
// layers and norm, docs/references/specdec.md#dflash).
double TransformerSpec::total_params() const {
  const double head = borrows_target_lm_head() ? 0.0 : lm_head_params();
  double p = attention_params_all_layers(*this) + dense_layers * dense_mlp_params() + head + draft_input_params();
  if (moe) p += moe_layers() * (moe->experts + moe->shared_experts) * expert_params();
  if (stores_embedding()) p += double(vocab_size) * hidden_size;  // embedding
  return p;
}

// Read per token: an MTP module's or a DFlash drafter's forward runs the shared LM head, so it counts here.
double TransformerSpec::active_params() const {
  double p = attention_params_all_layers(*this) + dense_layers * dense_mlp_params() + lm_head_params() +
             draft_input_params();
  if (moe) p += moe_layers() * (moe->experts_per_token + moe->shared_experts) * expert_params();
  // The embedding matrix is counted (a tied one once, as the head), as published totals do.
  if (stores_embedding()) p += double(vocab_size) * hidden_size;
  return p;
}

double TransformerSpec::weight_bytes() const {
  const double head = borrows_target_lm_head() ? 0.0 : lm_head_params();  // stored with the target (total_params)
  double b = attention_params_all_layers(*this) * bytes_per_param(weights.attention) +
             dense_layers * dense_mlp_params() * bytes_per_param(weights.dense_mlp) +
             head * bytes_per_param(weights.lm_head) + draft_input_params() * 2.0;
  if (moe) {
    b += moe_layers() * expert_params() *
         (moe->experts * bytes_per_param(weights.experts) + moe->shared_experts * bytes_per_param(weights.shared_experts));
  }
  if (stores_embedding()) b += double(vocab_size) * hidden_size * 2.0;  // bf16 embedding
  return b;
}

double TransformerSpec::kv_bytes_per_token_layer(int tp) const {
  const Dtype kv = kv_dtype();
  const double bytes_per_value = kv == Dtype::kFp8 ? 1.0 : bytes_per_param(kv);  // an FP8 cache's scales are per tensor
  if (attention.kind == AttentionKind::kMla) {
    // The MLA latent (kv_lora + rope) is shared by all heads, so every TP rank holds all of it.
    // Sparse MLA's FP8 cache (FlashMLA's, vLLM's fp8_ds_mla) keeps the latent in FP8 with one fp32
    // scale per 128 values and the rope part in BF16: 512 + 16 + 128 = 656 B for DeepSeek-V3.2
    // (docs/references/models.md#sparse-attention).
    if (attention.sparse() && kv == Dtype::kFp8) {
      return attention.kv_lora_rank + std::ceil(attention.kv_lora_rank / 128.0) * 4.0 + attention.qk_rope_head_dim * 2.0;
    }
    return (attention.kv_lora_rank + attention.qk_rope_head_dim) * bytes_per_value;
  }
  const int kv_per_rank = std::max(1, attention.kv_heads / std::max(1, tp));
  return 2.0 * kv_per_rank * attention.head_dim * bytes_per_value;
}

double TransformerSpec::indexer_bytes_per_token_layer() const {
  if (!attention.sparse()) return 0.0;
  const double d = attention.index_head_dim;
  return d + std::ceil(d / 128.0) * 4.0;
}

double TransformerSpec::attention_state_bytes_per_layer(int tp, double context) const {
  const LayerAttention& la = layer_attention;
  if (attention.sparse()) {
    // The indexer reads every cached key; the attention reads the latents of the index_topk tokens
    // it picked. Assumption: a verify's query tokens pick largely the same tokens, so a request reads
    // them once, as a dense kernel reads its context once (docs/references/models.md#sparse-attention).
    return std::min(context, double(attention.index_topk)) * kv_bytes_per_token_layer(tp) +
           context * indexer_bytes_per_token_layer() * indexer_layers() / layers;
  }
  if (la.windowed_layers == 0 && la.linear_layers == 0) return context * kv_bytes_per_token_layer(tp);
  const double kv = kv_bytes_per_token_layer(tp);
  const int full = layers - la.windowed_layers - la.linear_layers;
  const double bytes = full * context * kv + la.windowed_layers * std::min(context, double(la.window)) * kv;
  // A linear layer reads its state once per forward, however long the context.
  return bytes / layers + linear_state_bytes_per_layer(tp);
}

double TransformerSpec::attention_cache_bytes_per_layer(int tp, double context) const {
  if (!attention.sparse()) return attention_state_bytes_per_layer(tp, context);
  return context * (kv_bytes_per_token_layer(tp) + indexer_bytes_per_token_layer() * indexer_layers() / layers);
}

double TransformerSpec::linear_state_bytes_per_layer(int tp) const {
  const LayerAttention& la = layer_attention;
  if (la.linear_layers == 0) return 0.0;
  // Assumption: the recurrent state (value heads x dk x dv) and the convolution's last kernel-1
  // inputs are held in the activation dtype, split over TP by value head
  // (docs/references/models.md#hybrid-attention).
  const LinearAttentionSpec& l = la.linear;
  const double share = double(std::max(1, l.value_heads / std::max(1, tp))) / std::max(1, l.value_heads);
  const double state = double(l.value_heads) * l.key_head_dim * l.value_head_dim;
  const double conv =
      (2.0 * l.key_heads * l.key_head_dim + double(l.value_heads) * l.value_head_dim) * std::max(0, l.conv_kernel - 1);
  return la.linear_layers * (state + conv) * share * bytes_per_param(activation_dtype) / layers;
}

double TransformerSpec::attended_context(double context) const {
  const LayerAttention& la = layer_attention;
  if (attention.sparse()) return std::min(context, double(attention.index_topk));
  if (la.windowed_layers == 0 && la.linear_layers == 0) return context;
  const int full = layers - la.windowed_layers - la.linear_layers;
  return (full * context + la.windowed_layers * std::min(context, double(la.window))) / layers;
}

double TransformerSpec::indexer_flops_per_token(double context) const {
  if (!attention.sparse()) return 0.0;
  return 2.0 * attention.index_heads * attention.index_head_dim * context * indexer_layers() / layers;
}

std::string check_tensor_parallel(const TransformerSpec& model, int tp) {
  const AttentionSpec& a = model.attention;
  const std::string what = "tp = " + std::to_string(tp) + " on " + model.name + ": ";
  if (tp < 1) throw Error(what + "must be >= 1");
  if (a.heads % tp != 0) {
    throw Error(what + "tp must divide the " + std::to_string(a.heads) + " attention heads (each rank holds heads / tp)");
  }
  if (a.kind == AttentionKind::kMla || a.kv_heads % tp == 0) return "";
  if (tp % a.kv_heads == 0) {
    return model.name + ": its " + std::to_string(a.kv_heads) + " KV heads are fewer than tp = " + std::to_string(tp) +
           ", so each is replicated on " + std::to_string(tp / a.kv_heads) + " ranks (one KV head per rank)";
  }
  throw Error(what + "the " + std::to_string(a.kv_heads) + " KV heads can be neither split over " + std::to_string(tp) +
              " ranks nor replicated evenly (tp must divide kv_heads or kv_heads divide tp)");
}

TransformerSpec ngram_proposer() {
  TransformerSpec none;
  none.name = "ngram";
  none.description = "prompt lookup on the host: no draft model";
  return none;
}

}  // namespace specsim
