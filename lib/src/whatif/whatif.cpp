#include "specsim/interventions.hpp"
#include "specsim/whatif.hpp"

#include <boost/math/tools/roots.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "specsim/error.hpp"
#include "specsim/launch_checks.hpp"
#include "specsim/memory_fit.hpp"
#include "specsim/preconditions.hpp"
#include "specsim/scenario_fields.hpp"
#include "specsim/scenario_rules.hpp"

namespace specsim {

namespace {
double spec_tokens_per_s(const CycleModel& model, double accept) {
  return model.predict(with_accept_rate(model.scenario().acceptance, accept)).spec_tokens_per_s;
}
}  // namespace

BreakEven breakeven(const CycleModel& model) {
  BreakEven b;
  b.num_steps = model.scenario().speculation.shape.num_steps;
  const Prediction at_one = model.predict(with_accept_rate(model.scenario().acceptance, 1.0));
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
    s.speculation.shape.num_steps = k;
    if (s.speculation.shape.eagle_topk == 1) s.speculation.shape.num_draft_tokens = k + 1;
    r.by_num_steps.push_back(breakeven(CycleModel(std::move(s))));
  }
  return r;
}

MonteCarloResult monte_carlo(const CycleModel& model, const Acceptance& acceptance,
                             const MonteCarloOptions& options) {
  const DraftShape& shape = model.scenario().speculation.shape;
  // The cycle time depends on the emitted length through the draft extend; tabulate it once.
  const int max_emitted = shape.num_steps + 1;
  std::vector<double> cycle(max_emitted + 1, 0.0);
  for (int e = 1; e <= max_emitted; ++e) cycle[e] = model.cycle_s(e);
  // Per request: a cycle of the whole batch emits `emitted` tokens for this request, so the
  // simulated tokens/s are per request; callers multiply by the batch for the aggregate.
  return simulate_cycles(acceptance, shape, options, [cycle, max_emitted](int emitted) {
    return cycle[std::clamp(emitted, 1, max_emitted)];
  });
}

}  // namespace specsim

// ---- rank -----------------------------------------------------------------------------------------

namespace specsim {

namespace {

// An intervention as offered on this box, with its patches read as values, tables included, here,
// once (the catalogue's reader refuses a key that is no field). A value a field refuses is kept in
// `invalid`, reported with whatever else the rest of the patches break.
struct Offer {
  Intervention iv;
  std::vector<FieldValue> fields;
  std::vector<Error> invalid;
};

void read_patches(Offer& o, const DataDir& data) {
  for (const std::string& p : o.iv.patches) {
    const auto eq = p.find('=');
    const bool scale = eq != std::string::npos && eq > 0 && p[eq - 1] == '*';
    const std::string key = p.substr(0, scale ? eq - 1 : eq);
    const SourceLocation where{"--set " + p, 0, 0};
    try {
      o.fields.push_back(scale ? parse_field_scale(key, p.substr(eq + 1), where)
                               : load_field_value(key, eq == std::string::npos ? "" : p.substr(eq + 1), where, data));
    } catch (const Error& e) {
      o.invalid.push_back(e);
    }
  }
}

// The catalogue's interventions and then the box's own (its topology file), texts written for the
// box; a box entry of a name the catalogue has already is left to the catalogue's.
std::vector<Offer> offers(const InterventionCatalogue& catalogue, const Scenario& s, const DataDir& data) {
  std::vector<Offer> out;
  const auto add = [&](Intervention iv) {
    for (const Offer& o : out) {
      if (o.iv.name == iv.name) return;
    }
    iv.description = for_box(iv.description, s);
    iv.risk = for_box(iv.risk, s);
    for (Constraint& c : iv.constraints) c.reason = for_box(c.reason, s);
    Offer& o = out.emplace_back();
    o.iv = std::move(iv);
    read_patches(o, data);
  };
  for (const Intervention& iv : catalogue.interventions) add(iv);
  for (const Intervention& iv : s.topology.interventions) add(iv);
  return out;
}

// One point of the plan: the scenario with the interventions applied so far, and those patches.
struct RankState {
  Scenario scenario;
  std::vector<std::string> patches;  // the user's, then each applied intervention's
  // Every applied intervention was set on values and none set a key calibration reads: the base's
  // calibration holds here.
  bool shares_calibration = true;
  std::vector<LaunchProblem> problems;
};

class Ranker {
 public:
  Ranker(const Scenario& loaded, const std::vector<std::string>& patches) {
    base_.scenario = loaded;
    base_.patches = patches;
    base_.problems = launch_problems(base_.scenario);
    measured_ = base_.scenario.as_measured ? base_.scenario.as_measured
                                           : std::make_shared<const Scenario>(base_.scenario);
    calibration_ = calibrate(base_.scenario);
  }

