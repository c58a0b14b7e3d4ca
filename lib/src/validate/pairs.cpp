// Gains between rows of one source (docs/validation.md#pairs): what `rank` is for, checked against
// measured before/after pairs. A pair is two scored rows of a source on the same model, GPU, engine
// and batch that differ in one tuning setting; a ranking is three or more such rows that differ only
// in that setting.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "specsim/interventions.hpp"
#include "specsim/load.hpp"
#include "specsim/monte_carlo.hpp"
#include "specsim/scenario_fields.hpp"
#include "specsim/validate_corpus.hpp"

namespace specsim {

namespace {

std::string shape_of(const ValidationRow& r) {
  return std::to_string(r.num_steps) + "/" + std::to_string(r.eagle_topk) + "/" + std::to_string(r.num_draft_tokens);
}

// The tuning settings a pair may differ in, each as the row's value of it: the draft shape, the
// draft and TP, then one per kind of catalogue intervention (the values of its keys joined).
struct Setting {
  std::string name;
  std::function<std::string(const ValidationRow&)> value;
  bool intervention = false;
  bool plain_too = true;  // a change re-measures the plain run (TP, comm, the decode launch mode)
};

std::vector<Setting> settings_of(const std::vector<InterventionKey>& keys) {
  std::vector<Setting> out = {
      {"draft shape", shape_of, false, false},
      {"draft", [](const ValidationRow& r) { return r.draft; }, false, false},
      {"tp", [](const ValidationRow& r) { return std::to_string(r.tp); }, false, true},
  };
  std::map<std::string, std::vector<const InterventionKey*>> kinds;
  for (const InterventionKey& k : keys) kinds[k.kind].push_back(&k);
  for (const auto& entry : kinds) {
    const std::string& kind = entry.first;
    const std::vector<const InterventionKey*>& members = entry.second;  // a named copy: lambdas capture no bindings before clang 16
    bool plain_too = false;
    for (const InterventionKey* k : members) plain_too = plain_too || k->plain_too;
    out.push_back({kind,
                   [members](const ValidationRow& r) {
                     std::string v;
                     for (const InterventionKey* k : members) {
                       const auto it = r.settings.find(k->key);
                       const std::string value = it == r.settings.end() || it->second.empty() ? "default" : it->second;
                       v += (v.empty() ? "" : ",") + value;
                     }
                     return v;
                   },
                   true, plain_too});
  }
  return out;
}

// Everything but `skip` that must match for two rows to form a pair: the box, the model, the
// workload (batch is the workload, not a tuning option: rows at two batches are never paired), every
// other setting, and the plain run they were measured against, so that two datasets of one source
// are never paired (a setting the plain step runs under too re-measures it: there the context is the
// rest alone).
std::string context_of(const ValidationRow& r, const std::vector<Setting>& settings, const Setting* skip) {
  std::string key = r.source.source + "|" + r.model + "|" + r.gpu + "|" + r.engine + "|" + std::to_string(r.batch);
  if (!skip->plain_too) key += "|" + std::to_string(r.measured_plain_tokens_per_s);
  for (const Setting& s : settings) key += "|" + (&s == skip ? std::string("*") : s.value(r));
  return key;
}

OptionRanking ranking_of(const std::vector<const ValidationRow*>& rows, const Setting& setting) {
  OptionRanking k;
  k.source = rows.front()->source.source;
  k.set = rows.front()->set;
  k.setting = setting.name;
  k.intervention = setting.intervention;
  std::vector<double>& predicted = k.predicted;
  std::vector<double>& measured = k.measured;
  for (const ValidationRow* r : rows) {
    k.options.push_back(r->name);
    predicted.push_back(r->predicted_spec_tokens_per_s);
    measured.push_back(r->measured_spec_tokens_per_s);
  }
  k.kendall_tau = kendall_tau(predicted, measured);
  const auto best = [&](const std::vector<double>& v) {
    return rows[std::size_t(std::max_element(v.begin(), v.end()) - v.begin())]->name;
  };
  k.predicted_best = best(predicted);
  k.measured_best = best(measured);
  k.top_pick_right = k.predicted_best == k.measured_best;
  return k;
}

PairSummary summarize(const std::string& group, const std::vector<const GainPair*>& pairs,
                      const std::vector<const OptionRanking*>& rankings) {
  PairSummary s;
  s.group = group;
  s.pairs = int(pairs.size());
  std::vector<double> errors;
  std::set<std::string> sources;
  for (const GainPair* p : pairs) {
    errors.push_back(p->gain_error_points());
    s.sign_right += p->sign_right() ? 1 : 0;
    sources.insert(p->source);
    s.with_band += p->gain_band ? 1 : 0;
    s.called += p->called() ? 1 : 0;
    s.called_right += p->called() && p->sign_right() ? 1 : 0;
    s.in_band += p->band_holds() ? 1 : 0;
  }
  s.median_gain_error_points = median(errors);
  s.sources = int(sources.size());
  s.rankings = int(rankings.size());
  double tau = 0.0;
  for (const OptionRanking* k : rankings) {
    tau += k->kendall_tau;
    s.top_pick_right += k->top_pick_right ? 1 : 0;
  }
  s.mean_kendall_tau = rankings.empty() ? 0.0 : tau / double(rankings.size());
  for (const OptionRanking* k : rankings) {
    if (k->shortlist.empty()) continue;
    ++s.with_shortlist;
    s.shortlist_holds_best += k->shortlist_holds_best ? 1 : 0;
    s.shortlisted_options += int(k->shortlist.size());
    s.shortlist_ranking_options += int(k->options.size());
  }
  return s;
}

}  // namespace

double kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  if (n < 2) return 0.0;
  double concordant = 0.0, discordant = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      const double s = (a[i] - a[j]) * (b[i] - b[j]);
      concordant += s > 0.0 ? 1.0 : 0.0;
      discordant += s < 0.0 ? 1.0 : 0.0;
    }
  }
  return (concordant - discordant) / (double(n) * double(n - 1) / 2.0);
}

