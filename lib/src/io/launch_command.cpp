#include "specsim/launch_command.hpp"

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "specsim/error.hpp"
#include "specsim/speculation_method.hpp"

namespace specsim {

namespace {

const char* kOption = "--from-command";

[[noreturn]] void fail(int line, const std::string& key, const std::string& why) {
  throw Error({kOption, line, 0}, key, why);
}

// ---- the shell's words ----------------------------------------------------------------------

// Inside double quotes a backslash escapes only these (POSIX sh).
bool escapable_in_double_quotes(char c) { return c == '"' || c == '\\' || c == '$' || c == '`'; }

// One quoted stretch starting at text[i] (a quote), appended to `word`; returns the index after it.
std::size_t quoted_part(const std::string& text, std::size_t i, std::string& word, const SourceLocation& at) {
  const char quote = text[i];
  const std::size_t start = i++;
  while (i < text.size() && text[i] != quote) {
    if (quote == '"' && text[i] == '\\' && i + 1 < text.size() && escapable_in_double_quotes(text[i + 1])) ++i;
    word += text[i++];
  }
  if (i >= text.size()) {
    throw Error({at.file, at.line, static_cast<int>(start) + 1}, "",
                std::string("unterminated ") + (quote == '\'' ? "single" : "double") + " quote: the " +
                    (quote == '\'' ? "'" : "\"") + " at column " + std::to_string(start + 1) + " is never closed");
  }
  return i + 1;
}

// The words of one logical line as the shell splits them: quotes removed, backslash escapes
// applied, a word starting with # begins a comment.
std::vector<std::string> shell_words(const std::string& text, const SourceLocation& at) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      ++i;
    } else if (c == '#' && !in_word) {
      break;
    } else if (c == '\'' || c == '"') {
      i = quoted_part(text, i, word, at);
      in_word = true;
    } else {
      if (c == '\\' && i + 1 < text.size()) ++i;
      word += text[i++];
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

bool is_assignment(const std::string& w) {
  const auto eq = w.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  return std::all_of(w.begin(), w.begin() + static_cast<long>(eq),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }) &&
         !std::isdigit(static_cast<unsigned char>(w[0]));
}

// ---- the script: lines, exports, heredocs, one command ------------------------------------------

struct Script {
  std::vector<std::pair<std::string, std::string>> env;
  std::map<std::string, std::string> files;  // heredoc contents by file name
  std::vector<std::string> command;
  int command_line = 0;
};

// A `cat > FILE <<'EOF'` line: the file's lines up to the terminator become files[FILE].
bool read_heredoc(const std::vector<std::string>& words, const std::vector<std::string>& lines, std::size_t& i,
                  Script& script) {
  const auto marker = std::find_if(words.begin(), words.end(), [](const std::string& w) { return w.starts_with("<<"); });
  if (marker == words.end()) return false;
  std::string terminator = marker->substr(2);
  if (terminator.empty() && marker + 1 != words.end()) terminator = *(marker + 1);
  std::string file;
  for (std::size_t k = 0; k < words.size(); ++k) {
    if (words[k] == ">" && k + 1 < words.size()) file = words[k + 1];
    if (words[k].starts_with(">") && words[k].size() > 1) file = words[k].substr(1);
  }
  std::string body;
  const std::size_t start = i;
  for (++i; i < lines.size() && lines[i] != terminator; ++i) body += lines[i] + "\n";
  if (i >= lines.size()) fail(static_cast<int>(start) + 1, "", "the heredoc opened here never reaches its '" + terminator + "' line");
  if (!file.empty()) script.files[file] = body;
  return true;
}

// A logical line: physical lines joined where one ends in a backslash.
std::string logical_line(const std::vector<std::string>& lines, std::size_t& i) {
  std::string line = lines[i];
  while (!line.empty() && line.back() == '\\' && i + 1 < lines.size()) {
    line.pop_back();
    line += " " + lines[++i];
  }
  return line;
}

void take_line(std::vector<std::string> words, int line_no, Script& script) {
  if (words.empty()) return;
  if (words[0] == "export") {
    for (std::size_t k = 1; k < words.size(); ++k) {
      if (is_assignment(words[k])) script.env.emplace_back(words[k].substr(0, words[k].find('=')), words[k].substr(words[k].find('=') + 1));
    }
    return;
  }
  std::size_t k = 0;
  for (; k < words.size() && is_assignment(words[k]); ++k) {
    script.env.emplace_back(words[k].substr(0, words[k].find('=')), words[k].substr(words[k].find('=') + 1));
  }
  if (k == words.size()) return;
  if (!script.command.empty()) {
    fail(line_no, "", "a second command ('" + words[k] + "' after the launch on line " + std::to_string(script.command_line) +
                          "): give one launch command");
  }
  script.command.assign(words.begin() + static_cast<long>(k), words.end());
  script.command_line = line_no;
}

Script read_script(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l.ends_with('\r') ? l.substr(0, l.size() - 1) : l);
  Script script;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int line_no = static_cast<int>(i) + 1;
    const std::string line = logical_line(lines, i);
    const std::vector<std::string> words = shell_words(line, {kOption, line_no, 0});
    if (read_heredoc(words, lines, i, script)) continue;
    take_line(words, line_no, script);
  }
  if (script.command.empty()) fail(0, "", "no launch command in the text (only comments, exports or files)");
  return script;
}

