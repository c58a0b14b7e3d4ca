#include "specsim/whatif.hpp"

#include <boost/math/tools/roots.hpp>

#include <algorithm>

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