namespace {

// The pairs and rankings of one setting: rows alike in everything but it, in file order.
void pairs_of(const std::vector<ValidationRow>& rows, const std::vector<Setting>& settings, const Setting& setting,
              std::vector<GainPair>& pairs, std::vector<OptionRanking>& rankings) {
  std::map<std::string, std::vector<const ValidationRow*>> alike;
  for (const auto& r : rows) {
    if (r.scored()) alike[context_of(r, settings, &setting)].push_back(&r);
  }
  for (const auto& [context, members] : alike) {
    for (std::size_t i = 0; i < members.size(); ++i) {
      for (std::size_t j = i + 1; j < members.size(); ++j) {
        const ValidationRow& a = *members[i];
        const ValidationRow& b = *members[j];
        if (setting.value(a) == setting.value(b)) continue;  // the same configuration measured twice
        pairs.push_back({a.source.source, a.set, setting.name, setting.intervention, a.name, b.name,
                         setting.value(a) + " -> " + setting.value(b),
                         b.measured_spec_tokens_per_s / a.measured_spec_tokens_per_s - 1.0,
                         b.predicted_spec_tokens_per_s / a.predicted_spec_tokens_per_s - 1.0, std::nullopt});
      }
    }
    std::set<std::string> values;
    for (const ValidationRow* r : members) values.insert(setting.value(*r));
    if (values.size() >= 3 && values.size() == members.size()) rankings.push_back(ranking_of(members, setting));
  }
}

// Engine settings named here before any catalogue: the launch modes as one kind, since public pairs
// switch CUDA graphs on or off for every forward at once (--enforce-eager, --disable-cuda-graph) as
// often as for the verify or the draft alone, and async scheduling, which no catalogue tries yet.
const InterventionKey kEngineSettings[] = {
    {"engine.decode_mode", "cuda-graphs", true},
    {"engine.verify_mode", "cuda-graphs", false},
    {"engine.draft_mode", "cuda-graphs", false},
    {"engine.async_scheduling.plain", "async-scheduling", true},
    {"engine.async_scheduling.speculative", "async-scheduling", false},
};

// Keys only the speculative run runs under: a change of one leaves the plain run as it was.
const char* const kSpeculativeOnlyKeys[] = {"engine.verify_mode", "engine.draft_mode", "parallel.draft_tp",
                                            "engine.async_scheduling.speculative"};

// An entry that changes the draft shape or TP pairs as "draft shape" or "tp", not as an intervention.
bool shape_or_tp(const Intervention& iv) {
  return std::any_of(iv.patches.begin(), iv.patches.end(), [](const std::string& p) {
    return p.rfind("speculation.", 0) == 0 || p.rfind("parallel.tp=", 0) == 0 || p.rfind("parallel.pp=", 0) == 0;
  });
}

}  // namespace

std::vector<InterventionKey> intervention_keys(const DataDir& data) {
  std::map<std::string, InterventionKey> by_key;
  for (const InterventionKey& k : kEngineSettings) by_key.emplace(k.key, k);
  // Every catalogue's interventions, then those a box's topology file adds for that box alone.
  std::vector<Intervention> all;
  for (const std::string& name : data.names(DataKind::kInterventions)) {
    const InterventionCatalogue c = load_interventions(data.resolve(DataKind::kInterventions, name));
    all.insert(all.end(), c.interventions.begin(), c.interventions.end());
  }
  for (const std::string& name : data.names(DataKind::kTopology)) {
    const Topology t = load_topology(data.resolve(DataKind::kTopology, name));
    all.insert(all.end(), t.interventions.begin(), t.interventions.end());
  }
  for (const Intervention& iv : all) {
    if (shape_or_tp(iv)) continue;
    for (const std::string& patch : iv.patches) {
      const std::string key = patch.substr(0, patch.find('='));
      const bool plain_too = std::none_of(std::begin(kSpeculativeOnlyKeys), std::end(kSpeculativeOnlyKeys),
                                          [&](const char* k) { return key == k; });
      by_key.emplace(key, InterventionKey{key, iv.group.empty() ? iv.name : iv.group, plain_too});
    }
  }
  std::vector<InterventionKey> out;
  for (auto& [key, k] : by_key) out.push_back(std::move(k));
  return out;
}

