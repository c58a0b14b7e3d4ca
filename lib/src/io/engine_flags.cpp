#include "specsim/engine_flags.hpp"

#include <algorithm>
#include <cctype>
#include <array>

#include "specsim/speculation_method.hpp"

namespace specsim {

namespace {

// The parsers the rows were checked against (docs/references/engine-flags.md quotes each row's
// definition by file and commit). A row names one of these.
const std::string kVllmArgs = "vllm-project/vllm vllm/engine/arg_utils.py @ 99d7eb5d";
const std::string kVllmSpec = "vllm-project/vllm vllm/config/speculative.py @ 002e77c1";
const std::string kSglangArgs = "sgl-project/sglang docs/advanced_features/server_arguments.md @ 004813e1";
const std::string kTrtServe = "NVIDIA/TensorRT-LLM tensorrt_llm/commands/serve.py @ 00209af1";
const std::string kTrtArgs = "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py @ 00043967";
// vLLM's KernelConfig group (--moe-backend), newer than kVllmArgs' commit; read through the code
// index, whose stored version does not report its commit (docs/references/engine-flags.md).
const std::string kVllmKernelArgs = "vllm-project/vllm vllm/engine/arg_utils.py (KernelConfig group) and vllm/config/kernel.py";

std::vector<EngineFlag> vllm_rows() {
  using S = LaunchSetting;
  using K = FlagKind;
  const Engine e = Engine::kVllm;
  return {
      {e, S::kModel, K::kOption, "--model", {}, kVllmArgs},
      {e, S::kTp, K::kOption, "--tensor-parallel-size", {"-tp"}, kVllmArgs},
      {e, S::kPp, K::kOption, "--pipeline-parallel-size", {"-pp"}, kVllmArgs},
      {e, S::kDp, K::kOption, "--data-parallel-size", {"-dp"}, kVllmArgs},
      {e, S::kEp, K::kSwitch, "--enable-expert-parallel", {}, kVllmArgs},
      {e, S::kEager, K::kSwitch, "--enforce-eager", {}, kVllmArgs},
      {e, S::kGraphMaxTokens, K::kOption, "--max-cudagraph-capture-size", {}, kVllmArgs},
      {e, S::kGraphSizesTokens, K::kOption, "--cudagraph-capture-sizes", {"--cuda-graph-sizes"}, kVllmArgs},
      {e, S::kNoCustomAllReduce, K::kSwitch, "--disable-custom-all-reduce", {}, kVllmArgs},
      {e, S::kMemoryFraction, K::kOption, "--gpu-memory-utilization", {}, kVllmArgs},
      {e, S::kKvCacheDtype, K::kOption, "--kv-cache-dtype", {}, kVllmArgs},
      {e, S::kMoeBackend, K::kOption, "--moe-backend", {}, kVllmKernelArgs},
      // argparse.BooleanOptionalAction: --no-async-scheduling turns it off.
      {e, S::kAsyncScheduling, K::kSwitch, "--async-scheduling", {"--no-async-scheduling"}, kVllmArgs},
      {e, S::kSpeculativeConfig, K::kOption, "--speculative-config", {}, kVllmArgs},
      {e, S::kMethod, K::kJsonKey, "method", {}, kVllmSpec},
      {e, S::kDraft, K::kJsonKey, "model", {}, kVllmSpec},
      {e, S::kNumSteps, K::kJsonKey, "num_speculative_tokens", {}, kVllmSpec},
      {e, S::kDraftTp, K::kJsonKey, "draft_tensor_parallel_size", {}, kVllmSpec},
      {e, S::kParallelDrafting, K::kJsonKey, "parallel_drafting", {}, kVllmSpec},
      {e, S::kNgramWindow, K::kJsonKey, "prompt_lookup_max", {}, kVllmSpec},
  };
}

std::vector<EngineFlag> sglang_rows() {
  using S = LaunchSetting;
  using K = FlagKind;
  const Engine e = Engine::kSglang;
  return {
      {e, S::kModel, K::kOption, "--model-path", {"--model"}, kSglangArgs},
      {e, S::kTp, K::kOption, "--tp-size", {"--tensor-parallel-size", "--tp"}, kSglangArgs},
      {e, S::kPp, K::kOption, "--pp-size", {"--pipeline-parallel-size"}, kSglangArgs},
      {e, S::kDp, K::kOption, "--dp-size", {"--data-parallel-size", "--dp"}, kSglangArgs},
      {e, S::kEp, K::kOption, "--ep-size", {"--expert-parallel-size", "--ep"}, kSglangArgs},
      {e, S::kDpAttention, K::kSwitch, "--enable-dp-attention", {}, kSglangArgs},
      {e, S::kMoeA2a, K::kOption, "--moe-a2a-backend", {}, kSglangArgs},
      {e, S::kMoeBackend, K::kOption, "--moe-runner-backend", {}, kSglangArgs},
      {e, S::kMethod, K::kOption, "--speculative-algorithm", {}, kSglangArgs},
      {e, S::kDraft, K::kOption, "--speculative-draft-model-path", {"--speculative-draft-model"}, kSglangArgs},
      {e, S::kNumSteps, K::kOption, "--speculative-num-steps", {}, kSglangArgs},
      {e, S::kTopk, K::kOption, "--speculative-eagle-topk", {}, kSglangArgs},
      {e, S::kDraftTokens, K::kOption, "--speculative-num-draft-tokens", {}, kSglangArgs},
      {e, S::kEager, K::kSwitch, "--disable-cuda-graph", {}, kSglangArgs},
      {e, S::kGraphMaxBatch, K::kOption, "--cuda-graph-max-bs", {}, kSglangArgs},
      {e, S::kNoCustomAllReduce, K::kSwitch, "--disable-custom-all-reduce", {}, kSglangArgs},
      {e, S::kMemoryFraction, K::kOption, "--mem-fraction-static", {}, kSglangArgs},
      {e, S::kKvCacheDtype, K::kOption, "--kv-cache-dtype", {}, kSglangArgs},
  };
}

std::vector<EngineFlag> trtllm_rows() {
  using S = LaunchSetting;
  using K = FlagKind;
  const Engine e = Engine::kTrtllm;
  return {
      {e, S::kTp, K::kOption, "--tp_size", {"--tensor_parallel_size"}, kTrtServe},
      {e, S::kPp, K::kOption, "--pp_size", {"--pipeline_parallel_size"}, kTrtServe},
      {e, S::kEp, K::kOption, "--ep_size", {"--moe_expert_parallel_size"}, kTrtServe},
      {e, S::kBackend, K::kOption, "--backend", {}, kTrtServe},
      {e, S::kConfigFile, K::kOption, "--extra_llm_api_options", {"--config"}, kTrtServe},
      {e, S::kMethod, K::kYamlKey, "speculative_config.decoding_type", {}, kTrtArgs},
      {e, S::kDraft, K::kYamlKey, "speculative_config.speculative_model", {"speculative_config.speculative_model_dir"}, kTrtArgs},
      {e, S::kNumSteps, K::kYamlKey, "speculative_config.max_draft_len", {}, kTrtArgs},
      {e, S::kMtpModules, K::kYamlKey, "speculative_config.num_nextn_predict_layers", {}, kTrtArgs},
      {e, S::kDraftLenSchedule, K::kYamlKey, "speculative_config.draft_len_schedule", {}, kTrtArgs},
      {e, S::kEager, K::kYamlKey, "cuda_graph_config", {}, kTrtArgs},
      {e, S::kGraphMaxBatch, K::kYamlKey, "cuda_graph_config.max_batch_size", {}, kTrtArgs},
      {e, S::kGraphPadding, K::kYamlKey, "cuda_graph_config.enable_padding", {}, kTrtArgs},
      {e, S::kDpAttention, K::kYamlKey, "enable_attention_dp", {}, kTrtArgs},
      {e, S::kAllReduceStrategy, K::kYamlKey, "allreduce_strategy", {}, kTrtArgs},
      {e, S::kKvCacheDtype, K::kYamlKey, "kv_cache_config.dtype", {}, kTrtArgs},
  };
}

}  // namespace

// The spellings are the method rows' (speculation_method.cpp), checked against the parsers above.
std::optional<std::string> method_value(Engine engine, const std::string& method) {
  const SpeculationMethod* m = find_speculation_method(method);
  const char* value = m ? m->spelled_by(to_string(engine)) : nullptr;
  if (!value) return std::nullopt;
  return std::string(value);
}

// vLLM names the MTP of each model family apart; every name drafts with the target's own MTP
// modules (vllm/config/speculative.py `MTPModelTypes`, v0.27.1; docs/references/engine-flags.md).
constexpr std::array kVllmMtpMethods = {
    "deepseek_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp", "glm4_moe_lite_mtp", "glm_ocr_mtp",
    "ernie_mtp", "nemotron_h_mtp", "exaone_moe_mtp", "exaone4_5_mtp", "qwen3_next_mtp", "qwen3_5_mtp",
    "longcat_flash_mtp", "minimax_m3_mtp", "bailing_hybrid_mtp", "kimi_k3_mtp", "pangu_ultra_moe_mtp",
    "step3p5_mtp", "hy_v3_mtp", "gemma4_mtp", "inkling_mtp",
};

std::optional<std::string> method_of_value(Engine engine, const std::string& value) {
  const bool vllm_mtp = std::find(kVllmMtpMethods.begin(), kVllmMtpMethods.end(), value) != kVllmMtpMethods.end();
  if (engine == Engine::kVllm && vllm_mtp) return "mtp";
  for (const SpeculationMethod& m : speculation_methods()) {
    const char* spelled = m.spelled_by(to_string(engine));
    if (spelled && value == spelled) return std::string(m.name);
  }
  return std::nullopt;
}

const char* to_string(Engine engine) {
  switch (engine) {
    case Engine::kVllm: return "vllm";
    case Engine::kSglang: return "sglang";
    case Engine::kTrtllm: return "trtllm";
  }
  return "?";
}

std::optional<Engine> parse_engine(std::string_view name) {
  for (Engine e : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
    if (name == to_string(e)) return e;
  }
  return std::nullopt;
}

std::vector<std::string> engine_names() { return {"vllm", "sglang", "trtllm"}; }

const std::vector<EngineFlag>& engine_flags() {
  static const std::vector<EngineFlag> table = [] {
    std::vector<EngineFlag> rows = vllm_rows();
    for (auto part : {sglang_rows(), trtllm_rows()}) rows.insert(rows.end(), part.begin(), part.end());
    return rows;
  }();
  return table;
}

std::string moe_backend_name(std::string_view spelled) {
  std::string out(spelled);
  for (char& c : out) c = c == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

const EngineFlag* engine_flag(Engine engine, LaunchSetting setting) {
  for (const auto& f : engine_flags()) {
    if (f.engine == engine && f.setting == setting) return &f;
  }
  return nullptr;
}

const EngineFlag* find_engine_flag(Engine engine, std::string_view name) {
  for (const auto& f : engine_flags()) {
    if (f.engine != engine) continue;
    if (f.name == name || std::find(f.aliases.begin(), f.aliases.end(), name) != f.aliases.end()) return &f;
  }
  return nullptr;
}

std::vector<std::string> flag_sources(Engine engine) {
  std::vector<std::string> out;
  for (const auto& f : engine_flags()) {
    if (f.engine == engine && std::find(out.begin(), out.end(), f.checked_at) == out.end()) out.push_back(f.checked_at);
  }
  return out;
}

}  // namespace specsim