// ---- the engine and its flags -------------------------------------------------------------------

std::string basename(const std::string& w) { return std::filesystem::path(w).filename().string(); }

// The engine a command runs and the index of its first argument.
std::pair<Engine, std::size_t> engine_of(const std::vector<std::string>& cmd, int line) {
  const std::string program = basename(cmd[0]);
  if (program == "vllm" && cmd.size() > 1 && cmd[1] == "serve") return {Engine::kVllm, 2};
  const bool python = std::regex_match(program, std::regex(R"(python(3(\.\d+)?)?)"));
  if (python && cmd.size() > 2 && cmd[1] == "-m" && cmd[2] == "sglang.launch_server") return {Engine::kSglang, 3};
  // vLLM's OpenAI server module, what `vllm serve` runs (its docker images' entrypoint): the same
  // arguments, the model by --model.
  if (python && cmd.size() > 2 && cmd[1] == "-m" && cmd[2] == "vllm.entrypoints.openai.api_server") return {Engine::kVllm, 3};
  if (program == "trtllm-serve") return {Engine::kTrtllm, cmd.size() > 1 && cmd[1] == "serve" ? 2u : 1u};
  fail(line, "", "unknown engine: the launch command starts '" + cmd[0] + (cmd.size() > 1 ? " " + cmd[1] : std::string()) +
                     "'; specsim reads `vllm serve ...` (or `python -m vllm.entrypoints.openai.api_server ...`), "
                     "`python -m sglang.launch_server ...` (python3 too) and `trtllm-serve ...`");
}

int whole_number(const std::string& text, const std::string& what, int line) {
  const bool digits = !text.empty() && text.size() < 10 && std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (!digits) fail(line, "", what + ": '" + text + "' is not a whole number");
  return std::stoi(text);
}

double fraction(const std::string& text, const std::string& what, int line) {
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && v > 0 && v <= 1) return v;
  } catch (const std::exception&) {
  }
  fail(line, "", what + ": '" + text + "' is not a fraction in (0, 1]");
}

// What the flags say before the engine's conventions turn it into scenario keys.
struct Raw {
  LaunchReading r;
  std::optional<int> dp;
  bool dp_attention = false;
  bool ep_switch = false;        // vLLM --enable-expert-parallel
  bool no_custom = false;        // --disable-custom-all-reduce
  std::optional<int> graph_tokens;  // vLLM --max-cudagraph-capture-size
  std::string config_file;       // TensorRT-LLM --extra_llm_api_options
  std::string trt_strategy;      // TensorRT-LLM allreduce_strategy
  int line = 0;
};

void set(LaunchReading& r, const std::string& key, const std::string& value, const std::string& origin) {
  r.values[key] = value;
  r.origins[key] = origin;
}
void set(Raw& raw, const std::string& key, const std::string& value, const std::string& origin) {
  set(raw.r, key, value, origin);
}

std::string method_from(Engine engine, const std::string& value, const std::string& what, int line) {
  if (auto m = method_of_value(engine, value)) return *m;
  fail(line, "speculation.method", what + " '" + value + "': not a speculative method specsim models (" +
                                       std::string(to_string(engine)) + " names for eagle3, eagle, mtp, draft_model, ngram)");
}