std::map<std::string, std::string> row_settings(const Scenario& s, const std::vector<InterventionKey>& keys) {
  std::map<std::string, std::string> out;
  const auto flag = [](const std::optional<bool>& b) { return b ? std::string(*b ? "true" : "false") : std::string(); };
  for (const InterventionKey& k : keys) {
    std::string& value = out[k.key];
    if (!s.explicit_keys.count(k.key)) continue;  // left to its default: ""
    if (is_scenario_field(k.key)) {
      value = field_text(s, k.key);
    } else if (k.key == "engine.async_scheduling.plain") {
      value = flag(s.engine.async_plain);
    } else if (k.key == "engine.async_scheduling.speculative") {
      value = flag(s.engine.async_speculative);
    } else {
      throw Error("internal: the intervention key " + k.key + " is no scenario field, so rows cannot be paired on it "
                  "(a catalogue's patches set fields: scenario_fields.hpp)");
    }
  }
  return out;
}

void derive_pairs(const std::vector<ValidationRow>& rows, const std::vector<InterventionKey>& keys,
                  std::vector<GainPair>& pairs, std::vector<OptionRanking>& rankings,
                  std::vector<PairSummary>& summaries) {
  pairs.clear();
  rankings.clear();
  const std::vector<Setting> settings = settings_of(keys);
  for (const Setting& setting : settings) pairs_of(rows, settings, setting, pairs, rankings);
  summaries = summarize_pairs(pairs, rankings);
}

std::vector<PairSummary> summarize_pairs(const std::vector<GainPair>& pairs, const std::vector<OptionRanking>& rankings) {
  std::vector<PairSummary> summaries;
  // By set, then every set's pairs by family (the draft shape, draft and TP; catalogue interventions).
  const auto in_group = [](const std::string& group, const std::string& set, bool intervention) {
    if (group == "draft/tp") return !intervention;
    if (group == "interventions") return intervention;
    return group == "all" || set == group;
  };
  for (const std::string group : {"check", "fit", "all", "draft/tp", "interventions"}) {
    std::vector<const GainPair*> p;
    std::vector<const OptionRanking*> k;
    for (const auto& x : pairs) {
      if (in_group(group, x.set, x.intervention)) p.push_back(&x);
    }
    for (const auto& x : rankings) {
      if (in_group(group, x.set, x.intervention)) k.push_back(&x);
    }
    summaries.push_back(summarize(group, p, k));
  }
  return summaries;
}

std::optional<GainResidualBand> gain_residual_band(const std::vector<GainPair>& pairs, const std::string& leave_out) {
  // Both ways: a pair's before and after are in file order, so its reverse is as much a pair. Over
  // r and -r, the p90 is the p80 of |r| and the p10 its negative.
  std::vector<double> size;
  for (const auto& p : pairs) {
    if (p.set == "fit" && p.source != leave_out) size.push_back(std::abs(std::log((1.0 + p.measured_gain) / (1.0 + p.predicted_gain))));
  }
  if (int(size.size()) < kMinModelErrorRows) return std::nullopt;
  std::sort(size.begin(), size.end());
  const double q = nearest_rank(size, 0.8);
  return GainResidualBand{int(size.size()), -q, q};
}

void add_gain_bands(std::vector<GainPair>& pairs, std::vector<OptionRanking>& rankings) {
  // One band per source (its own pairs left out), shared by its pairs and rankings.
  std::map<std::string, std::optional<GainResidualBand>> by_source;
  const auto band_of = [&](const std::string& source) -> const std::optional<GainResidualBand>& {
    auto it = by_source.find(source);
    if (it == by_source.end()) it = by_source.emplace(source, gain_residual_band(pairs, source)).first;
    return it->second;
  };
  for (auto& pair : pairs) {
    const auto& band = band_of(pair.source);
    pair.gain_band.reset();
    if (!band) continue;
    pair.gain_band = relative_gain_band(1.0 + pair.predicted_gain, band->p10, band->p90);
  }
  for (auto& k : rankings) {
    k.shortlist.clear();
    k.shortlist_holds_best = false;
    const auto& band = band_of(k.source);
    if (!band || k.predicted.empty()) continue;
    const double pick = *std::max_element(k.predicted.begin(), k.predicted.end());
    for (std::size_t i = 0; i < k.options.size(); ++i) {
      // The option's gain over the pick is within specsim's error on gains.
      if (holds_zero(relative_gain_band(k.predicted[i] / pick, band->p10, band->p90))) k.shortlist.push_back(k.options[i]);
    }
    k.shortlist_holds_best = std::find(k.shortlist.begin(), k.shortlist.end(), k.measured_best) != k.shortlist.end();
  }
}

}  // namespace specsim
