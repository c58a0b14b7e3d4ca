// engine.kv_cache_dtype: the KV cache's storage dtype as launched (--kv-cache-dtype in vLLM and
// SGLang, kv_cache_config.dtype in TensorRT-LLM; docs/references/engine-flags.md). It sets the bytes
// every KV read and the memory check price, on the target and the draft alike; the launch readers
// map each engine's spellings onto it and --emit writes them back.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

#include "cli_run.hpp"
#include "specsim/emit.hpp"
#include "specsim/error.hpp"
#include "specsim/launch_command.hpp"
#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;
using specsim::Dtype;
using specsim::Engine;

namespace {

double part(const specsim::MemoryFit& fit, const std::string& name) {
  for (const auto& p : fit.parts) {
    if (p.name == name) return p.bytes;
  }
  FAIL("no memory part " << name);
  return 0;
}

std::string value_after(const std::vector<std::string>& argv, const std::string& flag) {
  const auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

}  // namespace

TEST_CASE("kv cache dtype: bytes a token adds to a layer's cache", "[kv]") {
  // Llama-3.1-8B (GQA, 8 KV heads of 128) at TP1: 2 x 8 x 128 values, 2 B each in BF16, 1 B in FP8.
  specsim::TransformerSpec llama = specsim::load_model(specsim::DataDir().resolve(specsim::DataKind::kModel, "llama-3.1-8b"));
  CHECK(llama.kv_bytes_per_token_layer(1) == 4096);
  llama.kv_cache_dtype = Dtype::kFp8;
  CHECK(llama.kv_bytes_per_token_layer(1) == 2048);
  // DeepSeek-V3's MLA latent (512 + 64 values): 1,152 B in BF16, 576 B in FP8; V3.2's sparse FP8
  // cache keeps FlashMLA's layout, 512 FP8 + 4 fp32 scales + 64 BF16 rope values = 656 B.
  specsim::TransformerSpec v3 = specsim::load_model(specsim::DataDir().resolve(specsim::DataKind::kModel, "deepseek-v3"));
  specsim::TransformerSpec v32 = specsim::load_model(specsim::DataDir().resolve(specsim::DataKind::kModel, "deepseek-v3.2"));
  CHECK(v3.kv_bytes_per_token_layer(8) == 1152);
  v3.kv_cache_dtype = Dtype::kFp8;
  v32.kv_cache_dtype = Dtype::kFp8;
  CHECK(v3.kv_bytes_per_token_layer(8) == 576);
  CHECK(v32.kv_bytes_per_token_layer(8) == 656);
}

TEST_CASE("kv cache dtype: the scenario's key reaches target and draft, the forward and the memory check", "[kv]") {
  const std::string name = "kimi-k2.5-eagle3-8x-rtx-pro-6000";
  const specsim::Scenario bf16 = specsim::load_scenario(name);
  const specsim::Scenario fp8 = specsim::load_scenario(name, {"engine.kv_cache_dtype=fp8"});
  CHECK_FALSE(bf16.engine.kv_cache_dtype);
  CHECK(bf16.model.kv_dtype() == Dtype::kBf16);
  REQUIRE(fp8.engine.kv_cache_dtype == Dtype::kFp8);
  CHECK(fp8.model.kv_dtype() == Dtype::kFp8);
  CHECK(fp8.draft.kv_dtype() == Dtype::kFp8);
  // The KV cache halves in memory, for both models; nothing else moves.
  const specsim::MemoryFit a = specsim::memory_fit(bf16);
  const specsim::MemoryFit b = specsim::memory_fit(fp8);
  CHECK_THAT(part(b, "target KV cache"), WithinRel(part(a, "target KV cache") / 2, 1e-12));
  CHECK_THAT(part(b, "draft KV cache"), WithinRel(part(a, "draft KV cache") / 2, 1e-12));
  CHECK(part(b, "target weights") == part(a, "target weights"));
  // A what-if of the target keeps the engine's dtype on the new model.
  const specsim::Scenario other = specsim::load_scenario(name, {"engine.kv_cache_dtype=fp8", "model=kimi-k2.5"});
  CHECK(other.model.kv_dtype() == Dtype::kFp8);
  // A dtype specsim does not price is an error at the key.
  CHECK_THROWS_WITH(specsim::load_scenario(name, {"engine.kv_cache_dtype=fp4"}), Contains("engine.kv_cache_dtype") && Contains("fp8"));
}

TEST_CASE("kv cache dtype: each engine's spellings read into the key, a 4-bit cache is listed as not modelled", "[kv]") {
  for (const char* v : {"fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla"}) {
    INFO(v);
    const auto r = specsim::read_launch_command(std::string("vllm serve m --tensor-parallel-size 8 --kv-cache-dtype ") + v);
    CHECK(r.values.at("engine.kv_cache_dtype") == "fp8");
    CHECK(r.origins.at("engine.kv_cache_dtype") == std::string("--kv-cache-dtype ") + v);
  }
  CHECK(specsim::read_launch_command("vllm serve m --kv-cache-dtype bfloat16").values.at("engine.kv_cache_dtype") == "bf16");
  CHECK(specsim::read_launch_command("vllm serve m --kv-cache-dtype auto").values.at("engine.kv_cache_dtype") == "auto");
  const auto sglang = specsim::read_launch_command("python -m sglang.launch_server --model-path m --tp 8 --kv-cache-dtype fp8_e4m3");
  CHECK(sglang.values.at("engine.kv_cache_dtype") == "fp8");
  const auto fp4 = specsim::read_launch_command("python -m sglang.launch_server --model-path m --kv-cache-dtype fp4_e2m1");
  CHECK_FALSE(fp4.values.count("engine.kv_cache_dtype"));
  REQUIRE(fp4.unmodelled.size() == 1);
  CHECK_THAT(fp4.unmodelled.front(), Contains("--kv-cache-dtype fp4_e2m1"));
  CHECK_THAT(fp4.unmodelled.front(), Contains("priced as the model's activation dtype"));
}

TEST_CASE("kv cache dtype: --emit writes each engine's spelling", "[kv]") {
  const specsim::Scenario s = specsim::load_scenario("kimi-k2.5-eagle3-8x-rtx-pro-6000", {"engine.kv_cache_dtype=fp8"});
  CHECK(value_after(specsim::emit_launch(s, Engine::kVllm).commands.at(0).argv, "--kv-cache-dtype") == "fp8");
  CHECK(value_after(specsim::emit_launch(s, Engine::kSglang).commands.at(0).argv, "--kv-cache-dtype") == "fp8_e4m3");
  CHECK_THAT(specsim::emit_launch(s, Engine::kTrtllm).commands.at(0).config_text, Contains("kv_cache_config:\n  dtype: fp8\n"));
  // The default keeps every engine's "auto": no flag.
  const specsim::Scenario plain = specsim::load_scenario("kimi-k2.5-eagle3-8x-rtx-pro-6000");
  CHECK(value_after(specsim::emit_launch(plain, Engine::kVllm).commands.at(0).argv, "--kv-cache-dtype").empty());
  // An FP16 cache of a BF16 model has no spelling specsim checked on SGLang: refused at --emit.
  const specsim::Scenario fp16 = specsim::load_scenario("kimi-k2.5-eagle3-8x-rtx-pro-6000", {"engine.kv_cache_dtype=fp16"});
  CHECK_THROWS_WITH(specsim::emit_launch(fp16, Engine::kSglang), Contains("engine.kv_cache_dtype"));
}

TEST_CASE("kv cache dtype: rank offers an FP8 cache where the scenario keeps a 16-bit one", "[kv]") {
  // DeepSeek-V3 at 64k tokens of context, batch 8: the latents are a real share of every step, so an
  // FP8 cache gains; a scenario already on FP8 is not offered it again.
  const auto bf16 = specsim::test::run({"rank", "--scenario", "deepseek-v3.2-mtp-8x-h200-long-context", "--set",
                                        "model=deepseek-v3", "--json"});
  REQUIRE(bf16.code == 0);
  const auto doc = nlohmann::json::parse(bf16.out);
  const auto& all = doc["interventions"];
  const auto it = std::find_if(all.begin(), all.end(), [](const auto& i) { return i["name"] == "kv-cache-fp8"; });
  REQUIRE(it != all.end());
  CHECK((*it)["feasible"] == true);
  CHECK((*it)["gain"].get<double>() > 0.1 * doc["scenario_tokens_per_s"].get<double>());
  const auto fp8 = specsim::test::run({"rank", "--scenario", "deepseek-v3.2-mtp-8x-h200-long-context", "--set",
                                       "model=deepseek-v3", "--set", "engine.kv_cache_dtype=fp8", "--json"});
  REQUIRE(fp8.code == 0);
  const auto offered = nlohmann::json::parse(fp8.out)["interventions"];
  CHECK(std::none_of(offered.begin(), offered.end(), [](const auto& i) { return i["name"] == "kv-cache-fp8"; }));
}
