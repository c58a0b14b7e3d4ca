#include "io/hf_config.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <regex>
#include <utility>

#include "specsim/plausibility.hpp"

namespace specsim::detail {

namespace {

namespace fs = std::filesystem;

// Counts in config.json: plausibility.hpp's row, as for the YAML model files.
const int kMaxCount = static_cast<int>(plausible_range(Magnitude::kCount).max);

int count(YamlReader& r, const std::string& key, int min = 1) {
  return static_cast<int>(r.integer(key, min, kMaxCount));
}

int optional_count(YamlReader& r, const std::string& key, int fallback, int min = 0) {
  return static_cast<int>(r.optional_integer(key, fallback, min, kMaxCount));
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// A JSON list of integers (layer indices or 0/1 flags); absent or null reads as empty.
std::vector<int> int_list(YamlReader& r, const std::string& key) {
  r.ignore(key);
  std::vector<int> out;
  if (!r.has(key)) return out;
  const YAML::Node v = r.node()[key];
  if (!v.IsSequence()) r.fail(key, "expected a list of integers");
  for (std::size_t i = 0; i < v.size(); ++i) {
    try {
      out.push_back(v[i].as<int>());
    } catch (const YAML::Exception&) {
      r.fail(key, "item " + std::to_string(i + 1) + ": expected an integer");
    }
  }
  return out;
}

// A JSON list of strings; absent or null reads as empty.
std::vector<std::string> string_list(YamlReader& r, const std::string& key) {
  r.ignore(key);
  std::vector<std::string> out;
  if (!r.has(key)) return out;
  const YAML::Node v = r.node()[key];
  if (!v.IsSequence()) r.fail(key, "expected a list of names");
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].IsScalar()) r.fail(key, "item " + std::to_string(i + 1) + ": expected a name");
    out.push_back(v[i].Scalar());
  }
  return out;
}

// ---- one family per model_type ------------------------------------------------------------------

enum class LayerAttention { kFull, kWindowed, kLinear };

// What each layer holds; the counts in TransformerSpec and the per-layer module names that
// quantization ignore lists are matched against both come from it.
struct LayerPlan {
  std::vector<bool> moe;
  std::vector<LayerAttention> attention;
  int window = 0;
};

// How a checkpoint names one module of each part below `model.layers.<i>.`: what ignore lists match.
struct ModuleNames {
  const char* attention = "self_attn.q_proj";
  const char* linear_attention = "linear_attn.in_proj_qkvz";
  const char* dense_mlp = "mlp.down_proj";
  const char* expert = "mlp.experts.0.down_proj";
  const char* shared_expert = "mlp.shared_experts.down_proj";
};

void read_gqa(YamlReader& r, TransformerSpec& m) {
  AttentionSpec& a = m.attention;
  a.heads = count(r, "num_attention_heads");
  a.kv_heads = static_cast<int>(r.optional_integer("num_key_value_heads", a.heads, 1, kMaxCount));
  // GQA shares each KV head among heads / kv_heads query heads, as the YAML reader checks.
  if (a.heads % a.kv_heads != 0) {
    r.fail("num_key_value_heads", "must divide num_attention_heads (" + std::to_string(a.heads) + ")");
  }
  a.head_dim = optional_count(r, "head_dim", m.hidden_size / a.heads, 1);
}

void all_dense(YamlReader& r, TransformerSpec& m) { m.intermediate_size = count(r, "intermediate_size"); }

// `layer_types` (newer transformers): one entry per layer. Returns false when absent.
bool read_layer_types(YamlReader& r, const TransformerSpec& m, LayerPlan& p, const std::string& window_key) {
  const std::vector<std::string> types = string_list(r, "layer_types");
  if (types.empty()) return false;
  if (static_cast<int>(types.size()) != m.layers) {
    r.fail("layer_types", "has " + std::to_string(types.size()) + " entries for " + std::to_string(m.layers) + " layers");
  }
  bool windowed = false;
  for (std::size_t i = 0; i < types.size(); ++i) {
    const std::string& t = types[i];
    if (t == "full_attention") {
      p.attention[i] = LayerAttention::kFull;
    } else if (t == "sliding_attention" || t == "chunked_attention") {
      p.attention[i] = LayerAttention::kWindowed;
      windowed = true;
    } else if (t == "linear_attention") {
      p.attention[i] = LayerAttention::kLinear;
    } else {
      r.fail("layer_types", "entry " + std::to_string(i) + " is '" + t +
                                "' (known: full_attention, sliding_attention, chunked_attention, linear_attention)");
    }
  }
  if (windowed) p.window = count(r, window_key);
  return true;
}

// Mistral and Mixtral: a non-null `sliding_window` applies to every layer.
void read_mistral_window(YamlReader& r, const TransformerSpec& m, LayerPlan& p) {
  if (!r.has("sliding_window")) return r.ignore("sliding_window");
  p.window = count(r, "sliding_window");
  p.attention.assign(m.layers, LayerAttention::kWindowed);
}

// Qwen2/Qwen3: sliding windows only when `use_sliding_window`, on layers from `max_window_layers` up.
void read_qwen_window(YamlReader& r, const TransformerSpec& m, LayerPlan& p) {
  if (read_layer_types(r, m, p, "sliding_window")) return;
  const bool on = r.optional_boolean("use_sliding_window", false);
  const int from = optional_count(r, "max_window_layers", m.layers);
  if (!on) return r.ignore("sliding_window");
  p.window = count(r, "sliding_window");
  for (int i = from; i < m.layers; ++i) p.attention[i] = LayerAttention::kWindowed;
}