// A KV cache dtype as the engines spell it (vLLM's CacheDType, SGLang's --kv-cache-dtype choices,
// TensorRT-LLM's KvCacheConfig.dtype; docs/references/engine-flags.md) into engine.kv_cache_dtype;
// a cache specsim does not price is listed as unmodelled.
void set_kv_cache_dtype(Raw& raw, const std::string& value, const std::string& origin) {
  static const std::pair<const char*, const char*> kSpellings[] = {
      {"auto", "auto"},     {"bfloat16", "bf16"},  {"bf16", "bf16"},     {"float16", "fp16"},
      {"fp8", "fp8"},       {"fp8_e4m3", "fp8"},   {"fp8_e5m2", "fp8"},  {"fp8_inc", "fp8"},
      {"fp8_ds_mla", "fp8"}, {"int8", "int8"},
  };
  for (const auto& [spelled, dtype] : kSpellings) {
    if (value == spelled) return set(raw, "engine.kv_cache_dtype", dtype, origin);
  }
  raw.r.unmodelled.push_back(origin + " (specsim prices bf16, fp16, fp8 and int8 KV caches; this one is priced as the model's activation dtype)");
}

void apply_vllm_json(Raw& raw, const std::string& text, int line);

// One flag and its value (empty for a switch) set on `raw`; `where` says where it was written
// when not on the command line itself (a JSON or YAML key).
void apply_flag(Raw& raw, const EngineFlag& f, const std::string& value, const std::string& where = "") {
  const std::string origin = where.empty() ? f.name + (value.empty() ? "" : " " + value) : where;
  const Engine e = raw.r.engine;
  const int line = raw.line;
  using S = LaunchSetting;
  switch (f.setting) {
    case S::kModel: raw.r.model = value; break;
    case S::kTp: set(raw, "parallel.tp", std::to_string(whole_number(value, f.name, line)), origin); break;
    case S::kPp: set(raw, "parallel.pp", std::to_string(whole_number(value, f.name, line)), origin); break;
    case S::kDp: raw.dp = whole_number(value, f.name, line); break;
    case S::kEp:
      if (f.kind == FlagKind::kSwitch) raw.ep_switch = true;
      else set(raw, "parallel.ep", std::to_string(whole_number(value, f.name, line)), origin);
      break;
    case S::kDpAttention: raw.dp_attention = true; break;
    case S::kMoeA2a:
      if (value == "deepep" || value == "none") set(raw, "parallel.moe_a2a", value, origin);
      else raw.r.unmodelled.push_back(origin + " (specsim models the deepep backend only)");
      break;
    case S::kMoeBackend: set(raw, "engine.moe_backend", moe_backend_name(value), origin); break;
    case S::kMethod: set(raw, "speculation.method", method_from(e, value, f.name, line), origin); break;
    case S::kDraft: raw.r.draft = value; break;
    case S::kNumSteps: set(raw, "speculation.num_steps", std::to_string(whole_number(value, f.name, line)), origin); break;
    case S::kTopk: set(raw, "speculation.eagle_topk", std::to_string(whole_number(value, f.name, line)), origin); break;
    case S::kDraftTokens: set(raw, "speculation.num_draft_tokens", std::to_string(whole_number(value, f.name, line)), origin); break;
    case S::kEager: set(raw, "engine.decode_mode", "eager", origin); break;
    case S::kGraphMaxBatch: set(raw, "engine.cuda_graph_max_batch", std::to_string(whole_number(value, f.name, line)), origin); break;
    case S::kGraphMaxTokens:
    case S::kGraphSizesTokens: raw.graph_tokens = std::max(raw.graph_tokens.value_or(0), whole_number(value, f.name, line)); break;
    case S::kNoCustomAllReduce: raw.no_custom = true; break;
    case S::kMemoryFraction: {
      std::ostringstream v;
      v << fraction(value, f.name, line);
      set(raw, "engine.memory_fraction", v.str(), origin);
      break;
    }
    case S::kAsyncScheduling: set(raw, "engine.async_scheduling.speculative", "true", origin); break;
    case S::kKvCacheDtype: set_kv_cache_dtype(raw, value, origin); break;
    case S::kSpeculativeConfig: apply_vllm_json(raw, value, line); break;
    case S::kConfigFile: raw.config_file = value; break;
    case S::kBackend:
      if (value != "pytorch") raw.r.unmodelled.push_back(origin + " (specsim's TensorRT-LLM rows are the PyTorch backend's)");
      break;
    default: raw.r.unmodelled.push_back(origin); break;
  }
}