  [[nodiscard]] const RankState& base() const { return base_; }
  [[nodiscard]] const Calibration& calibration() const { return calibration_; }

  // Whether `o` is offered at `state`: its preconditions hold there and its patches change something.
  [[nodiscard]] static bool offered(const Offer& o, const RankState& state) {
    if (!holds(o.iv.when, state.scenario)) return false;
    if (!o.invalid.empty()) return true;  // offered, to say why it cannot run
    return !std::all_of(o.fields.begin(), o.fields.end(), [&](const FieldValue& f) { return field_holds(state.scenario, f); });
  }

  // `state` with `o` applied on its value: no file is read.
  [[nodiscard]] RankState applied(const RankState& state, const Offer& o) const {
    RankState next;
    next.patches = state.patches;
    next.patches.insert(next.patches.end(), o.iv.patches.begin(), o.iv.patches.end());
    next.shares_calibration = state.shares_calibration &&
                              std::none_of(o.fields.begin(), o.fields.end(),
                                           [](const FieldValue& f) { return field_affects_calibration(field_key(f)); });
    next.scenario = state.scenario;
    if (!next.scenario.as_measured) next.scenario.as_measured = measured_;
    std::vector<Error> problems = o.invalid;
    for (const FieldValue& f : o.fields) {
      try {
        set_field(next.scenario, f);
      } catch (const Error& e) {
        problems.push_back(e);
      }
    }
    for (Error& e : what_if_problems(next.scenario)) problems.push_back(std::move(e));
    throw_problems(std::move(problems));
    next.problems = launch_problems(next.scenario);
    return next;
  }

  [[nodiscard]] RankedIntervention evaluate(const RankState& state, const Offer& o, double current) const;

