// The reader of models/scenarios/*.yaml, and load.hpp's scenario loaders: the header, then each
// block (models, box, parallel, workload, engine, speculation, acceptance, compute, comm, host,
// band, measurements) read under a problem collector, so that one run reports every problem with
// its file:line or `--set`; then the rules (scenario_rules.hpp) on what was read. The files a
// scenario names are read through load.cpp's loaders.
#include "specsim/load.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "io/readers.hpp"
#include "model/scenario_bounds.hpp"
#include "specsim/acceptance.hpp"
#include "specsim/comm_model.hpp"
#include "specsim/engine_flags.hpp"
#include "specsim/compute_profile.hpp"
#include "specsim/nccl_prior.hpp"
#include "specsim/scenario_fields.hpp"
#include "specsim/scenario_rules.hpp"
#include "specsim/units.hpp"
#include "util/yaml_reader.hpp"

namespace specsim {

using detail::join;
using detail::kMaxCount;
using detail::kMethods;
using detail::read_compute_keys;
using detail::read_mode;
using detail::read_nccl_version;
using detail::read_topology_keys;
using detail::read_validation_source;
using detail::YamlReader;
using units::Quantity;

namespace {

// Parts of a measured verify step (all-reduce total + the rest) are read off a profiler and rounded
// to 1 ms in a step of ~30 ms (models/scenarios: 25 ms + 5 ms = 30 ms): 1/30 is 3.3%, so 5% of the
// step allows that rounding and catches a part copied wrong.
constexpr double kVerifyPartsTolerance = 0.05;
constexpr double kTpotTolerance = 0.01;  // rounding of a published TPOT against the rate

// An engine's launch mode may also be piecewise (CUDA graphs with attention launched eagerly);
// measured tables and profiles are graph or eager.
LaunchMode read_engine_mode(YamlReader& r, const std::string& key) {
  const std::string s = r.optional_choice(key, {"graph", "eager", "piecewise"}, "graph");
  return s == "graph" ? LaunchMode::kGraph : s == "eager" ? LaunchMode::kEager : LaunchMode::kPiecewise;
}

// The problems of one scenario, gathered block by block so that one run reports them all: each
// block is read under run(), and a block that throws is recorded and keeps its defaults. A
// problem found twice (a bound checked up front and again where it is read) is kept once.
class Problems {
 public:
  // Runs `read`; false, with its problem recorded, when it throws.
  template <typename Read>
  bool run(Read&& read) {
    try {
      read();
      return true;
    } catch (const Error& e) {
      add(e);
      return false;
    }
  }
  void add(const Error& e) {
    const auto same = [&](const Error& p) { return std::string(p.what()) == e.what(); };
    if (std::none_of(list_.begin(), list_.end(), same)) list_.push_back(e);
  }
  // Records every problem a rule found; true when there were none.
  bool add_all(const std::vector<Error>& found) {
    for (const Error& e : found) add(e);
    return found.empty();
  }
  [[nodiscard]] bool empty() const { return list_.empty(); }
  std::vector<Error> take() { return std::move(list_); }

 private:
  std::vector<Error> list_;
};

// The file `name` stands for, or a failure at `key` of `r` listing the valid names.
std::string resolve_at(YamlReader& r, const std::string& key, DataKind kind, const std::string& name,
                       const DataDir& data) {
  try {
    return data.resolve(kind, name);
  } catch (const Error& e) {
    r.fail(key, e.message());
  }
}

// Reads a name field and resolves it, so an unknown name reports the scenario's file and line.
template <typename Loader>
auto load_named(YamlReader& r, const std::string& key, DataKind kind, const DataDir& data, Loader loader) {
  return loader(resolve_at(r, key, kind, r.string(key), data));
}

// The draft: a model file under `draft` (eagle3, eagle, draft_model), the target's own
// multi-token-prediction module (mtp), or none at all (ngram); the last two take no file.
TransformerSpec read_draft(YamlReader& r, const TransformerSpec& model, const SpeculationMethod& method,
                           const DataDir& data) {
  const std::string name = method.name;
  if (method.source == DraftSource::kPromptLookup) {
    if (r.has("draft")) {
      r.fail("draft", "speculation.method " + name + " proposes tokens by prompt lookup on the host, with no draft "
                      "model; leave 'draft' out");
    }
    return ngram_proposer();
  }
  if (method.needs_draft_file()) return load_named(r, "draft", DataKind::kModel, data, load_model);
  const std::string model_file = model.file.empty() ? "" : " (" + model.file + ")";
  if (r.has("draft")) {
    r.fail("draft", "speculation.method " + name + " drafts with the model's own multi-token-prediction layers; "
                    "leave 'draft' out");
  }
  if (model.mtp_layers < 1) {
    r.child("speculation").fail("method", name + " needs a model with multi-token-prediction layers, but '" +
                                              model.name + "'" + model_file +
                                              " has mtp_layers 0 (num_nextn_predict_layers or mtp_num_hidden_layers in a HF config)");
  }
  return mtp_draft(model);
}

using detail::kScenarioBounds;
using Bound = detail::ScenarioBound;

// kScenarioBounds' row for `key` (scenario_bounds.hpp).
const Bound& bound(const std::string& key) {
  if (const Bound* b = detail::find_scenario_bound(key)) return *b;
  throw Error("internal: no bound for " + key);
}

// `r` reads the map at the key's parent; the leaf is the key's last part.
long long bounded_integer(YamlReader& r, const std::string& key) {
  const Bound& b = bound(key);
  return r.integer(key.substr(key.rfind('.') + 1), static_cast<long long>(b.min), static_cast<long long>(b.max));
}
long long bounded_integer(YamlReader& r, const std::string& key, long long fallback) {
  const Bound& b = bound(key);
  return r.optional_integer(key.substr(key.rfind('.') + 1), fallback, static_cast<long long>(b.min),
                            static_cast<long long>(b.max));
}
double bounded_number(YamlReader& r, const std::string& key) {
  const Bound& b = bound(key);
  return r.number(key.substr(key.rfind('.') + 1), b.min, b.max);
}
double bounded_number(YamlReader& r, const std::string& key, double fallback) {
  const Bound& b = bound(key);
  return r.optional_number(key.substr(key.rfind('.') + 1), fallback, b.min, b.max);
}
std::optional<double> bounded_number_or_calibrate(YamlReader& r, const std::string& key) {
  const Bound& b = bound(key);
  return r.number_or_calibrate(key.substr(key.rfind('.') + 1), b.min, b.max);
}
// Reads the bounded key as its row says: an integer, a number, or a number or 'calibrate'.
void read_bounded(YamlReader& r, const std::string& key) {
  const Bound& b = bound(key);
  if (b.integer) (void)bounded_integer(r, key);
  else if (b.calibrate) (void)bounded_number_or_calibrate(r, key);
  else (void)bounded_number(r, key);
}


// The bound `key` checked where the document has it, from reader `r` (a copy of the one above) at
// the part beginning at `start`; each part on the way must be a map. Readers are built by
// descending, never assigned (assigning a YAML::Node rebinds the document it points into).
void check_bound_below(YamlReader r, const std::string& key, std::size_t start, std::vector<Error>& out) {
  const std::size_t dot = key.find('.', start);
  if (dot == std::string::npos) {
    if (!r.has(key.substr(start))) return;
    try {
      read_bounded(r, key);
    } catch (const Error& e) {
      out.push_back(e);
    }
    return;
  }
  const std::string part = key.substr(start, dot - start);
  if (!r.has(part) || !r.node()[part].IsMap()) return;
  check_bound_below(r.child(part), key, dot + 1, out);
}

// Every bound of kScenarioBounds that the document breaks, each with its file:line or `--set`.
std::vector<Error> bound_problems(const YamlReader& root) {
  std::vector<Error> out;
  for (const Bound& b : kScenarioBounds) check_bound_below(root, b.key, 0, out);
  return out;
}

// workload.concurrency: the batches to predict at, within workload.batch's bounds, each once.
// `workload.batch` stays the batch the measurements describe, where calibration runs
// (docs/model.md#concurrency); a key written with no value is an error, not an absent list.
std::vector<int> read_concurrency(YamlReader& w) {
  if (!w.node().IsMap() || !w.node()["concurrency"].IsDefined()) return {};
  const Bound& b = bound("workload.batch");
  const auto levels = w.integers("concurrency", static_cast<long long>(b.min), static_cast<long long>(b.max));
  std::vector<int> out;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (levels[j] == levels[i]) {
        w.fail("concurrency", "item " + std::to_string(i + 1) + " = " + std::to_string(levels[i]) +
                                  " repeats item " + std::to_string(j + 1) + ": list each level once");
      }
    }
    out.push_back(static_cast<int>(levels[i]));
  }
  return out;
}

