// Gains between rows of one source (docs/validation.md#pairs): what `rank` is for, checked against
// measured before/after pairs. A pair is two scored rows of a source on the same model, GPU, engine
// and batch that differ in one tuning setting; a ranking is three or more such rows that differ only
// in that setting.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "specsim/monte_carlo.hpp"
#include "specsim/validate_corpus.hpp"

namespace specsim {

namespace {

std::string shape_of(const ValidationRow& r) {
  return std::to_string(r.num_steps) + "/" + std::to_string(r.eagle_topk) + "/" + std::to_string(r.num_draft_tokens);
}

// The tuning settings a pair may differ in, each as the row's value of it.
struct Setting {
  const char* name;
  std::string (*value)(const ValidationRow&);
};
constexpr Setting kSettings[] = {
    {"draft shape", [](const ValidationRow& r) { return shape_of(r); }},
    {"draft", [](const ValidationRow& r) { return r.draft; }},
    {"tp", [](const ValidationRow& r) { return std::to_string(r.tp); }},
};

// Everything but `skip` that must match for two rows to form a pair: the box, the model, the
// workload (batch is the workload, not a tuning option: rows at two batches are never paired) and
// the plain run they were measured against, so that two datasets of one source are never paired.
std::string context_of(const ValidationRow& r, const Setting* skip) {
  // (A TP change changes the plain run too: there the context is the rest alone.)
  std::string key = r.source.source + "|" + r.model + "|" + r.gpu + "|" + r.engine + "|" + std::to_string(r.batch);
  if (std::string(skip->name) != "tp") key += "|" + std::to_string(r.measured_plain_tokens_per_s);
  for (const Setting& s : kSettings) key += "|" + (&s == skip ? std::string("*") : s.value(r));
  return key;
}

OptionRanking ranking_of(const std::vector<const ValidationRow*>& rows, const char* setting) {
  OptionRanking k;
  k.source = rows.front()->source.source;
  k.set = rows.front()->set;
  k.setting = setting;
  std::vector<double> predicted, measured;
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

void derive_pairs(const std::vector<ValidationRow>& rows, std::vector<GainPair>& pairs,
                  std::vector<OptionRanking>& rankings, std::vector<PairSummary>& summaries) {
  pairs.clear();
  rankings.clear();
  summaries.clear();
  for (const Setting& setting : kSettings) {
    // Rows alike in everything but this setting, in file order.
    std::map<std::string, std::vector<const ValidationRow*>> alike;
    for (const auto& r : rows) {
      if (r.scored()) alike[context_of(r, &setting)].push_back(&r);
    }
    for (const auto& [context, members] : alike) {
      for (std::size_t i = 0; i < members.size(); ++i) {
        for (std::size_t j = i + 1; j < members.size(); ++j) {
          const ValidationRow& a = *members[i];
          const ValidationRow& b = *members[j];
          if (setting.value(a) == setting.value(b)) continue;  // the same configuration measured twice
          pairs.push_back({a.source.source, a.set, setting.name, a.name, b.name,
                           setting.value(a) + " -> " + setting.value(b),
                           b.measured_spec_tokens_per_s / a.measured_spec_tokens_per_s - 1.0,
                           b.predicted_spec_tokens_per_s / a.predicted_spec_tokens_per_s - 1.0});
        }
      }
      std::set<std::string> values;
      for (const ValidationRow* r : members) values.insert(setting.value(*r));
      if (values.size() >= 3 && values.size() == members.size()) rankings.push_back(ranking_of(members, setting.name));
    }
  }
  for (const std::string group : {"check", "fit", "all"}) {
    std::vector<const GainPair*> p;
    std::vector<const OptionRanking*> k;
    for (const auto& x : pairs) {
      if (group == "all" || x.set == group) p.push_back(&x);
    }
    for (const auto& x : rankings) {
      if (group == "all" || x.set == group) k.push_back(&x);
    }
    summaries.push_back(summarize(group, p, k));
  }
}

}  // namespace specsim