 private:
  RankState base_;
  std::shared_ptr<const Scenario> measured_;
  Calibration calibration_;  // the base's: what every value-patched point shares
};

// Why the launch of `next` fails where `state`'s did not (a launch check, launch_checks.hpp); "".
std::string new_launch_failure(const RankState& state, const RankState& next) {
  for (const LaunchProblem& p : next.problems) {
    if (!p.fails) continue;
    const bool before = std::any_of(state.problems.begin(), state.problems.end(), [&](const LaunchProblem& q) {
      return q.check == p.check && q.setting == p.setting;
    });
    if (!before) return describe(p);
  }
  return "";
}

RankedIntervention Ranker::evaluate(const RankState& state, const Offer& o, double current) const {
  RankedIntervention r;
  r.intervention = o.iv;
  try {
    RankState next = applied(state, o);
    const Scenario& s = next.scenario;
    for (const Constraint& c : o.iv.constraints) {
      if (holds(c.when, s)) {
        r.reason = c.reason;
        return r;
      }
    }
    if (r.reason = new_launch_failure(state, next); !r.reason.empty()) return r;
    if (const MemoryFit fit = memory_fit(s); !fit.fits()) {
      r.reason = describe_overflow(s, fit);
      return r;
    }
    // A value patch leaves calibration as it was unless it sets a calibrated key.
    const CycleModel model = next.shares_calibration ? CycleModel(std::move(next.scenario), calibration_)
                                                     : CycleModel(std::move(next.scenario));
    r.prediction = model.predict();
    // A deployment with no collective (TP1, one-rank draft) has no all-reduce to call uncalibrated.
    r.comm_calibrated = model.calibration().comm_calibrated || !runs_collectives(model.scenario());
  } catch (const Error& e) {
    r.reason = e.what();
    return r;
  }
  r.feasible = true;
  r.tokens_per_s = r.prediction.spec_tokens_per_s;
  r.gain = r.tokens_per_s - current;
  r.gain_per_launch = r.gain / o.iv.effort_launches;  // > 0: load_interventions refuses 0
  return r;
}

// Each gain's band: the measured/predicted ratio of gains on the fit set's pairs applied to this
// one's ratio (docs/validation.md#pairs). Those pairs are K sweeps and draft changes; a catalogue
// change of another kind borrows their spread, which the origin says. Then the options the top pick
// does not lead beyond that spread; `report.ranked` is sorted, best first.
void add_gain_bands(const Scenario& s, double now, RankReport& report) {
  const auto& e = s.model_error;
  if (!e || e->gain_pairs == 0) return;
  report.gain_band_origin = "specsim's error on " + std::to_string(e->gain_pairs) +
                            " measured gains of the validation fit set (K sweeps and draft changes; " + e->origin + ")";
  for (auto& r : report.ranked) {
    if (!r.feasible || !(now > 0)) continue;
    const auto band = relative_gain_band(r.tokens_per_s / now, e->gain_residual_p10, e->gain_residual_p90);
    r.gain_band = std::pair{now * band.first, now * band.second};
  }
  // Which to try first: the options the top pick does not lead beyond the same error.
  if (report.ranked.empty() || !report.ranked.front().feasible) return;
  const RankedIntervention& top = report.ranked.front();
  for (std::size_t i = 1; i < report.ranked.size(); ++i) {
    const RankedIntervention& r = report.ranked[i];
    if (!r.feasible || !(r.tokens_per_s > 0)) continue;
    const double lead = top.tokens_per_s / r.tokens_per_s;
    if (holds_zero(relative_gain_band(lead, e->gain_residual_p10, e->gain_residual_p90))) {
      report.too_close_to_top.push_back(r.intervention.name);
    }
  }
}

// The cumulative plan: apply the best, re-rank the rest on top of it (each offered where its
// preconditions hold on the plan so far), at most one intervention per group.
void plan(const Ranker& ranker, const std::vector<Offer>& all, double now, RankReport& report) {
  RankState state = ranker.base();
  std::vector<std::string> used_names, used_groups;
  double level = now;
  for (int step = 0; step < report.path_steps; ++step) {
    const Offer* best = nullptr;
    RankedIntervention best_value;
    for (const Offer& o : all) {
      if (std::find(used_names.begin(), used_names.end(), o.iv.name) != used_names.end()) continue;
      if (!o.iv.group.empty() && std::find(used_groups.begin(), used_groups.end(), o.iv.group) != used_groups.end()) continue;
      if (!Ranker::offered(o, state)) continue;
      RankedIntervention r = ranker.evaluate(state, o, level);
      if (r.feasible && r.gain > 0 && (!best || r.gain > best_value.gain)) {
        best_value = std::move(r);
        best = &o;
      }
    }
    if (!best) break;
    state = ranker.applied(state, *best);
    used_names.push_back(best->iv.name);
    if (!best->iv.group.empty()) used_groups.push_back(best->iv.group);
    report.path.push_back({best->iv.name, best_value.tokens_per_s, best_value.gain,
                           best_value.prediction.baseline_tokens_per_s, state.patches});
    level = best_value.tokens_per_s;
  }
}

}  // namespace

InterventionCatalogue rank_catalogue(const Scenario& s, const std::string& priorities, const DataDir& data) {
  if (!priorities.empty()) return load_interventions(priorities);
  return load_interventions(data.resolve(DataKind::kInterventions, s.interventions.empty() ? kDefaultCatalogue : s.interventions));
}

RankReport rank(const std::string& scenario, const std::vector<std::string>& patches,
                const InterventionCatalogue& catalogue, const DataDir& data, int path_steps) {
  return rank(load_scenario(scenario, patches, data), patches, catalogue, data, path_steps);
}

RankReport rank(const Scenario& loaded, const std::vector<std::string>& patches,
                const InterventionCatalogue& catalogue, const DataDir& data, int path_steps) {
  RankReport report;
  report.path_steps = path_steps;
  const Ranker ranker(loaded, patches);
  const Scenario& base = ranker.base().scenario;
  report.catalogue = catalogue.name + (base.topology.interventions.empty() ? "" : " + " + base.topology.name);
  if (const MemoryFit fit = memory_fit(base); !fit.fits()) report.scenario_infeasible = describe_overflow(base, fit);
  const CycleModel now_model(base, ranker.calibration());
  const Prediction now = now_model.predict();
  report.baseline_tokens_per_s = now.baseline_tokens_per_s;
  report.scenario_tokens_per_s = now.spec_tokens_per_s;
  const PredictionBand now_band = prediction_band(now_model, now);
  report.scenario_p10_tokens_per_s = now_band.p10_tokens_per_s;
  report.scenario_p90_tokens_per_s = now_band.p90_tokens_per_s;
  report.scenario_call = speculation_call(now_band, now.spec_tokens_per_s, now.baseline_tokens_per_s);
  const std::vector<Offer> all = offers(catalogue, base, data);
  for (const Offer& o : all) {
    if (Ranker::offered(o, ranker.base())) {
      report.ranked.push_back(ranker.evaluate(ranker.base(), o, now.spec_tokens_per_s));
    } else {
      report.not_offered.push_back(o.iv.name);
    }
  }
  std::stable_sort(report.ranked.begin(), report.ranked.end(), [](const auto& a, const auto& b) {
    if (a.feasible != b.feasible) return a.feasible;
    return a.gain > b.gain;
  });
  add_gain_bands(base, now.spec_tokens_per_s, report);  // after the sort: it compares each with the top pick
  for (const auto& r : report.ranked) {
    if (r.feasible) report.by_gain_per_effort.push_back(&r);
  }
  std::stable_sort(report.by_gain_per_effort.begin(), report.by_gain_per_effort.end(),
                   [](const auto* a, const auto* b) { return a->gain_per_launch > b->gain_per_launch; });
  plan(ranker, all, now.spec_tokens_per_s, report);
  return report;
}

// ---- sweep ----------------------------------------------------------------------------------------

namespace {

// "lo..hi:N": N values evenly spaced from lo to hi inclusive, each with the unit both ends carry
// ("0.5..0.9:5", "1us..10us:10"): a long numeric axis without a long command line.
std::vector<std::string> spaced_values(const std::string& text, const std::string& lo_text, const std::string& rest) {
  const auto colon = rest.find(':');
  const auto split = [](const std::string& t, double& v) -> std::string {
    std::size_t used = 0;
    try {
      v = std::stod(t, &used);
    } catch (const std::exception&) {
      return "\n";  // no number: never a unit
    }
    return t.substr(used);
  };
  double lo = 0, hi = 0;
  const std::string unit = split(lo_text, lo);
  const std::string hi_unit = split(rest.substr(0, colon), hi);
  long long n = 0;
  std::size_t used = 0;
  try {
    n = std::stoll(rest.substr(colon + 1), &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (unit == "\n" || unit != hi_unit || !std::isfinite(lo) || !std::isfinite(hi) || hi < lo || used == 0 ||
      used != rest.size() - colon - 1 || n < 2 || n > 10'000'000) {
    throw Error({"--vary", 0, 0}, text,
                "a spaced range is lo..hi:N, lo <= hi with the same unit, 2 <= N <= 10^7 (e.g. 0.5..0.9:5, 1us..10us:10)");
  }
  std::vector<std::string> values;
  char buf[64];
  for (long long i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%.9g", lo + (hi - lo) * double(i) / double(n - 1));
    values.push_back(buf + unit);
  }
  return values;
}

}  // namespace

SweepAxis parse_vary(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw Error({"--vary", 0, 0}, text, "expected key=v1,v2,... or key=a..b");
  }
  SweepAxis axis;
  axis.key = text.substr(0, eq);
  const std::string rest = text.substr(eq + 1);
  if (const auto dots = rest.find(".."); dots != std::string::npos && rest.find(':', dots) != std::string::npos) {
    axis.values = spaced_values(text, rest.substr(0, dots), rest.substr(dots + 2));
  } else if (dots != std::string::npos) {
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

// One grid point: the loaded scenario with the axis values set on a copy (what-if on values), or
// loaded again with them as `--set` patches when an axis names a key only the loader reads.
class PointEvaluator {
 public:
  PointEvaluator(const std::string& scenario, const std::vector<std::string>& patches,
                 const std::vector<SweepAxis>& axes, const DataDir& data)
      : scenario_(scenario), patches_(patches), axes_(axes), data_(data) {
    on_values_ = std::all_of(axes.begin(), axes.end(), [](const SweepAxis& a) { return is_scenario_field(a.key); });
    if (!on_values_) {
      reject_unknown_keys();
      return;
    }
    // Each value is parsed once, before the grid: a malformed one is an error of the option, and
    // every malformed value of every axis is reported together.
    std::vector<Error> problems;
    for (const auto& a : axes) {
      auto& parsed = values_.emplace_back();
      for (const auto& v : a.values) {
        try {
          parsed.push_back(load_field_value(a.key, v, {"--vary", 0, 0}, data));
        } catch (const Error& e) {
          problems.push_back(e);
        }
      }
    }
    throw_problems(std::move(problems));
    base_.emplace(load_scenario(scenario, patches, data));
    measured_ = base_->as_measured ? base_->as_measured : std::make_shared<const Scenario>(*base_);
    // Calibration reads the scenario as measured and the calibrated keys: when no axis sets one,
    // every point shares the base's.
    const bool shared = std::none_of(axes.begin(), axes.end(), [](const SweepAxis& a) { return field_affects_calibration(a.key); });
    if (shared) {
      calibration_ = calibrate(*base_);
    } else {
      // What each point's set value is shown beside: the calibration with no calibrated key set.
      Scenario plain = *base_;
      for (const auto& a : axes) plain.patched_keys.erase(a.key);
      for (const auto& key : base_->patched_keys) {
        if (field_affects_calibration(key)) plain.patched_keys.erase(key);
      }
      without_overrides_ = calibrate(plain);
    }
  }

  [[nodiscard]] bool on_values() const { return on_values_; }

  // The point's prediction, or empty with `infeasible` saying why the deployment cannot run there
  // (it does not fit in memory).
  std::optional<Prediction> operator()(const std::vector<std::size_t>& index, std::string& infeasible) const {
    if (!on_values_) {
      std::vector<std::string> point = patches_;
      for (std::size_t i = 0; i < axes_.size(); ++i) point.push_back(axes_[i].key + "=" + axes_[i].values[index[i]]);
      Scenario s = load_scenario(scenario_, point, data_);
      if (!fits(s, infeasible)) return std::nullopt;
      return CycleModel(std::move(s)).predict();
    }
    Scenario s = *base_;
    s.as_measured = measured_;
    for (std::size_t i = 0; i < axes_.size(); ++i) set_field(s, values_[i][index[i]]);
    throw_problems(what_if_problems(s));
    if (!fits(s, infeasible)) return std::nullopt;
    if (calibration_) return CycleModel(std::move(s), *calibration_).predict();
    const Calibration calibration = calibrate(s, &*without_overrides_);
    return CycleModel(std::move(s), calibration).predict();
  }

 private:
  static bool fits(const Scenario& s, std::string& infeasible) {
    const MemoryFit fit = memory_fit(s);
    if (!fit.fits()) infeasible = describe_overflow(s, fit);
    return fit.fits();
  }

  // A key the loader does not know fails every point alike: say so before the grid runs.
  void reject_unknown_keys() const {
    for (const auto& a : axes_) {
      if (is_scenario_field(a.key)) continue;
      std::vector<std::string> point = patches_;
      point.push_back(a.key + "=" + a.values.front());
      try {
        (void)load_scenario(scenario_, point, data_);
      } catch (const Error& e) {
        if (e.key_path() == a.key && std::string(e.what()).find("unknown key") != std::string::npos) {
          throw Error({"--vary", 0, 0}, a.key, e.message());
        }
      }
    }
  }

  const std::string& scenario_;
  const std::vector<std::string>& patches_;
  const std::vector<SweepAxis>& axes_;
  const DataDir& data_;
  bool on_values_ = false;
  std::vector<std::vector<FieldValue>> values_;  // per axis, per value
  std::optional<Scenario> base_;
  std::shared_ptr<const Scenario> measured_;
  std::optional<Calibration> calibration_;         // shared by every point
  std::optional<Calibration> without_overrides_;  // an axis is a calibrated key: per point, beside this
};

}  // namespace

namespace {

// A point's figures and its place in the grid; its axis values are read off the axes at the end.
struct GridPoint {
  std::size_t n = 0;
  double tokens_per_s = 0.0;
  double speedup = 0.0;
  double tokens_per_cycle = 0.0;
  double cycle_s = 0.0;
  double baseline_tokens_per_s = 0.0;
};

// Faster first; equal rates in grid order (what a stable sort of the whole grid gives).
bool better(const GridPoint& a, const GridPoint& b) {
  return a.tokens_per_s != b.tokens_per_s ? a.tokens_per_s > b.tokens_per_s : a.n < b.n;
}

// What one worker keeps of the points it evaluated (issue 36): counts over all of them, the `keep`
// best feasible ones, its first `keep` infeasible ones and its first invalid one. Its size is bounded
// by `keep`, not by the grid, so a 10^7-point grid shown as a top 3 needs no memory per point.
// Each worker takes blocks in grid order, so "first" within a worker is the lowest grid index.
struct GridTally {
  std::size_t keep = 0;
  std::size_t evaluated = 0;
  std::size_t infeasible = 0;
  std::size_t invalid = 0;
  std::vector<GridPoint> best;  // a heap by better(), the worst on top; at most `keep`
  std::vector<std::pair<std::size_t, std::string>> first_infeasible;  // grid order; at most `keep`
  std::optional<std::size_t> first_invalid;  // grid index
  std::string invalid_message, invalid_key;
  std::optional<GridPoint> last;  // the feasible point latest in grid order
  double plain_low = 0.0, plain_high = 0.0;  // plain tokens/s over feasible points (when `last` is set)

  void add(const GridPoint& p) {
    ++evaluated;
    plain_low = last ? std::min(plain_low, p.baseline_tokens_per_s) : p.baseline_tokens_per_s;
    plain_high = last ? std::max(plain_high, p.baseline_tokens_per_s) : p.baseline_tokens_per_s;
    if (!last || p.n > last->n) last = p;
    keep_best(p);
  }
  void keep_best(const GridPoint& p) {
    if (keep == 0) return;
    best.push_back(p);
    std::push_heap(best.begin(), best.end(), better);
    if (best.size() > keep) {
      std::pop_heap(best.begin(), best.end(), better);
      best.pop_back();
    }
  }
  void add_infeasible(std::size_t n, std::string why) {
    ++evaluated;
    ++infeasible;
    if (first_infeasible.size() < keep) first_infeasible.emplace_back(n, std::move(why));
  }
  void add_invalid(std::size_t n, const Error& e) {
    ++evaluated;
    ++invalid;
    if (first_invalid && *first_invalid < n) return;
    first_invalid = n;
    invalid_message = e.what();
    invalid_key = e.key_path();
  }
  // `other`'s points into this one, as if one worker had evaluated both.
  void merge(GridTally& other) {
    for (const auto& p : other.best) keep_best(p);
    if (other.last) {
      plain_low = last ? std::min(plain_low, other.plain_low) : other.plain_low;
      plain_high = last ? std::max(plain_high, other.plain_high) : other.plain_high;
      if (!last || other.last->n > last->n) last = other.last;
    }
    evaluated += other.evaluated;
    infeasible += other.infeasible;
    invalid += other.invalid;
    for (auto& f : other.first_infeasible) first_infeasible.push_back(std::move(f));
    std::sort(first_infeasible.begin(), first_infeasible.end());
    if (first_infeasible.size() > keep) first_infeasible.resize(keep);
    if (other.first_invalid && (!first_invalid || *other.first_invalid < *first_invalid)) {
      first_invalid = other.first_invalid;
      invalid_message = std::move(other.invalid_message);
      invalid_key = std::move(other.invalid_key);
    }
  }
};

struct GridRun {
  GridTally tally;  // every worker's, merged
  bool interrupted = false;
};

}  // namespace

// The number of grid points; empty, repeated and list-valued axes are refused first.
std::size_t grid_size(const std::vector<SweepAxis>& axes) {
  std::size_t total = 1;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const SweepAxis& a = axes[i];
    if (a.values.empty()) throw Error({"--vary", 0, 0}, a.key, "no values");
    // Levels are a list that turns sweep into one grid per level (concurrency.hpp), not one value.
    if (a.key == "workload.concurrency") {
      throw Error({"--vary", 0, 0}, a.key, "not an axis: give the levels with --concurrency c1,c2,...");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (axes[j].key == a.key) {
        throw Error({"--vary", 0, 0}, a.key, "given on two axes (one --vary per key; list every value in one)");
      }
    }
    total *= a.values.size();
    if (total > kMaxSweepPoints) throw Error({"--vary", 0, 0}, a.key, "the grid exceeds 10^7 points");
  }
  return total;
}

namespace {

// Point n's value index on each axis: an odometer, last axis fastest.
void grid_index(std::size_t n, const std::vector<SweepAxis>& axes, std::vector<std::size_t>& index) {
  for (std::size_t i = axes.size(), rest = n; i-- > 0; rest /= axes[i].values.size()) {
    index[i] = rest % axes[i].values.size();
  }
}

// The values of the point at `index`, one per axis.
std::vector<std::string> values_at(const std::vector<std::size_t>& index, const std::vector<SweepAxis>& axes) {
  std::vector<std::string> values;
  for (std::size_t i = 0; i < axes.size(); ++i) values.push_back(axes[i].values[index[i]]);
  return values;
}

// Point n into the worker's tally: its figures, why it cannot run, or why it is invalid. With
// `streamed`, a point that is not invalid is also appended there, for the sink.
void evaluate_point(const PointEvaluator& evaluate, std::size_t n, const std::vector<std::size_t>& index,
                    const std::vector<SweepAxis>& axes, GridTally& tally, std::vector<SweepPoint>* streamed) {
  try {
    std::string infeasible;
    if (const auto p = evaluate(index, infeasible)) {
      tally.add({n, p->spec_tokens_per_s, p->speedup, p->tokens_per_cycle, p->cycle_s, p->baseline_tokens_per_s});
      if (streamed) {
        streamed->push_back(SweepPoint{values_at(index, axes), p->spec_tokens_per_s, p->speedup, p->tokens_per_cycle,
                                       p->cycle_s, p->baseline_tokens_per_s, {}});
      }
    } else {
      if (streamed) {
        SweepPoint point;
        point.values = values_at(index, axes);
        point.infeasible = infeasible;
        streamed->push_back(std::move(point));
      }
      tally.add_infeasible(n, std::move(infeasible));
    }
  } catch (const Error& e) {
    tally.add_invalid(n, e);
  }
}

// Hands the points to the sink in grid order while the workers finish their blocks out of order: a
// finished block waits here until every block before it is handed on. A worker more than
// kMaxBlocksAhead blocks ahead of the first unfinished one waits before it starts the next, so what
// waits is bounded by blocks, not by the grid. The sink runs under the lock, one block at a time.
class OrderedSink {
 public:
  OrderedSink(const SweepSink& sink, std::size_t block) : sink_(sink), block_(block) {}