// vLLM's --speculative-config JSON: its keys through the table's JSON rows.
void apply_vllm_json(Raw& raw, const std::string& text, int line) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& ex) {
    fail(line, "", "--speculative-config: not JSON (" + std::string(ex.what()) + "): " + text);
  }
  if (!j.is_object()) fail(line, "", "--speculative-config: a JSON object is expected, got " + text);
  for (const auto& [key, v] : j.items()) {
    const EngineFlag* f = find_engine_flag(Engine::kVllm, key);
    const std::string value = v.is_string() ? v.get<std::string>() : v.dump();
    if (!f || f->kind != FlagKind::kJsonKey) {
      raw.r.unmodelled.push_back("--speculative-config \"" + key + "\": " + value);
    } else if (f->setting == LaunchSetting::kDraftTp) {
      set(raw, "parallel.draft_tp", std::to_string(whole_number(value, key, line)), "--speculative-config \"" + key + "\": " + value);
    } else if (f->setting == LaunchSetting::kParallelDrafting) {
      set(raw, "speculation.parallel_drafting", value, "--speculative-config \"" + key + "\": " + value);
    } else if (f->setting == LaunchSetting::kNgramWindow) {
      raw.r.unmodelled.push_back("--speculative-config \"" + key + "\": " + value + " (no scenario key: the lookup cost is per context token)");
    } else {
      apply_flag(raw, *f, value, "--speculative-config \"" + key + "\": " + value);
    }
  }
}

// ---- TensorRT-LLM's options YAML ----------------------------------------------------------------

std::string yaml_text(const YAML::Node& n) {
  YAML::Emitter out;
  out << YAML::Flow << n;
  return out.c_str();
}

void apply_trt_speculative(Raw& raw, const YAML::Node& spec, const std::string& file) {
  for (const auto& kv : spec) {
    const std::string key = kv.first.as<std::string>();
    const std::string path = "speculative_config." + key;
    const std::string where = file + ": " + path + ": " + yaml_text(kv.second);
    const EngineFlag* f = find_engine_flag(Engine::kTrtllm, path);
    if (f && f->setting == LaunchSetting::kMethod) {
      const std::string v = kv.second.as<std::string>();
      set(raw, "speculation.method", method_from(Engine::kTrtllm, v == "DraftTarget" ? "Draft_Target" : v, path, raw.line), where);
    } else if (f && (f->setting == LaunchSetting::kNumSteps || f->setting == LaunchSetting::kMtpModules)) {
      set(raw, "speculation.num_steps", std::to_string(whole_number(kv.second.as<std::string>(), path, raw.line)), where);
    } else if (f && f->setting == LaunchSetting::kDraft) {
      raw.r.draft = kv.second.as<std::string>();
    } else if (f && f->setting == LaunchSetting::kDraftLenSchedule) {
      raw.r.unmodelled.push_back(where + " (a draft length per batch size: the scenario takes max_draft_len, "
                                         "the length at the smallest batch)");
    } else {
      raw.r.unmodelled.push_back(where);
    }
  }
}

void apply_trt_graphs(Raw& raw, const YAML::Node& graphs, const std::string& file) {
  const std::string where = file + ": cuda_graph_config: " + yaml_text(graphs);
  if (graphs.IsNull()) {
    set(raw, "engine.decode_mode", "eager", where);
    return;
  }
  for (const auto& kv : graphs) {
    const std::string key = kv.first.as<std::string>();
    if (key == "max_batch_size") {
      set(raw, "engine.cuda_graph_max_batch", std::to_string(whole_number(kv.second.as<std::string>(), key, raw.line)), where);
    } else if (key == "batch_sizes" && kv.second.IsSequence() && kv.second.size() > 0) {
      int largest = 0;
      for (const auto& b : kv.second) largest = std::max(largest, whole_number(b.as<std::string>(), key, raw.line));
      set(raw, "engine.cuda_graph_max_batch", std::to_string(largest), where);
    } else if (key != "enable_padding") {
      raw.r.unmodelled.push_back(file + ": cuda_graph_config." + key + ": " + yaml_text(kv.second));
    }
  }
}

