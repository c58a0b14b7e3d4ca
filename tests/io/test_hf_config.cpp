// Hugging Face config.json files of every supported family and quantization scheme, read from
// trimmed copies of real configs (tests/data/valid/hf/SOURCES.md names where each comes from).
// Parameter counts use docs/references/models.md#layer-params and are checked against the
// published totals named beside them; norms, biases and routers are left out, hence WithinRel.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "cli_run.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;
using specsim::Dtype;

namespace {
const std::string kHf = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/hf/";
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

specsim::TransformerSpec hf(const std::string& name) { return specsim::load_model(kHf + name); }
}  // namespace

TEST_CASE("hf: llama reads as a dense GQA model in BF16", "[hf]") {
  const auto m = hf("llama-3.3-70b.config.json");
  CHECK(m.layers == 80);
  CHECK(m.dense_layers == 80);
  CHECK(m.attention.head_dim == 128);  // hidden / heads = 8192 / 64
  CHECK(m.weights.attention == Dtype::kBf16);
  CHECK(m.mtp_layers == 0);
  // H (heads + 2 kv) d + heads d H = 8192 x 80 x 128 + 64 x 128 x 8192 = 150,994,944
  CHECK_THAT(m.attention_params(), WithinRel(150994944.0, 1e-12));
}

TEST_CASE("hf: mistral with AWQ: every layer windowed, int4 in groups of 128, LM head BF16", "[hf]") {
  const auto m = hf("zephyr-7b-alpha-awq.config.json");
  CHECK(m.layer_attention.windowed_layers == 32);
  CHECK(m.layer_attention.window == 4096);
  CHECK(m.weights.attention == Dtype::kInt4G128);
  CHECK(m.weights.dense_mlp == Dtype::kInt4G128);
  CHECK(m.weights.lm_head == Dtype::kBf16);
  // At 8192 tokens every layer reads only its 4096-token window: 4096 x 2 x 8 kv x 128 x 2 B = 16 MiB.
  CHECK_THAT(m.attended_context(8192), WithinRel(4096.0, 1e-12));
  CHECK_THAT(m.attention_state_bytes_per_layer(1, 8192), WithinRel(16777216.0, 1e-12));
}

TEST_CASE("hf: mixtral reads num_local_experts and sizes them with intermediate_size", "[hf]") {
  const auto m = hf("mixtral-8x7b.config.json");
  REQUIRE(m.moe);
  CHECK(m.moe->experts == 8);
  CHECK(m.moe->experts_per_token == 2);
  CHECK(m.moe->expert_intermediate_size == 14336);
  CHECK(m.dense_layers == 0);
  CHECK(m.layer_attention.windowed_layers == 0);  // sliding_window null
  // 32 x (attention 41,943,040 + 8 x 3 x 4096 x 14336) + 2 x 32000 x 4096 = 46.70B (Mixtral-8x7B: 46.7B).
  CHECK_THAT(m.total_params(), WithinRel(46701477888.0, 1e-9));
}

TEST_CASE("hf: qwen2 with GPTQ int4 group 128", "[hf]") {
  const auto m = hf("qwen2.5-32b-instruct-gptq-int4.config.json");
  CHECK(m.layers == 64);
  CHECK(m.attention.kv_heads == 8);
  CHECK(m.layer_attention.windowed_layers == 0);  // use_sliding_window false
  CHECK(m.weights.attention == Dtype::kInt4G128);
  CHECK(m.weights.dense_mlp == Dtype::kInt4G128);
  CHECK(m.weights.lm_head == Dtype::kBf16);  // GPTQ's lm_head is false by default
}

TEST_CASE("hf: qwen2_moe counts its wide shared expert in routed-expert units, GPTQ in-block list", "[hf]") {
  const auto m = hf("qwen1.5-moe-a2.7b-chat-gptq-int4.config.json");
  REQUIRE(m.moe);
  CHECK(m.moe->experts == 60);
  CHECK(m.moe->shared_experts == 4);  // shared_expert_intermediate_size 5632 / moe_intermediate_size 1408
  CHECK(m.dense_layers == 0);
  // modules_in_block_to_quantize lists attention, shared expert and experts: all int4.
  CHECK(m.weights.attention == Dtype::kInt4G128);
  CHECK(m.weights.experts == Dtype::kInt4G128);
  CHECK(m.weights.shared_experts == Dtype::kInt4G128);
  CHECK(m.weights.lm_head == Dtype::kBf16);
  // 24 x (16,777,216 + 64 x 8,650,752) + 2 x 151936 x 2048 = 14.31B; active 24 x (16,777,216 + 8 x
  // 8,650,752) + 622,329,856 = 2.69B (Qwen1.5-MoE-A2.7B card: 14.3B total, 2.7B activated).
  CHECK_THAT(m.total_params(), WithinRel(14312538112.0, 1e-9));
  CHECK_THAT(m.active_params(), WithinRel(2685927424.0, 1e-9));
}

