#include "specsim/scenario_rules.hpp"

#include <algorithm>
#include <iterator>

#include "specsim/acceptance.hpp"
#include "specsim/draft_tree.hpp"
#include "specsim/hardware.hpp"
#include "specsim/model_spec.hpp"
#include "specsim/scenario_fields.hpp"
#include "specsim/speculation_method.hpp"
#include "specsim/units.hpp"

namespace specsim {

namespace {

using Problems = std::vector<Error>;

std::string num(long long v) { return std::to_string(v); }

void append(Problems& to, Problems more) { to.insert(to.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end())); }

// tp and pp against the box: the GPUs there are, the layers a stage needs, the nodes a group spans.
void layout_rules(const Scenario& s, const Origins& o, Problems& out) {
  const Parallelism& par = s.parallel;
  if (par.draft_tp && *par.draft_tp != 1 && *par.draft_tp != par.tp) {
    out.push_back(o.error("parallel.draft_tp", "= " + num(*par.draft_tp) + ": the draft runs at TP 1 (replicated on every rank) "
                          "or at the target's TP (" + num(par.tp) + "), as vLLM's draft_tensor_parallel_size"));
  }
  if (par.tp * par.pp > s.topology.gpus) {
    out.push_back(o.error("parallel.tp", "= " + num(par.tp) + (par.pp > 1 ? " x pp " + num(par.pp) : "") + ": the topology '" +
                                             s.topology.name + "' has only " + num(s.topology.gpus) + " GPUs"));
  }
  if (par.pp > s.model.layers) out.push_back(o.error("parallel.pp", "more pipeline stages than layers"));
  const int per_node = s.topology.gpus_per_node;
  if (s.topology.nodes > 1 && par.tp % per_node != 0 && per_node % par.tp != 0) {
    // NCCL's hierarchical model and the engines place a TP group inside one node or over whole nodes.
    out.push_back(o.error("parallel.tp", "= " + num(par.tp) + ": on '" + s.topology.name + "' (" + num(per_node) +
                                             " GPUs per node) a tp group must fit in one node or fill whole nodes (a divisor or a multiple of " +
                                             num(per_node) + ")"));
  }
}

// Both models' heads split over their ranks (check_tensor_parallel).
void head_rules(const Scenario& s, const Origins& o, Problems& out, std::vector<std::string>* notes) {
  for (const TransformerSpec* m : {&s.model, &s.draft}) {
    const int ranks = m == &s.draft ? s.parallel.draft_ranks() : s.parallel.tp;
    try {
      if (std::string note = check_tensor_parallel(*m, ranks); !note.empty() && notes) notes->push_back(note);
    } catch (const Error& e) {
      out.push_back(o.error(m == &s.draft && s.parallel.draft_tp ? "parallel.draft_tp" : "parallel.tp", e.message()));
    }
  }
}

// parallel.ep and parallel.moe_a2a against the target and the box (docs/references/models.md#expert-parallel).
void expert_rules(const Scenario& s, const Origins& o, Problems& out) {
  const Parallelism& par = s.parallel;
  if (par.ep > 1) {
    const std::string ep = "= " + num(par.ep);
    if (!s.model.moe) {
      out.push_back(o.error("parallel.ep", ep + ": expert parallelism needs an MoE target; '" + s.model.name + "' has no routed experts"));
    } else if (s.model.moe->experts % par.ep != 0) {
      out.push_back(o.error("parallel.ep", ep + ": must divide the " + num(s.model.moe->experts) + " routed experts of '" +
                                               s.model.name + "' (each rank holds experts / ep whole experts)"));
    }
    if (par.ep > par.tp || par.tp % par.ep != 0) {
      out.push_back(o.error("parallel.ep", ep + ": must divide parallel.tp (" + num(par.tp) +
                                               "): ep groups of whole experts, each expert split over the group's tp / ep ranks "
                                               "(TensorRT-LLM --tp 8 --ep 4; SGLang --ep 8 with --tp 8)"));
    }
  }
  if (par.moe_a2a == MoeA2aBackend::kNone) return;
  const std::string a2a = std::string("= ") + to_string(par.moe_a2a);
  if (par.ep <= 1 || par.ep != par.tp) {
    out.push_back(o.error("parallel.moe_a2a", a2a + ": an all-to-all backend moves tokens between expert-parallel ranks, one per GPU; "
                                                    "set parallel.ep = parallel.tp (" + num(par.tp) + ")"));
  }
  const auto [link, nvlinks] = slowest_pair_link(s.topology);
  if (link != LinkClass::kNvlink || !s.topology.p2p) {
    out.push_back(o.error("parallel.moe_a2a", a2a + ": DeepEP needs NVLink with full peer access between every pair of GPUs "
                                                    "(https://github.com/deepseek-ai/DeepEP, Requirements); topology '" +
                                                    s.topology.name + "' joins some of its GPUs over " + link_name(link, nvlinks) +
                                                    (s.topology.p2p ? "" : " without peer access")));
  }
}

// parallel.attention_dp against the target and tp (docs/references/models.md#dp-attention): SGLang
// runs data-parallel attention beside MoE layers that stay tensor or expert parallel over the ranks.
void attention_dp_rules(const Scenario& s, const Origins& o, Problems& out) {
  const Parallelism& par = s.parallel;
  if (!par.data_parallel_attention() && !par.attention_dp_all) return;
  const std::string said = "= " + (par.attention_dp_all ? std::string("true") : num(par.attention_dp));
  if (!s.model.moe) {
    out.push_back(o.error("parallel.attention_dp", said + ": data-parallel attention needs an MoE target, whose MoE layers stay split "
                          "over the ranks; '" + s.model.name + "' has no routed experts (use more engine replicas instead)"));
  }
  if (par.tp < 2) {
    out.push_back(o.error("parallel.attention_dp", said + ": needs parallel.tp > 1 (attention is split over the tp ranks by request, "
                          "SGLang --dp-size <= --tp); tp = " + num(par.tp)));
  } else if (par.attention_dp > par.tp || par.tp % par.attention_dp != 0) {
    out.push_back(o.error("parallel.attention_dp", said + ": the dp groups must divide tp = " + num(par.tp) +
                          " (SGLang runs attention TP of tp / dp in each group); true means dp = tp"));
  }
}

bool stated(const Scenario& s, const char* key) { return s.explicit_keys.count(key) > 0; }

// A block drafter states its block; no other method has one (docs/model.md#block-drafters).
void block_rules(const Scenario& s, const Origins& o, Problems& out) {
  if (s.speculation.drafts_block()) {
    for (const char* key : {"num_steps", "eagle_topk", "num_draft_tokens"}) {
      const std::string full = std::string("speculation.") + key;
      if (!stated(s, full.c_str())) continue;
      out.push_back(o.error(full, "speculation.method " + s.speculation.method + " drafts one block per cycle: state speculation.block_size (tokens "
                                  "verified per cycle, SGLang's --speculative-num-draft-tokens), not " + std::string(key)));
    }
  } else if (stated(s, "speculation.block_size")) {
    out.push_back(o.error("speculation.block_size", "is a block drafter's key (speculation.method dflash); " + s.speculation.method +
                                                        " states num_steps, eagle_topk and num_draft_tokens"));
  }
}

// `speculation.parallel_drafting`: block drafting, where the engine allows it. vLLM accepts the flag
// with EAGLE heads and draft models only (config/speculative.py: "Only compatible with EAGLE and
// draft model methods"); its block draft is one chain of K mask slots, with no tree path; SGLang's
// EAGLE worker has no such flag (docs/references/specdec.md#parallel-drafting).
void parallel_drafting_rules(const Scenario& s, const Origins& o, Problems& out) {
  if (!s.speculation.parallel_drafting) return;
  const std::string& method = s.speculation.method;
  const char* key = "speculation.parallel_drafting";
  if (!s.speculation.kind().parallel_drafting) {
    out.push_back(o.error(key, "true needs a drafter trained to draft several tokens in one forward (an EAGLE head "
                               "such as P-EAGLE, or a draft model): vLLM allows it with eagle, eagle3 and draft_model "
                               "only, not with speculation.method " + method));
  }
  if (!s.engine.behaviour.parallel_drafting) {
    out.push_back(o.error(key, "true is vLLM's speculative_config flag (--speculative-config "
                               "'{\"parallel_drafting\": true}'); engine.name is '" + s.engine.name +
                               "', whose EAGLE worker drafts one token per forward: set engine.name: vllm"));
  }
  if (s.speculation.shape.eagle_topk > 1) {
    out.push_back(o.error(key, "true drafts one chain of num_steps tokens in one forward, but speculation.eagle_topk = " +
                               num(s.speculation.shape.eagle_topk) +
                               " asks for a tree: vLLM's parallel drafting has no tree path; set eagle_topk: 1"));
  }
}

// The key an acceptance is stated by, as the file writes it.
const char* acceptance_key(const Acceptance& a) {
  if (std::holds_alternative<MeasuredTau>(a.kind)) return "acceptance.tokens_per_cycle";
  if (std::holds_alternative<ConditionalChain>(a.kind)) return "acceptance.per_position";
  if (std::holds_alternative<UnconditionalChain>(a.kind)) return "acceptance.unconditional";
  return "acceptance.accept";
}

// A block drafter's acceptance fits its block (docs/model.md#block-drafters): a cycle emits at most
// block_size tokens (block_size - 1 drafted and accepted, then the bonus), and its per-position
// rates cover at most the block_size - 1 drafted slots.
void block_acceptance_rules(const Scenario& s, const Origins& o, Problems& out) {
  const int block = s.speculation.shape.num_draft_tokens;
  if (const auto* m = std::get_if<MeasuredTau>(&s.acceptance.kind); m && m->tokens_per_cycle > block) {
    out.push_back(o.error("acceptance.tokens_per_cycle", "= " + units::format_fixed(m->tokens_per_cycle, 2) + ": a DFlash block of " +
                                                             num(block) + " (speculation.block_size) verifies " + num(block) +
                                                             " tokens, so a cycle emits at most " + num(block) +
                                                             ": must lie in [1, " + num(block) + "]"));
  }
  if (const std::size_t listed = listed_positions(s.acceptance.kind); listed > static_cast<std::size_t>(block - 1)) {
    const char* key = std::holds_alternative<UnconditionalChain>(s.acceptance.kind) ? "acceptance.unconditional" : "acceptance.per_position";
    out.push_back(o.error(key, "lists " + num(static_cast<long long>(listed)) + " positions, but a DFlash block of " + num(block) +
                                   " (speculation.block_size) drafts " + num(block - 1) + ": give at most block_size - 1 rates"));
  }
}

// A separate small LM drafting for the target (vLLM's `draft_model`, SGLang's STANDALONE): a full
// model, not a draft head, which must share the target's tokenizer, since the target verifies the
// draft's token ids as they are (docs/references/specdec.md#draft-model).
void draft_model_rules(const Scenario& s, const Origins& o, Problems& out) {
  const std::string said = "'" + s.draft.name + "' (" + s.draft.file + ")";
  if (s.draft.dflash) {
    out.push_back(o.error("speculation.method", "draft_model needs a full language model under 'draft', but " + said +
                                                    " is a DFlash block drafter: set speculation.method: dflash"));
  }
  if (s.draft.eagle3) {
    out.push_back(o.error("speculation.method", "draft_model needs a full language model under 'draft', but " + said +
                                                    " is an EAGLE head: set speculation.method: " +
                                                    method_for_draft(s.draft.eagle3->version == 1 ? DraftSource::kEagleHead
                                                                                                  : DraftSource::kEagle3Head).name));
  }
  if (s.draft.vocab_size != s.model.vocab_size) {
    out.push_back(o.error("draft", "'" + s.draft.name + "' has vocab_size " + num(s.draft.vocab_size) + " but the model '" +
                                       s.model.name + "' has " + num(s.model.vocab_size) +
                                       ": a draft model must share the target's tokenizer (draft file " + s.draft.file +
                                       ", model file " + s.model.file + ")"));
  }
}

// What a draft that does not fit the target says: the draft, what differs, both files.
Error misfit(const Scenario& s, const Origins& o, const std::string& built, const std::string& what, long long draft,
             long long model) {
  return o.error("draft", "'" + s.draft.name + "'" + built + " does not fit the model '" + s.model.name + "': " + what + " " +
                              num(draft) + " vs the model's " + num(model) + " (draft file " + s.draft.file + ", model file " +
                              s.model.file + ")");
}

// A DFlash drafter fits its target (docs/references/specdec.md#dflash): its block is embedded by the
// target's embedding and its fc reads target hidden states, so hidden sizes and vocabularies match;
// every tapped layer is one of the target's.
void block_drafter_rules(const Scenario& s, const Origins& o, Problems& out) {
  if (!s.draft.dflash) {
    out.push_back(o.error("draft", "'" + s.draft.name + "' is not a DFlash drafter (no dflash block; a config.json names "
                                   "DFlashDraftModel or carries dflash_config or target_layer_ids); speculation.method " +
                                   s.speculation.method + " needs one"));
    return;
  }
  const DflashSpec& d = *s.draft.dflash;
  if (s.draft.hidden_size != s.model.hidden_size) out.push_back(misfit(s, o, "", "hidden_size", s.draft.hidden_size, s.model.hidden_size));
  if (d.target_hidden_size != s.model.hidden_size) {
    out.push_back(misfit(s, o, "", "dflash.target_hidden_size", d.target_hidden_size, s.model.hidden_size));
  }
  if (s.draft.vocab_size != s.model.vocab_size) out.push_back(misfit(s, o, "", "vocab_size", s.draft.vocab_size, s.model.vocab_size));
  for (int id : d.target_layer_ids) {
    if (id < s.model.layers) continue;
    out.push_back(o.error("draft", "'" + s.draft.name + "' taps target layer " + num(id) + ", but '" + s.model.name + "' has " +
                                       num(s.model.layers) + " layers (0-" + num(s.model.layers - 1) + ") (draft file " +
                                       s.draft.file + ", model file " + s.model.file + ")"));
  }
}

// EAGLE-3's head runs in the target's hidden size (its fc maps aux_hidden_states x H to H) and shares
// the target's embedding, so hidden and vocabulary sizes must match; its own draft vocabulary is a
// subset of the target's (https://arxiv.org/abs/2503.01840, Sec. 3; SGLang llama_eagle3.py). The
// engines run the two generations differently and name them apart (vLLM's and SGLang's `eagle3` and
// `eagle`/`EAGLE`).
void eagle_head_rules(const Scenario& s, const Origins& o, Problems& out) {
  const std::string& method = s.speculation.method;
  if (s.draft.dflash) {
    out.push_back(o.error("speculation.method", method + " needs an EAGLE head, but the draft '" + s.draft.name + "' (" +
                                                    s.draft.file + ") is a DFlash block drafter: set speculation.method: " +
                                                    method_for_draft(DraftSource::kDflash).name));
    return;
  }
  if (!s.draft.eagle3) {
    out.push_back(o.error("draft", "'" + s.draft.name + "' is not an EAGLE draft head (no eagle3 or eagle block; a config.json names an "
                                   "EAGLE architecture such as LlamaForCausalLMEagle3 or EagleLlamaForCausalLM, or carries draft_vocab_size); "
                                   "a full model drafts with speculation.method: " + std::string(method_for_draft(DraftSource::kDraftModel).name)));
    return;
  }
  const Eagle3Spec& e = *s.draft.eagle3;
  const DraftSource has = e.version == 1 ? DraftSource::kEagleHead : DraftSource::kEagle3Head;
  if (s.speculation.kind().source != has) {
    const bool wants3 = s.speculation.kind().source == DraftSource::kEagle3Head;
    out.push_back(o.error("speculation.method", method + " needs an " + (wants3 ? "EAGLE-3" : "EAGLE-1/2") + " head, but the draft '" +
                                                    s.draft.name + "' (" + s.draft.file + ") is an " +
                                                    (e.version == 1 ? "EAGLE-1/2" : "EAGLE-3") +
                                                    " head: set speculation.method: " + method_for_draft(has).name));
  }
  const std::string built = e.target.empty() ? "" : " (built for " + e.target + ")";
  if (s.draft.hidden_size != s.model.hidden_size) out.push_back(misfit(s, o, built, "hidden_size", s.draft.hidden_size, s.model.hidden_size));
  if (s.draft.vocab_size != s.model.vocab_size) out.push_back(misfit(s, o, built, "vocab_size", s.draft.vocab_size, s.model.vocab_size));
  if (e.draft_vocab_size > s.model.vocab_size) {
    out.push_back(misfit(s, o, built, "eagle3.draft_vocab_size", e.draft_vocab_size, s.model.vocab_size));
  }
}

}  // namespace

