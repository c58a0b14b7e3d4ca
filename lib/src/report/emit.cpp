#include "specsim/emit.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"
#include "specsim/scenario_fields.hpp"
#include "specsim/scenario_rules.hpp"
#include "specsim/speculation_method.hpp"

namespace specsim {

namespace {

// The share of GPU memory the launch gives the engine: the scenario's, when set; else, launching
// on an engine other than the scenario's, the share its memory fit assumed (the other engine's
// default would plan another memory layout, one the prediction did not check); else none (the
// engine's own default is what was predicted).
std::optional<double> launch_memory_fraction(const Scenario& s, Engine e) {
  if (s.engine.memory_fraction) return s.engine.memory_fraction;
  if (s.engine.name == to_string(e)) return std::nullopt;
  return memory_fit(s).engine_fraction;
}

using ojson = nlohmann::ordered_json;

// The YAML file TensorRT-LLM's --extra_llm_api_options names in an emitted launch.
constexpr const char* kTrtConfigName = "extra-llm-api-options.yaml";

const std::string& flag(Engine engine, LaunchSetting setting) {
  const EngineFlag* f = engine_flag(engine, setting);
  if (!f) throw Error(std::string("internal: no ") + to_string(engine) + " flag for a launch setting");
  return f->name;
}

// The last part of a YAML row's dotted key ("speculative_config.max_draft_len" -> "max_draft_len").
std::string yaml_leaf(Engine engine, LaunchSetting setting) {
  const std::string& name = flag(engine, setting);
  return name.substr(name.rfind('.') + 1);
}

[[noreturn]] void refuse(Engine engine, const std::string& key, const std::string& why) {
  throw Error({"--emit", 0, 0}, key, std::string(to_string(engine)) + ": " + why);
}

// The engine's own spelling of the scenario's KV cache dtype (the parsers' choices,
// docs/references/engine-flags.md); none when the scenario keeps "auto". A dtype the engine has
// no spelling for is refused: the launch would not cache what was predicted.
std::optional<std::string> kv_cache_value(const Scenario& s, Engine e) {
  if (!s.engine.kv_cache_dtype) return std::nullopt;
  const Dtype kv = *s.engine.kv_cache_dtype;
  const bool model_dtype = kv == s.model.activation_dtype;
  const char* value = nullptr;
  switch (e) {
    case Engine::kVllm: value = kv == Dtype::kFp8 ? "fp8" : kv == Dtype::kBf16 ? "bfloat16" : kv == Dtype::kInt8 ? "int8" : nullptr; break;
    case Engine::kSglang: value = kv == Dtype::kFp8 ? "fp8_e4m3" : kv == Dtype::kBf16 ? "bf16" : nullptr; break;
    case Engine::kTrtllm: value = kv == Dtype::kFp8 ? "fp8" : model_dtype ? "auto" : nullptr; break;
  }
  if (!value) refuse(e, "engine.kv_cache_dtype", std::string("no KV cache dtype specsim checked caches in ") + to_string(kv));
  return std::string(value);
}

void add_kv_cache_dtype(const Scenario& s, Engine e, std::vector<std::string>& argv) {
  if (const auto kv = kv_cache_value(s, e)) argv.insert(argv.end(), {flag(e, LaunchSetting::kKvCacheDtype), *kv});
}

// The weights the engine loads: a checkpoint directory the scenario was given, else a placeholder
// carrying the models/llm name (`init --from-command` reads it back as that name).
std::string weights(const TransformerSpec& m) {
  const std::filesystem::path file(m.file);
  if (file.filename() == "config.json") return file.parent_path().string();
  return "<path-to-" + m.name + ">";
}

int largest_batch(const Scenario& s) {
  int largest = s.batch;
  for (int c : s.concurrency) largest = std::max(largest, c);
  return largest;
}

// NCCL's environment from the scenario's what-ifs (comm.nccl_*, comm.*_channels).
std::vector<std::pair<std::string, std::string>> nccl_env(const Scenario& s) {
  std::vector<std::pair<std::string, std::string>> env;
  if (s.parallel.tp < 2) return env;
  if (s.comm.nccl_algo == "ring") env.emplace_back("NCCL_ALGO", "Ring");
  if (s.comm.nccl_algo == "tree") env.emplace_back("NCCL_ALGO", "Tree");
  if (s.comm.nccl_proto == "ll") env.emplace_back("NCCL_PROTO", "LL");
  if (s.comm.nccl_proto == "ll128") env.emplace_back("NCCL_PROTO", "LL128");
  if (s.comm.nccl_proto == "simple") env.emplace_back("NCCL_PROTO", "Simple");
  if (s.comm.min_channels > 0) env.emplace_back("NCCL_MIN_NCHANNELS", std::to_string(s.comm.min_channels));
  if (s.comm.max_channels > 0) env.emplace_back("NCCL_MAX_NCHANNELS", std::to_string(s.comm.max_channels));
  if (s.comm.nccl_p2p_level != "auto") {
    std::string level = s.comm.nccl_p2p_level;
    for (char& c : level) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    env.emplace_back("NCCL_P2P_LEVEL", level);
  }
  return env;
}

// What the scenario's launch modes say that the engines' one switch (graphs on or off) cannot.
void note_modes(const Scenario& s, std::vector<std::string>& notes) {
  const EngineSettings& e = s.engine;
  const bool mixed = e.verify_mode != e.decode_mode ||
                     (e.draft_mode != e.decode_mode && e.draft_mode != LaunchMode::kPiecewise);
  if (!mixed) return;
  notes.push_back(std::string("engine modes decode ") + to_string(e.decode_mode) + ", verify " +
                  to_string(e.verify_mode) + ", draft " + to_string(e.draft_mode) +
                  ": no flag sets them apart; the command runs every forward " +
                  (e.decode_mode == LaunchMode::kEager ? "eagerly" : "under CUDA graphs") +
                  " (an eager verify beside graphs is what a shape left out of capture gives, "
                  "docs/references/specdec.md#verify-graph-capture)");
}

// The parts every engine refuses the same way.
void refuse_common(const Scenario& s, Engine engine) {
  if (!engine_flag(engine, LaunchSetting::kDraftTp) && s.parallel.draft_tp && *s.parallel.draft_tp != s.parallel.tp) {
    refuse(engine, "parallel.draft_tp", "the draft runs at the target's TP in this engine; draft_tp " +
                                            std::to_string(*s.parallel.draft_tp) + " has no flag");
  }
  if (!engine_flag(engine, LaunchSetting::kParallelDrafting) && s.speculation.parallel_drafting) {
    refuse(engine, "speculation.parallel_drafting", "block drafting is a vLLM speculative_config key only");
  }
  if (!method_value(engine, s.speculation.method)) {
    refuse(engine, "speculation.method",
           "method " + s.speculation.method + " is not one this engine names in the parser specsim checked (" +
               flag_sources(engine).back() + ")");
  }
}

// ---- vLLM ------------------------------------------------------------------------------------

std::string vllm_speculative_config(const Scenario& s, bool speculate) {
  ojson j;
  const Engine e = Engine::kVllm;
  j[flag(e, LaunchSetting::kMethod)] = *method_value(e, s.speculation.method);
  if (s.speculation.kind().needs_draft_file()) j[flag(e, LaunchSetting::kDraft)] = weights(s.draft);
  j[flag(e, LaunchSetting::kNumSteps)] = s.speculation.shape.num_steps;
  if (s.parallel.draft_tp) j[flag(e, LaunchSetting::kDraftTp)] = *s.parallel.draft_tp;
  if (s.speculation.parallel_drafting) j[flag(e, LaunchSetting::kParallelDrafting)] = true;
  // prompt_lookup_max is required for ngram (prompt lookup); the scenario has no key for it.
  if (s.speculation.kind().source == DraftSource::kPromptLookup) j[flag(e, LaunchSetting::kNgramWindow)] = 4;
  return speculate ? j.dump() : "";
}

void vllm_parallel(const Scenario& s, std::vector<std::string>& argv) {
  const Engine e = Engine::kVllm;
  const Parallelism& p = s.parallel;
  if (p.ep > 1 && p.ep != p.tp) refuse(e, "parallel.ep", "--enable-expert-parallel spreads the experts over every rank; ep " +
                                              std::to_string(p.ep) + " below tp " + std::to_string(p.tp) + " has no flag");
  if (p.moe_a2a != MoeA2aBackend::kNone) refuse(e, "parallel.moe_a2a", "specsim checked no all-to-all backend flag for vLLM");
  // vLLM's data parallelism on an MoE target: attention per DP rank, the experts over all tp x dp
  // ranks (TP, or EP with --enable-expert-parallel): the scenario's attention_dp with tp = tp x dp.
  const int dp = p.attention_dp;
  argv.insert(argv.end(), {flag(e, LaunchSetting::kTp), std::to_string(p.tp / std::max(1, dp))});
  if (dp > 1) argv.insert(argv.end(), {flag(e, LaunchSetting::kDp), std::to_string(dp)});
  if (p.pp > 1) argv.insert(argv.end(), {flag(e, LaunchSetting::kPp), std::to_string(p.pp)});
  if (p.ep > 1) argv.push_back(flag(e, LaunchSetting::kEp));
}

LaunchCommand vllm_command(const Scenario& s, int batch, bool speculate, std::vector<std::string>& notes) {
  const Engine e = Engine::kVllm;
  if (!s.speculation.shape.is_chain()) refuse(e, "speculation.eagle_topk", "a tree (eagle_topk " + std::to_string(s.speculation.shape.eagle_topk) + ") has no flag specsim checked; vLLM drafts chains here");
  LaunchCommand c;
  c.env = nccl_env(s);
  c.argv = {"vllm", "serve", flag(e, LaunchSetting::kModel), weights(s.model)};
  vllm_parallel(s, c.argv);
  if (s.engine.decode_mode == LaunchMode::kEager) {
    c.argv.push_back(flag(e, LaunchSetting::kEager));
  } else {
    // vLLM captures graphs by tokens: a uniform decode batch of B requests verifies B (k + 1) tokens.
    const int tokens = batch * (speculate ? s.speculation.shape.verified_tokens() : 1);
    c.argv.insert(c.argv.end(), {flag(e, LaunchSetting::kGraphMaxTokens), std::to_string(tokens)});
  }
  if (s.parallel.tp > 1 && s.comm.implementation == "nccl") c.argv.push_back(flag(e, LaunchSetting::kNoCustomAllReduce));
  if (const auto f = launch_memory_fraction(s, e)) c.argv.insert(c.argv.end(), {flag(e, LaunchSetting::kMemoryFraction), std::to_string(*f)});
  add_kv_cache_dtype(s, e, c.argv);
  if (s.engine.async_speculative) {
    const EngineFlag* async = engine_flag(e, LaunchSetting::kAsyncScheduling);
    c.argv.push_back(*s.engine.async_speculative ? async->name : async->aliases.at(0));
  }
  if (s.speculation.kind().source == DraftSource::kPromptLookup) notes.push_back("prompt_lookup_max 4: vLLM requires it for ngram and the scenario has no key for it (assumption)");
  if (speculate) c.argv.insert(c.argv.end(), {flag(e, LaunchSetting::kSpeculativeConfig), vllm_speculative_config(s, speculate)});
  return c;
}

// ---- SGLang ----------------------------------------------------------------------------------

void sglang_parallel(const Scenario& s, std::vector<std::string>& argv) {
  const Engine e = Engine::kSglang;
  const Parallelism& p = s.parallel;
  argv.insert(argv.end(), {flag(e, LaunchSetting::kTp), std::to_string(p.tp)});
  if (p.pp > 1) argv.insert(argv.end(), {flag(e, LaunchSetting::kPp), std::to_string(p.pp)});
  if (p.ep > 1) argv.insert(argv.end(), {flag(e, LaunchSetting::kEp), std::to_string(p.ep)});
  if (p.moe_a2a != MoeA2aBackend::kNone) argv.insert(argv.end(), {flag(e, LaunchSetting::kMoeA2a), to_string(p.moe_a2a)});
  if (p.attention_dp > 1) {
    argv.push_back(flag(e, LaunchSetting::kDpAttention));
    argv.insert(argv.end(), {flag(e, LaunchSetting::kDp), std::to_string(p.attention_dp)});
  }
}

void sglang_speculation(const Scenario& s, std::vector<std::string>& argv) {
  const Engine e = Engine::kSglang;
  const DraftShape& shape = s.speculation.shape;
  argv.insert(argv.end(), {flag(e, LaunchSetting::kMethod), *method_value(e, s.speculation.method)});
  if (s.speculation.kind().source == DraftSource::kPromptLookup) {
    argv.insert(argv.end(), {flag(e, LaunchSetting::kDraftTokens), std::to_string(shape.verified_tokens())});
    return;
  }
  if (s.speculation.kind().needs_draft_file()) argv.insert(argv.end(), {flag(e, LaunchSetting::kDraft), weights(s.draft)});
  argv.insert(argv.end(), {flag(e, LaunchSetting::kNumSteps), std::to_string(shape.num_steps),
                           flag(e, LaunchSetting::kTopk), std::to_string(shape.eagle_topk),
                           flag(e, LaunchSetting::kDraftTokens), std::to_string(shape.verified_tokens())});
}

LaunchCommand sglang_command(const Scenario& s, int batch, bool speculate) {
  const Engine e = Engine::kSglang;
  LaunchCommand c;
  c.env = nccl_env(s);
  // The overlap worker (engine.spec_version v2) is turned on by this variable in the builds that do
  // not run it by default; v1, the older builds' default, needs none.
  if (speculate && s.engine.spec_version == "v2") c.env.emplace_back("SGLANG_ENABLE_SPEC_V2", "1");
  c.argv = {"python", "-m", "sglang.launch_server", flag(e, LaunchSetting::kModel), weights(s.model)};
  sglang_parallel(s, c.argv);
  if (speculate) sglang_speculation(s, c.argv);
  if (s.engine.decode_mode == LaunchMode::kEager) {
    c.argv.push_back(flag(e, LaunchSetting::kEager));
  } else {
    c.argv.insert(c.argv.end(), {flag(e, LaunchSetting::kGraphMaxBatch), std::to_string(batch)});
  }
  if (s.parallel.tp > 1 && s.comm.implementation == "nccl") c.argv.push_back(flag(e, LaunchSetting::kNoCustomAllReduce));
  if (const auto f = launch_memory_fraction(s, e)) c.argv.insert(c.argv.end(), {flag(e, LaunchSetting::kMemoryFraction), std::to_string(*f)});
  add_kv_cache_dtype(s, e, c.argv);
  return c;
}

// ---- TensorRT-LLM ----------------------------------------------------------------------------

std::string trt_speculative_yaml(const Scenario& s, const std::vector<std::pair<int, int>>& schedule) {
  const Engine e = Engine::kTrtllm;
  const SpeculationMethod& method = s.speculation.kind();
  std::string y = "speculative_config:\n";
  y += "  " + yaml_leaf(e, LaunchSetting::kMethod) + ": " + *method_value(e, method.name) + "\n";
  if (method.source == DraftSource::kTargetMtp) {
    y += "  " + yaml_leaf(e, LaunchSetting::kMtpModules) + ": " + std::to_string(s.speculation.shape.num_steps) + "\n";
  } else {
    y += "  " + yaml_leaf(e, LaunchSetting::kNumSteps) + ": " + std::to_string(s.speculation.shape.num_steps) + "\n";
  }
  if (method.needs_draft_file()) {
    y += "  " + yaml_leaf(e, LaunchSetting::kDraft) + ": \"" + weights(s.draft) + "\"\n";
  }
  if (!schedule.empty()) {
    y += "  " + yaml_leaf(e, LaunchSetting::kDraftLenSchedule) + ":\n";
    for (const auto& [max_batch, draft_len] : schedule) y += "    " + std::to_string(max_batch) + ": " + std::to_string(draft_len) + "\n";
  }
  return y;
}

std::string trt_engine_yaml(const Scenario& s, int batch) {
  const Engine e = Engine::kTrtllm;
  std::string y;
  if (s.engine.decode_mode == LaunchMode::kEager) {
    y += flag(e, LaunchSetting::kEager) + ": null\n";
  } else {
    y += flag(e, LaunchSetting::kEager) + ":\n";
    y += "  " + yaml_leaf(e, LaunchSetting::kGraphPadding) + ": true\n";
    y += "  " + yaml_leaf(e, LaunchSetting::kGraphMaxBatch) + ": " + std::to_string(batch) + "\n";
  }
  if (s.parallel.attention_dp > 1) y += flag(e, LaunchSetting::kDpAttention) + ": true\n";
  const std::string& impl = s.comm.implementation;
  const char* strategy = impl == "nccl" ? "NCCL" : impl == "custom_oneshot" ? "ONESHOT" : impl == "custom_twoshot" ? "TWOSHOT" : nullptr;
  if (s.parallel.tp > 1 && strategy) y += flag(e, LaunchSetting::kAllReduceStrategy) + ": " + strategy + "\n";
  if (const auto kv = kv_cache_value(s, e)) y += "kv_cache_config:\n  " + yaml_leaf(e, LaunchSetting::kKvCacheDtype) + ": " + *kv + "\n";
  return y;
}

LaunchCommand trt_command(const Scenario& s, int batch, bool speculate, const std::vector<std::pair<int, int>>& schedule) {
  const Engine e = Engine::kTrtllm;
  const Parallelism& p = s.parallel;
  // TensorRT-LLM builds on CUDA: an AMD Instinct box has no launch of it.
  if (is_amd(s.gpu.architecture)) refuse(e, "gpu", "TensorRT-LLM runs on NVIDIA GPUs only; '" + s.gpu.name + "' is an AMD Instinct card");
  if (!s.speculation.shape.is_chain()) refuse(e, "speculation.eagle_topk", "a tree (eagle_topk " + std::to_string(s.speculation.shape.eagle_topk) + ") has no key specsim checked; chains only");
  if (p.attention_dp > 1 && p.attention_dp != p.tp) refuse(e, "parallel.attention_dp", "enable_attention_dp runs attention data-parallel over every rank (attention_dp = tp)");
  if (p.moe_a2a != MoeA2aBackend::kNone) refuse(e, "parallel.moe_a2a", "specsim checked no all-to-all backend key for TensorRT-LLM");
  LaunchCommand c;
  c.env = nccl_env(s);
  c.config_name = kTrtConfigName;
  c.config_text = (speculate ? trt_speculative_yaml(s, schedule) : "") + trt_engine_yaml(s, batch);
  c.argv = {"trtllm-serve", weights(s.model), flag(e, LaunchSetting::kBackend), "pytorch",
            flag(e, LaunchSetting::kTp), std::to_string(p.tp)};
  if (p.pp > 1) c.argv.insert(c.argv.end(), {flag(e, LaunchSetting::kPp), std::to_string(p.pp)});
  if (p.ep > 1) c.argv.insert(c.argv.end(), {flag(e, LaunchSetting::kEp), std::to_string(p.ep)});
  c.argv.insert(c.argv.end(), {flag(e, LaunchSetting::kConfigFile), kTrtConfigName});
  return c;
}

LaunchCommand command_for(const Scenario& s, Engine engine, int batch, bool speculate,
                          const std::vector<std::pair<int, int>>& schedule, std::vector<std::string>& notes) {
  refuse_common(s, engine);
  switch (engine) {
    case Engine::kVllm: return vllm_command(s, batch, speculate, notes);
    case Engine::kSglang: return sglang_command(s, batch, speculate);
    case Engine::kTrtllm: return trt_command(s, batch, speculate, schedule);
  }
  return {};
}

// ---- the script --------------------------------------------------------------------------------

bool plain_word(const std::string& w) {
  return !w.empty() && std::all_of(w.begin(), w.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || std::string("_./:=,@+-").find(ch) != std::string::npos;
  });
}

std::string quoted(const std::string& w) {
  if (plain_word(w)) return w;
  std::string out = "'";
  for (char ch : w) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// A command over several lines: the program words first (`python -m sglang.launch_server`), then
// a `--flag` and its value per line.
std::string command_text(const std::vector<std::string>& argv) {
  std::string out;
  std::size_t i = 0;
  for (; i < argv.size() && !argv[i].starts_with("--"); ++i) out += (i ? " " : "") + quoted(argv[i]);
  while (i < argv.size()) {
    out += " \\\n  " + quoted(argv[i++]);
    while (i < argv.size() && !argv[i].starts_with("--")) out += " " + quoted(argv[i++]);
  }
  return out + "\n";
}

std::string command_block(const LaunchCommand& c) {
  std::string out;
  for (const auto& [key, value] : c.env) out += "export " + key + "=" + quoted(value) + "\n";
  if (!c.config_name.empty()) out += "cat > " + c.config_name + " <<'EOF'\n" + c.config_text + "EOF\n";
  return out + command_text(c.argv);
}

std::string script_of(const EmittedLaunch& l) {
  std::string out = "# " + std::string(to_string(l.engine)) + " launch of scenario " + l.scenario +
                    ", written by specsim; flags checked against (docs/references/engine-flags.md):\n";
  for (const auto& src : l.checked_against) out += "#   " + src + "\n";
  for (const auto& n : l.notes) out += "# note: " + n + "\n";
  for (const auto& p : l.problems) out += "# " + describe(p) + "\n";
  for (const auto& c : l.commands) {
    if (c.concurrency) out += "\n# concurrency " + std::to_string(*c.concurrency) + "\n";
    out += command_block(c);
  }
  return out;
}

EmittedLaunch started(const Scenario& s, Engine engine) {
  EmittedLaunch l;
  l.engine = engine;
  l.scenario = s.name;
  l.checked_against = flag_sources(engine);
  note_modes(s, l.notes);
  l.problems = launch_problems(s);
  return l;
}

// TensorRT-LLM's schedule of draft lengths, {largest batch, draft length}, when the levels differ
// in their draft length alone and the method takes one; empty (with a note why) otherwise.
std::vector<std::pair<int, int>> trt_schedule(const std::vector<EmitLevel>& levels, std::vector<std::string>& notes) {
  const Scenario& first = levels.front().scenario;
  std::vector<std::pair<int, int>> schedule;
  bool varies = false;
  for (const auto& lv : levels) {
    const Scenario& s = lv.scenario;
    if (s.speculation.method != first.speculation.method || s.parallel.tp != first.parallel.tp ||
        s.parallel.ep != first.parallel.ep || s.speculation.shape.eagle_topk != first.speculation.shape.eagle_topk) {
      notes.push_back("the levels' best settings differ in more than the draft length: a command per level");
      return {};
    }
    const int k = lv.speculate ? s.speculation.shape.num_steps : 0;
    varies = varies || k != (levels.front().speculate ? first.speculation.shape.num_steps : 0);
    schedule.emplace_back(lv.concurrency, k);
  }
  if (!varies) return {};
  // support_dynamic_draft_len() (tensorrt_llm/_torch/speculative/interface.py @ 00b6d5a2): the
  // one-model Eagle3, MTP and draft-target modes; not NGram.
  if (first.speculation.kind().source == DraftSource::kPromptLookup) {
    notes.push_back("TensorRT-LLM's NGram mode takes no draft_len_schedule (interface.py @ 00b6d5a2): a command per level");
    return {};
  }
  // draft_len_schedule's smallest key must map to max_draft_len, and no length may exceed it (llm_args.py).
  const int max_k = std::max_element(schedule.begin(), schedule.end(), [](auto a, auto b) { return a.second < b.second; })->second;
  if (schedule.front().second != max_k) {
    notes.push_back("the best draft length rises with concurrency; TensorRT-LLM's draft_len_schedule needs the "
                    "smallest batch's length to be the largest: a command per level");
    return {};
  }
  notes.push_back("draft_len_schedule: batches up to each key use its draft length; above the largest key "
                  "TensorRT-LLM drafts nothing (llm_args.py @ 00043967)");
  return schedule;
}

}  // namespace

std::string shell_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& w : argv) out += (out.empty() ? "" : " ") + quoted(w);
  return out;
}