// The forms an `acceptance:` block states its acceptance in, one of them per scenario.
constexpr std::array<std::string_view, 5> kAcceptanceForms = {"accept", "per_position", "unconditional",
                                                              "tokens_per_cycle", "draft_acceptance_rate"};

// `acceptance:` exactly one form, each a kind of Acceptance; `tree_positional` measures a tree's
// siblings beside any of them. `draft_acceptance_rate` (accepted / drafted tokens, as vLLM and SGLang
// print it) is a measured tau at the draft shape read before it: 1 + rate x (num_draft_tokens - 1).
Acceptance read_acceptance(YamlReader& a, const DraftShape* shape) {
  Acceptance s;
  int forms = 0;
  for (const auto form : kAcceptanceForms) forms += a.has(std::string(form)) ? 1 : 0;
  if (forms != 1) {
    a.fail_here("give exactly one of accept, per_position, unconditional, tokens_per_cycle, draft_acceptance_rate "
                "(found " + std::to_string(forms) + ")");
  }
  if (a.has("accept")) {
    ConstantChain c;
    c.accept = bounded_number(a, "acceptance.accept");
    if (a.has("depth_profile")) c.depth_profile = a.numbers("depth_profile", 0.0, 1.0);
    s.kind = std::move(c);
  } else if (a.has("depth_profile")) {
    std::string form;
    for (const auto f : kAcceptanceForms) {
      if (a.has(std::string(f))) form = f;
    }
    a.fail("depth_profile", "scales acceptance.accept only, and acceptance." + form +
                                " has no accept to scale: leave depth_profile out (" + form +
                                " states every position itself)");
  } else if (a.has("per_position")) {
    s.kind = ConditionalChain{a.numbers("per_position", 0.0, 1.0)};
  } else if (a.has("unconditional")) {
    s.kind = UnconditionalChain{a.numbers("unconditional", 0.0, 1.0)};
  } else if (a.has("tokens_per_cycle")) {
    s.kind = MeasuredTau{bounded_number(a, "acceptance.tokens_per_cycle")};
  } else {
    const double rate = bounded_number(a, "acceptance.draft_acceptance_rate");
    if (!shape) a.fail("draft_acceptance_rate", "needs the speculation block's draft shape, which did not read");
    try {
      s.kind = tau_from_draft_acceptance_rate(rate, *shape);
    } catch (const Error& e) {
      a.fail("draft_acceptance_rate", e.message());
    }
  }
  if (a.has("tree_positional")) s.siblings.positional = a.numbers("tree_positional", 0.0, 1.0);
  a.ignore("tree_positional");
  a.ignore("depth_profile");
  a.ignore("source");
  a.finish();
  return s;
}

// The dotted paths of every scalar or list under `node` ("compute.kernel_floor").
void collect_leaf_keys(const YAML::Node& node, const std::string& prefix, std::set<std::string>& out) {
  if (!node.IsMap()) {
    if (!prefix.empty()) out.insert(prefix);
    return;
  }
  for (const auto& kv : node) {
    collect_leaf_keys(kv.second, prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar(), out);
  }
}