// A shared expert whose width differs from a routed expert's is counted in routed-expert units.
int shared_expert_count(YamlReader& r, const std::string& key, int expert_width) {
  const int width = optional_count(r, key, 0);
  if (width % expert_width != 0) {
    r.fail(key, "= " + std::to_string(width) + " is not a multiple of the routed expert width " +
                    std::to_string(expert_width) + " (specsim counts shared experts in routed-expert units)");
  }
  return width / expert_width;
}

void read_llama(YamlReader& r, TransformerSpec& m, LayerPlan&) {
  read_gqa(r, m);
  all_dense(r, m);
}

void read_mistral(YamlReader& r, TransformerSpec& m, LayerPlan& p) {
  read_llama(r, m, p);
  read_mistral_window(r, m, p);
}

void read_qwen_dense(YamlReader& r, TransformerSpec& m, LayerPlan& p) {
  read_llama(r, m, p);
  read_qwen_window(r, m, p);
}

// Xiaomi's MiMo: Qwen2's shape with `num_nextn_predict_layers` MTP modules (each an input_proj
// over [hidden; embedding], one Qwen2 decoder layer, the target's head: docs/references/mtp.md#module),
// what vLLM's `mimo_mtp` drafts with.
void read_mimo(YamlReader& r, TransformerSpec& m, LayerPlan& p) {
  read_qwen_dense(r, m, p);
  m.mtp_layers = optional_count(r, "num_nextn_predict_layers", 0);
}

// Mixtral's attention and MoE keys, which MiniMax-M2 keeps: every layer MoE, experts as wide as
// intermediate_size.
MoeSpec read_mixtral_moe(YamlReader& r, TransformerSpec& m, LayerPlan& p) {
  read_gqa(r, m);
  MoeSpec e;
  e.experts = count(r, "num_local_experts");
  e.experts_per_token = count(r, "num_experts_per_tok");
  e.expert_intermediate_size = count(r, "intermediate_size");
  p.moe.assign(m.layers, true);
  return e;
}

void read_mixtral(YamlReader& r, TransformerSpec& m, LayerPlan& p) {
  m.moe = read_mixtral_moe(r, m, p);
  read_mistral_window(r, m, p);
}

// Qwen2-MoE, Qwen3-MoE and Qwen3-Next: a layer is MoE unless listed in `mlp_only_layers` or
// skipped by `decoder_sparse_step` (transformers' Qwen3MoeDecoderLayer).
void read_qwen_moe(YamlReader& r, TransformerSpec& m, LayerPlan& p) {
  read_gqa(r, m);
  m.intermediate_size = optional_count(r, "intermediate_size", 0);
  MoeSpec e;
  e.experts = count(r, "num_experts");
  e.experts_per_token = count(r, "num_experts_per_tok");
  e.expert_intermediate_size = count(r, "moe_intermediate_size");
  e.shared_experts = shared_expert_count(r, "shared_expert_intermediate_size", e.expert_intermediate_size);
  m.moe = e;
  const int step = optional_count(r, "decoder_sparse_step", 1, 1);
  const std::vector<int> dense = int_list(r, "mlp_only_layers");
  for (int i = 0; i < m.layers; ++i) {
    p.moe[i] = std::find(dense.begin(), dense.end(), i) == dense.end() && (i + 1) % step == 0;
  }
  if (std::find(p.moe.begin(), p.moe.end(), false) != p.moe.end() && m.intermediate_size == 0) {
    r.fail("intermediate_size", "required: some layers have a dense MLP");
  }
}

void read_qwen_moe_windowed(YamlReader& r, TransformerSpec& m, LayerPlan& p) {
  read_qwen_moe(r, m, p);
  read_qwen_window(r, m, p);
}

// The hybrid attention of Qwen3-Next and Qwen3.5/3.6: Gated DeltaNet layers with one
// full-attention layer every `full_attention_interval` (transformers' Qwen3NextConfig,
// Qwen3_5TextConfig), or as `layer_types` lists them; the full-attention layers gate their output
// (`attn_output_gate`, which Qwen3-Next's config leaves implicit).
void read_gated_delta_net(YamlReader& r, TransformerSpec& m, LayerPlan& p) {
  m.attention.output_gate = r.optional_boolean("attn_output_gate", true);
  if (!read_layer_types(r, m, p, "sliding_window")) {
    const int interval = count(r, "full_attention_interval");
    for (int i = 0; i < m.layers; ++i) {
      p.attention[i] = (i + 1) % interval == 0 ? LayerAttention::kFull : LayerAttention::kLinear;
    }
  }
  LinearAttentionSpec& l = m.layer_attention.linear;
  l.key_heads = count(r, "linear_num_key_heads");
  l.value_heads = count(r, "linear_num_value_heads");
  l.key_head_dim = count(r, "linear_key_head_dim");
  l.value_head_dim = count(r, "linear_value_head_dim");
  l.conv_kernel = count(r, "linear_conv_kernel_dim");
}

// Qwen3-Next: the hybrid attention over Qwen's MoE keys. Its config names no MTP module, yet the
// checkpoint ships one (`mtp.*`): vLLM's Qwen3NextMTP builds `num_nextn_predict_layers` of them,
// else 1 (vllm/model_executor/models/qwen3_next_mtp.py; docs/references/models.md#config-keys).
void read_qwen3_next(YamlReader& r, TransformerSpec& m, LayerPlan& p) {
  read_qwen_moe(r, m, p);
  read_gated_delta_net(r, m, p);
  m.mtp_layers = optional_count(r, "num_nextn_predict_layers", 1);
}

