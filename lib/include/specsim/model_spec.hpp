// The architecture of a transformer as the cost model needs it: layer counts, widths, attention
// kind (GQA or MLA), MoE experts, storage dtypes and the tensor-parallel collectives per forward.
// An EAGLE-3 draft head is the same struct with `eagle3` set; a model's own multi-token-prediction
// module, drafting for it, is one with `mtp_module` set (mtp_draft()). Shapes come from models/llm/*.yaml
// or a Hugging Face config.json (see load.hpp); docs/references/models.md#layer-params gives the
// formulas used for parameter counts (they reproduce published totals within ~2%).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace specsim {

enum class Dtype { kFp32, kBf16, kFp16, kFp8, kInt8, kInt4G32, kInt4G64, kInt4G128, kInt4Channel, kNvfp4, kMxfp4 };

// Bytes per stored parameter, scales included: int4 with one bf16 scale per 32 weights is
// 0.5 + 2/32 = 0.5625 B (docs/references/models.md#kimi-int4, an estimate: the scale dtype was not read); fp8 with a
// 128x128 block scale is ~1 B; NVFP4 0.5 + 1/16 (fp8 scale per 16); MXFP4 0.5 + 1/32 (e8m0 per 32).
// int8 and int4-channel carry one scale per output row, which is under 0.1% of the weights and
// left out (docs/references/models.md#quantization).
[[nodiscard]] double bytes_per_param(Dtype d);
[[nodiscard]] const char* to_string(Dtype d);
[[nodiscard]] std::optional<Dtype> parse_dtype(const std::string& text);
// "fp32, bf16, ...": every name parse_dtype accepts, for error messages.
[[nodiscard]] std::string dtype_names();

enum class AttentionKind { kGqa, kMla };

struct AttentionSpec {
  AttentionKind kind = AttentionKind::kGqa;
  int heads = 0;
  int kv_heads = 0;        // GQA key/value heads; equal to heads for MLA
  int head_dim = 0;        // GQA head dimension
  int q_lora_rank = 0;     // MLA only; 0 = no query LoRA
  int kv_lora_rank = 0;    // MLA latent width
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  // Qwen3-Next's full-attention layers gate their output with a second query-sized projection, so
  // q_proj is 2 x heads x head_dim wide (docs/references/models.md#hybrid-attention).
  bool output_gate = false;
  // gpt-oss adds one learned sink logit per head; it costs `heads` parameters a layer and is
  // recorded, not priced (docs/references/models.md#hybrid-attention).
  bool sinks = false;
  // DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5; MLA only; docs/references/models.md#sparse-attention):
  // a lightning indexer of `index_heads` x `index_head_dim` queries scores every cached token
  // against one cached indexer key per token, and the MLA attention then reads only the
  // `index_topk` best. All 0: dense attention.
  int index_heads = 0;
  int index_head_dim = 0;
  int index_topk = 0;
  // Layers that run an indexer of their own; the others reuse the picks of an earlier layer and hold
  // neither its weights nor its key cache (GLM-5.1's `index_topk_pattern`, vLLM's skip_topk layers).
  // 0: every layer has one.
  int index_layers = 0;
  [[nodiscard]] bool sparse() const { return index_topk > 0; }
};

// Layers that do not attend to the whole context. Sliding-window layers (gpt-oss, Mistral-7B v0.1)
// read at most `window` past tokens; Llama-4's chunked layers read the tokens of their chunk, at
// most `window` (priced as a sliding window: an upper bound). Linear-attention layers (Qwen3-Next's
// Gated DeltaNet) keep a fixed-size state per request instead of a KV cache. The remaining
// layers attend to everything. All counts 0: every layer is full attention, as before.
struct LinearAttentionSpec {
  int key_heads = 0;
  int value_heads = 0;
  int key_head_dim = 0;
  int value_head_dim = 0;
  int conv_kernel = 0;  // causal depthwise convolution over q, k and v
};