// What the scenario's NCCL release (comm.nccl_version) says about the tables and the prior it uses:
// notes, never errors, since a table from another release is still the best measurement at hand.
void note_nccl_release(Scenario& s) {
  const std::optional<NcclVersion> runs = parse_nccl_version(s.comm.nccl_version);
  if (!runs) return;
  const std::string here = "the scenario runs NCCL " + s.comm.nccl_version;
  const auto check = [&](const CommProfile& p, const std::string& key) {
    if (p.implementation != "nccl") return;
    const std::string what = key + " '" + p.name + "'";
    if (p.nccl_version.empty()) {
      s.notes.push_back(what + " does not say which NCCL release it was measured under and " + here +
                        ": whether the table holds for it is not known (a profile states it in nccl_version)");
    } else if (!parse_nccl_version(p.nccl_version)->same_minor(*runs)) {
      s.notes.push_back(what + " was measured under NCCL " + p.nccl_version + " and " + here +
                        ": NCCL's algorithm, protocol and transport choices change between releases (small "
                        "all-reduces moved from 2.28 to 2.29 on 8x H100, NVIDIA/nccl#2094), so measure it again "
                        "under " + s.comm.nccl_version + " (docs/references/nccl.md#versions)");
    }
  };
  if (s.comm_profile) check(*s.comm_profile, "comm.profile");
  for (const auto& p : s.comm_rank_profiles) check(p, "comm.rank_profiles");
  if (s.all_to_all_profile) check(*s.all_to_all_profile, "comm.all_to_all_profile");
  if (s.parallel.tp < 2) return;
  const bool runs_nccl = s.comm.implementation == "nccl" || s.comm.implementation == "engine" ||
                         s.comm.implementation == "fp8";
  if (!s.comm_profile && runs_nccl && *runs < kNcclPriorTablesSince) {
    s.notes.push_back("the NCCL all-reduce prior holds the latency tables of NCCL " + to_string(kNcclPriorTablesSince) +
                      " and later, and " + here + ", whose tables differ (28 us per Tree/Simple step in 2.18-2.22, "
                      "docs/references/nccl.md#latency-tables): the prior is less sure than its band says");
  }
  if (s.comm.nccl_algo == "tree" && *runs < kNcclAlgoPerCollectiveSince) {
    s.notes.push_back("comm.nccl_algo = tree under NCCL " + s.comm.nccl_version + ": before " +
                      to_string(kNcclAlgoPerCollectiveSince) + " NCCL_ALGO has no per-collective form "
                      "('allreduce:tree'), so Tree applies to every collective, and all-gather, which has no Tree, "
                      "fails with ncclInvalidUsage (at capture under CUDA graphs; "
                      "docs/references/nccl.md#tree-under-graph-capture)");
  }
}

// What is wrong with `p` as the table of comm.`key` (it times another collective); "" when nothing.
std::string table_kind_problem(const CommProfile& p, const std::string& key) {
  const std::string wanted = key == "all_to_all_profile" ? "all_to_all" : "all_reduce";
  if (p.collective == wanted) return "";
  return "profile '" + p.name + "' times " + p.collective + ", this key takes an " + wanted + " table" +
         (wanted == "all_reduce" ? " (an all-to-all table goes in comm.all_to_all_profile)"
                                 : " (an all-reduce table goes in comm.profile)");
}

// The comm profiles the scenario names (comm.profile, custom_profile, rank_profiles,
// all_to_all_profile), each checked against the box and tp; `r` is the scenario's root, for locations.
void load_comm_profiles(YamlReader& r, Scenario& s, const DataDir& data) {
  auto load_profile = [&](const std::string& name, const char* key) -> std::optional<CommProfile> {
    if (name.empty()) return std::nullopt;
    std::string path;
    try {
      path = data.resolve(DataKind::kCommProfile, name);
    } catch (const Error& e) {
      throw Error(r.location_of("comm"), std::string("comm.") + key, e.message());
    }
    CommProfile p = load_comm_profile(path);
    if (std::string why = table_kind_problem(p, key); !why.empty()) throw Error(r.location_of("comm"), std::string("comm.") + key, why);
    // The box the profile was measured on should be this one; another box's table is a what-if
    // worth seeing, not an error.
    if (!p.gpu.empty() && p.gpu != s.gpu.name) {
      s.notes.push_back("comm." + std::string(key) + " '" + p.name + "' was measured on " + p.gpu +
                        " GPUs; the scenario runs " + s.gpu.name);
    }
    // A table measured across nodes holds their network; on a box whose ranks span another number of
    // nodes it is another box's table (a what-if, as above).
    if ((p.nodes > 1 || s.topology.nodes > 1) && p.nodes != s.topology.nodes_spanned(p.ranks)) {
      s.notes.push_back("comm." + std::string(key) + " '" + p.name + "' was measured at " + std::to_string(p.ranks) +
                        " ranks on " + std::to_string(p.nodes) + " node(s); on " + s.topology.name + " they span " +
                        std::to_string(s.topology.nodes_spanned(p.ranks)));
    }
    if (p.ranks > s.topology.gpus) {
      s.notes.push_back("comm." + std::string(key) + " '" + p.name + "' was measured at " + std::to_string(p.ranks) +
                        " ranks, more than the " + std::to_string(s.topology.gpus) + " GPUs of " + s.topology.name +
                        ": it comes from another box");
    }
    return p;
  };
  // Whether each table fits tp and ep is comm_profile_problems'.
  s.comm_profile = load_profile(s.comm.profile, "profile");
  s.custom_profile = load_profile(s.comm.custom_profile, "custom_profile");
  s.all_to_all_profile = load_profile(s.comm.all_to_all_profile, "all_to_all_profile");
  for (const auto& name : s.comm.rank_profiles) {
    CommProfile p = *load_profile(name, "rank_profiles");
    if (!s.comm_profile) throw Error(r.location_of("comm"), "comm.rank_profiles", "needs comm.profile as well");
    if (p.mode != s.comm_profile->mode) {
      throw Error(r.location_of("comm"), "comm.rank_profiles",
                  "'" + p.name + "' was measured in " + to_string(p.mode) + " mode, comm.profile '" +
                      s.comm_profile->name + "' in " + to_string(s.comm_profile->mode));
    }
    bool repeated = p.ranks == s.comm_profile->ranks;
    for (const auto& q : s.comm_rank_profiles) repeated = repeated || q.ranks == p.ranks;
    if (repeated) {
      throw Error(r.location_of("comm"), "comm.rank_profiles",
                  "'" + p.name + "': a second profile at " + std::to_string(p.ranks) + " ranks (one per rank count)");
    }
    s.comm_rank_profiles.push_back(std::move(p));
  }
  note_nccl_release(s);
  if (s.comm.implementation == "custom_oneshot" && vllm_custom_aborts_in_capture(s)) {
    s.notes.push_back("comm.implementation = custom_oneshot under vLLM on sm_12x GPUs: vLLM's custom all-reduce aborts "
                      "during CUDA graph capture there (vllm#47266 item 9a), so this prices a kernel the deployment "
                      "cannot run with graphs; comm.implementation: engine prices what vLLM runs");
  }
}

// A measured decode rate below one token per 100 s is a unit typo or a denormal, not a deployment:
// the host time calibrated from it would be hours per step.
constexpr double kMinMeasuredTokensPerS = 0.01;
constexpr const char* kMinMeasuredRateReason =
    "must be at least 0.01 tok/s: a measured decode rate below one token per 100 s is a typo, not a deployment";