  // Before the block at `start`: waits while it runs too far ahead, unless the run is stopping.
  void wait_turn(std::size_t start, const std::function<bool()>& stopping) {
    std::unique_lock lock(mutex_);
    while (start >= next_ + kMaxBlocksAhead * block_ && !stopping()) {
      // Also woken by time: a SIGINT sets `stopping` from a handler, which cannot notify.
      turn_.wait_for(lock, std::chrono::milliseconds(50));
    }
  }

  // The block at `start` is done: every point of it, or those done before a stop (then the
  // blocks after it are handed on after it, with a gap where points were not evaluated).
  void done(std::size_t start, std::vector<SweepPoint> points) {
    const std::lock_guard lock(mutex_);
    waiting_.emplace(start, std::move(points));
    hand_on(false);
    turn_.notify_all();
  }

  // After the workers: the blocks still waiting behind one a stop cut short.
  void finish() {
    const std::lock_guard lock(mutex_);
    hand_on(true);
  }

 private:
  static constexpr std::size_t kMaxBlocksAhead = 8;

  void hand_on(bool all) {
    while (!waiting_.empty() && (all || waiting_.begin()->first == next_)) {
      for (const SweepPoint& p : waiting_.begin()->second) sink_(p);
      next_ = waiting_.begin()->first + block_;
      waiting_.erase(waiting_.begin());
    }
  }