struct LayerAttention {
  int windowed_layers = 0;
  int window = 0;  // tokens
  int linear_layers = 0;
  LinearAttentionSpec linear;
};

struct MoeSpec {
  int experts = 0;            // routed experts per MoE layer
  int experts_per_token = 0;  // top-k
  int shared_experts = 0;
  int expert_intermediate_size = 0;
};

struct WeightDtypes {
  Dtype attention = Dtype::kBf16;
  Dtype dense_mlp = Dtype::kBf16;
  Dtype experts = Dtype::kBf16;
  Dtype shared_experts = Dtype::kBf16;
  Dtype lm_head = Dtype::kBf16;
};

struct CollectiveCounts {
  int allreduce_per_layer = 2;     // attention o_proj + MLP/MoE output (docs/references/models.md#tp-collectives)
  bool embedding_allreduce = true; // vocab-parallel embedding lookup (docs/references/models.md#tp-collectives)
  bool lm_head_gather = true;      // logits gather; counted, not yet priced (see docs/model.md)
};

struct KernelCounts {
  int per_dense_layer = 11;  // pegainfer's Qwen3-4B decode, ~11 kernels per layer (docs/references/measured-compute.md#kernel-count)
  int per_moe_layer = 16;    // estimate: router, top-k, align, two grouped GEMMs, activation, shared expert
  int per_forward = 6;       // embedding, final norm, LM head, sampling (estimate)
  // Launches the GPU waits for before its first weight-streaming kernel can start, that kernel's
  // own included: in eager mode the host time they take is never hidden behind the weights. 1 for a
  // forward whose first kernels read weights; one MoE layer alone launches its router and dispatch
  // first (docs/references/moe-layer-measured.md#kernel-order).
  int launches_before_weights = 1;
};

struct Eagle3Spec {
  std::string target;         // the target model's name; "" when the file does not say (HF configs)
  int aux_hidden_states = 3;  // fc input is aux_hidden_states x target hidden (docs/references/models.md#eagle3-structure)
  int draft_vocab_size = 32000;
  // 3: EAGLE-3, the qkv projection reads [embedding; hidden] (2H). 1: an EAGLE-1/2 head, whose fc
  // fuses [embedding; feature] (aux_hidden_states 2) first, so qkv reads H and the vocabulary is
  // the target's (docs/references/models.md#eagle1-structure).
  int version = 3;
};

// The draft of `speculation.method: mtp`: one of the target's own multi-token-prediction modules
// (DeepSeek-V3 report, Sec. 2.2; docs/references/mtp.md#module). A module reads the embedding of
// the next token and the target's last hidden state, normalises both (RMSNorm), joins them with
// eh_proj (a 2H -> H linear), runs one decoder layer shaped like the target's, and ends in the
// target's LM head; the embedding and the head are the target's own.
struct MtpModuleSpec {
  std::string target;  // the model the module belongs to
  int modules = 1;     // modules shipped (`num_nextn_predict_layers`); each forward runs one of them
};

// The draft of `speculation.method: dflash`: a block drafter (DFlash, arXiv 2602.06036; z-lab/dflash
// dflash/model.py DFlashDraftModel; docs/references/specdec.md#dflash). A few decoder layers of its
// own widths; `fc` (taps x target hidden -> hidden, no bias) and an RMSNorm project the hidden states
// tapped from several target layers into context keys and values; the block's first slot holds the
// last verified token and the other block_size - 1 slots a mask token, all embedded by the target's
// embedding; one non-causal forward over the block yields block_size - 1 draft tokens through the
// target's LM head. It stores neither embedding nor LM head.
struct DflashSpec {
  std::string target;                 // the model it was trained for; "" when the file does not say
  std::vector<int> target_layer_ids;  // the tapped target layers (0-based), each read once per token
  int target_hidden_size = 0;         // width of each tap: the target's hidden size
  int block_size = 16;                // the block it was trained on (tokens verified per cycle)
  int mask_token_id = -1;             // the mask slot's token; recorded, not priced (-1: not stated)
  [[nodiscard]] int taps() const { return static_cast<int>(target_layer_ids.size()); }
};