// `measurements.baseline:` the plain run: its rate, whether that rate holds prefill, and beside an
// end-to-end rate its TPOT and the benchmark's prompt and output lengths.
void read_baseline(YamlReader& b, const Scenario& s, Measurements& out) {
  out.baseline_tokens_per_s = b.quantity("tokens_per_s", Quantity::kRate);
  if (*out.baseline_tokens_per_s < kMinMeasuredTokensPerS) b.fail("tokens_per_s", kMinMeasuredRateReason);
  out.baseline_includes_prefill = b.optional_boolean("includes_prefill", false);
  if (b.has("tpot")) {
    const double tpot = b.quantity("tpot", Quantity::kDuration);
    if (!out.baseline_includes_prefill) {
      b.fail("tpot", "is read only beside an end-to-end rate (includes_prefill: true): a decode-only "
                     "tokens_per_s already is the step, and the two would disagree");
    }
    // One step emits one token per request: the end-to-end step (prefill and tails included)
    // cannot be shorter than the decode step. kTpotTolerance allows for rounding of published figures.
    const double end_to_end = s.batch / out.baseline_tokens_per_s.value();
    if (tpot > end_to_end * (1.0 + kTpotTolerance)) {
      b.fail("tpot", "= " + units::format_duration(tpot) + " is longer than the end-to-end step batch / tokens_per_s = " +
                          units::format_duration(end_to_end) + ": the decode step cannot take more than the whole run per token");
    }
    out.baseline_tpot_s = std::min(tpot, end_to_end);
  }
  for (const auto& [key, field] : {std::pair{"prompt_tokens", &out.baseline_prompt_tokens},
                                   std::pair{"output_tokens", &out.baseline_output_tokens}}) {
    if (!b.has(key)) continue;
    if (!out.baseline_includes_prefill) {
      b.fail(key, "is read only beside an end-to-end rate (includes_prefill: true): it prices the prefill "
                  "that rate holds");
    }
    *field = static_cast<double>(b.integer(key, 1, kMaxCount));
  }
  if ((out.baseline_prompt_tokens > 0) != (out.baseline_output_tokens > 0)) {
    // Named at the key that is there: prefill per output token needs both.
    const bool prompt = out.baseline_prompt_tokens > 0;
    b.fail(prompt ? "prompt_tokens" : "output_tokens",
           std::string("is given without ") + (prompt ? "output_tokens" : "prompt_tokens") +
               ": prefill per output token needs both");
  }
  b.ignore("source");
  b.finish();
}

// `measurements:`: what was measured, and where (a box or model other than the one predicted).
Measurements read_measurements(YamlReader& m, const Scenario& s, const DataDir& data) {
  Measurements out;
  if (m.has("topology")) {
    // Where the measurements come from. A what-if that moved the scenario keeps calibrating here.
    Measurements::Box box;
    box.topology = load_named(m, "topology", DataKind::kTopology, data, load_topology);
    box.gpu = load_gpu(resolve_at(m, "gpu", DataKind::kGpu, m.optional_string("gpu", box.topology.gpu), data));
    if (box.topology.name != s.topology.name || box.gpu.name != s.gpu.name) {
      if (!box.topology.comm_profile.empty() && s.parallel.tp > 1) {
        CommProfile p = load_comm_profile(data.resolve(DataKind::kCommProfile, box.topology.comm_profile));
        if (p.collective != "all_reduce") {
          m.fail("topology", "topology '" + box.topology.name + "' names comm_profile '" + p.name + "', which times " +
                                 p.collective + ": a topology's comm_profile is its all-reduce table");
        }
        if (p.ranks == s.parallel.tp) box.comm_profile = p;
      }
      out.box = box;
    }
  }
  m.ignore("topology");
  m.ignore("gpu");
  if (m.has("model")) {
    // The model they were measured on, when the file predicts another (calibration runs on it).
    TransformerSpec measured = load_named(m, "model", DataKind::kModel, data, load_model);
    if (measured.name != s.model.name) out.model = std::move(measured);
  }
  m.ignore("model");
  if (auto b = m.optional_child("baseline")) read_baseline(*b, s, out);
  if (auto v = m.optional_child("verify")) {
    Measurements::Verify mv;
    mv.step_s = v->quantity("step", Quantity::kDuration);
    mv.allreduce_count = static_cast<int>(v->integer("allreduce_count", 1, kMaxCount));
    mv.allreduce_total_s = v->quantity("allreduce_total", Quantity::kDuration);
    mv.compute_s = v->quantity("compute", Quantity::kDuration);
    const double parts_s = mv.allreduce_total_s + mv.compute_s;
    if (std::abs(parts_s - mv.step_s) > kVerifyPartsTolerance * mv.step_s) {
      v->fail("step", "= " + units::format_duration(mv.step_s) + ", but its parts allreduce_total + compute = " +
                          units::format_duration(mv.allreduce_total_s) + " + " + units::format_duration(mv.compute_s) +
                          " = " + units::format_duration(parts_s) + (parts_s > mv.step_s ? ", more than the step" : "") +
                          ": they must add up to it within " + units::format_fixed(100 * kVerifyPartsTolerance, 0) +
                          "% (kVerifyPartsTolerance: rounding of profiler figures)");
    }
    mv.tokens_per_request = static_cast<int>(bounded_integer(*v, "measurements.verify.tokens_per_request"));
    mv.mode = read_mode(*v, "mode", LaunchMode::kEager);
    v->ignore("source");
    v->finish();
    out.verify = mv;
  }
  if (auto sp = m.optional_child("speculative")) {
    out.speculative_tokens_per_s = sp->quantity("tokens_per_s", Quantity::kRate);
    if (*out.speculative_tokens_per_s < kMinMeasuredTokensPerS) sp->fail("tokens_per_s", kMinMeasuredRateReason);
    out.speculative_held_out = sp->optional_boolean("held_out", true);
    sp->ignore("source");
    sp->finish();
  }
  m.finish();
  return out;
}

