// The speculation methods a scenario may name (`speculation.method`), one row each: where its drafts
// come from, what its cycle looks like, which draft file it needs, what `specsim init` assumes for
// it and how each engine spells it on its command line. Code that depends on the method reads a
// property of its row, never its name, so a method is added by a row here (docs/library.md#how-to-add).
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace specsim {

// Where a method's draft tokens come from, and so which draft file it names.
enum class DraftSource {
  kPromptLookup,  // n-gram lookup in the prompt on the host: no forward, no draft file
  kTargetMtp,     // the target's own multi-token-prediction layers: forwards, no draft file
  kEagleHead,     // an EAGLE-1/2 head (a model file with an `eagle3:` block of version 1)
  kEagle3Head,    // an EAGLE-3 head (`eagle3:` block, version 3)
  kDraftModel,    // a full model of the target's vocabulary
  kDflash,        // a DFlash block drafter (a model file with a `dflash:` block)
};
// What the draft file is, as init explains its choice ("an EAGLE-3 head"); "" without one.
[[nodiscard]] const char* draft_file_kind(DraftSource source);

// What `specsim init` assumes for a method without --accept: the first position's acceptance,
// with the source of that assumption.
struct InitDefaults {
  double accept = 0.7;
  const char* accept_source = "";
};

// A method's name in one engine's launch flags (vLLM's speculative_config `method`, SGLang's
// --speculative-algorithm, TensorRT-LLM's decoding_type), checked against the parsers that
// engine_flags.hpp cites. An engine a row does not list has no spelling specsim checked.
struct EngineSpelling {
  const char* engine;  // a models/engines name
  const char* value;
};

struct SpeculationMethod {
  const char* name;  // the value of speculation.method
  DraftSource source;
  // One draft forward per cycle over a block of slots whatever was accepted; the scenario states
  // speculation.block_size and verifies a chain of it (docs/model.md#block-drafters).
  bool drafts_block = false;
  // Drafts a tree (speculation.eagle_topk > 1) in some engine; false: chains only.
  bool trees = true;
  // May draft its chain in one forward (vLLM's speculative_config parallel_drafting, a head or
  // model trained for it: P-EAGLE, PARD; docs/model.md#parallel-drafting).
  bool parallel_drafting = false;
  InitDefaults init;
  std::vector<EngineSpelling> spellings;

  // False for prompt lookup, whose proposals cost host time but no forward.
  [[nodiscard]] bool runs_draft_forwards() const { return source != DraftSource::kPromptLookup; }
  // The scenario names a draft model file (`draft:`); the target's MTP layers and lookup need none.
  [[nodiscard]] bool needs_draft_file() const {
    return source != DraftSource::kPromptLookup && source != DraftSource::kTargetMtp;
  }
  // The engine's spelling of this method; nullptr where the row gives none for that engine.
  [[nodiscard]] const char* spelled_by(std::string_view engine) const;
};

// Every row, in the order the names are listed to users.
[[nodiscard]] const std::deque<SpeculationMethod>& speculation_methods();
// The row named `name`; throws Error listing the valid names for any other.
[[nodiscard]] const SpeculationMethod& speculation_method(std::string_view name);
// The row named `name`, or nullptr.
[[nodiscard]] const SpeculationMethod* find_speculation_method(std::string_view name);
// The first row whose drafts come from `source`: the method a draft file of that kind implies.
[[nodiscard]] const SpeculationMethod& method_for_draft(DraftSource source);
// The rows' names, in order (speculation.method's choices).
[[nodiscard]] const std::vector<std::string>& speculation_method_names();

// Adds a method a planning tool prices that specsim does not ship (a drafter of its own), as a row
// after the shipped ones: scenarios may then name it, and everything that reads a method's row
// (the loader's rules, the cycle, init, emit) treats it as its properties say. Its texts (name,
// sources, spellings) must live as long as the process (string literals). Throws on a name already
// registered or a row whose properties contradict (a block drafter that drafts trees). Not safe
// while another thread loads scenarios: register at start.
void register_speculation_method(const SpeculationMethod& method);

}  // namespace specsim