TEST_CASE("hf: qwen3 dense, and its FP8 block-wise checkpoint", "[hf]") {
  const auto m = hf("qwen3-8b.config.json");
  CHECK(m.layers == 36);
  CHECK(m.attention.head_dim == 128);
  CHECK(m.weights.dense_mlp == Dtype::kBf16);
  const auto fp8 = hf("qwen3-32b-fp8.config.json");
  CHECK(fp8.weights.attention == Dtype::kFp8);
  CHECK(fp8.weights.dense_mlp == Dtype::kFp8);
  CHECK(fp8.weights.lm_head == Dtype::kBf16);  // transformers' FP8 quantizer leaves the LM head
}

TEST_CASE("hf: qwen3_moe: every layer MoE (mlp_only_layers empty, decoder_sparse_step 1)", "[hf]") {
  const auto m = hf("qwen3-30b-a3b.config.json");
  CHECK(m.dense_layers == 0);
  REQUIRE(m.moe);
  CHECK(m.moe->experts == 128);
  CHECK(m.moe->shared_experts == 0);
  // docs/references/models.md#targets: computed 30.53B total / 3.35B active.
  CHECK_THAT(m.total_params(), WithinRel(30.53e9, 0.005));
  CHECK_THAT(m.active_params(), WithinRel(3.35e9, 0.01));
}

TEST_CASE("hf: qwen3_next: 12 full-attention and 36 Gated DeltaNet layers", "[hf]") {
  const auto m = hf("qwen3-next-80b-a3b.config.json");
  CHECK(m.full_attention_layers() == 12);  // full_attention_interval 4 over 48 layers
  CHECK(m.layer_attention.linear_layers == 36);
  CHECK(m.attention.output_gate);
  REQUIRE(m.moe);
  CHECK(m.moe->shared_experts == 1);  // 512 / 512
  // Gated DeltaNet: 2048 x (2 x 2048 + 2 x 4096 + 2 x 32) + (2 x 2048 + 4096) x 4 + 4096 x 2048 = 33,718,272.
  CHECK_THAT(m.linear_attention_params(), WithinRel(33718272.0, 1e-12));
  // Gated full attention: 2048 x (2 x 16 + 2 x 2) x 256 + 16 x 256 x 2048 = 27,262,976.
  CHECK_THAT(m.attention_params(), WithinRel(27262976.0, 1e-12));
  // 12 x 27.26M + 36 x 33.72M + 48 x 513 x 3 x 2048 x 512 + 2 x 151936 x 2048 = 79.62B (card: 80B).
  CHECK_THAT(m.total_params(), WithinRel(79623749632.0, 1e-9));
  // State at 1000 tokens, TP 1, BF16: full layers 12 x 1000 x 2 x 2 x 256 x 2 B = 24,576,000; linear
  // layers 36 x (32 x 128 x 128 + (2 x 16 x 128 + 32 x 128) x 3) x 2 B = 39,518,208; mean over 48.
  CHECK_THAT(m.attention_state_bytes_per_layer(1, 1000), WithinRel((24576000.0 + 39518208.0) / 48, 1e-12));
  CHECK_THAT(m.attended_context(1000), WithinRel(12 * 1000.0 / 48, 1e-12));  // linear layers score no context
}

TEST_CASE("hf: qwen3_next: its config names no MTP module, vLLM builds one", "[hf]") {
  // qwen3-next-80b-a3b.config.json has no num_nextn_predict_layers; vLLM's Qwen3NextMTP builds
  // getattr(config, "num_nextn_predict_layers", 1) modules, so `--speculative-config
  // '{"method": "qwen3_next_mtp"}'` drafts with one.
  CHECK(hf("qwen3-next-80b-a3b.config.json").mtp_layers == 1);
}

