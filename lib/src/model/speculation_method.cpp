#include "specsim/speculation_method.hpp"

#include <deque>

#include "specsim/error.hpp"

namespace specsim {

namespace {

// The acceptance init assumes for a head or a draft model where --accept does not say.
constexpr double kAssumedAccept = 0.7;

// The rows. Spellings: vLLM's SpeculativeMethod (vllm/config/speculative.py), SGLang's
// --speculative-algorithm choices, TensorRT-LLM's decoding_type literals of the *DecodingConfig
// classes (no EAGLE-1 type there for the PyTorch backend), each at the commit engine_flags.cpp
// cites (docs/references/engine-flags.md). DFlash has none checked. Trees: SGLang's EAGLE worker
// drafts them for heads, MTP and draft models; prompt lookup and a block drafter verify chains.
// Parallel drafting: vLLM allows it with eagle, eagle3 and draft_model only (config/speculative.py:
// "Only compatible with EAGLE and draft model methods"; docs/references/specdec.md#parallel-drafting).
// A deque: register_speculation_method appends, and the rows already handed out stay where they are.
std::deque<SpeculationMethod>& rows() {
  static std::deque<SpeculationMethod> table = {
      {"eagle3", DraftSource::kEagle3Head, false, true, true,
       {kAssumedAccept,
        "EAGLE-3 heads accept 0.7-0.8 per position on chat (docs/references/specdec.md#depth-decay)"},
       {{"vllm", "eagle3"}, {"sglang", "EAGLE3"}, {"trtllm", "Eagle3"}}},
      {"eagle", DraftSource::kEagleHead, false, true, true,
       {kAssumedAccept,
        "EAGLE heads accept 0.7-0.8 per position on chat (docs/references/specdec.md#depth-decay)"},
       {{"vllm", "eagle"}, {"sglang", "EAGLE"}}},
      {"mtp", DraftSource::kTargetMtp, false, true, false,
       {0.85,
        "the DeepSeek-V3 report puts the second token's acceptance at 85-90% (docs/references/mtp.md)"},
       {{"vllm", "mtp"}, {"sglang", "NEXTN"}, {"trtllm", "MTP"}}},
      {"draft_model", DraftSource::kDraftModel, false, true, true,
       {kAssumedAccept,
        "a small model of the same family, as EAGLE heads (docs/references/specdec.md#draft-model)"},
       {{"vllm", "draft_model"}, {"sglang", "STANDALONE"}, {"trtllm", "Draft_Target"}}},
      {"ngram", DraftSource::kPromptLookup, false, false, false,
       {0.3,
        "prompt lookup accepts little on chat; vLLM-lab's Qwen3-8B runs measured 1.2-1.3 tokens per step "
        "(models/scenarios/qwen3-8b-ngram-1x-rtx-4090.yaml)"},
       {{"vllm", "ngram"}, {"sglang", "NGRAM"}, {"trtllm", "NGram"}}},
      {"dflash", DraftSource::kDflash, true, false, false,
       {0.86,
        "DFlash's published accept length 6.3-6.4 per block of 16 on GSM8K (sglang PR 16818) is a constant chain "
        "of about 0.86 (docs/references/specdec.md#dflash)"},
       {}},
  };
  return table;
}

}  // namespace

const char* draft_file_kind(DraftSource source) {
  switch (source) {
    case DraftSource::kEagleHead: return "an EAGLE-1/2 head";
    case DraftSource::kEagle3Head: return "an EAGLE-3 head";
    case DraftSource::kDraftModel: return "a full model";
    case DraftSource::kDflash: return "a DFlash block drafter";
    case DraftSource::kPromptLookup:
    case DraftSource::kTargetMtp: return "";
  }
  return "";
}

const char* SpeculationMethod::spelled_by(std::string_view engine) const {
  for (const EngineSpelling& s : spellings) {
    if (engine == s.engine) return s.value;
  }
  return nullptr;
}

const std::deque<SpeculationMethod>& speculation_methods() { return rows(); }

const SpeculationMethod* find_speculation_method(std::string_view name) {
  for (const SpeculationMethod& m : rows()) {
    if (name == m.name) return &m;
  }
  return nullptr;
}

const SpeculationMethod& speculation_method(std::string_view name) {
  if (const SpeculationMethod* m = find_speculation_method(name)) return *m;
  std::string known;
  for (const std::string& n : speculation_method_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("speculation.method: '" + std::string(name) + "' is not a speculation method (" + known + ")");
}

const SpeculationMethod& method_for_draft(DraftSource source) {
  for (const SpeculationMethod& m : rows()) {
    if (m.source == source) return m;
  }
  throw Error(std::string("no speculation method drafts from ") + draft_file_kind(source));
}

namespace {
std::vector<std::string>& names() {
  static std::vector<std::string> out = [] {
    std::vector<std::string> v;
    for (const SpeculationMethod& m : rows()) v.emplace_back(m.name);
    return v;
  }();
  return out;
}
}  // namespace

const std::vector<std::string>& speculation_method_names() { return names(); }

void register_speculation_method(const SpeculationMethod& method) {
  const std::string name = method.name == nullptr ? "" : method.name;
  if (name.empty()) throw Error("speculation method: a row needs a name");
  if (find_speculation_method(name)) throw Error("speculation method '" + name + "' is registered already");
  if (method.drafts_block && method.trees) {
    throw Error("speculation method '" + name + "': a block drafter verifies a chain of its block, so it drafts no trees");
  }
  (void)names();  // the shipped names first
  rows().push_back(method);
  names().push_back(name);
}

}  // namespace specsim
