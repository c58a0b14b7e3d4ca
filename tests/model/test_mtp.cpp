// speculation.method mtp: the draft is the target's own multi-token-prediction module, derived from
// the target's shape (mtp_draft, docs/references/mtp.md#module) and priced by the usual draft terms.
#include <catch2/catch.hpp>

#include "specsim/compute_model.hpp"
#include "specsim/cycle.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
const std::string kMtpScenario = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/scenario/deepseek-v3-mtp-8x-h200.yaml";

specsim::TransformerSpec deepseek_v3() {
  return specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "deepseek-v3"));
}
}  // namespace

TEST_CASE("mtp: DeepSeek-V3's derived module has the published 11.5B unique parameters", "[mtp]") {
  const auto target = deepseek_v3();
  REQUIRE(target.mtp_layers == 1);
  const auto d = specsim::mtp_draft(target);
  CHECK(d.layers == 1);
  CHECK(d.moe_layers() == 1);  // layer 61 lies past first_k_dense_replace = 3: an MoE layer
  CHECK(d.mtp_module->target == "deepseek-v3");
  // MLA attention: H q_lora + q_lora heads (nope + rope) + H (kv_lora + rope) + kv_lora heads (nope + v) + heads v H
  //   = 7168*1536 + 1536*128*192 + 7168*576 + 512*128*256 + 128*128*7168 = 187,105,280
  const double attention = 7168.0 * 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512.0 * 128 * 256 + 128.0 * 128 * 7168;
  CHECK_THAT(d.attention_params(), WithinRel(attention, 1e-12));
  // 256 routed + 1 shared experts of 3 x 7168 x 2048 = 257 x 44,040,192 = 11,318,329,344
  const double experts = 257.0 * 3 * 7168 * 2048;
  // eh_proj 2H x H = 2 x 7168^2 = 102,760,448; the embedding and LM head are the target's, not counted
  const double eh_proj = 2.0 * 7168 * 7168;
  CHECK_THAT(d.draft_input_params(), WithinRel(eh_proj, 1e-12));
  CHECK_THAT(d.total_params(), WithinRel(attention + experts + eh_proj, 1e-12));
  // = 11,608,195,072: README_WEIGHTS.md says "11.5B unique parameters, excluding the shared 0.9B
  // Embedding and 0.9B output Head" (docs/references/mtp.md#module); +0.9% (norms and router left out).
  CHECK_THAT(d.total_params(), WithinRel(11.5e9, 0.01));
  // Its forward still runs the full-vocabulary head: 129,280 x 7,168 = 926,679,040 parameters.
  CHECK_THAT(d.lm_head_params(), WithinRel(129280.0 * 7168, 1e-12));
}

TEST_CASE("mtp: one draft forward reads one MoE layer, the replicated eh_proj and the shared head", "[mtp]") {
  const auto scenario = specsim::load_scenario(kMtpScenario, {}, kRoot);
  const auto& d = scenario.draft;
  const specsim::ComputeModel compute(d, scenario.gpu, 8, 1, 1024, scenario.compute, 0.84, 1.0);
  const double fp8 = 1.0 + 4.0 / 16384;  // 128x128 block scales
  // One token touches its 8 routed experts: 256 (1 - (1 - 8/256)^1) = 8.
  const double expert = 3.0 * 7168 * 2048;
  const double layer = d.attention_params() * fp8 / 8 + (8 + 1) * expert * fp8 / 8 + 7168.0 * 256 * 2;  // + bf16 router
  const double kv = 1024.0 * (512 + 64) * 2;      // one request's MLA latent at 1024 tokens, every rank
  const double head = 129280.0 * 7168 * 2 / 8;    // bf16 LM head, vocab-parallel
  const double eh_proj = 2.0 * 7168 * 7168 * 2;   // bf16, a plain nn.Linear: every rank reads all of it
  // = 23.39 + 49.56 + 3.67 MB layer, 1.18 MB KV, 231.7 MB head, 205.5 MB eh_proj = 515.0 MB
  CHECK_THAT(compute.bytes_read(1.0), WithinRel(layer + kv + head + eh_proj, 1e-9));
}

TEST_CASE("mtp: a scenario with method mtp loads and predicts", "[mtp]") {
  const auto scenario = specsim::load_scenario(kMtpScenario, {}, kRoot);
  CHECK(scenario.speculation.method == "mtp");
  CHECK(scenario.draft.name == "deepseek-v3-mtp");
  const specsim::CycleModel model(scenario);
  const auto p = model.predict();
  // SGLang's cycle with 3 steps: draft steps 2 and 3, then the draft extend (which yields step 1).
  REQUIRE(p.drafts.size() == 3);
  // Each draft forward at TP8: 2 all-reduces in its one layer + 1 for the vocab-parallel embedding.
  CHECK(p.drafts[0].allreduce_count == 3);
  CHECK(p.verify.allreduce_count == 2 * 61 + 1);
  // Chain acceptance as for eagle3: tau = 1 + 0.8 + 0.8*0.7 + 0.8*0.7*0.6 = 2.696
  CHECK_THAT(p.tokens_per_cycle, WithinRel(2.696, 1e-9));
  CHECK(p.spec_tokens_per_s > 0.0);
  CHECK(p.baseline_tokens_per_s > 0.0);
}

TEST_CASE("mtp: a model without MTP layers, or a draft head, has no module to draft with", "[mtp]") {
  const auto llama = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "llama-3.1-8b"));
  CHECK_THROWS_WITH(specsim::mtp_draft(llama), Contains("'llama-3.1-8b'") && Contains("has no multi-token-prediction layers"));
  const auto head = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "llama-3.1-8b-eagle3"));
  CHECK_THROWS_WITH(specsim::mtp_draft(head), Contains("is a draft head"));
  // In a scenario the error names the key (tests/data/invalid/scenario/mtp-*.yaml, test_invalid_corpus.cpp).
}