void apply_trt_top_key(Raw& raw, const std::string& key, const YAML::Node& v, const std::string& file) {
  const std::string where = file + ": " + key + ": " + yaml_text(v);
  if (key == "speculative_config") {
    apply_trt_speculative(raw, v, file);
  } else if (key == "cuda_graph_config") {
    apply_trt_graphs(raw, v, file);
  } else if (key == "kv_cache_config" && v.IsMap()) {
    for (const auto& kv : v) {
      const std::string sub = kv.first.as<std::string>();
      const std::string at = file + ": kv_cache_config." + sub + ": " + yaml_text(kv.second);
      if (sub == "dtype") set_kv_cache_dtype(raw, kv.second.as<std::string>(), at);
      else raw.r.unmodelled.push_back(at);
    }
  } else if (key == "enable_attention_dp") {
    if (v.as<std::string>() == "true") raw.dp_attention = true;
  } else if (key == "allreduce_strategy") {
    raw.trt_strategy = v.as<std::string>();
    if (raw.trt_strategy != "NCCL" && raw.trt_strategy != "ONESHOT" && raw.trt_strategy != "TWOSHOT") {
      raw.r.unmodelled.push_back(where + " (TensorRT-LLM's own choice of kernel: the scenario keeps NCCL)");
    }
  } else {
    raw.r.unmodelled.push_back(where);
  }
}

void apply_trt_options(Raw& raw, const std::map<std::string, std::string>& files) {
  if (raw.config_file.empty()) return;
  std::string text;
  if (auto it = files.find(raw.config_file); it != files.end()) {
    text = it->second;
  } else {
    std::ifstream in(raw.config_file);
    if (!in) fail(raw.line, "", "--extra_llm_api_options " + raw.config_file + ": no such file here and no heredoc in the text writes it");
    std::ostringstream all;
    all << in.rdbuf();
    text = all.str();
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& ex) {
    fail(raw.line, "", raw.config_file + ": not YAML (" + std::string(ex.what()) + ")");
  }
  if (root.IsNull()) return;
  if (!root.IsMap()) fail(raw.line, "", raw.config_file + ": a YAML mapping of LLM API options is expected");
  for (const auto& kv : root) apply_trt_top_key(raw, kv.first.as<std::string>(), kv.second, raw.config_file);
}

// ---- the command's words --------------------------------------------------------------------------

// An unknown flag keeps the word after it as its value when that word is no flag.
void unknown_flag(Raw& raw, const std::vector<std::string>& args, std::size_t& i) {
  std::string word = args[i];
  if (word.find('=') == std::string::npos && i + 1 < args.size() && !args[i + 1].starts_with("-")) word += " " + args[++i];
  raw.r.unmodelled.push_back(word + " (not a flag specsim reads)");
}

// SGLang parses its launch with a plain argparse.ArgumentParser (python/sglang/launch_server.py,
// server_args.py prepare_server_args), which takes any unambiguous prefix of a long option:
// `--speculative-algo NEXTN` is --speculative-algorithm. A launch that ran had an unambiguous one,
// so a prefix of exactly one row is that row; a prefix of several is the launch argparse refused.
const EngineFlag* sglang_abbreviation(const Raw& raw, const std::string& name) {
  if (raw.r.engine != Engine::kSglang || !name.starts_with("--") || name.size() < 3) return nullptr;
  std::vector<const EngineFlag*> rows;
  for (const EngineFlag& f : engine_flags()) {
    if (f.engine != Engine::kSglang || (f.kind != FlagKind::kOption && f.kind != FlagKind::kSwitch)) continue;
    bool prefix = f.name.starts_with(name);
    for (const std::string& a : f.aliases) prefix = prefix || a.starts_with(name);
    if (prefix) rows.push_back(&f);
  }
  if (rows.size() > 1) {
    std::string names;
    for (const EngineFlag* f : rows) names += (names.empty() ? "" : ", ") + f->name;
    fail(raw.line, "", name + ": an ambiguous abbreviation (" + names + "); SGLang's argparse refuses it");
  }
  return rows.empty() ? nullptr : rows.front();
}

