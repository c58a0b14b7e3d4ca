// speculation.method dflash: a block drafter (DFlash, arXiv 2602.06036) priced as a TransformerSpec
// with a `dflash` block (model_spec.hpp), one forward over the block per cycle (cycle.cpp), a chain of
// block_size verified tokens, and its HF config read from config.json (hf_config.cpp).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "specsim/cycle.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"
#include "specsim/scenario_fields.hpp"
#include "specsim/scenario_rules.hpp"
#include "specsim/scenario_writer.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;
namespace fs = std::filesystem;

namespace {
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
const char* kScenario = "qwen3-8b-dflash-1x-b200";

// A checkpoint directory holding `json` as config.json, in a directory of this test's own.
fs::path checkpoint(const std::string& dir_name, const std::string& json) {
  const fs::path dir = fs::temp_directory_path() / ("specsim_test_dflash_" + dir_name);
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << json;
  return dir;
}
}  // namespace

TEST_CASE("dflash: the Qwen3-8B drafter's parameters, worked from its config", "[dflash]") {
  const auto d = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "qwen3-8b-dflash-b16"));
  REQUIRE(d.dflash);
  CHECK(d.dflash->taps() == 5);
  CHECK(d.dflash->block_size == 16);
  // Attention: H (heads + 2 kv) d + heads d H = 4096 x 48 x 128 + 4096 x 4096 = 41,943,040.
  const double attention = 4096.0 * 48 * 128 + 4096.0 * 4096;
  // MLP 3 H I = 3 x 4096 x 12288 = 150,994,944; fc taps x H_target x H = 5 x 4096^2 = 83,886,080.
  const double mlp = 3.0 * 4096 * 12288;
  const double fc = 5.0 * 4096 * 4096;
  CHECK_THAT(d.draft_input_params(), WithinRel(fc, 1e-12));
  // No embedding and no LM head stored: 5 x (41.9M + 151.0M) + 83.9M = 1,048,576,000.
  CHECK_THAT(d.total_params(), WithinRel(5 * (attention + mlp) + fc, 1e-12));
  CHECK_THAT(d.weight_bytes(), WithinRel(2.0 * (5 * (attention + mlp) + fc), 1e-12));
  // Each forward still reads the target's LM head, 151,936 x 4,096: counted per token, not stored.
  CHECK_THAT(d.active_params(), WithinRel(d.total_params() + 151936.0 * 4096, 1e-12));
}