// `attention_dp: true` is dp = tp (the DeepSeek command), `false` off, a number the dp groups.
void read_attention_dp(YamlReader& p, Parallelism& parallel) {
  if (!p.has("attention_dp")) return;
  const std::string text = p.optional_string("attention_dp", "");
  if (text == "false") return;
  if (text == "true") {
    parallel.attention_dp = parallel.tp;
    parallel.attention_dp_all = true;
    return;
  }
  // Not in kScenarioBounds: that table's integers do not take `true`.
  parallel.attention_dp = static_cast<int>(p.optional_integer("attention_dp", 1, 1, 1024));
}

// `parallel:` tp, pp, draft_tp, ep, moe_a2a and attention_dp; parallel_problems checks them against
// the box, both models' heads and the target's experts.
void read_parallel(YamlReader& r, Scenario& s) {
  YamlReader p = r.child("parallel");
  s.parallel.tp = static_cast<int>(bounded_integer(p, "parallel.tp"));
  s.parallel.pp = static_cast<int>(bounded_integer(p, "parallel.pp", 1));
  if (p.has("draft_tp")) s.parallel.draft_tp = static_cast<int>(bounded_integer(p, "parallel.draft_tp"));
  s.parallel.ep = static_cast<int>(bounded_integer(p, "parallel.ep", 1));
  s.parallel.moe_a2a = *parse_moe_a2a_backend(p.optional_choice("moe_a2a", moe_a2a_backend_names(), "none"));
  read_attention_dp(p, s.parallel);
  p.finish();
}

// `workload:` the measured batch, the context and the concurrency levels; each key's problem is
// recorded on its own.
void read_workload(YamlReader& r, Scenario& s, Problems& problems) {
  YamlReader w = r.child("workload");
  problems.run([&] { s.batch = static_cast<int>(bounded_integer(w, "workload.batch")); });
  problems.run([&] { s.context_tokens = static_cast<double>(bounded_integer(w, "workload.context")); });
  problems.run([&] { s.concurrency = read_concurrency(w); });
  w.finish();
}

// `engine.async_scheduling:` how the plain and the speculative run were scheduled; either left out
// takes the engine's default (docs/model.md#async-scheduling).
void read_async_scheduling(YamlReader& e, EngineSettings& engine) {
  auto a = e.optional_child("async_scheduling");
  if (!a) return;
  if (a->has("plain")) engine.async_plain = a->boolean("plain");
  if (a->has("speculative")) engine.async_speculative = a->boolean("speculative");
  // Both are known keys, so that a typo's error lists them whichever was given.
  a->ignore("plain");
  a->ignore("speculative");
  a->finish();
}

// `engine:` its name and launch modes; every key has a default, so the block may be left out.
// Each key's problem is recorded on its own; false when the name could not be read.
bool read_engine(YamlReader& r, Scenario& s, Problems& problems) {
  auto e = r.optional_child("engine");
  if (!e) return true;
  const bool name_ok = problems.run([&] { s.engine.name = e->optional_string("name", "sglang"); });
  problems.run([&] { s.engine.decode_mode = read_engine_mode(*e, "decode_mode"); });
  problems.run([&] { s.engine.verify_mode = read_engine_mode(*e, "verify_mode"); });
  problems.run([&] { s.engine.draft_mode = read_engine_mode(*e, "draft_mode"); });
  problems.run([&] { s.engine.extend_yields_first_draft = e->optional_boolean("extend_yields_first_draft", true); });
  problems.run([&] {
    if (e->has("embedding_allreduce")) s.engine.embedding_allreduce = e->boolean("embedding_allreduce");
  });
  problems.run([&] {
    if (e->has("memory_fraction")) s.engine.memory_fraction = bounded_number(*e, "engine.memory_fraction");
  });
  problems.run([&] { read_async_scheduling(*e, s.engine); });
  problems.run([&] {
    if (e->has("cuda_graph_max_batch")) {
      s.engine.cuda_graph_max_batch = static_cast<int>(bounded_integer(*e, "engine.cuda_graph_max_batch"));
    }
  });
  problems.run([&] { s.engine.spec_version = e->optional_choice("spec_version", {"v1", "v2"}, ""); });
  problems.run([&] {
    const std::string backend = e->optional_string("moe_backend", "");
    if (backend != moe_backend_name(backend)) {
      e->fail("moe_backend", "'" + backend + "': write it as vLLM normalises it, '" + moe_backend_name(backend) + "'");
    }
    s.engine.moe_backend = backend == "auto" ? "" : backend;
  });
  problems.run([&] {
    // "auto" (the default) caches in the model's activation dtype, as the engines' own "auto" does.
    const std::string kv = e->optional_choice("kv_cache_dtype", kv_cache_dtype_names(), "auto");
    if (kv != "auto") s.engine.kv_cache_dtype = parse_dtype(kv);
  });
  e->ignore("embedding_allreduce");
  e->finish();
  return name_ok;
}

// The engine's behaviour (its file's `behaviour:`), whatever the method: read with the engine's
// name, before the rules that depend on it (parallel drafting, the custom all-reduce's notes).
void read_engine_file_behaviour(Scenario& s, const DataDir& data) {
  const auto engines = data.names(DataKind::kEngine);
  if (std::find(engines.begin(), engines.end(), s.engine.name) == engines.end()) return;
  s.engine.behaviour = load_engine_prior(data.resolve(DataKind::kEngine, s.engine.name)).behaviour;
}

// `speculation:` the draft's shape, without the unknown-key check (the method is read with the
// draft). A chain verifies num_steps + 1: SGLang forces num_draft_tokens = num_steps + 1 when
// topk == 1 (docs/references/specdec.md#sglang-flags); so does specsim, which keeps
// `--set speculation.num_steps=N` meaningful on a chain. Throws at the key, file:line or `--set`,
// when the tree cannot be drafted (draft_shape_problems).
DraftShape read_shape(YamlReader& sp) {
  DraftShape shape;
  shape.num_steps = static_cast<int>(bounded_integer(sp, "speculation.num_steps"));
  shape.eagle_topk = static_cast<int>(bounded_integer(sp, "speculation.eagle_topk", 1));
  const int chain_tokens = shape.num_steps + 1;
  shape.num_draft_tokens = static_cast<int>(bounded_integer(sp, "speculation.num_draft_tokens", chain_tokens));
  if (shape.eagle_topk == 1) shape.num_draft_tokens = chain_tokens;
  return shape;
}

// `speculation.parallel_drafting`: block drafting (speculation_problems says where it runs).
bool read_parallel_drafting(YamlReader& sp) { return sp.optional_boolean("parallel_drafting", false); }

