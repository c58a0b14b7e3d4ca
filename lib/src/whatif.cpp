#include "specsim/whatif.hpp"

#include <boost/math/tools/roots.hpp>

#include <algorithm>

#include "specsim/error.hpp"

namespace specsim {

namespace {
double spec_tokens_per_s(const CycleModel& model, double accept) {
  AcceptanceSettings a = model.scenario().acceptance;
  a.kind = AcceptanceSettings::Kind::kConstant;
  a.accept = accept;
  return model.predict(a).spec_tokens_per_s;
}
}  // namespace

BreakEven breakeven(const CycleModel& model) {
  BreakEven b;
  b.num_steps = model.scenario().speculation.num_steps;
  const Prediction at_one = [&] {
    AcceptanceSettings a = model.scenario().acceptance;
    a.kind = AcceptanceSettings::Kind::kConstant;
    a.accept = 1.0;
    return model.predict(a);
  }();
  const double base = at_one.baseline_tokens_per_s;
  b.tokens_per_cycle = at_one.breakeven_tokens_per_cycle;
  b.speculative_tokens_per_s_at_accept_1 = at_one.spec_tokens_per_s;
  auto gap = [&](double accept) { return spec_tokens_per_s(model, accept) - base; };
  if (gap(1.0) < 0) return b;  // never pays, whatever the drafter
  if (gap(0.0) >= 0) {
    b.accept = 0.0;
    return b;
  }
  boost::uintmax_t iterations = 100;
  const auto [lo, hi] = boost::math::tools::toms748_solve(gap, 0.0, 1.0, boost::math::tools::eps_tolerance<double>(40),
                                                          iterations);
  b.accept = 0.5 * (lo + hi);
  return b;
}

BreakEvenReport breakeven_report(const Scenario& scenario, int max_num_steps) {
  BreakEvenReport r;
  const CycleModel model(scenario);
  r.baseline_tokens_per_s = model.predict().baseline_tokens_per_s;
  r.at_scenario = breakeven(model);
  for (int k = 1; k <= max_num_steps; ++k) {
    Scenario s = scenario;
    s.speculation.num_steps = k;
    if (s.speculation.eagle_topk == 1) s.speculation.num_draft_tokens = k + 1;
    r.by_num_steps.push_back(breakeven(CycleModel(std::move(s))));
  }
  return r;
}

MonteCarloResult monte_carlo(const CycleModel& model, const AcceptanceSettings& acceptance,
                             const MonteCarloOptions& options) {
  const AcceptanceModel m = model.acceptance_model(acceptance);
  // The cycle time depends on the emitted length through the draft extend; tabulate it once.
  const int max_emitted = model.scenario().speculation.num_steps + 1;
  std::vector<double> cycle(max_emitted + 1, 0.0);
  for (int e = 1; e <= max_emitted; ++e) cycle[e] = model.cycle_s(e);
  // Per request: a cycle of the whole batch emits `emitted` tokens for this request, so the
  // simulated tokens/s are per request; callers multiply by the batch for the aggregate.
  return simulate_cycles(m, options, [cycle, max_emitted](int emitted) {
    return cycle[std::clamp(emitted, 1, max_emitted)];
  });
}

}  // namespace specsim

// ---- rank -----------------------------------------------------------------------------------------