std::vector<Error> box_problems(const Scenario& s, const Origins& o) {
  Problems out;
  // A box wired with NVLink (or Infinity Fabric) needs a card that has it: else its links would be
  // priced as PCIe silently, or at a bandwidth no file states.
  const std::string key = s.explicit_keys.count("gpu") ? "gpu" : "topology";
  if (s.topology.link == LinkClass::kNvlink && !s.gpu.nvlink_bandwidth_bytes_per_s) {
    out.push_back(o.error(key, "'" + s.gpu.name + "' has no NVLink (its GPU file gives no nvlink_bandwidth), but topology '" +
                                   s.topology.name + "' links its GPUs by NVLink"));
  }
  if (s.topology.link == LinkClass::kXgmi && !s.gpu.xgmi_link_bandwidth_bytes_per_s) {
    out.push_back(o.error(key, "'" + s.gpu.name + "' has no Infinity Fabric (its GPU file gives no xgmi_link_bandwidth), but topology '" +
                                   s.topology.name + "' links its GPUs by XGMI"));
  }
  return out;
}

std::vector<Error> target_problems(const Scenario& s, const Origins& o) {
  Problems out;
  if (s.model.eagle3) {
    out.push_back(o.error("model", "'" + s.model.name + "' is an EAGLE-3 draft head (it has an eagle3 block); the target model "
                                   "must be a full model (the draft goes under 'draft')"));
  }
  return out;
}