// Qwen3.5/3.6 (`text_config` of model_type qwen3_5 / qwen3_5_moe): Qwen3-Next's hybrid attention
// over a dense MLP or Qwen's MoE keys, the MTP modules counted by `mtp_num_hidden_layers`.
void read_qwen3_5_dense(YamlReader& r, TransformerSpec& m, LayerPlan& p) {
  read_llama(r, m, p);
  read_gated_delta_net(r, m, p);
  m.mtp_layers = optional_count(r, "mtp_num_hidden_layers", 0);
}

void read_qwen3_5_moe(YamlReader& r, TransformerSpec& m, LayerPlan& p) {
  read_qwen_moe(r, m, p);
  read_gated_delta_net(r, m, p);
  m.mtp_layers = optional_count(r, "mtp_num_hidden_layers", 0);
}

// DeepSeek's MoE keys (DeepSeek-V2/V3, Kimi-K2, GLM-4.5+): routed and shared experts, the dense
// FFN width, and the first dense layers; returns first_k_dense_replace.
int read_deepseek_moe(YamlReader& r, TransformerSpec& m) {
  m.intermediate_size = count(r, "intermediate_size");
  MoeSpec e;
  e.experts = count(r, "n_routed_experts");
  e.experts_per_token = count(r, "num_experts_per_tok");
  e.shared_experts = optional_count(r, "n_shared_experts", 0);
  e.expert_intermediate_size = count(r, "moe_intermediate_size");
  m.moe = e;
  return static_cast<int>(r.optional_integer("first_k_dense_replace", 0, 0, m.layers));
}

// DeepSeek-V2/V3 and Kimi-K2: MLA; layers from `first_k_dense_replace` on are MoE every
// `moe_layer_freq` (DeepSeek's modeling_deepseek.py).
void read_deepseek(YamlReader& r, TransformerSpec& m, LayerPlan& p) {
  AttentionSpec& a = m.attention;
  a.kind = AttentionKind::kMla;
  a.heads = count(r, "num_attention_heads");
  a.kv_heads = a.heads;  // one latent shared by all heads; num_key_value_heads is unused
  r.ignore("num_key_value_heads");
  a.q_lora_rank = optional_count(r, "q_lora_rank", 0);
  a.kv_lora_rank = count(r, "kv_lora_rank");
  a.qk_nope_head_dim = count(r, "qk_nope_head_dim");
  a.qk_rope_head_dim = count(r, "qk_rope_head_dim");
  a.v_head_dim = count(r, "v_head_dim");
  const int first = read_deepseek_moe(r, m);
  const int freq = optional_count(r, "moe_layer_freq", 1, 1);
  for (int i = 0; i < m.layers; ++i) p.moe[i] = i >= first && i % freq == 0;
  m.mtp_layers = optional_count(r, "num_nextn_predict_layers", 0);
}

// DeepSeek-V3.2 and GLM-5: DeepSeek-V3's MLA and MoE keys plus DeepSeek Sparse Attention's
// lightning indexer on every layer (`index_n_heads`, `index_head_dim`, `index_topk`; vLLM's Indexer
// in deepseek_v2.py, docs/references/models.md#sparse-attention).
void read_deepseek_sparse(YamlReader& r, TransformerSpec& m, LayerPlan& p) {
  read_deepseek(r, m, p);
  AttentionSpec& a = m.attention;
  if (a.q_lora_rank == 0) r.fail("q_lora_rank", "sparse attention's indexer projects its queries from the query LoRA, so it needs q_lora_rank > 0");
  a.index_heads = count(r, "index_n_heads");
  a.index_head_dim = count(r, "index_head_dim");
  a.index_topk = count(r, "index_topk");
  // GLM-5.1's `index_topk_pattern` (as its launches pass it through --hf-overrides) names, layer by
  // layer, those that run their own indexer (F) and those that reuse an earlier layer's picks (S).
  if (r.has("index_topk_pattern")) {
    const std::string pattern = r.string("index_topk_pattern");
    if (static_cast<int>(pattern.size()) != m.layers || pattern.find_first_not_of("FS") != std::string::npos) {
      r.fail("index_topk_pattern", "must be one letter per layer (" + std::to_string(m.layers) +
                                       "), F for a layer with its own indexer or S for one reusing an earlier layer's picks");
    }
    if (pattern.front() != 'F') r.fail("index_topk_pattern", "the first layer has no earlier picks to reuse: it must be F");
    a.index_layers = static_cast<int>(std::count(pattern.begin(), pattern.end(), 'F'));
  }
  // GLM-5.2 states its sharing as a frequency and offset instead; not modelled.
  if (optional_count(r, "index_topk_freq", 1, 1) != 1) {
    r.fail("index_topk_freq", "layers sharing another layer's top-k picks by frequency (GLM-5.2) are not modelled; "
                              "give index_topk_pattern (F or S per layer) instead");
  }
  r.ignore("index_skip_topk_offset");
}

// GLM-4.5/4.6/4.7: DeepSeek's MoE keys over plain GQA attention (transformers' Glm4MoeConfig).
void read_glm4_moe(YamlReader& r, TransformerSpec& m, LayerPlan& p) {
  read_gqa(r, m);
  const int first = read_deepseek_moe(r, m);
  for (int i = 0; i < m.layers; ++i) p.moe[i] = i >= first;
  m.mtp_layers = optional_count(r, "num_nextn_predict_layers", 0);
}