// A block drafter's shape: `speculation.block_size` tokens verified per cycle as a chain, the first
// the last verified token and the rest drafted (num_steps = block_size - 1); the drafter's trained
// block when the key is left out. SGLang's --speculative-num-draft-tokens (alias
// --speculative-dflash-block-size) is this block; vLLM's num_speculative_tokens is block_size - 1
// (docs/references/specdec.md#dflash). A block larger than the drafter was trained on is noted.
DraftShape read_block_shape(YamlReader& sp, Scenario& s) {
  // A chain's or a tree's keys beside the block: speculation_problems refuses them.
  for (const char* key : {"num_steps", "eagle_topk", "num_draft_tokens"}) sp.ignore(key);
  const int trained = s.draft.dflash ? s.draft.dflash->block_size : 0;
  if (!sp.has("block_size") && trained == 0) sp.fail("block_size", "required: the drafter's block was not read");
  const int block = static_cast<int>(sp.has("block_size") ? bounded_integer(sp, "speculation.block_size") : trained);
  if (trained > 0 && block > trained) {
    s.notes.push_back("speculation.block_size " + std::to_string(block) + " is larger than the block '" + s.draft.name +
                      "' was trained on (" + std::to_string(trained) + "): positions past it were never trained");
  }
  DraftShape shape;
  shape.num_steps = block - 1;
  shape.eagle_topk = 1;
  shape.num_draft_tokens = block;
  return shape;
}

void read_speculation_shape(YamlReader& r, Scenario& s) {
  YamlReader sp = r.child("speculation");
  sp.ignore("method");  // read with the draft
  if (s.speculation.drafts_block()) {
    s.speculation.shape = read_block_shape(sp, s);
  } else {
    sp.ignore("block_size");  // a block drafter's key: speculation_problems refuses it here
    s.speculation.shape = read_shape(sp);
  }
  s.speculation.parallel_drafting = read_parallel_drafting(sp);
  sp.finish();
}

// `compute:` a named profile replaces the defaults, then the block's own keys win.
void read_compute_block(YamlReader& r, Scenario& s, const DataDir& data) {
  if (auto c = r.optional_child("compute")) {
    if (c->has("profile")) {
      const std::string name = c->string("profile");
      // calibration/profiles, shared with comm profiles
      s.compute = load_compute_profile(resolve_at(*c, "profile", DataKind::kCommProfile, name, data)).settings;
      s.compute.profile = name;
    }
    c->ignore("profile");
    read_compute_keys(*c, s.compute);
    c->finish();
  }
}

// `comm:` the all-reduce tables and what-if knobs; without the block, the topology's profile.
void read_comm_block(YamlReader& r, Scenario& s) {
  if (auto c = r.optional_child("comm")) {
    s.comm.profile = c->optional_string("profile", s.topology.comm_profile);
    if (c->has("eager_overhead_per_op")) {
      s.comm.eager_overhead_per_op_s = c->quantity_or_calibrate("eager_overhead_per_op", Quantity::kDuration);
    }
    c->ignore("eager_overhead_per_op");
    s.comm.implementation = c->optional_choice("implementation", allreduce_implementation_names(), "nccl");
    s.comm.custom_max_bytes = c->optional_quantity("custom_max_bytes", Quantity::kBytes);
    s.comm.custom_profile = c->optional_string("custom_profile", "");
    s.comm.all_to_all_profile = c->optional_string("all_to_all_profile", "");
    s.comm.all_to_all_latency_s = c->optional_quantity("all_to_all_latency", Quantity::kDuration);
    if (s.comm.all_to_all_latency_s && !(*s.comm.all_to_all_latency_s > 0)) c->fail("all_to_all_latency", "must be > 0");
    s.comm.nccl_version = read_nccl_version(*c, "nccl_version");
    s.comm.nccl_algo = c->optional_choice("nccl_algo", {"auto", "ring", "tree"}, "auto");
    s.comm.nccl_proto = c->optional_choice("nccl_proto", {"auto", "ll", "ll128", "simple"}, "auto");
    if (c->has("nccl_p2p_level") && c->string("nccl_p2p_level") == "node") {
      c->fail("nccl_p2p_level", "'node' is nvidia-smi's class; NCCL has no such level and counts that path as PHB: use phb");
    }
    s.comm.nccl_p2p_level =
        c->optional_choice("nccl_p2p_level", {"auto", "loc", "nvl", "pix", "pxb", "phb", "sys"}, "auto");
    s.comm.min_channels = static_cast<int>(bounded_integer(*c, "comm.min_channels", 0));
    s.comm.max_channels = static_cast<int>(bounded_integer(*c, "comm.max_channels", 0));
    s.comm.scale = bounded_number(*c, "comm.scale", 1.0);
    s.comm.overlap = bounded_number(*c, "comm.overlap", 0.0);
    s.comm.fuse_residual_norm = c->optional_boolean("fuse_residual_norm", false);
    s.comm.rank_scaling = c->optional_choice("rank_scaling", {"off", "nccl", "power"}, "off");
    // A YAML list or comma-separated names, so that `--set comm.rank_profiles=a,b` can patch them.
    s.comm.rank_profiles = c->optional_names("rank_profiles");
    c->finish();
  } else {
    s.comm.profile = s.topology.comm_profile;
  }
}

// engine.spec_version picks the per-cycle prior of that worker version (docs/schema.md#engine);
// "" or the file's default_spec_version keep cycle_overhead. The prior's name says which it holds.
void select_spec_version(EnginePrior& prior, const std::string& version, const YamlReader& r) {
  if (version.empty() || version == prior.default_spec_version) return;
  std::string valid = prior.default_spec_version;
  for (const auto& [name, term] : prior.cycle_overhead_by_version) {
    if (name == version) {
      prior.cycle_overhead = term;
      prior.source += "; spec " + version + " cycle prior";
      return;
    }
    valid += ", " + name;
  }
  r.fail("engine", "spec_version = " + version + ": models/engines/" + prior.name + ".yaml prices " +
                       (valid.empty() ? std::string("no worker versions apart") : "only " + valid));
}

