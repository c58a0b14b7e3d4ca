// The launch flags specsim writes (`--emit`) and reads (`init --from-command`), per serving engine:
// one table, each row checked against the engine's own argument parser or config schema at a
// stated commit (docs/references/engine-flags.md gives file and commit for every row). Emitting and
// reading both look flags up here, so a flag is spelled in one place and a command specsim writes
// is one it reads back.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specsim {

enum class Engine { kVllm, kSglang, kTrtllm };
[[nodiscard]] const char* to_string(Engine engine);  // "vllm", "sglang", "trtllm"
// The engine of one of those names (the models/engines names); empty for any other text.
[[nodiscard]] std::optional<Engine> parse_engine(std::string_view name);
[[nodiscard]] std::vector<std::string> engine_names();
// A MoE backend's name as vLLM normalises its --moe-backend value (lower case, '_' for '-'), the
// spelling engine.moe_backend and an engine file's behaviour.expert_kernel.backends hold.
[[nodiscard]] std::string moe_backend_name(std::string_view spelled);

// What a flag or config key sets in the launch (one scenario setting, or a detail of the launch).
enum class LaunchSetting {
  kModel,                  // target weights
  kTp,                     // tensor-parallel ranks
  kPp,                     // pipeline stages
  kDp,                     // data-parallel groups
  kEp,                     // expert-parallel ranks (a size, or a switch where the engine has one)
  kDpAttention,            // data-parallel attention
  kMoeA2a,                 // the MoE all-to-all backend
  kMoeBackend,             // the MoE experts' kernel backend (read only)
  kMethod,                 // the speculative method (a name the engine spells its own way)
  kDraft,                  // draft weights
  kNumSteps,               // draft depth k
  kTopk,                   // branching per draft step
  kDraftTokens,            // tokens verified per request
  kDraftTp,                // the draft's tensor-parallel ranks
  kParallelDrafting,       // block drafting
  kNgramWindow,            // n-gram lookup window
  kMtpModules,             // MTP modules run per cycle (TensorRT-LLM)
  kDraftLenSchedule,       // draft length per batch size (TensorRT-LLM)
  kEager,                  // no CUDA graphs at all
  kGraphMaxBatch,          // CUDA graphs captured up to this many requests
  kGraphMaxTokens,         // CUDA graphs captured up to this many tokens (vLLM)
  kGraphSizesTokens,       // the token counts CUDA graphs are captured for, a list (vLLM; read only)
  kGraphPadding,           // batches padded up to a captured graph (TensorRT-LLM)
  kNoCustomAllReduce,      // the engine's custom all-reduce off: NCCL only
  kAllReduceStrategy,      // TensorRT-LLM's all-reduce choice
  kMemoryFraction,         // share of GPU memory the engine allocates from
  kKvCacheDtype,           // the KV cache's storage dtype
  kAsyncScheduling,        // vLLM async scheduling on (or, with the --no- form, off)
  kSpeculativeConfig,      // the JSON object carrying the speculative settings (vLLM)
  kConfigFile,             // the YAML file carrying the LLM API settings (TensorRT-LLM)
  kBackend,                // TensorRT-LLM's backend
};

// How a row is written: a flag with a value, a flag alone, a key inside vLLM's
// --speculative-config JSON, or a key of TensorRT-LLM's extra LLM API options YAML (dotted path).
enum class FlagKind { kOption, kSwitch, kJsonKey, kYamlKey };

struct EngineFlag {
  Engine engine;
  LaunchSetting setting;
  FlagKind kind;
  std::string name;                  // as emitted: "--tp-size", "num_speculative_tokens", "speculative_config.max_draft_len"
  std::vector<std::string> aliases;  // other spellings the parser accepts (read, never written)
  std::string checked_at;            // "repository path @ commit" of the parser that defines it
};

// Every row, in one table (engine_flags.cpp).
[[nodiscard]] const std::vector<EngineFlag>& engine_flags();
// The row that writes `setting` for `engine` (of `kind` when given); nullptr when the engine has none.
[[nodiscard]] const EngineFlag* engine_flag(Engine engine, LaunchSetting setting);
// The row whose name or alias is `name` (a flag as typed, `--tp-size`, or a config key); nullptr
// when the table has none.
[[nodiscard]] const EngineFlag* find_engine_flag(Engine engine, std::string_view name);
// The engine's own name for a speculation.method (eagle3, eagle, mtp, draft_model, ngram), from
// the same parsers: vLLM's `method`, SGLang's `--speculative-algorithm`, TensorRT-LLM's
// `decoding_type`. Empty when the engine has none that specsim checked.
[[nodiscard]] std::optional<std::string> method_value(Engine engine, const std::string& method);
// The speculation.method an engine's name stands for (vLLM's deepseek_mtp read as mtp); empty
// for a name specsim does not know.
[[nodiscard]] std::optional<std::string> method_of_value(Engine engine, const std::string& value);

// The parsers an engine's rows were checked against, "repository path @ commit", each once.
[[nodiscard]] std::vector<std::string> flag_sources(Engine engine);

}  // namespace specsim