void walk_arguments(Raw& raw, const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& w = args[i];
    if (!w.starts_with("-")) {
      if (raw.r.model.empty() && raw.r.engine != Engine::kSglang) raw.r.model = w;
      else raw.r.unmodelled.push_back(w + " (a word that is no flag's value)");
      continue;
    }
    const std::size_t eq = w.find('=');
    std::string name = w.substr(0, eq);
    // vLLM's FlexibleArgumentParser reads `--tensor_parallel_size` as `--tensor-parallel-size`: it
    // turns underscores into dashes in a long option's name up to its first '.'
    // (vllm/utils/argparse_utils.py, FlexibleArgumentParser.parse_args).
    if (raw.r.engine == Engine::kVllm && name.starts_with("--")) {
      std::replace(name.begin() + 2, name.begin() + static_cast<long>(std::min(name.size(), name.find('.'))), '_', '-');
    }
    if (raw.r.engine == Engine::kVllm && name == "--no-async-scheduling") {
      set(raw, "engine.async_scheduling.speculative", "false", name);
      continue;
    }
    const EngineFlag* f = find_engine_flag(raw.r.engine, name);
    std::string abbreviated;  // the flag an abbreviation stands for, said in the origin
    if (!f && (f = sglang_abbreviation(raw, name))) abbreviated = " (argparse abbreviation of " + f->name + ")";
    if (!f || f->kind == FlagKind::kJsonKey || f->kind == FlagKind::kYamlKey) {
      unknown_flag(raw, args, i);
      continue;
    }
    std::string value;
    if (f->kind == FlagKind::kOption) {
      if (eq != std::string::npos) {
        value = w.substr(eq + 1);
      } else if (i + 1 >= args.size() || (args[i + 1].starts_with("--") && args[i + 1].size() > 2)) {
        fail(raw.line, "", name + ": missing its value (the command ends or the next word is the flag " +
                               (i + 1 < args.size() ? args[i + 1] : std::string("(none)")) + ")");
      } else {
        value = args[++i];
      }
    }
    apply_flag(raw, *f, value, abbreviated.empty() ? "" : name + (value.empty() ? "" : " " + value) + abbreviated);
    // A list option (vLLM's capture sizes, nargs='+'): every number after the first too.
    while (f->setting == LaunchSetting::kGraphSizesTokens && i + 1 < args.size() && !args[i + 1].starts_with("-")) {
      apply_flag(raw, *f, args[++i]);
    }
  }
}

// ---- from the engine's conventions to scenario keys --------------------------------------------

int value_or(const Raw& raw, const std::string& key, int fallback) {
  auto it = raw.r.values.find(key);
  return it == raw.r.values.end() ? fallback : std::stoi(it->second);
}

void resolve_parallel(Raw& raw) {
  const Engine e = raw.r.engine;
  const int tp = value_or(raw, "parallel.tp", 1);
  const int dp = raw.dp.value_or(1);
  if (e == Engine::kVllm && dp > 1) {
    // vLLM's data parallelism of an MoE target: attention per DP rank, the experts over all t x d
    // ranks (a dense target's DP replicas the loader refuses as data-parallel attention).
    set(raw, "parallel.tp", std::to_string(tp * dp), "--tensor-parallel-size " + std::to_string(tp) + " x --data-parallel-size " + std::to_string(dp));
    set(raw, "parallel.attention_dp", std::to_string(dp), "--data-parallel-size " + std::to_string(dp));
  } else if (e != Engine::kTrtllm && dp > 1 && !(e == Engine::kSglang && raw.dp_attention)) {
    raw.r.unmodelled.push_back("data parallel " + std::to_string(dp) + " without data-parallel attention: " +
                               std::to_string(dp) + " server replicas, not modelled (the scenario is one replica)");
  } else if (e == Engine::kSglang && raw.dp_attention) {
    set(raw, "parallel.attention_dp", std::to_string(dp), "--enable-dp-attention --dp-size " + std::to_string(dp));
  }
  if (e == Engine::kTrtllm && raw.dp_attention) set(raw, "parallel.attention_dp", "true", raw.config_file + ": enable_attention_dp: true");
  if (e == Engine::kVllm && raw.ep_switch) {
    set(raw, "parallel.ep", raw.r.values["parallel.tp"], "--enable-expert-parallel (experts over every rank)");
  }
}