TEST_CASE("hf: qwen3_5_moe (Qwen3.5-397B-A17B): text_config, hybrid attention, one MTP module", "[hf]") {
  const auto m = hf("qwen3.5-397b-a17b.config.json");
  CHECK(m.layers == 60);
  CHECK(m.full_attention_layers() == 15);  // layer_types: every 4th layer full_attention
  CHECK(m.layer_attention.linear_layers == 45);
  CHECK(m.attention.output_gate);  // attn_output_gate true
  CHECK(m.mtp_layers == 1);        // mtp_num_hidden_layers
  REQUIRE(m.moe);
  CHECK(m.moe->experts == 512);
  CHECK(m.moe->experts_per_token == 10);
  CHECK(m.moe->shared_experts == 1);  // 1024 / 1024
  CHECK(m.dense_layers == 0);         // mlp_only_layers []
  // Gated DeltaNet, key dim 16 x 128 = 2048, value dim 64 x 128 = 8192:
  // 4096 x (2 x 2048 + 2 x 8192 + 2 x 64) + (2 x 2048 + 8192) x 4 + 8192 x 4096 = 118,013,952.
  CHECK_THAT(m.linear_attention_params(), WithinRel(118013952.0, 1e-12));
  // Gated full attention: 4096 x (2 x 32 + 2 x 2) x 256 + 32 x 256 x 4096 = 104,857,600.
  CHECK_THAT(m.attention_params(), WithinRel(104857600.0, 1e-12));
  // 15 x 104.86M + 45 x 118.01M + 60 x 513 x 3 x 4096 x 1024 + 2 x 248320 x 4096 = 396.2B; active
  // with 10 + 1 experts 17.2B (model card: 397B total, 17B activated; norms and routers left out).
  CHECK_THAT(m.total_params(), WithinRel(396219760640.0, 1e-9));
  CHECK_THAT(m.active_params(), WithinRel(17222451200.0, 1e-9));
}

TEST_CASE("hf: a quantization_config beside text_config is read, not lost to the text_config", "[hf]") {
  // Qwen3.5's FP8 and NVFP4 checkpoints keep quantization_config at the top, beside text_config.
  // Reading the shape from text_config once overwrote the root with it (a YAML::Node assignment
  // writes through), so the checkpoint read as BF16: about 4x its weight bytes, silently.
  const auto m = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "qwen3.5-397b-a17b-nvfp4"));
  CHECK(m.weights.experts == Dtype::kNvfp4);
  CHECK(m.weights.shared_experts == Dtype::kBf16);  // "*shared_expert*" excluded
  CHECK(m.weights.attention == Dtype::kBf16);       // "*self_attn*", "*linear_attn*" excluded
  CHECK(m.weights.lm_head == Dtype::kBf16);
  CHECK(m.mtp_layers == 1);
  // The FP8 layout (transformers' fine-grained FP8 at the top): every linear layer but the LM head.
  const specsim::test::TempDir tmp("specsim_test_hf_top_quant");
  const std::string config = specsim::test::read_text(kHf + "qwen3.5-397b-a17b.config.json");
  const std::filesystem::path dir = tmp.path / "Qwen3.5-397B-A17B-FP8";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << specsim::test::replaced_once(
      config, R"("tie_word_embeddings": false,)",
      R"("quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}, "tie_word_embeddings": false,)");
  const auto fp8 = specsim::load_model(dir.string());
  CHECK(fp8.weights.experts == Dtype::kFp8);
  CHECK(fp8.weights.attention == Dtype::kFp8);
  CHECK(fp8.weights.lm_head == Dtype::kBf16);
}

TEST_CASE("hf: qwen3_5_text (the dense Qwen3.5/3.6): hybrid attention over a dense MLP", "[hf]") {
  // A Qwen3.5-27B-shaped text_config, written here (no stored copy of the checkpoint's file): 64
  // layers, hidden 5120, FFN 17408, 24 heads of 256 with 4 KV heads and vocab 248320 as a public
  // training script gives them (radixark/miles scripts/models/qwen3.5-27B.sh at 51b148c7), Gated
  // DeltaNet with 16 key and 48 value heads of 128 and one MTP module as Qwen3.5 dense configs
  // quoted in public test fixtures have them. It checks the dense family's reading, not the shape.
  const specsim::test::TempDir tmp("specsim_test_hf_qwen3_5");
  const std::filesystem::path dir = tmp.path / "Qwen3.5-27B";
  std::filesystem::create_directories(dir);
  std::string layer_types;
  for (int i = 0; i < 64; ++i) layer_types += std::string(i ? ", " : "") + ((i + 1) % 4 == 0 ? "\"full_attention\"" : "\"linear_attention\"");
  std::ofstream(dir / "config.json")
      << R"({"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5", "text_config": {)"
      << R"("model_type": "qwen3_5_text", "attn_output_gate": true, "hidden_size": 5120, "intermediate_size": 17408,)"
      << R"("num_hidden_layers": 64, "num_attention_heads": 24, "num_key_value_heads": 4, "head_dim": 256,)"
      << R"("linear_num_key_heads": 16, "linear_num_value_heads": 48, "linear_key_head_dim": 128,)"
      << R"("linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "vocab_size": 248320,)"
      << R"("mtp_num_hidden_layers": 1, "dtype": "bfloat16", "layer_types": [)" << layer_types << "]}}";
  const auto m = specsim::load_model(dir.string());
  CHECK(m.name == "Qwen3.5-27B");
  CHECK_FALSE(m.moe);
  CHECK(m.dense_layers == 64);
  CHECK(m.full_attention_layers() == 16);
  CHECK(m.mtp_layers == 1);
  // 16 x (5120 x (48 + 8) x 256 + 24 x 256 x 5120) + 48 x (5120 x (4096 + 12288 + 96) + (4096 + 6144) x 4
  // + 6144 x 5120) + 64 x 3 x 5120 x 17408 + 2 x 248320 x 5120 = 26.9B (the card's 27B).
  CHECK_THAT(m.total_params(), WithinRel(26895319040.0, 1e-9));
}