namespace specsim {

namespace {

RankedIntervention evaluate(const std::string& scenario, const std::vector<std::string>& base,
                            const Intervention& iv, const DataDir& data, double current_tokens_per_s) {
  RankedIntervention r;
  r.intervention = &iv;
  std::vector<std::string> patches = base;
  patches.insert(patches.end(), iv.patches.begin(), iv.patches.end());
  try {
    for (const Constraint& c : iv.constraints) {
      std::vector<std::string> keys;
      for (const auto& w : c.when) keys.push_back(w.first);
      const auto values = scenario_fields(scenario, patches, keys, data);
      bool all = true;
      for (std::size_t i = 0; i < keys.size(); ++i) all = all && values[i] == c.when[i].second;
      if (all) {
        r.reason = c.reason;
        return r;
      }
    }
    const CycleModel model(load_scenario(scenario, patches, data));
    r.prediction = model.predict();
    r.comm_calibrated = model.calibration().comm_calibrated;
  } catch (const Error& e) {
    r.reason = e.what();
    return r;
  }
  r.feasible = true;
  r.tokens_per_s = r.prediction.spec_tokens_per_s;
  r.gain = r.tokens_per_s - current_tokens_per_s;
  r.gain_per_launch = r.gain / std::max(iv.effort_launches, 0.1);
  return r;
}

}  // namespace

RankReport rank(const std::string& scenario, const std::vector<std::string>& patches,
                const InterventionCatalogue& catalogue, const DataDir& data, int path_steps) {
  RankReport report;
  report.catalogue = catalogue.name;
  const CycleModel current(load_scenario(scenario, patches, data));
  const Prediction now = current.predict();
  report.baseline_tokens_per_s = now.baseline_tokens_per_s;
  report.scenario_tokens_per_s = now.spec_tokens_per_s;
  for (const auto& iv : catalogue.interventions) {
    report.ranked.push_back(evaluate(scenario, patches, iv, data, now.spec_tokens_per_s));
  }
  std::stable_sort(report.ranked.begin(), report.ranked.end(), [](const auto& a, const auto& b) {
    if (a.feasible != b.feasible) return a.feasible;
    return a.gain > b.gain;
  });
  for (const auto& r : report.ranked) {
    if (r.feasible) report.by_gain_per_effort.push_back(&r);
  }
  std::stable_sort(report.by_gain_per_effort.begin(), report.by_gain_per_effort.end(),
                   [](const auto* a, const auto* b) { return a->gain_per_launch > b->gain_per_launch; });

  // The cumulative plan: apply the best, re-rank the rest on top of it.
  std::vector<std::string> applied = patches;
  std::vector<std::string> used_names, used_groups;
  double level = now.spec_tokens_per_s;
  for (int step = 0; step < path_steps; ++step) {
    const RankedIntervention* best = nullptr;
    RankedIntervention best_value;
    for (const auto& iv : catalogue.interventions) {
      if (std::find(used_names.begin(), used_names.end(), iv.name) != used_names.end()) continue;
      if (!iv.group.empty() && std::find(used_groups.begin(), used_groups.end(), iv.group) != used_groups.end()) continue;
      RankedIntervention r = evaluate(scenario, applied, iv, data, level);
      if (r.feasible && r.gain > 0 && (!best || r.gain > best_value.gain)) {
        best_value = r;
        best = &best_value;
      }
    }
    if (!best) break;
    const Intervention& iv = *best_value.intervention;
    applied.insert(applied.end(), iv.patches.begin(), iv.patches.end());
    used_names.push_back(iv.name);
    if (!iv.group.empty()) used_groups.push_back(iv.group);
    report.path.push_back({iv.name, best_value.tokens_per_s, best_value.gain,
                           best_value.prediction.baseline_tokens_per_s, applied});
    level = best_value.tokens_per_s;
  }
  return report;
}

// ---- sweep ----------------------------------------------------------------------------------------

SweepAxis parse_vary(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw Error({"--vary", 0, 0}, text, "expected key=v1,v2,... or key=a..b");
  }
  SweepAxis axis;
  axis.key = text.substr(0, eq);
  const std::string rest = text.substr(eq + 1);
  if (const auto dots = rest.find(".."); dots != std::string::npos) {
    long long a = 0, b = 0;
    std::size_t ua = 0, ub = 0;
    try {
      a = std::stoll(rest.substr(0, dots), &ua);
      b = std::stoll(rest.substr(dots + 2), &ub);
    } catch (const std::exception&) {
      ua = 0;
    }
    if (ua != dots || ub != rest.size() - dots - 2 || b < a || b - a > 100000) {
      throw Error({"--vary", 0, 0}, text, "a range is two integers a..b with a <= b (at most 100001 values)");
    }
    for (long long v = a; v <= b; ++v) axis.values.push_back(std::to_string(v));
  } else {
    std::size_t start = 0;
    while (start <= rest.size()) {
      const auto comma = rest.find(',', start);
      const std::string v = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (v.empty()) throw Error({"--vary", 0, 0}, text, "empty value in the list");
      axis.values.push_back(v);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return axis;
}

namespace {

const std::vector<std::string> kFastKeys = {"speculation.num_steps", "speculation.eagle_topk",
                                            "speculation.num_draft_tokens", "acceptance.accept"};

int parse_int(const std::string& key, const std::string& v) {
  std::size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || x < 0 || x > 100000) throw Error({"--vary", 0, 0}, key, "'" + v + "' is not a count");
  return static_cast<int>(x);
}

// The same draft-shape rules load_scenario applies, for points that skip the loader.
std::string shape_problem(const SpeculationSettings& sp, bool tokens_given) {
  if (sp.num_steps < 1 || sp.num_steps > 64) return "num_steps must be in [1, 64]";
  if (sp.eagle_topk < 1) return "eagle_topk must be >= 1";
  if (sp.eagle_topk == 1) {
    if (tokens_given && sp.num_draft_tokens != sp.num_steps + 1) return "a chain verifies num_steps + 1 tokens";
    return "";
  }
  if (sp.num_draft_tokens < 2) return "num_draft_tokens must be >= 2";
  if (sp.num_draft_tokens > 1 + static_cast<long long>(sp.num_steps) * sp.eagle_topk * sp.eagle_topk) {
    return "more draft tokens than num_steps and eagle_topk can draft";
  }
  return "";
}

}  // namespace

SweepResult sweep(const std::string& scenario, const std::vector<std::string>& patches,
                  const std::vector<SweepAxis>& axes, const DataDir& data, const SweepProgress& progress,
                  const std::atomic<bool>* stop) {
  SweepResult result;
  std::size_t total = 1;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const SweepAxis& a = axes[i];
    if (a.values.empty()) throw Error({"--vary", 0, 0}, a.key, "no values");
    for (std::size_t j = 0; j < i; ++j) {
      if (axes[j].key == a.key) {
        throw Error({"--vary", 0, 0}, a.key, "given on two axes (one --vary per key; list every value in one)");
      }
    }
    result.keys.push_back(a.key);
    total *= a.values.size();
    if (total > 10'000'000) throw Error({"--vary", 0, 0}, a.key, "the grid exceeds 10^7 points");
  }
  result.fast_path = std::all_of(axes.begin(), axes.end(), [](const SweepAxis& a) {
    return std::find(kFastKeys.begin(), kFastKeys.end(), a.key) != kFastKeys.end();
  });
  std::optional<CycleModel> model;
  if (result.fast_path) model.emplace(load_scenario(scenario, patches, data));
  std::vector<std::size_t> index(axes.size(), 0);
  result.points.reserve(total);
  result.total = total;
  std::string first_invalid_key;  // the axis key the first invalid point's error names, if any
  for (std::size_t n = 0; n < total; ++n) {
    if (stop != nullptr && stop->load()) {
      result.interrupted = true;
      break;
    }
    ++result.evaluated;
    std::vector<std::string> values;
    for (std::size_t i = 0; i < axes.size(); ++i) values.push_back(axes[i].values[index[i]]);
    try {
      Prediction p;
      if (result.fast_path) {
        SpeculationSettings sp = model->scenario().speculation;
        AcceptanceSettings acc = model->scenario().acceptance;
        bool tokens_given = false;
        for (std::size_t i = 0; i < axes.size(); ++i) {
          const std::string& k = axes[i].key;
          if (k == "acceptance.accept") {
            double a = 0;
            std::size_t used = 0;
            try {
              a = std::stod(values[i], &used);
            } catch (const std::exception&) {
              used = 0;
            }
            if (used != values[i].size() || !(a >= 0 && a <= 1)) {
              throw Error({"--vary", 0, 0}, k, "'" + values[i] + "' is not an acceptance in [0, 1]");
            }
            acc.kind = AcceptanceSettings::Kind::kConstant;
            acc.accept = a;
          } else if (k == "speculation.num_steps") {
            sp.num_steps = parse_int(k, values[i]);
          } else if (k == "speculation.eagle_topk") {
            sp.eagle_topk = parse_int(k, values[i]);
          } else {
            sp.num_draft_tokens = parse_int(k, values[i]);
            tokens_given = true;
          }
        }
        if (sp.eagle_topk == 1 && !tokens_given) sp.num_draft_tokens = sp.num_steps + 1;
        if (const std::string why = shape_problem(sp, tokens_given); !why.empty()) throw Error(why);
        p = model->predict(sp, acc);
      } else {
        std::vector<std::string> point = patches;
        for (std::size_t i = 0; i < axes.size(); ++i) point.push_back(axes[i].key + "=" + values[i]);
        p = CycleModel(load_scenario(scenario, point, data)).predict();
      }
      result.baseline_tokens_per_s = p.baseline_tokens_per_s;
      result.points.push_back({values, p.spec_tokens_per_s, p.speedup, p.tokens_per_cycle, p.cycle_s});
    } catch (const Error& e) {
      if (e.where().file == "--vary") throw;  // a malformed value, not an invalid combination
      if (result.invalid++ == 0) {
        std::string at;
        for (std::size_t i = 0; i < axes.size(); ++i) at += (i ? " " : "") + axes[i].key + "=" + values[i];
        result.invalid_example = at + ": " + e.what();
        for (const auto& a : axes) {
          if (e.key_path() == a.key) first_invalid_key = a.key;
        }
      }
    }
    for (std::size_t i = axes.size(); i-- > 0;) {  // odometer, last axis fastest
      if (++index[i] < axes[i].values.size()) break;
      index[i] = 0;
    }
    if (progress && (n + 1) % 1024 == 0) progress(n + 1, total);
  }
  if (progress && !result.interrupted) progress(total, total);
  if (result.points.empty() && !result.interrupted) {
    std::string keys;
    for (const auto& a : axes) keys += (keys.empty() ? "" : ", ") + a.key;
    throw Error({"--vary", 0, 0}, first_invalid_key.empty() ? keys : first_invalid_key,
                "none of the " + std::to_string(total) + " points is valid; the first: " + result.invalid_example);
  }
  std::stable_sort(result.points.begin(), result.points.end(),
                   [](const SweepPoint& a, const SweepPoint& b) { return a.tokens_per_s > b.tokens_per_s; });
  return result;
}

}  // namespace specsim