void resolve_speculation(Raw& raw) {
  auto& v = raw.r.values;
  const std::string method = v.count("speculation.method") ? v["speculation.method"] : "";
  const SpeculationMethod* kind = find_speculation_method(method);
  if (raw.r.engine == Engine::kSglang && kind && kind->source == DraftSource::kEagleHead && raw.r.draft.empty()) {
    // SGLang runs a target's MTP module as an EAGLE draft when no draft path is given (docs/references/mtp.md#engines).
    set(raw, "speculation.method", method_for_draft(DraftSource::kTargetMtp).name,
        raw.r.origins["speculation.method"] + " without a draft path (the target's MTP module)");
  }
  if (kind && kind->source == DraftSource::kPromptLookup && !v.count("speculation.num_steps") && v.count("speculation.num_draft_tokens")) {
    set(raw, "speculation.num_steps", std::to_string(std::stoi(v["speculation.num_draft_tokens"]) - 1),
        raw.r.origins["speculation.num_draft_tokens"] + " (a chain: one verified token more than drafted)");
  }
  // SGLang runs a chain (top-k 1) with num_steps + 1 draft tokens whatever the launch says: its
  // server_args adjusts --speculative-num-draft-tokens and logs "speculative_num_draft_tokens is
  // adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1".
  if (raw.r.engine == Engine::kSglang && v.count("speculation.num_draft_tokens") && v.count("speculation.num_steps") &&
      value_or(raw, "speculation.eagle_topk", 1) == 1) {
    const int chain = value_or(raw, "speculation.num_steps", 1) + 1;
    if (value_or(raw, "speculation.num_draft_tokens", chain) != chain) {
      raw.r.adjusted.push_back(raw.r.origins["speculation.num_draft_tokens"] + ": SGLang runs " + std::to_string(chain) +
                               " (num_steps + 1) with top-k 1, as its server_args adjusts it");
      set(raw, "speculation.num_draft_tokens", std::to_string(chain),
          raw.r.origins["speculation.num_draft_tokens"] + ", adjusted by SGLang to num_steps + 1 with top-k 1");
    }
  }
  if (raw.graph_tokens) {
    // vLLM sizes graphs in tokens: a request verifies num_steps + 1 of them (a chain).
    const int per_request = method.empty() ? 1 : value_or(raw, "speculation.num_steps", 1) + 1;
    set(raw, "engine.cuda_graph_max_batch", std::to_string(std::max(1, *raw.graph_tokens / per_request)),
        "the largest CUDA graph capture size, " + std::to_string(*raw.graph_tokens) + " tokens, / " + std::to_string(per_request) + " per request");
  }
}

void resolve_allreduce(Raw& raw) {
  if (value_or(raw, "parallel.tp", 1) < 2) return;
  const Engine e = raw.r.engine;
  const std::string& st = raw.trt_strategy;
  if (e == Engine::kTrtllm) {
    if (st == "NCCL") set(raw, "comm.implementation", "nccl", "allreduce_strategy: NCCL");
    if (st == "ONESHOT") set(raw, "comm.implementation", "custom_oneshot", "allreduce_strategy: ONESHOT");
    if (st == "TWOSHOT") set(raw, "comm.implementation", "custom_twoshot", "allreduce_strategy: TWOSHOT");
  } else if (raw.no_custom) {
    set(raw, "comm.implementation", "nccl", "--disable-custom-all-reduce");
  } else {
    set(raw, "comm.implementation", "engine", "no --disable-custom-all-reduce: the engine's custom all-reduce where it allows it");
  }
}

}  // namespace

LaunchReading read_launch_command(const std::string& text) {
  const Script script = read_script(text);
  Raw raw;
  raw.line = script.command_line;
  const auto [engine, first] = engine_of(script.command, raw.line);
  raw.r.engine = engine;
  std::string command;
  for (const auto& w : script.command) command += (command.empty() ? "" : " ") + w;
  raw.r.command = command;
  walk_arguments(raw, std::vector<std::string>(script.command.begin() + static_cast<long>(first), script.command.end()));
  apply_trt_options(raw, script.files);
  if (raw.r.model.empty()) fail(raw.line, "model", "the launch command names no model");
  resolve_parallel(raw);
  resolve_speculation(raw);
  resolve_allreduce(raw);
  apply_environment(raw.r, script.env, "the command's environment");
  return raw.r;
}