TEST_CASE("hf: deepseek_v2 reads MLA and two shared experts", "[hf]") {
  const auto m = hf("deepseek-v2.config.json");
  CHECK(m.attention.kind == specsim::AttentionKind::kMla);
  CHECK(m.dense_layers == 1);
  REQUIRE(m.moe);
  CHECK(m.moe->shared_experts == 2);
  // 60 x 149,225,472 + 3 x 5120 x 12288 + 59 x 162 x 23,592,960 + 2 x 102400 x 5120 = 235.7B;
  // active with 6 + 2 experts 21.3B (DeepSeek-V2 card: 236B total, 21B activated).
  CHECK_THAT(m.total_params(), WithinRel(235692359680.0, 1e-9));
  CHECK_THAT(m.active_params(), WithinRel(21326725120.0, 1e-9));
}

TEST_CASE("hf: deepseek_v3: FP8 block-wise weights, BF16 LM head, one MTP module", "[hf]") {
  const auto m = hf("deepseek-v3.config.json");
  CHECK(m.mtp_layers == 1);
  CHECK(m.dense_layers == 3);
  CHECK(m.weights.attention == Dtype::kFp8);
  CHECK(m.weights.experts == Dtype::kFp8);
  CHECK(m.weights.shared_experts == Dtype::kFp8);
  CHECK(m.weights.lm_head == Dtype::kBf16);
  // docs/references/models.md#targets: computed 671.0B total.
  CHECK_THAT(m.total_params(), WithinRel(671.0e9, 0.002));
}

TEST_CASE("hf: kimi_k2 FP8, and Kimi-K2.5's compressed-tensors INT4 experts with its ignore list", "[hf]") {
  const auto k2 = hf("kimi-k2-instruct.config.json");
  REQUIRE(k2.moe);
  CHECK(k2.moe->experts == 384);
  CHECK(k2.weights.experts == Dtype::kFp8);
  CHECK(k2.mtp_layers == 0);
  // Ignore list: lm_head, re:.*self_attn.*, re:.*shared_experts.*, re:.*mlp\.(gate|up|gate_up|down)_proj.*
  const auto k25 = hf("kimi-k2.5.config.json");
  CHECK(k25.weights.experts == Dtype::kInt4G32);
  CHECK(k25.weights.attention == Dtype::kBf16);
  CHECK(k25.weights.shared_experts == Dtype::kBf16);
  CHECK(k25.weights.dense_mlp == Dtype::kBf16);
  CHECK(k25.weights.lm_head == Dtype::kBf16);
}

TEST_CASE("hf: glm4_moe: GQA attention over DeepSeek-style MoE keys", "[hf]") {
  const auto m = hf("glm-4.7-fp8.config.json");
  CHECK(m.attention.kind == specsim::AttentionKind::kGqa);
  CHECK(m.dense_layers == 3);
  REQUIRE(m.moe);
  CHECK(m.moe->experts == 160);
  CHECK(m.moe->shared_experts == 1);
  // 92 x 136,314,880 + 3 x 3 x 5120 x 12288 + 89 x 161 x 23,592,960 + 2 x 151552 x 5120 = 352.7B
  // (GLM-4.5 card: 355B, its MTP layer included).
  CHECK_THAT(m.total_params(), WithinRel(352722616320.0, 1e-9));
}