// gpt-oss: every layer MoE; sliding and full attention alternate (`layer_types`, or transformers'
// default of even layers sliding); one learned sink per head.
void read_gpt_oss(YamlReader& r, TransformerSpec& m, LayerPlan& p) {
  read_gqa(r, m);
  m.attention.sinks = true;
  MoeSpec e;
  e.experts = count(r, "num_local_experts");
  e.experts_per_token = r.has("num_experts_per_tok") ? count(r, "num_experts_per_tok") : count(r, "experts_per_token");
  r.ignore("experts_per_token");
  e.expert_intermediate_size = count(r, "intermediate_size");
  m.moe = e;
  p.moe.assign(m.layers, true);
  if (!read_layer_types(r, m, p, "sliding_window")) {
    for (int i = 0; i < m.layers; i += 2) p.attention[i] = LayerAttention::kWindowed;
    p.window = count(r, "sliding_window");
  }
}

// Llama-4: MoE on `moe_layers` (else every `interleave_moe_layer_step`-th layer) with one shared
// expert; chunked attention on RoPE layers, full attention on the NoPE ones (`no_rope_layers`
// flags 1 = RoPE; default: every 4th layer NoPE), per transformers' Llama4TextConfig.
void read_llama4(YamlReader& r, TransformerSpec& m, LayerPlan& p) {
  read_gqa(r, m);
  m.intermediate_size = count(r, "intermediate_size_mlp");
  MoeSpec e;
  e.experts = count(r, "num_local_experts");
  e.experts_per_token = count(r, "num_experts_per_tok");
  e.expert_intermediate_size = count(r, "intermediate_size");
  e.shared_experts = 1;
  m.moe = e;
  const std::vector<int> moe_layers = int_list(r, "moe_layers");
  const int step = optional_count(r, "interleave_moe_layer_step", 1, 1);
  for (int i = 0; i < m.layers; ++i) {
    p.moe[i] = moe_layers.empty() ? (i + 1) % step == 0
                                  : std::find(moe_layers.begin(), moe_layers.end(), i) != moe_layers.end();
  }
  if (read_layer_types(r, m, p, "attention_chunk_size")) return;
  if (!r.has("attention_chunk_size")) return r.ignore("attention_chunk_size");
  p.window = count(r, "attention_chunk_size");
  std::vector<int> rope = int_list(r, "no_rope_layers");
  if (rope.empty()) {
    for (int i = 0; i < m.layers; ++i) rope.push_back((i + 1) % 4 != 0 ? 1 : 0);
  }
  if (static_cast<int>(rope.size()) != m.layers) {
    r.fail("no_rope_layers", "has " + std::to_string(rope.size()) + " entries for " + std::to_string(m.layers) + " layers");
  }
  for (int i = 0; i < m.layers; ++i) p.attention[i] = rope[i] ? LayerAttention::kWindowed : LayerAttention::kFull;
}

// MiniMax-M2: every layer MoE; `num_mtp_modules` MTP modules when `use_mtp`.
void read_minimax_m2(YamlReader& r, TransformerSpec& m, LayerPlan& p) {
  MoeSpec e = read_mixtral_moe(r, m, p);
  e.shared_experts = shared_expert_count(r, "shared_intermediate_size", e.expert_intermediate_size);
  m.moe = e;
  if (r.optional_boolean("use_mtp", false)) m.mtp_layers = optional_count(r, "num_mtp_modules", 0);
  r.ignore("num_mtp_modules");
}

using FamilyReader = void (*)(YamlReader&, TransformerSpec&, LayerPlan&);

struct Family {
  const char* model_type;
  FamilyReader read;
  ModuleNames modules;
};

// The dispatch table: read_hf_config looks the model_type up here, and its error lists these.
const Family kFamilies[] = {
    {"llama", read_llama, {}},
    {"mistral", read_mistral, {}},
    {"mixtral", read_mixtral, {.expert = "block_sparse_moe.experts.0.w2"}},
    {"qwen2", read_qwen_dense, {}},
    {"qwen2_moe", read_qwen_moe_windowed, {.shared_expert = "mlp.shared_expert.down_proj"}},
    {"qwen3", read_qwen_dense, {}},
    {"mimo", read_mimo, {}},
    {"qwen3_moe", read_qwen_moe_windowed, {}},
    {"qwen3_next", read_qwen3_next, {.shared_expert = "mlp.shared_expert.down_proj"}},
    // Qwen3.5/3.6 split Qwen3-Next's fused in_proj_qkvz into in_proj_qkv and in_proj_z.
    {"qwen3_5_text", read_qwen3_5_dense, {.linear_attention = "linear_attn.in_proj_qkv"}},
    {"qwen3_5_moe_text", read_qwen3_5_moe,
     {.linear_attention = "linear_attn.in_proj_qkv", .shared_expert = "mlp.shared_expert.down_proj"}},
    {"deepseek_v2", read_deepseek, {}},
    {"deepseek_v3", read_deepseek, {}},
    {"kimi_k2", read_deepseek, {}},
    {"glm4_moe", read_glm4_moe, {}},
    // GLM-4.7-Flash: DeepSeek-V3's MLA attention and MoE keys under GLM's name (transformers'
    // Glm4MoeLiteConfig), unlike glm4_moe's GQA.
    {"glm4_moe_lite", read_deepseek, {}},
    {"deepseek_v32", read_deepseek_sparse, {}},
    {"glm_moe_dsa", read_deepseek_sparse, {}},
    {"gpt_oss", read_gpt_oss, {.expert = "mlp.experts.down_proj"}},
    {"llama4_text", read_llama4,
     {.dense_mlp = "feed_forward.down_proj",
      .expert = "feed_forward.experts.down_proj",
      .shared_expert = "feed_forward.shared_expert.down_proj"}},
    {"minimax_m2", read_minimax_m2, {.expert = "block_sparse_moe.experts.0.w2"}},
};

