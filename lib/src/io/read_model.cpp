// The reader of models/llm/*.yaml: a transformer's shape, its attention (GQA or MLA), how its
// weights are stored and run, and a drafter's own block (DFlash, EAGLE-3, EAGLE-1/2). A Hugging
// Face config.json, or a checkpoint directory holding one, goes to hf_config.cpp's reader instead.
#include <filesystem>
#include <string>

#include "io/hf_config.hpp"
#include "io/readers.hpp"
#include "model/scenario_bounds.hpp"
#include "specsim/model_spec.hpp"
#include "util/yaml_reader.hpp"

namespace specsim {

using detail::count;
using detail::kMaxCount;
using detail::YamlReader;
namespace fs = std::filesystem;

namespace {

Dtype read_dtype(YamlReader& r, const std::string& key, Dtype fallback) {
  if (!r.has(key)) {
    r.ignore(key);
    return fallback;
  }
  const std::string s = r.string(key);
  if (auto d = parse_dtype(s)) return *d;
  r.fail(key, "'" + s + "' is not one of: " + dtype_names());
}

// `attention:` of a models/llm file: GQA heads, or MLA's low-rank shapes (and sparse attention's
// indexer) for a model of `layers` layers.
AttentionSpec read_attention(YamlReader& a, int layers) {
  AttentionSpec at;
  const std::string kind = a.choice("kind", {"gqa", "mla"});
  at.kind = kind == "mla" ? AttentionKind::kMla : AttentionKind::kGqa;
  at.heads = count(a, "heads");
  at.kv_heads = count(a, "kv_heads");
  if (at.kind == AttentionKind::kGqa) {
    at.head_dim = count(a, "head_dim");
    if (at.heads % at.kv_heads != 0) {
      a.fail("kv_heads", "must divide heads (" + std::to_string(at.heads) + ")");
    }
  } else {
    at.head_dim = static_cast<int>(a.optional_integer("head_dim", 0, 0, kMaxCount));
    at.q_lora_rank = count(a, "q_lora_rank", 0);
    at.kv_lora_rank = count(a, "kv_lora_rank");
    at.qk_nope_head_dim = count(a, "qk_nope_head_dim");
    at.qk_rope_head_dim = count(a, "qk_rope_head_dim");
    at.v_head_dim = count(a, "v_head_dim");
    // DeepSeek Sparse Attention's indexer (docs/references/models.md#sparse-attention): all three keys or none.
    if (a.has("index_topk") || a.has("index_heads") || a.has("index_head_dim")) {
      at.index_topk = count(a, "index_topk");
      at.index_heads = count(a, "index_heads");
      at.index_head_dim = count(a, "index_head_dim");
      at.index_layers = static_cast<int>(a.optional_integer("index_layers", 0, 1, layers));
      if (at.q_lora_rank == 0) a.fail("index_topk", "sparse attention's indexer reads the query LoRA: set q_lora_rank > 0");
    }
  }
  a.finish();
  return at;
}

// One `weights:`-shaped block; each key missing falls back as `weights:` documents it.
WeightDtypes read_weight_dtypes(YamlReader& w, const WeightDtypes& fallback) {
  WeightDtypes d;
  d.attention = read_dtype(w, "attention", fallback.attention);
  d.dense_mlp = read_dtype(w, "dense_mlp", fallback.dense_mlp);
  d.experts = read_dtype(w, "experts", w.has("dense_mlp") ? d.dense_mlp : fallback.experts);
  d.shared_experts = read_dtype(w, "shared_experts", w.has("experts") ? d.experts : fallback.shared_experts);
  d.lm_head = read_dtype(w, "lm_head", fallback.lm_head);
  w.finish();
  return d;
}

// `weights:`, `mtp_weights:`, `activation_dtype`, `collectives:` and `kernels:`: how the model is
// stored and run.
void read_model_storage(YamlReader& r, TransformerSpec& m) {
  if (auto w = r.optional_child("weights")) m.weights = read_weight_dtypes(*w, WeightDtypes{});
  if (auto w = r.optional_child("mtp_weights")) {
    // The MTP module's own precisions where a checkpoint stores it apart (NVIDIA's NVFP4 DeepSeek-R1
    // keeps it BF16); unset keys follow `weights:`.
    if (m.mtp_layers < 1) r.fail("mtp_weights", "needs mtp_layers >= 1: the model has no MTP modules to store apart");
    m.mtp_weights = read_weight_dtypes(*w, m.weights);
  }
  m.activation_dtype = read_dtype(r, "activation_dtype", Dtype::kBf16);
  if (auto c = r.optional_child("collectives")) {
    m.collectives.allreduce_per_layer = static_cast<int>(c->optional_integer("allreduce_per_layer", 2, 0, 16));
    m.collectives.embedding_allreduce = c->optional_boolean("embedding_allreduce", true);
    m.collectives.lm_head_gather = c->optional_boolean("lm_head_gather", true);
    c->finish();
  }
  if (auto k = r.optional_child("kernels")) {
    m.kernels.per_dense_layer = static_cast<int>(k->optional_integer("per_dense_layer", 11, 1, 1000));
    m.kernels.per_moe_layer = static_cast<int>(k->optional_integer("per_moe_layer", 16, 1, 1000));
    m.kernels.per_forward = static_cast<int>(k->optional_integer("per_forward", 6, 0, 1000));
    m.kernels.launches_before_weights =
        static_cast<int>(k->optional_integer("launches_before_weights", 1, 1, 1000));
    const long total = static_cast<long>(m.dense_layers) * m.kernels.per_dense_layer +
                       static_cast<long>(m.moe_layers()) * m.kernels.per_moe_layer + m.kernels.per_forward;
    if (m.kernels.launches_before_weights > total) {
      k->fail("launches_before_weights", "is " + std::to_string(m.kernels.launches_before_weights) +
                                             ", more than the " + std::to_string(total) +
                                             " kernels the forward launches in all");
    }
    k->finish();
  }
}

// A DFlash block drafter's `dflash:` block (docs/references/specdec.md#dflash): the target layers
// its fc reads (at least one), their width, the block it was trained on and its mask token.
DflashSpec read_dflash_block(YamlReader& d, const TransformerSpec& m) {
  DflashSpec s;
  s.target = d.optional_string("target", "");
  for (long long id : d.integers("target_layer_ids", 0, kMaxCount)) s.target_layer_ids.push_back(static_cast<int>(id));
  s.target_hidden_size = static_cast<int>(d.optional_integer("target_hidden_size", m.hidden_size, 1, kMaxCount));
  const auto& b = *detail::find_scenario_bound("speculation.block_size");
  s.block_size = static_cast<int>(d.integer("block_size", static_cast<long long>(b.min), static_cast<long long>(b.max)));
  s.mask_token_id = static_cast<int>(d.optional_integer("mask_token_id", -1, -1, kMaxCount));
  d.finish();
  return s;
}

TransformerSpec read_model_yaml(YamlReader& r) {
  r.expect_header("llm");
  TransformerSpec m;
  m.name = r.string("name");
  m.description = r.optional_string("description", "");
  r.ignore("source");
  m.layers = count(r, "layers");
  m.dense_layers = count(r, "dense_layers", 0);
  if (m.dense_layers > m.layers) r.fail("dense_layers", "must not exceed layers (" + std::to_string(m.layers) + ")");
  m.hidden_size = count(r, "hidden_size");
  m.vocab_size = count(r, "vocab_size");
  {
    YamlReader a = r.child("attention");
    m.attention = read_attention(a, m.layers);
  }
  if (auto mlp = r.optional_child("mlp")) {
    m.intermediate_size = count(*mlp, "intermediate_size");
    mlp->finish();
  } else if (m.dense_layers > 0) {
    r.fail("mlp", "required when dense_layers > 0");
  }
  if (auto moe = r.optional_child("moe")) {
    MoeSpec e;
    e.experts = count(*moe, "experts");
    e.experts_per_token = count(*moe, "experts_per_token");
    if (e.experts_per_token > e.experts) moe->fail("experts_per_token", "must not exceed experts");
    e.shared_experts = count(*moe, "shared_experts", 0);
    e.expert_intermediate_size = count(*moe, "expert_intermediate_size");
    moe->finish();
    m.moe = e;
  } else if (m.dense_layers < m.layers) {
    r.fail("moe", "required when dense_layers < layers");
  }
  m.mtp_layers = static_cast<int>(r.optional_integer("mtp_layers", 0, 0, kMaxCount));
  m.tied_embeddings = r.optional_boolean("tied_embeddings", false);
  read_model_storage(r, m);
  if (r.has("eagle3") && r.has("eagle")) r.fail("eagle", "a head is EAGLE-1/2 (eagle) or EAGLE-3 (eagle3), not both");
  if (r.has("dflash") && (r.has("eagle3") || r.has("eagle"))) {
    r.fail("dflash", "a drafter is a DFlash block drafter or an EAGLE head, not both");
  }
  if (auto d = r.optional_child("dflash")) m.dflash = read_dflash_block(*d, m);
  if (auto e = r.optional_child("eagle3")) {
    Eagle3Spec s;
    s.target = e->string("target");
    s.aux_hidden_states = static_cast<int>(e->optional_integer("aux_hidden_states", 3, 1, 16));
    s.draft_vocab_size = count(*e, "draft_vocab_size");
    e->finish();
    m.eagle3 = s;
  }
  // An EAGLE-1/2 head (docs/references/models.md#eagle1-structure): its fc fuses [embedding;
  // feature], two H-wide inputs, and it predicts over the target's whole vocabulary.
  if (auto e = r.optional_child("eagle")) {
    Eagle3Spec s;
    s.version = 1;
    s.target = e->string("target");
    s.aux_hidden_states = 2;
    s.draft_vocab_size = m.vocab_size;
    e->finish();
    m.eagle3 = s;
  }
  r.finish();
  return m;
}

}  // namespace

TransformerSpec detail::load_model_file(const std::string& path) {
  // A Hugging Face checkpoint directory is read through its config.json.
  std::error_code ec;
  const std::string file = fs::is_directory(path, ec) ? (fs::path(path) / "config.json").string() : path;
  YamlReader r = YamlReader::load_file(file);
  TransformerSpec m = detail::looks_like_hf_config(r) ? detail::read_hf_config(r) : read_model_yaml(r);
  m.file = file;
  return m;
}

}  // namespace specsim