TEST_CASE("hf: glm4_moe_lite (GLM-4.7-Flash): MLA attention over DeepSeek-style MoE keys", "[hf]") {
  const auto m = hf("glm-4.7-flash.config.json");
  CHECK(m.attention.kind == specsim::AttentionKind::kMla);
  CHECK(m.attention.kv_lora_rank == 512);
  CHECK(m.attention.q_lora_rank == 768);
  CHECK(m.dense_layers == 1);  // first_k_dense_replace
  REQUIRE(m.moe);
  CHECK(m.moe->experts == 64);
  CHECK(m.moe->experts_per_token == 4);
  CHECK(m.moe->shared_experts == 1);
  CHECK(m.mtp_layers == 0);  // AIC's copy leaves num_nextn_predict_layers out
  // Attention per layer: q_a 2048 x 768 + q_b 768 x 20 x 256 + kv_a 2048 x (512 + 64)
  //   + kv_b 512 x 20 x (192 + 256) + o 20 x 256 x 2048 = 21,757,952; MoE layer: 65 experts of
  //   3 x 2048 x 1536 = 613,416,960 plus a 2048 x 64 router; the dense layer 3 x 2048 x 10240;
  //   embedding and head 2 x 154880 x 2048:
  //   47 x 21,757,952 + 46 x 613,548,032 + 62,914,560 + 634,388,480 = 29.94B (card: 30B-A3B class).
  CHECK_THAT(m.total_params(), WithinRel(29943136256.0, 1e-3));
}

TEST_CASE("hf: gpt_oss: alternating 128-token windows, sinks, MXFP4 experts only", "[hf]") {
  const auto m = hf("gpt-oss-120b.config.json");
  CHECK(m.layer_attention.windowed_layers == 18);
  CHECK(m.layer_attention.window == 128);
  CHECK(m.attention.sinks);
  CHECK(m.weights.experts == Dtype::kMxfp4);
  CHECK(m.weights.attention == Dtype::kBf16);
  CHECK(m.weights.lm_head == Dtype::kBf16);
  // 36 x (26,542,080 + 128 x 3 x 2880 x 2880) + 2 x 201088 x 2880 = 116.8B (card: 117B).
  CHECK_THAT(m.total_params(), WithinRel(116775567360.0, 1e-9));
  // At 8192 tokens: (18 x 8192 + 18 x 128) / 36 = 4160 tokens scored per layer on average.
  CHECK_THAT(m.attended_context(8192), WithinRel(4160.0, 1e-12));
}

TEST_CASE("catalogue gpt-oss-120b is that config with 5.1B active, and the SpecForge head fits it and gpt-oss-20b", "[hf]") {
  const auto m = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "gpt-oss-120b"));
  CHECK(m.name == "gpt-oss-120b");
  CHECK_THAT(m.total_params(), WithinRel(hf("gpt-oss-120b.config.json").total_params(), 1e-12));
  // Active: 36 x (26,542,080 + 4 x 24,883,200) + the LM head 579,133,440 = 5,117,829,120 (card: 5.1B);
  // specsim's count also holds the 579,133,440 embedding table, of which a token reads one row.
  CHECK_THAT(m.active_params() - 201088.0 * 2880, WithinRel(5117829120.0, 1e-6));
  // The head of SpecForge's dense gpt-oss config: attention with the midlayer's 2H qkv input
  // 2 x 2880 x 80 x 64 + 4096 x 2880 = 41,287,680; MLP 3 x 2880 x 17280 = 149,299,200; fc 3 x 2880^2 =
  // 24,883,200; LM head 32,000 x 2880 = 92,160,000: 307,630,080 without the target's embedding.
  for (const char* name : {"gpt-oss-120b-eagle3-specforge", "gpt-oss-20b-eagle3-specforge"}) {
    const auto d = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, name));
    REQUIRE(d.eagle3);
    CHECK(d.eagle3->draft_vocab_size == 32000);
    CHECK_THAT(d.total_params(), WithinRel(307630080.0, 1e-6));
  }
  const auto s = specsim::load_scenario(
      std::string(SPECSIM_SOURCE_DIR) +
          "/validation/hf-dogacel-specdrift-gpt-oss-h100/specdrift-gpt-oss-120b-eagle3-h100-bs8-3-1-4.yaml",
      {}, kRoot);
  CHECK(s.draft.eagle3->target == "gpt-oss-120b");
  CHECK(s.engine.spec_version == "v2");
}