// ---- quantization_config ------------------------------------------------------------------------

// Module-name patterns as quantizers write them: "re:<regex>" (compressed-tensors; matched from
// the start, as Python's re.match does), globs with '*' (ModelOpt, transformers), or plain names
// that match whole dotted components ("gate" matches "mlp.gate", not "gate_proj"). Multimodal
// checkpoints prefix the language model ("language_model.model.layers...", "model.language_model.
// layers..."); those prefixes are dropped so one spelling of module names serves all.
class ModulePatterns {
 public:
  // The patterns `key` of `r` lists; one that is not a regular expression is refused there.
  ModulePatterns(YamlReader& r, const std::string& key, const std::vector<std::string>& patterns) {
    add(r, key, patterns);
  }
  void add(YamlReader& r, const std::string& key, const std::vector<std::string>& patterns) {
    for (std::string p : patterns) {
      if (p.starts_with("re:")) {
        try {
          regexes_.emplace_back("^(?:" + p.substr(3) + ")");
        } catch (const std::regex_error& e) {
          r.fail(key, "'" + p + "' is not a regular expression specsim can read (" + e.what() + ")");
        }
        continue;
      }
      for (const char* prefix : {"model.language_model.", "language_model.model.", "language_model."}) {
        if (p.starts_with(prefix)) {
          p = (std::string(prefix) == "language_model." ? "" : "model.") + p.substr(std::string(prefix).size());
          break;
        }
      }
      while (!p.empty() && p.back() == '.') p.pop_back();
      std::string rx;
      for (const char c : p) {
        if (c == '*') rx += ".*";
        else if (c == '?') rx += '.';
        else if (std::string("\\^$.|+()[]{}").find(c) != std::string::npos) rx += std::string("\\") + c;
        else rx += c;
      }
      const bool glob = p.find_first_of("*?") != std::string::npos;
      regexes_.emplace_back(glob ? "^" + rx + "(\\..*)?$" : "(^|\\.)" + rx + "(\\.|$)");
    }
  }
  [[nodiscard]] bool matches(const std::string& module) const {
    return std::any_of(regexes_.begin(), regexes_.end(), [&](const std::regex& r) { return std::regex_search(module, r); });
  }

 private:
  std::vector<std::regex> regexes_;
};

// The dtype a quantization method stores one module in (BF16 when it leaves the module alone).
using ModuleDtype = std::function<Dtype(const std::string& module)>;

// Weight-only integer formats of AWQ, GPTQ and compressed-tensors; a group size of -1 or 0 means
// one scale per output channel.
std::optional<Dtype> integer_dtype(int bits, int group_size) {
  if (bits == 8) return Dtype::kInt8;
  if (bits != 4) return std::nullopt;
  switch (group_size) {
    case -1:
    case 0: return Dtype::kInt4Channel;
    case 32: return Dtype::kInt4G32;
    case 64: return Dtype::kInt4G64;
    case 128: return Dtype::kInt4G128;
    default: return std::nullopt;
  }
}

// compressed-tensors (llm-compressor): each config_groups entry quantizes the modules its
// `targets` name ("Linear" = every linear layer) with its `weights` scheme; `ignore` keeps modules
// unquantized. A target naming a module wins over the "Linear" class, as in compressed-tensors.
Dtype compressed_tensors_scheme(YamlReader& w) {
  const int bits = static_cast<int>(w.integer("num_bits", 1, 64));
  const std::string type = w.optional_choice("type", {"int", "float"}, "int");
  const int group = static_cast<int>(w.optional_integer("group_size", 0, -1, kMaxCount));
  const std::string strategy = w.optional_string("strategy", "");
  std::optional<Dtype> d;
  if (type == "float" && bits == 8) d = Dtype::kFp8;
  if (type == "float" && bits == 4 && group == 16) d = Dtype::kNvfp4;
  if (type == "float" && bits == 4 && group == 32) d = Dtype::kMxfp4;
  if (type == "int") d = integer_dtype(bits, strategy == "channel" ? -1 : group);
  if (!d) {
    w.fail("num_bits", "= " + std::to_string(bits) + " with type " + type + ", group_size " + std::to_string(group) +
                           (strategy.empty() ? "" : ", strategy " + strategy) +
                           " is not a scheme specsim models (known: float 8 bits; float 4 bits in groups of 16 "
                           "(NVFP4) or 32 (MXFP4); int 8 bits; int 4 bits per channel or in groups of 32, 64, 128)");
  }
  return *d;
}

ModuleDtype read_compressed_tensors(YamlReader& q) {
  struct Group {
    ModulePatterns named;
    bool all_linear;
    Dtype dtype;
  };
  std::vector<Group> groups;
  YamlReader cg = q.child("config_groups");
  if (!cg.node().IsMap()) cg.fail_here("expected a mapping of scheme groups");
  for (const auto& kv : cg.node()) {
    YamlReader g = cg.child(kv.first.Scalar());
    std::vector<std::string> targets = string_list(g, "targets");
    const bool all_linear = std::erase(targets, std::string("Linear")) > 0;
    std::optional<YamlReader> w = g.optional_child("weights");
    const Dtype d = w ? compressed_tensors_scheme(*w) : Dtype::kBf16;
    groups.push_back({ModulePatterns(g, "targets", targets), all_linear, d});
  }
  const ModulePatterns ignore(q, "ignore", string_list(q, "ignore"));
  return [groups, ignore](const std::string& module) {
    if (ignore.matches(module)) return Dtype::kBf16;
    for (const Group& g : groups) {
      if (g.named.matches(module)) return g.dtype;
    }
    for (const Group& g : groups) {
      if (g.all_linear) return g.dtype;
    }
    return Dtype::kBf16;
  };
}