  const SweepSink& sink_;
  const std::size_t block_;
  std::mutex mutex_;
  std::condition_variable turn_;
  std::size_t next_ = 0;  // the start of the first block not handed on
  std::map<std::size_t, std::vector<SweepPoint>> waiting_;
};

// What the workers of evaluate_grid share.
struct GridShared {
  GridShared(const PointEvaluator& e, const std::vector<SweepAxis>& a, std::size_t n, const SweepProgress& p,
             const std::atomic<bool>* s, OrderedSink* o)
      : evaluate(e), axes(a), total(n), progress(p), stop(s), ordered(o) {}

  const PointEvaluator& evaluate;
  const std::vector<SweepAxis>& axes;
  const std::size_t total;
  const SweepProgress& progress;
  const std::atomic<bool>* const stop;
  OrderedSink* const ordered;  // streaming: the sink in grid order
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> finished{0};
  std::atomic<bool> interrupted{false};
  std::mutex failure_mutex;
  std::exception_ptr failure;

  [[nodiscard]] bool stopping() const { return (stop != nullptr && stop->load()) || interrupted.load(); }
  void fail() {
    const std::lock_guard lock(failure_mutex);
    if (!failure) failure = std::current_exception();
    interrupted.store(true);
  }
};

constexpr std::size_t kGridBlock = 256;

// One worker: blocks of consecutive points into its tally (and, streaming, to the sink) until the
// grid is done, a stop is asked for, or something fails.
void grid_worker(GridShared& g, GridTally& tally, bool reports_progress) {
  std::vector<std::size_t> index(g.axes.size());
  for (std::size_t start; (start = g.next.fetch_add(kGridBlock)) < g.total;) {
    std::vector<SweepPoint> block;
    try {
      if (g.ordered) g.ordered->wait_turn(start, [&g] { return g.stopping(); });
      bool stopped = false;
      for (std::size_t n = start; n < std::min(g.total, start + kGridBlock); ++n) {
        if ((stopped = g.stopping())) break;
        grid_index(n, g.axes, index);
        evaluate_point(g.evaluate, n, index, g.axes, tally, g.ordered ? &block : nullptr);
        ++g.finished;
      }
      if (g.ordered) g.ordered->done(start, std::move(block));
      if (stopped) {
        g.interrupted.store(true);
        return;
      }
    } catch (...) {
      g.fail();
      return;
    }
    if (reports_progress && g.progress) g.progress(g.finished.load(), g.total);
  }
}

// Every point, on all cores. Points are independent: workers take blocks of consecutive points, each
// into its own tally, merged at the end; what is kept (the best, the first infeasible and invalid
// points in grid order) does not depend on the threads. An invalid point is an outcome; any other
// exception (the sink's included) ends the run and is rethrown.
GridRun evaluate_grid(const PointEvaluator& evaluate, const std::vector<SweepAxis>& axes, std::size_t total,
                      std::size_t keep, const SweepProgress& progress, const std::atomic<bool>* stop,
                      const SweepSink& sink) {
  const std::size_t threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, total / kGridBlock + 1);
  std::vector<GridTally> tallies(threads);
  for (auto& t : tallies) t.keep = keep;
  std::optional<OrderedSink> ordered;
  if (sink) ordered.emplace(sink, kGridBlock);
  GridShared g(evaluate, axes, total, progress, stop, ordered ? &*ordered : nullptr);
  {
    std::vector<std::jthread> workers;
    for (std::size_t t = 1; t < threads; ++t) workers.emplace_back([&g, &tallies, t] { grid_worker(g, tallies[t], false); });
    grid_worker(g, tallies[0], true);
  }
  if (g.failure) std::rethrow_exception(g.failure);
  if (ordered) ordered->finish();
  GridRun run;
  run.tally = std::move(tallies[0]);
  for (std::size_t t = 1; t < threads; ++t) run.tally.merge(tallies[t]);
  run.interrupted = g.interrupted.load() && g.finished.load() < total;
  return run;
}

// The point's axis values, one per axis.
std::vector<std::string> values_of(std::size_t n, const std::vector<SweepAxis>& axes) {
  std::vector<std::size_t> index(axes.size());
  grid_index(n, axes, index);
  return values_at(index, axes);
}

// The tally into `result`: the kept points best first (infeasible ones last, in grid order), with their
// axis values; the counts; the first invalid point as the example. Returns the axis key that point's
// error names ("" when none does).
std::string collect_points(const std::vector<SweepAxis>& axes, GridTally& tally, SweepResult& result) {
  result.evaluated = tally.evaluated;
  result.invalid = tally.invalid;
  result.infeasible = tally.infeasible;
  result.valid = tally.evaluated - tally.invalid;
  if (tally.last) {
    result.baseline_tokens_per_s = tally.last->baseline_tokens_per_s;
    result.plain_low_tokens_per_s = tally.plain_low;
    result.plain_high_tokens_per_s = tally.plain_high;
  }
  std::sort_heap(tally.best.begin(), tally.best.end(), better);
  for (const GridPoint& p : tally.best) {
    result.points.push_back(
        SweepPoint{values_of(p.n, axes), p.tokens_per_s, p.speedup, p.tokens_per_cycle, p.cycle_s, p.baseline_tokens_per_s, {}});
  }
  for (auto& [n, why] : tally.first_infeasible) {
    if (result.points.size() >= tally.keep) break;
    SweepPoint point;
    point.values = values_of(n, axes);
    point.infeasible = std::move(why);
    result.points.push_back(std::move(point));
  }
  if (!tally.first_invalid) return "";
  const std::vector<std::string> values = values_of(*tally.first_invalid, axes);
  std::string at, key;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    at += (i ? " " : "") + axes[i].key + "=" + values[i];
    if (tally.invalid_key == axes[i].key) key = axes[i].key;
  }
  result.invalid_example = at + ": " + tally.invalid_message;
  return key;
}

}  // namespace

SweepResult sweep(const std::string& scenario, const std::vector<std::string>& patches,
                  const std::vector<SweepAxis>& axes, const DataDir& data, const SweepProgress& progress,
                  const std::atomic<bool>* stop, std::size_t keep, const SweepSink& sink) {
  SweepResult result;
  const std::size_t total = grid_size(axes);
  for (const auto& a : axes) result.keys.push_back(a.key);
  const PointEvaluator evaluate(scenario, patches, axes, data);
  result.fast_path = evaluate.on_values();
  result.total = total;
  GridRun run = evaluate_grid(evaluate, axes, total, keep, progress, stop, sink);
  result.interrupted = run.interrupted;
  const std::string first_invalid_key = collect_points(axes, run.tally, result);
  if (progress && !result.interrupted) progress(total, total);
  if (result.valid == 0 && !result.interrupted) {
    std::string keys;
    for (const auto& a : axes) keys += (keys.empty() ? "" : ", ") + a.key;
    throw Error({"--vary", 0, 0}, first_invalid_key.empty() ? keys : first_invalid_key,
                "none of the " + std::to_string(total) + " points is valid; the first: " + result.invalid_example);
  }
  return result;
}

}  // namespace specsim