EmittedLaunch emit_launch(const Scenario& s, Engine engine) {
  EmittedLaunch l = started(s, engine);
  l.commands.push_back(command_for(s, engine, largest_batch(s), true, {}, l.notes));
  l.script = script_of(l);
  return l;
}

EmittedLaunch emit_launch(const std::vector<EmitLevel>& levels, Engine engine) {
  if (levels.empty()) throw Error({"--emit", 0, 0}, "", "no concurrency level has a feasible setting to emit");
  EmittedLaunch l = started(levels.front().scenario, engine);
  const int batch = levels.back().concurrency;
  if (engine == Engine::kTrtllm) l.schedule = trt_schedule(levels, l.notes);
  if (!l.schedule.empty()) {
    const auto best = std::find_if(levels.begin(), levels.end(), [](const EmitLevel& lv) { return lv.speculate; });
    l.commands.push_back(command_for(best == levels.end() ? levels.front().scenario : best->scenario, engine, batch,
                                     true, l.schedule, l.notes));
  } else {
    for (const auto& lv : levels) {
      if (!lv.speculate) {
        l.notes.push_back("concurrency " + std::to_string(lv.concurrency) +
                          ": plain decoding beats every setting tried, so its command runs without speculation");
      }
      LaunchCommand c = command_for(lv.scenario, engine, lv.concurrency, lv.speculate, {}, l.notes);
      c.concurrency = lv.concurrency;
      l.commands.push_back(std::move(c));
    }
  }
  std::sort(l.notes.begin(), l.notes.end());
  l.notes.erase(std::unique(l.notes.begin(), l.notes.end()), l.notes.end());
  l.script = script_of(l);
  return l;
}