std::vector<Error> draft_problems(const Scenario& s, const Origins& o) {
  Problems out;
  switch (s.speculation.kind().source) {
    case DraftSource::kPromptLookup:
    case DraftSource::kTargetMtp:
      // The draft is built from the method, no file to check; a what-if that names one (the loader
      // refuses the key in the file, read_draft) would be priced as the method's own.
      if (s.patched_keys.count("draft")) {
        out.push_back(o.error("draft", "speculation.method " + s.speculation.method + " takes no draft file (" +
                                           (s.speculation.kind().source == DraftSource::kTargetMtp
                                                ? "it drafts with the model's own multi-token-prediction layers"
                                                : "it proposes tokens by prompt lookup on the host") +
                                           "); leave 'draft' out"));
      }
      break;
    case DraftSource::kDraftModel: draft_model_rules(s, o, out); break;
    case DraftSource::kDflash: block_drafter_rules(s, o, out); break;
    case DraftSource::kEagleHead:
    case DraftSource::kEagle3Head: eagle_head_rules(s, o, out); break;
  }
  return out;
}

std::vector<Error> parallel_problems(const Scenario& s, const Origins& o, std::vector<std::string>* notes) {
  Problems out;
  layout_rules(s, o, out);
  head_rules(s, o, out, notes);
  expert_rules(s, o, out);
  attention_dp_rules(s, o, out);
  return out;
}