// The engine's speculative overheads: its prior when models/engines has one, unless the scenario
// sets them (read_host, after this, lets the file win).
void apply_engine_prior(Scenario& s, const DataDir& data, const YamlReader& r) {
  const auto engines = data.names(DataKind::kEngine);
  if (std::find(engines.begin(), engines.end(), s.engine.name) != engines.end()) {
    EnginePrior prior = load_engine_prior(data.resolve(DataKind::kEngine, s.engine.name));
    const auto& m = prior.methods;
    if (!m.empty() && std::find(m.begin(), m.end(), s.speculation.method) == m.end()) {
      s.engine_prior_skipped = "models/engines/" + s.engine.name + ".yaml holds evidence for " + join(m) +
                               " only, not " + s.speculation.method;
      return;
    }
    select_spec_version(prior, s.engine.spec_version, r);
    s.engine_prior = std::move(prior);
    s.host.spec_extra_per_cycle_s = s.engine_prior->cycle_overhead.value_s;
    s.host.draft_step_overhead_s = s.engine_prior->draft_step_overhead.value_s;
    if (s.engine_prior->spec_per_request) s.host.spec_per_request_s = s.engine_prior->spec_per_request->value_s;
  } else if (!s.engine.spec_version.empty()) {
    r.fail("engine", "spec_version = " + s.engine.spec_version + ": engine '" + s.engine.name +
                         "' has no file in models/engines, so no worker versions to pick from");
  }
}

// `band:` what the prediction's p10-p90 band draws beyond the priors. `model_error`, a ln sigma,
// replaces models/model-error.yaml's (0: the priors' spread alone); set, it wins over the file.
void read_band(YamlReader& r, Scenario& s) {
  auto b = r.optional_child("band");
  if (!b) return;
  if (b->has("model_error")) {
    ModelError e;  // no rows: the sigma is the scenario's, not the corpus's
    e.sigma = b->number("model_error", 0.0, 1.0);
    e.sigma_below = e.sigma_above = e.sigma;
    e.origin = "set";
    s.model_error = e;
  }
  b->finish();
}

// `host:` host time per plain step and the engine's speculative overheads, when the file sets them.
void read_host(YamlReader& r, Scenario& s) {
  if (auto h = r.optional_child("host")) {
    if (h->has("decode_per_step")) s.host.decode_per_step_s = h->quantity_or_calibrate("decode_per_step", Quantity::kDuration);
    h->ignore("decode_per_step");
    if (auto v = h->optional_quantity("spec_extra_per_cycle", Quantity::kDuration)) s.host.spec_extra_per_cycle_s = *v;
    if (auto v = h->optional_quantity("draft_step_overhead", Quantity::kDuration)) s.host.draft_step_overhead_s = *v;
    if (auto v = h->optional_quantity("spec_per_request", Quantity::kDuration)) s.host.spec_per_request_s = *v;
    if (auto v = h->optional_quantity("ngram_lookup_per_token", Quantity::kDuration)) s.host.ngram_lookup_per_token_s = *v;
    h->finish();
  }
}

// The target, the draft and their roles; false when the target failed (what needs it is then
// skipped). A draft that failed stays an empty TransformerSpec, which no parallel rule refuses.
bool read_models(YamlReader& r, Scenario& s, const DataDir& data, Problems& problems) {
  const bool model_ok = problems.run([&] { s.model = load_named(r, "model", DataKind::kModel, data, load_model); }) &&
                        problems.add_all(target_problems(s, *s.origins));
  // The method says where the draft comes from, so it is read before the draft.
  const bool method_ok = problems.run(
      [&] { s.speculation.method = r.child("speculation").optional_choice("method", kMethods, "eagle3"); });
  const bool draft_ok = model_ok && method_ok &&
                        problems.run([&] { s.draft = read_draft(r, s.model, s.speculation.kind(), data); }) &&
                        problems.add_all(draft_problems(s, *s.origins));
  if (draft_ok) adopt_draft(s);
  if (!draft_ok) r.ignore("draft");
  return model_ok;
}

// The box: the topology, named or inline, and the GPU; the scenario's own `gpu` overrides the
// topology's (what-if: same box, other card).
bool read_box(YamlReader& r, Scenario& s, const DataDir& data, Problems& problems) {
  const bool ok = problems.run([&] {
    if (r.has("topology") && r.node()["topology"].IsMap()) {
      // Written inline (`specsim init` from `nvidia-smi topo -m` output): the keys of a topology file.
      YamlReader t = r.child("topology");
      s.topology = read_topology_keys(t);
    } else {
      s.topology = load_named(r, "topology", DataKind::kTopology, data, load_topology);
    }
  }) && problems.run([&] {
    s.gpu = load_gpu(resolve_at(r, "gpu", DataKind::kGpu, r.optional_string("gpu", s.topology.gpu), data));
  }) && problems.add_all(box_problems(s, *s.origins));
  r.ignore("topology");
  r.ignore("gpu");
  return ok;
}

// Reads a scenario, recording every problem in `problems` rather than stopping at the first. Only
// a document that is not a scenario at all (its header) throws. Blocks that need a failed one
// (parallel needs the target and the box; comm profiles and measurements need parallel) are
// skipped, so no problem is a knock-on of another.
Scenario read_scenario(YamlReader& r, const DataDir& data, Problems& problems) {
  r.expect_header("scenario");
  for (const Error& e : bound_problems(r)) problems.add(e);
  Scenario s;
  s.file = r.file();
  s.origins = std::make_shared<const Origins>(r.origins());
  const Origins& origins = *s.origins;
  {
    std::set<std::string> keys;
    collect_leaf_keys(r.node(), "", keys);
    s.explicit_keys = KeySet(std::move(keys));
  }
  problems.run([&] { s.name = r.string("name"); });
  problems.run([&] { s.description = r.optional_string("description", ""); });
  r.ignore("source");
  problems.run([&] {
    if (auto v = r.optional_child("validation")) s.validation = read_validation_source(*v);
  });
  problems.run([&] { s.interventions = r.optional_string("interventions", ""); });
  const bool model_ok = read_models(r, s, data, problems);
  const bool box_ok = read_box(r, s, data, problems);
  const bool parallel_ok = model_ok && box_ok && problems.run([&] { read_parallel(r, s); }) &&
                           problems.add_all(parallel_problems(s, origins, &s.notes));
  r.ignore("parallel");
  problems.run([&] { read_workload(r, s, problems); });
  bool engine_ok = false;
  problems.run([&] { engine_ok = read_engine(r, s, problems); });
  adopt_kv_cache_dtype(s);  // the models were read before the engine
  if (engine_ok) problems.run([&] { read_engine_file_behaviour(s, data); });
  const bool shape_ok = problems.run([&] { read_speculation_shape(r, s); }) && problems.add_all(speculation_problems(s, origins));
  const bool acceptance_ok = problems.run([&] {
    YamlReader a = r.child("acceptance");
    s.acceptance = read_acceptance(a, shape_ok ? &s.speculation.shape : nullptr);
  });
  if (shape_ok && acceptance_ok) problems.add_all(acceptance_fit_problems(s, origins));
  problems.run([&] { read_compute_block(r, s, data); });
  const bool comm_ok = problems.run([&] { read_comm_block(r, s); });
  if (comm_ok && parallel_ok && problems.run([&] { load_comm_profiles(r, s, data); })) {
    problems.add_all(comm_profile_problems(s, origins));
  }
  if (engine_ok) problems.run([&] { apply_engine_prior(s, data, r); });
  problems.run([&] {
    if (!std::filesystem::exists(model_error_file(data))) return;
    s.model_error = load_model_error(model_error_file(data));
    s.model_error->origin = "models/model-error.yaml";  // as a reader of the repository finds it
  });
  problems.run([&] { read_band(r, s); });
  problems.run([&] { read_host(r, s); });
  problems.add_all(setting_problems(s, origins));
  if (parallel_ok) {
    problems.run([&] {
      if (auto m = r.optional_child("measurements")) s.measurements = read_measurements(*m, s, data);
    });
  }
  r.ignore("measurements");
  problems.run([&] { r.finish(); });
  return s;
}