std::vector<std::string> point_patches(const std::vector<std::string>& keys, const SweepPoint& point) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < keys.size() && i < point.values.size(); ++i) out.push_back(keys[i] + "=" + point.values[i]);
  return out;
}

std::vector<EmitLevel> emit_levels(const std::string& scenario, const std::vector<std::string>& patches,
                                   const ConcurrencySweep& sweep, const DataDir& data) {
  std::vector<EmitLevel> levels;
  // Each level's best point set on the scenario loaded once (its keys are fields, as the sweep's
  // axes are); a key only the loader reads loads it again with the point's patches.
  const bool on_values = std::all_of(sweep.keys.begin(), sweep.keys.end(), [](const std::string& k) { return is_scenario_field(k); });
  std::optional<Scenario> base;
  if (on_values) base = load_scenario(scenario, patches, data);
  const auto at = [&](const SweepPoint& best) {
    if (!on_values) {
      std::vector<std::string> all = patches;
      for (auto& p : point_patches(sweep.keys, best)) all.push_back(std::move(p));
      return load_scenario(scenario, all, data);
    }
    Scenario s = *base;
    for (std::size_t i = 0; i < sweep.keys.size() && i < best.values.size(); ++i) {
      set_field(s, load_field_value(sweep.keys[i], best.values[i], {"--set " + sweep.keys[i] + "=" + best.values[i], 0, 0}, data));
    }
    throw_problems(what_if_problems(s));
    return s;
  };
  for (const auto& level : sweep.levels) {
    if (!level.feasible()) continue;
    EmitLevel e{level.concurrency, at(level.best), level.pays()};
    e.scenario.batch = level.concurrency;
    e.scenario.concurrency.clear();
    levels.push_back(std::move(e));
  }
  return levels;
}