std::vector<Error> speculation_problems(const Scenario& s, const Origins& o) {
  Problems out;
  block_rules(s, o, out);
  const DraftShape& sp = s.speculation.shape;
  if (!s.speculation.drafts_block()) {
    if (sp.eagle_topk == 1) {
      // A chain verifies num_steps + 1 (SGLang forces it, docs/references/specdec.md#sglang-flags);
      // the loader and set_field derive it, so only a stated other count reaches here.
      if (sp.num_draft_tokens != sp.num_steps + 1) {
        out.push_back(o.error("speculation.num_draft_tokens", "= " + num(sp.num_draft_tokens) + ": a chain verifies num_steps + 1 = " +
                                                                  num(sp.num_steps + 1) + " tokens"));
      }
    } else if (const std::string problem = num_draft_tokens_problem(sp); !problem.empty()) {
      out.push_back(o.error("speculation.num_draft_tokens", problem));
    }
  }
  // A method whose row drafts chains only (n-gram lookup proposes one chain from the prompt in
  // vLLM and SGLang): a tree of it is not something an engine drafts.
  const SpeculationMethod& method = s.speculation.kind();
  if (!method.trees && !method.drafts_block && sp.eagle_topk > 1) {
    const char* how = method.source == DraftSource::kPromptLookup ? " by prompt lookup" : "";
    out.push_back(o.error("speculation.eagle_topk", "= " + num(sp.eagle_topk) + ": speculation.method " + method.name +
                                                        " proposes one chain" + how + "; set eagle_topk: 1"));
  }
  parallel_drafting_rules(s, o, out);
  return out;
}