struct TransformerSpec {
  std::string name;
  std::string description;
  int layers = 0;
  int dense_layers = 0;  // layers with a dense FFN; the rest are MoE
  int hidden_size = 0;
  int vocab_size = 0;
  int intermediate_size = 0;  // dense FFN width
  AttentionSpec attention;
  std::optional<MoeSpec> moe;
  WeightDtypes weights;
  // The multi-token-prediction modules' precisions when they differ from the model's (model file
  // `mtp_weights:`); empty: the same as `weights`.
  std::optional<WeightDtypes> mtp_weights;
  Dtype activation_dtype = Dtype::kBf16;
  // The dtype the serving engine stores the KV cache in (a scenario's engine.kv_cache_dtype, which
  // the scenario sets on target and draft alike); empty: the activation dtype, the engines' "auto".
  std::optional<Dtype> kv_cache_dtype;
  [[nodiscard]] Dtype kv_dtype() const { return kv_cache_dtype.value_or(activation_dtype); }
  CollectiveCounts collectives;
  KernelCounts kernels;
  std::optional<Eagle3Spec> eagle3;
  LayerAttention layer_attention;
  // Multi-token-prediction modules shipped with the model (`num_nextn_predict_layers`): what
  // `speculation.method: mtp` drafts with (mtp_draft()). The target's own forward never runs them.
  int mtp_layers = 0;
  std::optional<MtpModuleSpec> mtp_module;  // set on the draft mtp_draft() builds
  std::optional<DflashSpec> dflash;         // a DFlash block drafter
  std::string file;  // where it was loaded from, for messages; "" when built in code