std::vector<std::pair<std::string, std::string>> read_env_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error({path, 0, 0}, "", "cannot open the environment file");
  const bool python = std::filesystem::path(path).extension() == ".py";
  static const std::regex assign(R"(os\.environ\s*\[\s*(['"])(\w+)\1\s*\]\s*=\s*(['"])(.*?)\3)");
  static const std::regex setdefault(R"(os\.environ\.setdefault\(\s*(['"])(\w+)\1\s*,\s*(['"])(.*?)\3\s*\))");
  std::vector<std::pair<std::string, std::string>> env;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    std::smatch m;
    if (python) {
      if (std::regex_search(line, m, assign) || std::regex_search(line, m, setdefault)) env.emplace_back(m[2], m[4]);
      continue;
    }
    std::vector<std::string> words = shell_words(line, {path, line_no, 0});
    if (!words.empty() && words[0] == "export") words.erase(words.begin());
    if (words.empty()) continue;
    if (words.size() != 1 || !is_assignment(words[0])) {
      throw Error({path, line_no, 1}, "", "not a KEY=VALUE or `export KEY=VALUE` line: " + line);
    }
    env.emplace_back(words[0].substr(0, words[0].find('=')), words[0].substr(words[0].find('=') + 1));
  }
  if (python && env.empty()) throw Error({path, 0, 0}, "", "sets no os.environ[\"KEY\"] = \"VALUE\" (or os.environ.setdefault) in any line");
  return env;
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One NCCL variable onto its comm key; false when no key holds it as given.
bool apply_nccl(LaunchReading& r, const std::string& key, const std::string& value, const std::string& origin) {
  const std::string v = lower(value);
  auto put = [&](const std::string& k, const std::string& val) {
    set(r, k, val, origin);
    return true;
  };
  if (key == "NCCL_ALGO" && (v == "ring" || v == "tree")) return put("comm.nccl_algo", v);
  if (key == "NCCL_ALGO" && (v == "allreduce:ring" || v == "allreduce:tree")) {
    r.unmodelled.push_back(origin + ": read as comm.nccl_algo " + v.substr(10) + "; its all-reduce-only scope is not modelled");
    return put("comm.nccl_algo", v.substr(10));
  }
  if (key == "NCCL_PROTO" && (v == "ll" || v == "ll128" || v == "simple")) return put("comm.nccl_proto", v);
  // NCCL_P2P_LEVEL's named levels (NCCL's paths.cc); its legacy numbers and nvidia-smi's NODE are
  // left unmodelled rather than guessed.
  if (key == "NCCL_P2P_LEVEL" && (v == "loc" || v == "nvl" || v == "pix" || v == "pxb" || v == "phb" || v == "sys")) {
    return put("comm.nccl_p2p_level", v);
  }
  const bool channels = key == "NCCL_MIN_NCHANNELS" || key == "NCCL_MAX_NCHANNELS";
  const bool count = !v.empty() && v.size() < 3 && std::all_of(v.begin(), v.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (channels && count && std::stoi(v) <= 64) return put(key == "NCCL_MIN_NCHANNELS" ? "comm.min_channels" : "comm.max_channels", v);
  return false;
}

// SGLANG_ENABLE_SPEC_V2 picks SGLang's speculative worker (engine.spec_version): on, the overlap
// worker v2; off, the synchronous v1. False when it is another variable or a value not read as on/off.
bool apply_sglang_spec_version(LaunchReading& r, const std::string& key, const std::string& value,
                               const std::string& origin) {
  if (key != "SGLANG_ENABLE_SPEC_V2") return false;
  const std::string v = lower(value);
  const bool on = v == "1" || v == "true" || v == "yes" || v == "on";
  const bool off = v == "0" || v == "false" || v == "no" || v == "off";
  if (!on && !off) return false;
  if (r.engine != Engine::kSglang) {
    r.unmodelled.push_back(origin + ": an SGLang setting on a " + std::string(to_string(r.engine)) + " launch");
    return true;
  }
  set(r, "engine.spec_version", on ? "v2" : "v1", origin);
  return true;
}

}  // namespace

void apply_environment(LaunchReading& r, const std::vector<std::pair<std::string, std::string>>& env,
                       const std::string& where) {
  for (const auto& [key, value] : env) {
    const std::string origin = key + "=" + value + " (" + where + ")";
    if (apply_nccl(r, key, value, origin) || apply_sglang_spec_version(r, key, value, origin)) continue;
    r.unmodelled.push_back(origin + (key.starts_with("NCCL_") ? ": no scenario key holds this NCCL setting"
                                                               : ": not an NCCL setting specsim models"));
  }
}

}  // namespace specsim
