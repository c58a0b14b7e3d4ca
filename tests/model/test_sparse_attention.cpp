// DeepSeek Sparse Attention (docs/references/models.md#sparse-attention): the lightning indexer
// reads every cached indexer key, the MLA attention reads the latents of the index_topk tokens it
// picked, and the cache keeps both for every token. Worked on DeepSeek-V3.2 against DeepSeek-V3
// (models/llm/deepseek-v3.2.yaml, deepseek-v3.yaml: the same shape but the indexer) at TP8.
#include <catch2/catch.hpp>

#include <algorithm>

#include "specsim/compute_model.hpp"
#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"

using Catch::Matchers::WithinRel;

namespace {
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

specsim::TransformerSpec model(const char* name) {
  return specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, name));
}

// Per layer: the MLA latent (kv_lora 512 + rope 64) in BF16 is 1,152 B a token; the indexer key is
// 128 FP8 bytes + one fp32 scale = 132 B a token.
constexpr double kLatent = 1'152.0;
constexpr double kIndexerKey = 132.0;
// Indexer weights a layer: wq_b 1536 x 64 x 128 = 12,582,912; wk 7168 x 128 = 917,504;
// weights_proj 7168 x 64 = 458,752; k_norm 2 x 128 = 256: 13,959,424.
constexpr double kIndexerParams = 13'959'424.0;
}  // namespace