TEST_CASE("dflash: a published checkpoint's tensors match the derived count", "[dflash]") {
  // z-lab/dflash tests/fixtures/dflash2-config.json and dflash2-safetensors-header.json (commit
  // 0698f537b270b11fa19f7a2690cb3a6d632e9588): a published DFlash 2 checkpoint, hidden 6656, 5 layers,
  // 32 / 8 heads of 128, intermediate 19968, 5 taps. Its DFlash (1) tensors are the header's 5,544,319,488
  // bytes less the candidate selector (210,305,024) and the 10 convolutions (5 x 2 x (53,248 +
  // 22,151,168) = 222,044,160): 5,111,970,304 bytes of BF16 = 2,555,985,152 parameters. The same shape
  // as a DFlash (1) config.json:
  const fs::path dir = checkpoint("published_shape", R"({
    "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "dtype": "bfloat16",
    "dflash_config": {"block_size": 16, "mask_token_id": 201818, "target_layer_ids": [1, 13, 25, 37, 49]},
    "hidden_size": 6656, "intermediate_size": 19968, "num_hidden_layers": 5, "num_attention_heads": 32,
    "num_key_value_heads": 8, "head_dim": 128, "num_target_layers": 52, "vocab_size": 202048})");
  const auto d = specsim::load_model(dir.string());
  REQUIRE(d.dflash);
  CHECK(d.dflash->block_size == 16);
  CHECK(d.dflash->mask_token_id == 201818);
  CHECK(d.dflash->target_layer_ids == std::vector<int>{1, 13, 25, 37, 49});
  // Derived: 5 x (68,157,440 attention + 398,721,024 MLP) + 221,511,680 fc = 2,555,904,000; the header
  // holds 81,152 norm weights more (5 x (2 x 6656 + 2 x 128) + 2 x 6656), which specsim leaves out.
  CHECK_THAT(d.total_params(), WithinRel(2'555'904'000.0, 1e-12));
  CHECK_THAT(d.total_params(), WithinRel(2'555'985'152.0, 1e-4));
}

TEST_CASE("dflash: HF configs with the taps at the top level load too", "[dflash]") {
  // The layout of speculators-format and DSpark configs: block_size, mask_token_id and
  // target_layer_ids beside the shape (z-lab's model.py reads dflash_config first, then the config).
  const fs::path dir = checkpoint("top_level", R"({
    "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "block_size": 8, "mask_token_id": 151669,
    "target_layer_ids": [24, 30, 31, 32, 34], "hidden_size": 4096, "intermediate_size": 12288,
    "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "vocab_size": 151936})");
  const auto d = specsim::load_model(dir.string());
  REQUIRE(d.dflash);
  CHECK(d.dflash->block_size == 8);
  CHECK(d.dflash->taps() == 5);
  CHECK(!d.eagle3);
  CHECK(d.shares_target_embedding());
}

TEST_CASE("dflash: one draft forward over the block per cycle, a chain of block_size verified", "[dflash]") {
  const auto s = specsim::load_scenario(kScenario, {"workload.batch=4"}, kRoot);
  CHECK(s.speculation.shape.num_steps == 15);
  CHECK(s.speculation.shape.num_draft_tokens == 16);
  const specsim::CycleModel model(s);
  const auto p = model.predict();
  REQUIRE(p.drafts.size() == 1);
  CHECK(std::string(p.drafts[0].phase) == "block draft");
  // 4 requests x 16 slots (the last verified token and 15 masks), whatever tau is.
  CHECK_THAT(p.drafts[0].tokens, WithinRel(4.0 * 16, 1e-12));
  CHECK_THAT(p.verify.tokens, WithinRel(4.0 * 16, 1e-12));
  // The cycle does not grow with tau beyond the host's per-token part: the draft forward is fixed.
  const double at_low = model.cycle_s(2.0);
  const double at_high = model.cycle_s(12.0);
  CHECK_THAT(at_high, WithinRel(at_low, 1e-9));
  // A measured accept length above the block is refused where it is stated: the A800 row's 2.8
  // tokens per cycle on a block of 2.
  const std::string row = std::string(SPECSIM_SOURCE_DIR) + "/validation/sglang-issue-29244-a800/qwen3-8b-dflash-a800-bs1.yaml";
  const auto over = specsim::scenario_problems(row, {"speculation.block_size=2"}, kRoot);
  REQUIRE(over.size() == 1);
  CHECK_THAT(over[0].what(), Contains("acceptance.tokens_per_cycle: = 2.80: a DFlash block of 2 (speculation.block_size) "
                                      "verifies 2 tokens, so a cycle emits at most 2"));
}

TEST_CASE("dflash: the drafter's weights and cache are in the memory fit", "[dflash]") {
  const auto s = specsim::load_scenario(kScenario, {"workload.batch=8", "workload.context=4096"}, kRoot);
  const specsim::MemoryFit fit = specsim::memory_fit(s);
  double draft_weights = 0, draft_kv = 0;
  for (const auto& part : fit.parts) {
    if (part.name == "draft weights") draft_weights = part.bytes;
    if (part.name == "draft KV cache") draft_kv = part.bytes;
  }
  CHECK_THAT(draft_weights, WithinRel(2.0 * 1'048'576'000.0, 1e-12));
  // 8 requests x (4096 + 16 tokens) x 5 layers x 2 (K, V) x 8 kv heads x 128 x 2 B = 673.7 MB.
  CHECK_THAT(draft_kv, WithinRel(8.0 * (4096 + 16) * 5 * 2 * 8 * 128 * 2, 1e-12));
}

TEST_CASE("dflash: block_size set on a loaded scenario predicts what --set does", "[dflash]") {
  const auto base = specsim::load_scenario(kScenario, {}, kRoot);
  const auto by_set = specsim::load_scenario(kScenario, {"speculation.block_size=8"}, kRoot);
  auto by_field = base;
  const specsim::SourceLocation where{"--vary", 0, 0};
  specsim::set_field(by_field, specsim::parse_field_value("speculation.block_size", "8", where));
  REQUIRE(specsim::what_if_problems(by_field).empty());
  CHECK(by_field.speculation.shape.num_draft_tokens == 8);
  CHECK_THAT(specsim::CycleModel(by_field).predict().spec_tokens_per_s,
             WithinRel(specsim::CycleModel(by_set).predict().spec_tokens_per_s, 1e-9));
  // num_steps is no block drafter's key: both refuse it.
  auto steps = base;
  specsim::set_field(steps, specsim::parse_field_value("speculation.num_steps", "7", where));
  const auto problems = specsim::what_if_problems(steps);
  REQUIRE(problems.size() == 1);
  // The same rule the loader applies, at the patch that broke it.
  CHECK_THAT(problems[0].what(), Contains("--set speculation.num_steps=7: speculation.num_steps: speculation.method dflash "
                                          "drafts one block per cycle: state speculation.block_size"));
  CHECK_THROWS_WITH(specsim::load_scenario(kScenario, {"speculation.num_steps=7"}, kRoot),
                    Contains("state speculation.block_size"));
}

TEST_CASE("dflash: a block larger than the drafter was trained on is noted", "[dflash]") {
  const auto s = specsim::load_scenario(kScenario, {"speculation.block_size=24"}, kRoot);
  REQUIRE(!s.notes.empty());
  CHECK_THAT(s.notes.back(), Contains("larger than the block 'qwen3-8b-dflash-b16' was trained on (16)"));
}