TEST_CASE("catalogue targets are their checkpoints' configs, and SpecForge heads fit their targets", "[hf]") {
  // models/llm/NAME.yaml holds the config.json tested above under a header: the same model, read by name.
  for (const auto& [name, config] : std::vector<std::pair<std::string, std::string>>{
           {"llama-4-scout", "llama-4-scout.config.json"},
           {"llama-4-maverick", "llama-4-maverick.config.json"},
           {"kimi-k2-instruct", "kimi-k2-instruct.config.json"},
           {"minimax-m2.5", "minimax-m2.5.config.json"},
           {"qwen3-next-80b-a3b", "qwen3-next-80b-a3b.config.json"},
           {"mixtral-8x7b", "mixtral-8x7b.config.json"}}) {
    INFO(name);
    const auto m = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, name));
    const auto tested = hf(config);
    CHECK(m.name == name);
    CHECK_THAT(m.total_params(), WithinRel(tested.total_params(), 1e-12));
    CHECK_THAT(m.active_params(), WithinRel(tested.active_params(), 1e-12));
    CHECK(m.mtp_layers == tested.mtp_layers);
  }
  // Scout's head: attention with the 2H qkv input 2 x 5120 x (40 + 16) x 128 + 5120 x 5120 = 99,614,720;
  // MLP 3 x 5120 x 32768 = 503,316,480; fc 3 x 5120^2 = 78,643,200; LM head 32,000 x 5120 = 163,840,000.
  const auto scout = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "llama-4-scout-eagle3-specforge"));
  REQUIRE(scout.eagle3);
  CHECK(scout.eagle3->draft_vocab_size == 32000);
  CHECK_THAT(scout.total_params(), WithinRel(99614720.0 + 503316480.0 + 78643200.0 + 163840000.0, 1e-9));
  const std::string scenario = std::string(SPECSIM_SOURCE_DIR) + "/models/scenarios/llama-3.1-8b-eagle3-1x-h200.yaml";
  for (const auto& [target, head] : std::vector<std::pair<std::string, std::string>>{
           {"llama-4-scout", "llama-4-scout-eagle3-specforge"},
           {"qwen3-235b-a22b", "qwen3-235b-a22b-eagle3-specforge"},
           {"kimi-k2-instruct", "kimi-k2.5-eagle3"}}) {
    INFO(target);
    const auto s = specsim::load_scenario(scenario, {"model=" + target, "draft=" + head, "parallel.tp=1"}, kRoot);
    CHECK(s.draft.hidden_size == s.model.hidden_size);
  }
}

TEST_CASE("hf: llama4: chunked attention on 3 of 4 layers, Maverick interleaves MoE and dense", "[hf]") {
  const auto scout = hf("llama-4-scout.config.json");
  CHECK(scout.dense_layers == 0);  // interleave_moe_layer_step 1
  CHECK(scout.layer_attention.windowed_layers == 36);  // every 4th layer is NoPE with full attention
  CHECK(scout.layer_attention.window == 8192);
  REQUIRE(scout.moe);
  CHECK(scout.moe->shared_experts == 1);
  // 48 x (62,914,560 + 17 x 3 x 5120 x 8192) + 2 x 202048 x 5120 = 107.8B; active 48 x (62.9M + 2 x
  // 125.8M) + 2.07B = 17.2B (Scout card: 109B total with the vision encoder, 17B active).
  CHECK_THAT(scout.total_params(), WithinRel(107765432320.0, 1e-9));
  CHECK_THAT(scout.active_params(), WithinRel(17168465920.0, 1e-9));
  const auto maverick = hf("llama-4-maverick.config.json");
  CHECK(maverick.dense_layers == 24);  // interleave_moe_layer_step 2
  CHECK(maverick.intermediate_size == 16384);  // intermediate_size_mlp
  // + 24 dense x 3 x 5120 x 16384 + 24 x 129 experts x 125.8M = 400.7B (card: 400B).
  CHECK_THAT(maverick.total_params(), WithinRel(400695623680.0, 1e-9));
}

TEST_CASE("hf: minimax_m2: FP8 block-wise, 3 MTP modules, its ModelOpt NVFP4 checkpoint", "[hf]") {
  const auto m = hf("minimax-m2.5.config.json");
  CHECK(m.mtp_layers == 3);
  REQUIRE(m.moe);
  CHECK(m.moe->experts == 256);
  CHECK(m.weights.experts == Dtype::kFp8);
  CHECK(m.weights.lm_head == Dtype::kBf16);
  // 62 x (44,040,192 + 256 x 3 x 3072 x 1536) + 2 x 200064 x 3072 = 228.6B (card: 230B).
  CHECK_THAT(m.total_params(), WithinRel(228640161792.0, 1e-9));
  // quant_method modelopt, quant_algo NVFP4; ignore names every self_attn, the routers and lm_head.
  const auto nvfp4 = hf("minimax-m2.5-nvfp4.config.json");
  CHECK(nvfp4.weights.experts == Dtype::kNvfp4);
  CHECK(nvfp4.weights.attention == Dtype::kBf16);
  CHECK(nvfp4.weights.lm_head == Dtype::kBf16);
}