Scenario top_pick(const std::string& scenario, const std::vector<std::string>& patches, const RankReport& report,
                  const DataDir& data) {
  std::vector<std::string> all = patches;
  if (!report.ranked.empty() && report.ranked.front().feasible && report.ranked.front().gain > 0.0) {
    const auto& pick = report.ranked.front().intervention.patches;
    all.insert(all.end(), pick.begin(), pick.end());
  }
  return load_scenario(scenario, all, data);
}

namespace {

ojson problems_json(const std::vector<LaunchProblem>& problems) {
  ojson out = ojson::array();
  for (const auto& p : problems) out.push_back({{"setting", p.setting}, {"reason", p.reason}, {"fix", p.fix}, {"fails", p.fails}});
  return out;
}

ojson command_json(const LaunchCommand& c) {
  ojson env = ojson::object();
  for (const auto& [k, v] : c.env) env[k] = v;
  ojson config = c.config_name.empty() ? ojson(nullptr) : ojson{{"name", c.config_name}, {"text", c.config_text}};
  return {{"concurrency", c.concurrency ? ojson(*c.concurrency) : ojson(nullptr)}, {"env", env}, {"argv", c.argv},
          {"command", shell_line(c.argv)}, {"config_file", config}};
}

ojson launch_object(const EmittedLaunch& l) {
  ojson commands = ojson::array();
  for (const auto& c : l.commands) commands.push_back(command_json(c));
  ojson schedule = l.schedule.empty() ? ojson(nullptr) : ojson::array();
  for (const auto& [b, k] : l.schedule) schedule.push_back({{"max_batch", b}, {"draft_len", k}});
  return {{"engine", to_string(l.engine)}, {"scenario", l.scenario}, {"checked_against", l.checked_against},
          {"script", l.script}, {"commands", commands}, {"schedule", schedule}, {"notes", l.notes},
          {"problems", problems_json(l.problems)}};
}

// The views dump nlohmann::json (keys sorted, numbers as they read back), so a parsed and dumped
// view is byte for byte the one rendered: only the added key differs.
std::string with_key(const std::string& document, const std::string& key, const ojson& value) {
  nlohmann::json doc = nlohmann::json::parse(document);
  if (!doc.is_object()) throw Error("internal: a JSON view that is not an object");
  doc[key] = nlohmann::json::parse(value.dump());
  return doc.dump(2) + "\n";
}

}  // namespace

std::string launch_json(const EmittedLaunch& launch) { return launch_object(launch).dump(2) + "\n"; }

std::string with_launch(const std::string& document, const EmittedLaunch& launch) {
  return with_key(document, "launch", launch_object(launch));
}

std::string with_launch_problems(const std::string& document, const std::vector<LaunchProblem>& problems) {
  return with_key(document, "launch_problems", problems_json(problems));
}

}  // namespace specsim