// NVIDIA ModelOpt: one algorithm for every linear layer but the excluded ones, written as
// quantization_config (quant_method modelopt; `ignore` or `exclude_modules`) or in a separate
// hf_quant_config.json (`quantization.exclude_modules`).
ModuleDtype read_modelopt(YamlReader& q) {
  const std::string algo = q.string("quant_algo");
  Dtype d = Dtype::kBf16;
  if (algo == "FP8") d = Dtype::kFp8;
  else if (algo == "NVFP4") d = Dtype::kNvfp4;
  else q.fail("quant_algo", "'" + algo + "' is not modelled (known: FP8, NVFP4)");
  ModulePatterns exclude(q, "exclude_modules", string_list(q, "exclude_modules"));
  exclude.add(q, "ignore", string_list(q, "ignore"));
  return [d, exclude](const std::string& module) { return exclude.matches(module) ? Dtype::kBf16 : d; };
}

// transformers' FineGrainedFP8 (DeepSeek's `weight_block_size` [128, 128]) and per-tensor FP8:
// every linear layer but `modules_to_not_convert` and the LM head, which transformers' quantizers
// leave unconverted by default.
ModuleDtype read_fp8(YamlReader& q) {
  const ModulePatterns keep(q, "modules_to_not_convert", string_list(q, "modules_to_not_convert"));
  return [keep](const std::string& module) {
    return module == "lm_head" || keep.matches(module) ? Dtype::kBf16 : Dtype::kFp8;
  };
}

// MXFP4 (gpt-oss): transformers' Mxfp4 quantizer stores only the MoE experts in MXFP4.
ModuleDtype read_mxfp4(YamlReader& q) {
  const ModulePatterns keep(q, "modules_to_not_convert", string_list(q, "modules_to_not_convert"));
  return [keep](const std::string& module) {
    return module.find(".experts") != std::string::npos && !keep.matches(module) ? Dtype::kMxfp4 : Dtype::kBf16;
  };
}

// AWQ and GPTQ: `bits` in groups of `group_size` for every linear layer in the decoder; the LM
// head stays BF16 unless GPTQ's `lm_head` is true; AWQ's `modules_to_not_convert` stay BF16.
ModuleDtype read_awq_gptq(YamlReader& q) {
  const int bits = static_cast<int>(q.integer("bits", 1, 64));
  const int group = static_cast<int>(q.optional_integer("group_size", 128, -1, kMaxCount));
  const std::optional<Dtype> d = integer_dtype(bits, group);
  if (!d) {
    q.fail("bits", "= " + std::to_string(bits) + " in groups of " + std::to_string(group) +
                       " is not modelled (known: 8 bits; 4 bits per channel (-1) or in groups of 32, 64, 128)");
  }
  // GPTQ's `modules_in_block_to_quantize`: lists (of lists) of names inside one decoder layer;
  // when given, only those are quantized.
  std::vector<std::string> in_block;
  q.ignore("modules_in_block_to_quantize");
  if (q.has("modules_in_block_to_quantize")) {
    const std::function<void(const YAML::Node&)> flatten = [&](const YAML::Node& n) {
      if (n.IsScalar()) in_block.push_back(n.Scalar());
      else if (n.IsSequence()) for (const auto& item : n) flatten(item);
      else q.fail("modules_in_block_to_quantize", "expected lists of module names");
    };
    flatten(q.node()["modules_in_block_to_quantize"]);
  }
  const bool head = q.optional_boolean("lm_head", false);
  const ModulePatterns keep(q, "modules_to_not_convert", string_list(q, "modules_to_not_convert"));
  const Dtype dtype = *d;
  return [dtype, head, keep, in_block](const std::string& module) {
    if (module == "lm_head") return head ? dtype : Dtype::kBf16;
    if (keep.matches(module)) return Dtype::kBf16;
    if (in_block.empty()) return dtype;
    // model.layers.<i>.<name in block>
    const std::size_t dot = module.find('.', std::string("model.layers.").size());
    const std::string inner = dot == std::string::npos ? module : module.substr(dot + 1);
    return std::find(in_block.begin(), in_block.end(), inner) != in_block.end() ? dtype : Dtype::kBf16;
  };
}

struct QuantMethod {
  const char* name;
  ModuleDtype (*read)(YamlReader&);
};

const QuantMethod kQuantMethods[] = {
    {"compressed-tensors", read_compressed_tensors},
    {"modelopt", read_modelopt},
    {"fp8", read_fp8},
    {"mxfp4", read_mxfp4},
    {"awq", read_awq_gptq},
    {"gptq", read_awq_gptq},
};

ModuleDtype read_quantization_config(YamlReader& q) {
  const std::string method = q.string("quant_method");
  for (const QuantMethod& m : kQuantMethods) {
    if (method == m.name) return m.read(q);
  }
  std::vector<std::string> known;
  for (const QuantMethod& m : kQuantMethods) known.emplace_back(m.name);
  q.fail("quant_method", "'" + method + "' is not supported (known: " + join(known) + ")");
}