std::vector<Error> acceptance_fit_problems(const Scenario& s, const Origins& o) {
  Problems out;
  if (s.speculation.drafts_block()) {
    block_acceptance_rules(s, o, out);
    return out;
  }
  const std::vector<std::string> problems = acceptance_problems(s.acceptance, s.speculation.shape);
  if (problems.empty()) return out;
  const std::string key = acceptance_key(s.acceptance);
  std::string message;
  const std::string named = key + " ";  // a problem that names the key already
  for (const auto& p : problems) message += (message.empty() ? "" : "; ") + (p.rfind(named, 0) == 0 ? p.substr(named.size()) : p);
  const DraftShape& sp = s.speculation.shape;
  out.push_back(o.error(key, message + " (speculation: " + num(sp.num_steps) + " steps, top-k " + num(sp.eagle_topk) + ", " +
                                 num(sp.num_draft_tokens) + " draft tokens)"));
  return out;
}

std::vector<Error> setting_problems(const Scenario& s, const Origins& o) {
  Problems out;
  if (!s.compute.bandwidth_efficiency && !s.compute.routing_skew) {
    out.push_back(o.error("compute.routing_skew", "only one of bandwidth_efficiency and routing_skew can be 'calibrate' "
                                                  "(one measured verify compute time fixes one parameter)"));
  }
  if (s.comm.custom_max_bytes && s.comm.implementation != "engine") {
    out.push_back(o.error("comm.custom_max_bytes", "applies to comm.implementation: engine only"));
  }
  if (!s.comm.rank_profiles.empty() && s.comm.rank_scaling == "off") {
    out.push_back(o.error("comm.rank_profiles", "needs comm.rank_scaling: power or nccl"));
  }
  if (s.comm.min_channels && s.comm.max_channels && s.comm.min_channels > s.comm.max_channels) {
    out.push_back(o.error("comm.min_channels", "must not exceed max_channels"));
  }
  // Priced only where the host looks tokens up: on another method the value would be ignored.
  if (s.speculation.kind().source != DraftSource::kPromptLookup && stated(s, "host.ngram_lookup_per_token")) {
    out.push_back(o.error("host.ngram_lookup_per_token", "prices speculation.method ngram's prompt lookup; this scenario drafts with " +
                                                             s.speculation.method + ", which never runs it"));
  }
  return out;
}