TEST_CASE("hf: a checkpoint directory loads its config.json and ModelOpt's hf_quant_config.json", "[hf]") {
  // FP8 with exclude_modules [lm_head].
  const auto fp8 = specsim::load_model(kHf + "llama-3.1-70b-instruct-fp8");
  CHECK(fp8.name == "llama-3.1-70b-instruct-fp8");
  CHECK(fp8.weights.attention == Dtype::kFp8);
  CHECK(fp8.weights.dense_mlp == Dtype::kFp8);
  CHECK(fp8.weights.lm_head == Dtype::kBf16);
  // NVFP4 excluding each layer's mlp.gate (the router) and lm_head: experts and attention NVFP4.
  const auto nvfp4 = specsim::load_model(kHf + "qwen3-235b-a22b-nvfp4");
  CHECK(nvfp4.weights.experts == Dtype::kNvfp4);
  CHECK(nvfp4.weights.attention == Dtype::kNvfp4);
  CHECK(nvfp4.weights.lm_head == Dtype::kBf16);
  // A directory without config.json names the file it looked for.
  CHECK_THROWS_WITH(specsim::load_model(kHf), Contains("valid/hf/config.json: cannot open file"));
}

TEST_CASE("hf: unknown quantization methods and schemes are refused, never read as BF16", "[hf]") {
  const std::string bad = std::string(SPECSIM_TEST_DATA_DIR) + "/invalid/hf/";
  CHECK_THROWS_WITH(specsim::load_model(bad + "unknown-quant-method.config.json"),
                    Contains("unknown-quant-method.config.json:12:") && Contains("'bitsandbytes' is not supported"));
  CHECK_THROWS_WITH(specsim::load_model(bad + "unknown-compressed-tensors-scheme.config.json"),
                    Contains("weights.num_bits: = 3 with type int"));
}

TEST_CASE("hf: EAGLE-3 draft configs: LlamaForCausalLMEagle3, draft_vocab_size, aux layer ids", "[hf]") {
  const auto head = hf("kimi-k25-eagle3.config.json");
  REQUIRE(head.eagle3);
  CHECK(head.eagle3->version == 3);
  CHECK(head.eagle3->aux_hidden_states == 3);  // eagle_aux_hidden_state_layer_ids [2, 30, 58]
  CHECK(head.eagle3->draft_vocab_size == 32000);
  CHECK(head.eagle3->target.empty());
  // docs/references/models.md#eagle3-heads: Kimi head 1.19B without the shared embedding, the same
  // number the YAML file models/llm/kimi-k2.5-eagle3.yaml gives.
  CHECK_THAT(head.total_params(), WithinRel(1.19e9, 0.02));
  const auto yaml = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "kimi-k2.5-eagle3"));
  CHECK_THAT(head.total_params(), WithinRel(yaml.total_params(), 1e-12));
}

TEST_CASE("hf: a scenario takes an HF target and an HF EAGLE-3 draft directory", "[hf][consistency]") {
  const std::string scenario = std::string(SPECSIM_SOURCE_DIR) +
                               "/validation/specforge-issue-339-2xh100/sf339-qwen3-30b-a3b-eagle3-tp2-bs1-3-3-8.yaml";
  const auto s = specsim::load_scenario(
      scenario, {"model=" + kHf + "qwen3-30b-a3b.config.json", "draft=" + kHf + "qwen3-30b-a3b-eagle3"}, kRoot);
  CHECK(s.draft.name == "qwen3-30b-a3b-eagle3");
  REQUIRE(s.draft.eagle3);
  CHECK(s.draft.layers == 1);
  // Kimi's head (hidden 7168) cannot draft for Qwen3-30B-A3B (hidden 2048): the error names both files.
  CHECK_THROWS_WITH(
      specsim::load_scenario(scenario,
                             {"model=" + kHf + "qwen3-30b-a3b.config.json", "draft=" + kHf + "kimi-k25-eagle3.config.json"},
                             kRoot),
      Contains("does not fit the model 'qwen3-30b-a3b': hidden_size 7168 vs the model's 2048") &&
          Contains("kimi-k25-eagle3.config.json") && Contains("qwen3-30b-a3b.config.json)"));
}