// Each part's dtype is the one most of its layers hold (ties: the first layer's), so a part
// left BF16 in one dense layer only, as many checkpoints do, reads as quantized.
WeightDtypes part_dtypes(const ModuleDtype& dtype_of, const TransformerSpec& m, const LayerPlan& p, const ModuleNames& names) {
  const auto layer = [](int i, const char* module) { return "model.layers." + std::to_string(i) + "." + module; };
  const auto majority = [&](auto holds, auto module) {
    std::vector<std::pair<Dtype, int>> votes;
    for (int i = 0; i < m.layers; ++i) {
      if (!holds(i)) continue;
      const Dtype d = dtype_of(layer(i, module(i)));
      auto it = std::find_if(votes.begin(), votes.end(), [&](const auto& v) { return v.first == d; });
      if (it == votes.end()) votes.emplace_back(d, 1);
      else ++it->second;
    }
    if (votes.empty()) return dtype_of(layer(0, module(0)));
    return std::max_element(votes.begin(), votes.end(), [](const auto& a, const auto& b) { return a.second < b.second; })->first;
  };
  const auto fixed = [](const char* name) { return [name](int) { return name; }; };
  WeightDtypes w;
  w.attention = majority([](int) { return true; }, [&](int i) {
    return p.attention[i] == LayerAttention::kLinear ? names.linear_attention : names.attention;
  });
  w.dense_mlp = majority([&](int i) { return !p.moe[i]; }, fixed(names.dense_mlp));
  w.experts = majority([&](int i) { return bool(p.moe[i]); }, fixed(names.expert));
  w.shared_experts = majority([&](int i) { return bool(p.moe[i]); }, fixed(names.shared_expert));
  w.lm_head = dtype_of("lm_head");
  return w;
}

// ---- EAGLE heads --------------------------------------------------------------------------------

// An EAGLE-3 head names itself in `architectures` (LlamaForCausalLMEagle3) or carries
// `draft_vocab_size`; an architecture naming EAGLE without the 3 is an EAGLE-1/2 head
// (docs/references/models.md#eagle3-structure, #eagle1-structure).
void read_eagle(YamlReader& root, YamlReader& r, TransformerSpec& m) {
  bool eagle = false;
  bool eagle3 = r.has("draft_vocab_size");
  for (const std::string& a : string_list(root, "architectures")) {
    eagle = eagle || lower(a).find("eagle") != std::string::npos;
    eagle3 = eagle3 || lower(a).find("eagle3") != std::string::npos;
  }
  if (!eagle && !eagle3) return;
  Eagle3Spec e;
  if (eagle3) {
    e.draft_vocab_size = optional_count(r, "draft_vocab_size", m.vocab_size, 1);
    if (auto c = r.optional_child("eagle_config")) {
      const std::vector<int> aux = int_list(*c, "eagle_aux_hidden_state_layer_ids");
      if (!aux.empty()) e.aux_hidden_states = static_cast<int>(aux.size());
    }
    const int target_hidden = optional_count(r, "target_hidden_size", m.hidden_size, 1);
    if (target_hidden != m.hidden_size) {
      r.fail("target_hidden_size", "= " + std::to_string(target_hidden) + " differs from hidden_size " +
                                       std::to_string(m.hidden_size) +
                                       ": a head whose fc reads another width than it runs in is not modelled");
    }
  } else {
    e.version = 1;
    e.aux_hidden_states = 2;  // fc reads [embedding; feature]
    e.draft_vocab_size = m.vocab_size;
  }
  m.eagle3 = e;
}

// ---- DFlash block drafters ----------------------------------------------------------------------

// A DFlash key, in `dflash_config` or beside the shape: z-lab's checkpoints keep target_layer_ids and
// mask_token_id in dflash_config and block_size at the top; others keep all three at the top
// (z-lab/dflash model.py _draft_value reads dflash_config first, then the config itself).
std::optional<YamlReader> dflash_key_at(YamlReader& r, const std::string& key) {
  if (r.has("dflash_config")) {
    YamlReader c = r.child("dflash_config");
    if (c.has(key)) return c;
  }
  if (r.has(key)) return r;
  return std::nullopt;
}

// A DFlash drafter names DFlashDraftModel in `architectures` or carries `dflash_config`
// (docs/references/specdec.md#dflash). Its taps are required, as z-lab's DFlashDraftModel requires
// them; its block defaults to 16 as there. DFlash 2 (convolutions and a candidate selector) is
// refused: its extra weights are not modelled.
void read_dflash(YamlReader& root, YamlReader& r, TransformerSpec& m) {
  bool dflash = r.has("dflash_config");
  for (const std::string& a : string_list(root, "architectures")) {
    if (lower(a).find("dflash2") != std::string::npos) {
      root.fail("architectures", "'" + a + "' is a DFlash 2 drafter (dynamic convolutions and a candidate selector), "
                                 "which specsim does not model; a DFlash (1) drafter is DFlashDraftModel");
    }
    dflash = dflash || lower(a).find("dflash") != std::string::npos;
  }
  if (!dflash) return;
  DflashSpec d;
  const auto taps_at = dflash_key_at(r, "target_layer_ids");
  if (!taps_at) {
    r.fail("dflash_config", "a DFlash drafter needs target_layer_ids (in dflash_config or beside the shape): the "
                            "target layers whose hidden states its fc projects");
  }
  YamlReader taps = *taps_at;
  d.target_layer_ids = int_list(taps, "target_layer_ids");
  if (d.target_layer_ids.empty()) taps.fail("target_layer_ids", "is empty: a DFlash drafter taps at least one target layer");
  for (int id : d.target_layer_ids) {
    if (id < 0) taps.fail("target_layer_ids", "layer " + std::to_string(id) + " is negative");
  }
  if (auto b = dflash_key_at(r, "block_size")) d.block_size = count(*b, "block_size", 2);
  if (auto t = dflash_key_at(r, "mask_token_id")) d.mask_token_id = optional_count(*t, "mask_token_id", -1, 0);
  d.target_hidden_size = optional_count(r, "target_hidden_size", m.hidden_size, 1);
  m.dflash = d;
  m.kernels.per_forward += 2;  // fc and hidden_norm before the layers
}