std::vector<Error> comm_profile_problems(const Scenario& s, const Origins& o) {
  Problems out;
  // Located at the comm block, as the loader reads the profiles there.
  const SourceLocation at = o.of("comm");
  const auto ranks_fit = [&](const std::optional<CommProfile>& p, const char* key, bool scalable) {
    if (!p || s.parallel.tp <= 1 || p->ranks == s.parallel.tp || scalable) return;
    out.emplace_back(at, std::string("comm.") + key,
                     "profile '" + p->name + "' was measured at " + num(p->ranks) + " ranks, the scenario runs tp = " +
                         num(s.parallel.tp) + (std::string(key) == "profile" ? " (comm.rank_scaling: nccl or power estimates it)" : ""));
  };
  ranks_fit(s.comm_profile, "profile", s.comm.rank_scaling != "off");
  ranks_fit(s.custom_profile, "custom_profile", false);
  if (const auto& p = s.all_to_all_profile) {
    const std::string what = "profile '" + p->name + "' ";
    if (!s.parallel.runs_all_to_all()) {
      out.emplace_back(at, "comm.all_to_all_profile",
                       what + "times an all-to-all, but the scenario runs none: it needs parallel.ep > 1 with parallel.moe_a2a: deepep "
                              "(a what-if without the backend clears it too: --set comm.all_to_all_profile=)");
    } else if (p->ranks != s.parallel.ep) {
      out.emplace_back(at, "comm.all_to_all_profile",
                       what + "was measured at " + num(p->ranks) + " ranks, the scenario's all-to-all runs among ep = " + num(s.parallel.ep));
    }
  }
  if (s.comm.all_to_all_latency_s) {
    if (!s.parallel.runs_all_to_all()) {
      out.emplace_back(at, "comm.all_to_all_latency",
                       "sets the all-to-all's latency, but the scenario runs none: it needs parallel.ep > 1 with parallel.moe_a2a: "
                       "deepep (a what-if without the backend clears it too: --set comm.all_to_all_latency=)");
    }
    if (s.all_to_all_profile) {
      out.emplace_back(at, "comm.all_to_all_latency", "comm.all_to_all_profile prices the all-to-all already: set one of the two");
    }
  }
  return out;
}

std::vector<Error> scenario_problems(const Scenario& s, const Origins& o) {
  // As the loader: a rule that needs a broken block is not checked (the comm tables need the
  // parallel layout, the acceptance the draft's shape), so no problem is a knock-on of another.
  Problems out = target_problems(s, o);
  append(out, draft_problems(s, o));
  append(out, box_problems(s, o));
  Problems parallel = parallel_problems(s, o);
  const bool parallel_ok = parallel.empty();
  append(out, std::move(parallel));
  Problems shape = speculation_problems(s, o);
  const bool shape_ok = shape.empty();
  append(out, std::move(shape));
  if (shape_ok) append(out, acceptance_fit_problems(s, o));
  append(out, setting_problems(s, o));
  if (parallel_ok) append(out, comm_profile_problems(s, o));
  return out;
}

std::vector<Error> what_if_problems(const Scenario& s) {
  static const Origins none;
  Problems out = scenario_problems(s, s.origins ? *s.origins : none);
  for (Error& e : out) {
    if (!s.patched_keys.count(e.key_path())) continue;
    e = Error({"--set " + e.key_path() + "=" + field_text(s, e.key_path()), 0, 0}, e.key_path(), e.message());
  }
  return out;
}

}  // namespace specsim