TEST_CASE("sparse attention: DeepSeek-V3.2's indexer on DeepSeek-V3's shape", "[sparse]") {
  const specsim::TransformerSpec v32 = model("deepseek-v3.2");
  const specsim::TransformerSpec v3 = model("deepseek-v3");
  REQUIRE(v32.attention.sparse());
  REQUIRE_FALSE(v3.attention.sparse());
  CHECK(v32.indexer_params() == kIndexerParams);
  CHECK(v3.indexer_params() == 0.0);
  CHECK(v32.indexer_bytes_per_token_layer() == kIndexerKey);
  // 61 indexers: 671.0B + 0.85B (the model card's 685B adds the 14B MTP module).
  CHECK_THAT(v32.total_params() - v3.total_params(), WithinRel(61 * kIndexerParams, 1e-12));

  SECTION("below index_topk the attention reads the whole context, the indexer too") {
    CHECK(v32.attended_context(1000) == 1000);
    CHECK(v32.attention_state_bytes_per_layer(8, 1000) == 1000 * (kLatent + kIndexerKey));
    CHECK(v32.attention_cache_bytes_per_layer(8, 1000) == 1000 * (kLatent + kIndexerKey));
  }
  SECTION("at 100k tokens the attention reads 2,048 latents and all 100k indexer keys; the cache keeps all") {
    CHECK(v32.attended_context(100'000) == 2048);
    CHECK(v32.attention_state_bytes_per_layer(8, 100'000) == 2048 * kLatent + 100'000 * kIndexerKey);
    CHECK(v32.attention_cache_bytes_per_layer(8, 100'000) == 100'000 * (kLatent + kIndexerKey));
    // The dense model reads and keeps every latent.
    CHECK(v3.attention_state_bytes_per_layer(8, 100'000) == 100'000 * kLatent);
    CHECK(v3.attention_cache_bytes_per_layer(8, 100'000) == 100'000 * kLatent);
    // Scoring: 2 x 64 heads x 128 x 100,000 = 1.6384 GFLOP a query token a layer.
    CHECK(v32.indexer_flops_per_token(100'000) == 1.6384e9);
    CHECK(v3.indexer_flops_per_token(100'000) == 0.0);
  }
}

TEST_CASE("sparse attention: a forward reads the replicated indexer and the sparse state", "[sparse]") {
  const specsim::TransformerSpec v32 = model("deepseek-v3.2");
  const specsim::TransformerSpec v3 = model("deepseek-v3");
  const specsim::GpuSpec gpu = specsim::load_gpu(kRoot.resolve(specsim::DataKind::kGpu, "h200"));
  const specsim::ComputeModel sparse(v32, gpu, 8, 4, 100'000, specsim::ComputeSettings{}, 0.84, 1.0);
  const specsim::ComputeModel dense(v3, gpu, 8, 4, 100'000, specsim::ComputeSettings{}, 0.84, 1.0);
  const specsim::ForwardTerms s = sparse.terms(4);
  const specsim::ForwardTerms d = dense.terms(4);
  // 4 requests x 61 layers: 3.80 GB against the dense model's 28.1 GB.
  CHECK_THAT(s.kv_bytes, WithinRel(4 * 61 * (2048 * kLatent + 100'000 * kIndexerKey), 1e-12));
  CHECK_THAT(d.kv_bytes, WithinRel(4 * 61 * 100'000 * kLatent, 1e-12));
  // Every rank reads the whole indexer (FP8), not an eighth of it.
  CHECK_THAT(s.weight_bytes - d.weight_bytes,
             WithinRel(61 * kIndexerParams * specsim::bytes_per_param(specsim::Dtype::kFp8), 1e-9));
  // The indexer's scoring outweighs the 2,048-token attention at this context.
  CHECK(s.attention_flops < d.attention_flops);
  CHECK(s.attention_flops > 4 * 61 * v32.indexer_flops_per_token(100'000));
}

TEST_CASE("sparse attention: layers that reuse an earlier layer's picks hold no indexer", "[sparse]") {
  // GLM-5.1 as its rtx6kpro launch runs it: index_topk_pattern gives 40 of 78 layers an indexer of
  // their own (models/llm/glm-5.1-nvfp4.yaml). GLM-5's indexer: wq_b 2048 x 32 x 128 = 8,388,608; wk
  // 6144 x 128 = 786,432; weights_proj 6144 x 32 = 196,608; k_norm 256: 9,371,904 a layer.
  const specsim::TransformerSpec glm = model("glm-5.1-nvfp4");
  REQUIRE(glm.indexer_layers() == 40);
  constexpr double kGlmIndexer = 9'371'904.0;
  CHECK(glm.indexer_params() == kGlmIndexer);
  specsim::TransformerSpec every = glm;
  every.attention.index_layers = 0;
  CHECK(every.indexer_layers() == 78);
  CHECK_THAT(every.total_params() - glm.total_params(), WithinRel(38 * kGlmIndexer, 1e-12));
  // At 100k tokens every layer reads 2,048 latents; only 40 of 78 read and keep indexer keys.
  CHECK_THAT(glm.attention_state_bytes_per_layer(8, 100'000), WithinRel(2048 * kLatent + 100'000 * kIndexerKey * 40 / 78, 1e-12));
  CHECK_THAT(glm.attention_cache_bytes_per_layer(8, 100'000), WithinRel(100'000 * (kLatent + kIndexerKey * 40 / 78), 1e-12));
  CHECK_THAT(glm.indexer_flops_per_token(100'000), WithinRel(2.0 * 32 * 128 * 100'000 * 40 / 78, 1e-12));
  // The MTP module runs an indexer of its own (vLLM builds one on every MTP layer).
  CHECK(specsim::mtp_draft(glm).indexer_layers() == 1);
}

TEST_CASE("sparse attention: the memory fit holds the indexers whole on every rank", "[sparse]") {
  // DeepSeek-V3.2 at TP8: 61 x 13,959,424 FP8 indexer weights (0.85 GB) on each GPU, the rest split.
  const specsim::Scenario s = specsim::load_scenario("deepseek-v3.2-mtp-8x-h200-long-context");
  const double indexers = 61 * kIndexerParams * specsim::bytes_per_param(specsim::Dtype::kFp8);
  const specsim::MemoryFit fit = specsim::memory_fit(s);
  const auto weights = std::find_if(fit.parts.begin(), fit.parts.end(), [](const auto& p) { return p.name == "target weights"; });
  REQUIRE(weights != fit.parts.end());
  CHECK_THAT(weights->bytes, WithinRel((s.model.weight_bytes() - indexers) / 8 + indexers, 1e-12));
  CHECK_THAT(weights->basis, Catch::Matchers::Contains("indexers 0.9 GB replicated"));
}