TEST_CASE("hf: deepseek_v32 and glm_moe_dsa: MLA with DeepSeek Sparse Attention's indexer", "[hf]") {
  // DeepSeek-V3's config with V3.2's three indexer keys (tests/data/valid/hf/SOURCES.md).
  const auto v32 = hf("deepseek-v3.2.config.json");
  CHECK(v32.attention.kind == specsim::AttentionKind::kMla);
  CHECK(v32.attention.index_topk == 2048);
  CHECK(v32.attention.index_heads == 64);
  CHECK(v32.attention.index_head_dim == 128);
  CHECK(v32.mtp_layers == 1);
  CHECK(v32.weights.attention == Dtype::kFp8);
  // 671.0B (DeepSeek-V3) + 61 x 13,959,424 indexer weights = 671.8B.
  CHECK_THAT(v32.total_params(), WithinRel(671.77e9, 0.001));
  // GLM-5: 78 layers, 64 heads of nope 192 / rope 64 / v 256, q_lora 2048, 32 indexer heads. The
  // model card says 744B total, 40B active; specsim's active count adds the embedding row and the head.
  const auto glm = hf("glm-5.config.json");
  CHECK(glm.attention.index_heads == 32);
  CHECK(glm.attention.index_topk == 2048);
  CHECK(glm.dense_layers == 3);
  CHECK(glm.mtp_layers == 1);
  CHECK_THAT(glm.total_params(), WithinRel(744e9, 0.002));
  CHECK_THAT(glm.active_params(), WithinRel(40e9 + 2.0 * 154880 * 6144, 0.02));
  CHECK(glm.indexer_layers() == 78);
  // GLM-5.1's launch override index_topk_pattern (rtx6kpro glm5.1_v2 startup log): 40 F, 38 S.
  const specsim::test::TempDir tmp("specsim_test_hf_topk_pattern");
  const std::filesystem::path dir = tmp.path / "GLM-5.1";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << specsim::test::replaced_once(
      specsim::test::read_text(kHf + "glm-5.config.json"), R"("index_topk": 2048,)",
      R"("index_topk": 2048, "index_topk_pattern": "FFSFSSSFSSFFFSSSFFFSFSSSSSSFFSFFSFFSSFFFFFFSFFFFFSFFSSSSSSFSFFFSFSSSFSFFSFFSSS",)");
  CHECK(specsim::load_model(dir.string()).indexer_layers() == 40);
}

TEST_CASE("hf: tie_word_embeddings stores the LM head and the embedding once, and the head is still read", "[hf]") {
  // Qwen3-8B's config with its head tied, as the small Qwen3 checkpoints (0.6B to 4B) ship it: the
  // weights lose one vocab x hidden BF16 matrix, 151,936 x 4,096 x 2 B = 1.245 GB; a forward reads
  // the same bytes (the head's GEMV reads the matrix whichever name it has).
  const specsim::test::TempDir tmp("specsim_test_hf_tied");
  const std::filesystem::path dir = tmp.path / "Qwen3-8B-tied";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << specsim::test::replaced_once(
      specsim::test::read_text(kHf + "qwen3-8b.config.json"), R"("tie_word_embeddings": false)", R"("tie_word_embeddings": true)");
  const auto untied = hf("qwen3-8b.config.json");
  const auto tied = specsim::load_model(dir.string());
  CHECK_FALSE(untied.tied_embeddings);
  CHECK(tied.tied_embeddings);
  CHECK(untied.weight_bytes() - tied.weight_bytes() == 151936.0 * 4096 * 2);
  CHECK(untied.total_params() - tied.total_params() == 151936.0 * 4096);
  CHECK(tied.lm_head_params() == untied.lm_head_params());
  // The shipped draft models say so in their files: Meta's 1.24B and Qwen's 1.7B, not 1.50B and 2.03B.
  const specsim::DataDir data;
  CHECK_THAT(specsim::load_model(data.resolve(specsim::DataKind::kModel, "llama-3.2-1b")).total_params(), WithinRel(1.236e9, 0.001));
  CHECK_THAT(specsim::load_model(data.resolve(specsim::DataKind::kModel, "qwen3-1.7b")).total_params(), WithinRel(1.72e9, 0.001));
}

TEST_CASE("hf: mimo is Qwen2's shape with its MTP modules, which --method mtp drafts with", "[hf]") {
  // MiMo-7B (tests/data/valid/hf/SOURCES.md): 36 layers of hidden 4096, 32 heads with 8 KV heads of
  // 128, FFN 11008, vocab 151680. Per layer 4096 x (32 + 16) x 128 + 32 x 128 x 4096 = 41,943,040
  // attention and 3 x 4096 x 11008 = 135,266,304 MLP; with the untied embedding and head,
  // 36 x 177,209,344 + 2 x 151,680 x 4,096 = 7,622,098,944.
  const auto m = hf("mimo-7b.config.json");
  CHECK(m.layers == 36);
  CHECK(m.attention.kv_heads == 8);
  CHECK(m.mtp_layers == 1);
  CHECK(m.total_params() == 7'622'098'944.0);
  // The module: one such layer and its 2H -> H input projection, 177,209,344 + 33,554,432.
  const auto mtp = specsim::mtp_draft(m);
  CHECK(mtp.total_params() == 177'209'344.0 + 2.0 * 4096 * 4096);
}