// The same, throwing every problem at once.
Scenario read_scenario(YamlReader& r, const DataDir& data) {
  Problems problems;
  Scenario s = read_scenario(r, data, problems);
  throw_problems(problems.take());
  return s;
}

// A patch that states the acceptance in one form replaces the file's: the file's other forms are
// dropped before the patches apply (depth_profile too, unless the patch is of `accept`, whose
// profile it keeps). Two forms among the patches stay two, which the reader refuses.
void drop_replaced_acceptance(YAML::Node root, const std::vector<std::string>& patches) {
  const YAML::Node& file = root;  // a const look-up adds no key
  if (!file.IsMap() || !file["acceptance"].IsMap()) return;
  YAML::Node block = root["acceptance"];
  std::set<std::string> patched;
  for (const auto& p : patches) {
    for (const auto form : kAcceptanceForms) {
      if (p.rfind("acceptance." + std::string(form) + "=", 0) == 0) patched.insert(std::string(form));
    }
  }
  if (patched.empty()) return;
  for (const auto form : kAcceptanceForms) {
    if (!patched.count(std::string(form))) block.remove(std::string(form));
  }
  if (!patched.count("accept")) block.remove("depth_profile");
}

// load_scenario's work, with the problems of the file and of its patches in `problems`; a file
// that cannot be found, parsed or is not a scenario throws.
Scenario read_patched_scenario(const std::string& name_or_path, const std::vector<std::string>& patches,
                               const DataDir& data, Problems& problems) {
  const std::string path = data.resolve(DataKind::kScenario, name_or_path);
  YamlReader r = YamlReader::load_file(path);
  if (patches.empty()) return read_scenario(r, data, problems);
  auto origin = std::make_shared<detail::YamlOrigin>();
  origin->file = path;
  YAML::Node root = YAML::Clone(r.node());
  drop_replaced_acceptance(root, patches);
  for (const auto& p : patches) problems.run([&] { detail::apply_patch(root, p, *origin); });
  YamlReader patched(root, origin);
  Scenario s = read_scenario(patched, data, problems);
  for (const auto& [key, where] : origin->patches) s.patched_keys.insert(key);
  if (!problems.empty()) return s;
  // The run as it was measured: the file, with what the patches say about its measurements (a
  // speculative rate given as an input calibrates at the file's own draft setting and batch).
  YAML::Node measured = YAML::Clone(r.node());
  detail::YamlOrigin measured_origin;
  measured_origin.file = path;
  for (const auto& p : patches) {
    if (p.rfind("measurements.", 0) == 0) detail::apply_patch(measured, p, measured_origin);
  }
  YamlReader as_measured(measured, std::make_shared<detail::YamlOrigin>(measured_origin));
  s.as_measured = std::make_shared<const Scenario>(read_scenario(as_measured, data));
  return s;
}

}  // namespace

Scenario load_scenario(const std::string& name_or_path, const std::vector<std::string>& patches,
                       const DataDir& data) {
  Problems problems;
  Scenario s = read_patched_scenario(name_or_path, patches, data, problems);
  throw_problems(problems.take());
  return s;
}

std::vector<Error> scenario_problems(const std::string& name_or_path, const std::vector<std::string>& patches,
                                     const DataDir& data) {
  Problems problems;
  problems.run([&] { (void)read_patched_scenario(name_or_path, patches, data, problems); });
  return problems.take();
}

Scenario load_scenario_text(const std::string& text, const std::string& file_name, const DataDir& data) {
  YamlReader r = YamlReader::load_string(text, file_name);
  return read_scenario(r, data);
}

FieldValue load_field_value(const std::string& key, const std::string& text, const SourceLocation& where,
                            const DataDir& data) {
  FieldValue v = parse_field_value(key, text, where);
  if (!is_file_field(key) || text.empty()) return v;
  auto files = std::make_shared<FieldFiles>();
  try {
    if (key == "model") {
      files->model = load_model(data.resolve(DataKind::kModel, text));
    } else if (key == "draft") {
      files->draft = load_model(data.resolve(DataKind::kModel, text));
    } else if (key == "gpu") {
      files->gpu = load_gpu(data.resolve(DataKind::kGpu, text));
    } else if (key == "topology") {
      // The box, its card and its all-reduce table: what a scenario naming it reads (read_box,
      // read_comm_block) where it states no GPU or table of its own.
      files->topology = load_topology(data.resolve(DataKind::kTopology, text));
      files->gpu = load_gpu(data.resolve(DataKind::kGpu, files->topology->gpu));
      if (!files->topology->comm_profile.empty()) {
        files->profile = load_comm_profile(data.resolve(DataKind::kCommProfile, files->topology->comm_profile));
      }
    } else {
      CommProfile p = load_comm_profile(data.resolve(DataKind::kCommProfile, text));
      if (std::string why = table_kind_problem(p, key.substr(key.find('.') + 1)); !why.empty()) throw Error(why);
      files->profile = std::move(p);
    }
  } catch (const Error& e) {
    throw Error(where, key, e.message());
  }
  v.files = std::move(files);
  return v;
}

}  // namespace specsim