  [[nodiscard]] int moe_layers() const { return layers - dense_layers; }
  [[nodiscard]] int full_attention_layers() const { return layers - layer_attention.linear_layers; }
  // Parameters of one full-attention layer's attention block (docs/references/models.md#layer-params formulas;
  // EAGLE-3 qkv reads 2H).
  [[nodiscard]] double attention_params() const;
  // One Gated DeltaNet layer (docs/references/models.md#hybrid-attention); 0 without linear layers.
  [[nodiscard]] double linear_attention_params() const;
  // Attention parameters averaged over all layers: attention_params() unless some layers are linear.
  [[nodiscard]] double mean_attention_params() const;
  // A sparse-attention layer's indexer (wq_b, wk, k_norm, weights_proj), counted inside
  // attention_params(); every TP rank holds all of it (vLLM's Indexer is replicated). 0 when dense.
  [[nodiscard]] double indexer_params() const;
  // The layers that run an indexer (attention.index_layers, else every full-attention layer; 0 when dense).
  [[nodiscard]] int indexer_layers() const;
  [[nodiscard]] double dense_mlp_params() const;  // 3 H I (SwiGLU)
  [[nodiscard]] double expert_params() const;     // 3 H I_expert
  [[nodiscard]] double lm_head_params() const;    // vocab (draft vocab for EAGLE-3) x H
  // A draft head's projection in front of its layer: EAGLE's fc (aux_hidden_states x H -> H), an
  // MTP module's eh_proj (2H -> H) or DFlash's fc (taps x target hidden -> H), all kept in bf16; 0
  // for a full model.
  [[nodiscard]] double draft_input_params() const;
  // EAGLE heads, MTP modules and DFlash drafters look tokens up in the target's embedding.
  [[nodiscard]] bool shares_target_embedding() const {
    return eagle3.has_value() || mtp_module.has_value() || dflash.has_value();
  }
  // A model whose LM head is its embedding matrix (`tie_word_embeddings`): stored and counted once;
  // the head's GEMV still reads all of it every forward.
  bool tied_embeddings = false;
  // Whether the model stores an embedding of its own, apart from its LM head.
  [[nodiscard]] bool stores_embedding() const { return !shares_target_embedding() && !tied_embeddings; }
  // MTP modules and DFlash drafters run the target's LM head: stored once, with the target.
  [[nodiscard]] bool borrows_target_lm_head() const { return mtp_module.has_value() || dflash.has_value(); }
  [[nodiscard]] double total_params() const;      // stored: no embedding in draft heads, no borrowed LM head
  [[nodiscard]] double active_params() const;     // per token
  [[nodiscard]] double weight_bytes() const;      // all weights as stored, scales included
  // KV-cache bytes one token adds to one full-attention layer, on one TP rank of `tp`, in kv_dtype().
  [[nodiscard]] double kv_bytes_per_token_layer(int tp) const;
  // The indexer key one token adds to one sparse-attention layer: index_head_dim FP8 bytes and one
  // fp32 scale per 128 of them (vLLM's DeepseekV32IndexerCache), on every rank; 0 when dense.
  [[nodiscard]] double indexer_bytes_per_token_layer() const;
  // Attention state one request reads in one layer at `context` tokens, averaged over the layers,
  // on one TP rank: context x kv_bytes_per_token_layer when every layer is full attention. A
  // sparse-attention layer reads every indexer key but only index_topk latents.
  [[nodiscard]] double attention_state_bytes_per_layer(int tp, double context) const;
  // What one request's attention state occupies in one layer at `context` tokens, averaged over the
  // layers, on one TP rank: attention_state_bytes_per_layer, except that a sparse-attention layer
  // keeps every token's latent, not only the ones it reads.
  [[nodiscard]] double attention_cache_bytes_per_layer(int tp, double context) const;
  // The recurrent state (and convolution inputs) one request keeps in one linear-attention layer,
  // averaged over all layers, on one TP rank: what a step writes back per token it keeps a state
  // for (0 without linear-attention layers).
  [[nodiscard]] double linear_state_bytes_per_layer(int tp) const;
  // Context tokens one layer's attention scores, averaged over the layers (linear layers: none;
  // sparse layers: at most index_topk).
  [[nodiscard]] double attended_context(double context) const;
  // Flops one query token spends in the indexers at `context` tokens, averaged over the layers, on
  // every rank: 2 x index_heads x index_head_dim per cached token (0 when dense).
  [[nodiscard]] double indexer_flops_per_token(double context) const;
};

// The draft of `speculation.method: mtp`, derived from the target: one MTP module, priced per
// forward as one decoder layer with the target's attention, FFN (MoE when the target is MoE: the
// DeepSeek-V3 module's layer 61 lies past first_k_dense_replace), dtypes and collectives, plus
// eh_proj and the target's full-vocabulary LM head (docs/references/mtp.md#module). Engines run this
// one layer k times for k draft steps (docs/references/mtp.md#engines). Throws specsim::Error (no
// location: callers add the key) when the target has no MTP layers or is itself a draft head.
[[nodiscard]] TransformerSpec mtp_draft(const TransformerSpec& target);

// The "draft" of `speculation.method: ngram`: none. Prompt lookup proposes the next tokens by
// matching the request's last n-gram against its own earlier tokens on the host, so the returned
// spec has no layers, weights or vocabulary, and no forward runs it (docs/model.md#ngram).
[[nodiscard]] TransformerSpec ngram_proposer();

// Tensor parallelism splits the attention heads over `tp` ranks, so tp must divide heads. KV heads
// are split when tp divides them, or replicated when there are fewer than tp and they divide it
// (each rank holds kv_heads / tp rounded up to 1: vLLM's QKVParallelLinear,
// https://github.com/vllm-project/vllm/blob/main/vllm/model_executor/layers/linear.py). Returns ""
// or a note on the replication; throws specsim::Error (no location: callers add the option or key)
// when the heads cannot be split. MLA shares one latent across heads: only heads is checked.
[[nodiscard]] std::string check_tensor_parallel(const TransformerSpec& model, int tp);

}  // namespace specsim
