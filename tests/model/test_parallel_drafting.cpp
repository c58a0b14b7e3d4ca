// speculation.parallel_drafting: a block drafter (P-EAGLE under vLLM's parallel_drafting) yields all
// K draft tokens from one forward over the accepted tokens plus K - 1 mask slots
// (docs/model.md#parallel-drafting), and the models of the P-EAGLE blog's deployment.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "specsim/cycle.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/report.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
const std::string kHead = std::string(SPECSIM_SOURCE_DIR) + "/models/scenarios/llama-3.1-8b-eagle3-1x-h200.yaml";
const std::string kPeagle = std::string(SPECSIM_SOURCE_DIR) + "/models/scenarios/gpt-oss-20b-p-eagle-1x-b200.yaml";

// Llama-3.1-8B's EAGLE-3 head on one H200 under vLLM, K = 4, batch 1, accept 0.7 per position.
specsim::Prediction llama_head(bool parallel) {
  std::vector<std::string> patches{"engine.name=vllm", "speculation.num_steps=4", "speculation.num_draft_tokens=5"};
  if (parallel) patches.push_back("speculation.parallel_drafting=true");
  return specsim::CycleModel(specsim::load_scenario(kHead, patches, kRoot)).predict();
}
}  // namespace

TEST_CASE("parallel drafting: one draft forward of tau + K - 1 tokens replaces the extend and K - 1 steps",
          "[parallel_drafting]") {
  const auto seq = llama_head(false);
  const auto block = llama_head(true);
  // tau = 1 + 0.7 + 0.7^2 + 0.7^3 + 0.7^4 = 2.7731 either way: acceptance per position as before.
  CHECK_THAT(seq.tokens_per_cycle, WithinRel(2.7731, 1e-9));
  CHECK_THAT(block.tokens_per_cycle, WithinRel(2.7731, 1e-9));
  // Sequential (vLLM, SGLang): the extend over tau tokens yields draft 1, then 3 single-token steps.
  REQUIRE(seq.drafts.size() == 4);
  CHECK_THAT(seq.drafts.back().tokens, WithinRel(2.7731, 1e-9));
  // Block: one forward of tau + 3 mask slots = 5.7731 tokens.
  REQUIRE(block.drafts.size() == 1);
  CHECK_THAT(block.drafts[0].tokens, WithinRel(5.7731, 1e-9));
  CHECK(std::string(block.drafts[0].phase) == "block draft");

  // Each draft forward at batch 1 streams the whole head: fc 3 x 4096^2 = 50.3M, attention with the
  // 2H qkv input 2 x 4096 x (32 + 16) x 128 + 32 x 128 x 4096 = 67.1M, MLP 3 x 4096 x 14336 = 176.2M,
  // LM head 32000 x 4096 = 131.1M: 424.7M x 2 B = 849.3 MB, at 0.84 x 4.8 TB/s = 210.67 us. On top:
  // 17 kernels (11 in the layer, 6 per forward) x 3 us = 51 us, the graph launch 5 us, and the KV of
  // 2048 tokens, 2048 x 8 x 128 x 2 x 2 B = 8.39 MB = 2.08 us: 268.75 us for a single-token step.
  const double bw = 0.84 * 4.8e12;
  const double step_s = 424.7e6 * 2.0 / bw + 17 * 3e-6 + 5e-6 + 2048.0 * 8 * 128 * 2 * 2 / bw;
  CHECK_THAT(step_s, WithinRel(268.75e-6, 1e-3));
  for (int i = 0; i < 3; ++i) CHECK_THAT(seq.drafts[i].total_s(), WithinRel(step_s, 2e-3));
  // A forward of several tokens per request adds the multi-token step (5 us, one layer) and reads the
  // KV at half the rate (kv_verify_ratio 0.5, 2.08 us more): 275.83 us, for the extend's 2.77 tokens
  // and the block's 5.77 alike (the weights, not the tokens, set a batch-1 forward).
  const double wide_s = step_s + 5e-6 + 2048.0 * 8 * 128 * 2 * 2 / bw;
  CHECK_THAT(seq.drafts.back().total_s(), WithinRel(wide_s, 2e-3));
  CHECK_THAT(block.drafts[0].total_s(), WithinRel(wide_s, 2e-3));
  // Sequential K = 4: 3 x 268.75 + 275.83 = 1082.1 us of draft forwards; block: 275.83 us, a quarter.
  CHECK_THAT(seq.draft_s, WithinRel(1082.1e-6, 2e-3));
  CHECK_THAT(block.draft_s, WithinRel(275.83e-6, 2e-3));
  // The cycle saves the 3 single-token forwards, their 3 x 100 us of vLLM's per-draft-forward host
  // prior (models/engines/vllm.yaml), less the block's extra over the extend; the verify is the same.
  CHECK_THAT(seq.verify.total_s(), WithinRel(block.verify.total_s(), 1e-12));
  const double steps_s = seq.drafts[0].total_s() + seq.drafts[1].total_s() + seq.drafts[2].total_s();
  const double extra_s = block.drafts[0].total_s() - seq.drafts.back().total_s();
  CHECK_THAT(seq.cycle_s - block.cycle_s, WithinAbs(steps_s + 3 * 100e-6 - extra_s, 1e-12));
  CHECK(block.spec_tokens_per_s > seq.spec_tokens_per_s);
}