// A checkpoint directory's config.json is named after its directory ("Qwen3-8B"); a config kept
// in the data directory as models/llm/<name>.yaml (JSON is YAML) after its stem, as the name a
// scenario resolves it by; a saved copy after its stem less a ".config" ("qwen3-8b.config.json" is
// "qwen3-8b"), so reports do not print the file name as the model's.
std::string model_name(const std::string& file) {
  const fs::path p(file);
  if (p.filename() == "config.json" && !p.parent_path().filename().empty()) return p.parent_path().filename().string();
  if (p.extension() == ".yaml" || p.extension() == ".yml") return p.stem().string();
  if (p.extension() != ".json") return p.filename().string();
  std::string stem = p.stem().string();
  if (stem.ends_with(".config") && stem.size() > 7) stem.resize(stem.size() - 7);
  return stem;
}

}  // namespace

bool looks_like_hf_config(const YamlReader& r) {
  return !r.has("schema_version") && (r.has("model_type") || r.has("text_config"));
}

std::vector<std::string> hf_model_types() {
  std::vector<std::string> out;
  for (const Family& f : kFamilies) out.emplace_back(f.model_type);
  return out;
}

TransformerSpec read_hf_config(YamlReader& root) {
  // Multimodal checkpoints (Kimi-K2.5, Llama-4) nest the language model under text_config.
  YamlReader r = root;
  if (root.has("text_config")) r = root.child("text_config");
  const std::string type = r.string("model_type");
  const auto family = std::find_if(std::begin(kFamilies), std::end(kFamilies),
                                   [&](const Family& f) { return type == f.model_type; });
  if (family == std::end(kFamilies)) {
    r.fail("model_type", "'" + type + "' is not supported (known: " + join(hf_model_types()) + ")");
  }
  TransformerSpec m;
  m.file = root.file();
  m.name = model_name(root.file());
  m.description = "Hugging Face config.json (model_type " + type + ")";
  m.layers = count(r, "num_hidden_layers");
  m.hidden_size = count(r, "hidden_size");
  m.vocab_size = count(r, "vocab_size");
  LayerPlan plan;
  plan.moe.assign(m.layers, false);
  plan.attention.assign(m.layers, LayerAttention::kFull);
  family->read(r, m, plan);

  m.dense_layers = static_cast<int>(std::count(plan.moe.begin(), plan.moe.end(), false));
  m.layer_attention.windowed_layers =
      static_cast<int>(std::count(plan.attention.begin(), plan.attention.end(), LayerAttention::kWindowed));
  m.layer_attention.linear_layers =
      static_cast<int>(std::count(plan.attention.begin(), plan.attention.end(), LayerAttention::kLinear));
  if (m.layer_attention.windowed_layers > 0) m.layer_attention.window = plan.window;
  if (m.layer_attention.linear_layers == m.layers) r.fail("num_hidden_layers", "no layer has full attention");

  // The unquantized weights' dtype (torch_dtype; `dtype` in newer transformers). bfloat16 and float16
  // are 2 bytes, as specsim stores them; a float32 checkpoint is served in 16 bits by the engines'
  // default (vLLM's and SGLang's dtype "auto" casts float32 to a 16-bit type). Anything else is not a
  // weight dtype a config states: an int8 or fp8 checkpoint says so in its quantization_config.
  for (YamlReader* at : {&r, &root}) {
    for (const char* key : {"torch_dtype", "dtype"}) {
      if (!at->has(key)) continue;
      const std::string d = at->string(key);
      if (d != "bfloat16" && d != "float16" && d != "float32") {
        at->fail(key, "'" + d + "' is not a weight dtype specsim reads (bfloat16, float16, float32; a quantized "
                      "checkpoint states its format in quantization_config)");
      }
    }
  }
  // The quantization_config sits beside the shape (under text_config for Kimi-K2.5) or at the top;
  // ModelOpt checkpoints may instead ship hf_quant_config.json next to config.json.
  std::optional<ModuleDtype> dtype_of;
  for (YamlReader* at : {&r, &root}) {
    if (!dtype_of && at->has("quantization_config")) {
      YamlReader q = at->child("quantization_config");
      dtype_of = read_quantization_config(q);
    }
  }
  const fs::path sibling = fs::path(root.file()).parent_path() / "hf_quant_config.json";
  std::error_code ec;
  if (!dtype_of && fs::exists(sibling, ec)) {
    YamlReader hq = YamlReader::load_file(sibling.string());
    YamlReader q = hq.child("quantization");
    dtype_of = read_modelopt(q);
  }
  if (dtype_of) m.weights = part_dtypes(*dtype_of, m, plan, family->modules);

  // The LM head shares the embedding's matrix (transformers' default: not tied). A multimodal
  // checkpoint may state it beside text_config rather than in it.
  for (YamlReader* at : {&r, &root}) {
    if (at->has("tie_word_embeddings")) {
      m.tied_embeddings = at->boolean("tie_word_embeddings");
      break;
    }
  }
  read_dflash(root, r, m);
  if (!m.dflash) read_eagle(root, r, m);  // a DFlash config may carry an EAGLE-3 converter's keys
  return m;  // unknown keys are expected in config.json: it carries far more than the cost model uses
}

}  // namespace specsim::detail