TEST_CASE("parallel drafting: the key shows in predict's text and JSON", "[parallel_drafting][report]") {
  const specsim::CycleModel model(specsim::load_scenario(kPeagle, {}, kRoot));
  const auto p = model.predict();
  const std::string text = specsim::render_prediction(model, p, specsim::Format::kText);
  CHECK_THAT(text, Contains("7 steps, top-k 1, 8 draft tokens verified, parallel drafting (all 7 in one draft forward)"));
  CHECK_THAT(text, Contains("block draft"));
  const auto json = nlohmann::json::parse(specsim::render_prediction(model, p, specsim::Format::kJson));
  CHECK(json["speculative"]["parallel_drafting"] == true);
  REQUIRE(json["speculative"]["drafts"].size() == 1);
  CHECK(json["speculative"]["drafts"][0]["phase"] == "block draft");
  // tau 3.38 + 6 mask slots per request.
  CHECK_THAT(json["speculative"]["drafts"][0]["tokens"].get<double>(), WithinRel(9.38, 1e-9));
  const specsim::CycleModel plain(specsim::load_scenario(kHead, {}, kRoot));
  const auto off = nlohmann::json::parse(specsim::render_prediction(plain, plain.predict(), specsim::Format::kJson));
  CHECK(off["speculative"]["parallel_drafting"] == false);
  CHECK_THAT(specsim::render_prediction(plain, plain.predict(), specsim::Format::kText),
             !Contains("parallel drafting"));
}

TEST_CASE("parallel drafting: a patch the engine refuses names the key and the patch", "[parallel_drafting]") {
  // SGLang's EAGLE worker has no parallel_drafting flag: the scenario's engine is sglang.
  CHECK_THROWS_WITH(specsim::load_scenario(kHead, {"speculation.parallel_drafting=true"}, kRoot),
                    Contains("speculation.parallel_drafting: true is vLLM's speculative_config flag") &&
                        Contains("--set"));
  // A tree: vLLM's parallel drafting drafts one chain.
  CHECK_THROWS_WITH(specsim::load_scenario(kPeagle, {"speculation.eagle_topk=2", "speculation.num_draft_tokens=8"}, kRoot),
                    Contains("speculation.parallel_drafting: true drafts one chain") &&
                        Contains("speculation.eagle_topk = 2 asks for a tree"));
}

TEST_CASE("gpt-oss-20b: its config gives OpenAI's 20.9B total and 3.6B active parameters", "[parallel_drafting][hf]") {
  const auto m = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "gpt-oss-20b"));
  CHECK(m.name == "gpt-oss-20b");
  CHECK(m.layer_attention.windowed_layers == 12);
  CHECK(m.layer_attention.window == 128);
  // Attention: q 2880 x 64 x 64 + k, v 2 x 2880 x 8 x 64 + o 4096 x 2880 = 26,542,080 per layer;
  // one expert 3 x 2880 x 2880 = 24,883,200, 32 of them per layer.
  // Total: 24 x (26,542,080 + 32 x 24,883,200) + embedding and head 2 x 201,088 x 2880 = 20,905,574,400
  // (OpenAI's model card: 20.9B; the "21B" of the name).
  CHECK_THAT(m.total_params(), WithinRel(20905574400.0, 1e-6));
  // Active: 24 x (26,542,080 + 4 x 24,883,200) + the LM head 579,133,440 = 3,604,930,560 (card: 3.6B);
  // specsim's count also holds the 579,133,440 embedding table, of which a token reads one row.
  CHECK_THAT(m.active_params() - 201088.0 * 2880, WithinRel(3604930560.0, 1e-6));
}

TEST_CASE("gpt-oss-20b-p-eagle: the assumed shape holds the head's published 1.8B parameters", "[parallel_drafting]") {
  const auto d = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "gpt-oss-20b-p-eagle"));
  REQUIRE(d.eagle3);
  // specsim counts 4 layers with the midlayer's 2H qkv input, 2 x 2880 x 80 x 64 + 4096 x 2880 =
  // 41,287,680 each; MLP 3 x 2880 x 14336 = 123,863,040 each; fc 3 x 2880^2 = 24,883,200; LM head
  // 201,088 x 2880 = 579,133,440: 1,264,619,520 without the shared embedding.
  CHECK_THAT(d.total_params(), WithinRel(1264619520.0, 1e-6));
  // The checkpoint stores the embedding too (579,133,440) and only its midlayer reads 2H: 3 x 2880 x
  // (4096 + 2 x 512) = 44,236,800 fewer. 1,799,516,160 against the hub's 1.8B (~3.6 GB in BF16).
  const double checkpoint = d.total_params() + 201088.0 * 2880 - 3.0 * 2880 * (4096 + 1024);
  CHECK_THAT(checkpoint, WithinRel(1.8e9, 0.01));
}
