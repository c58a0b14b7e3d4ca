// Questions asked of a calibrated CycleModel: where speculation breaks even, how the tokens/s
// spread across cycles and requests (Monte Carlo), and (later) interventions, ranking and sweeps.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "specsim/cycle.hpp"
#include "specsim/monte_carlo.hpp"

namespace specsim {

struct BreakEven {
  int num_steps = 0;
  // The first-position acceptance at which speculative tokens/s equals plain decoding (the
  // scenario's depth profile applied); empty when even acceptance 1 does not break even.
  std::optional<double> accept;
  double tokens_per_cycle = 0.0;  // tau* = T_cycle(tau*) / T_base
  double speculative_tokens_per_s_at_accept_1 = 0.0;
};

struct BreakEvenReport {
  double baseline_tokens_per_s = 0.0;
  BreakEven at_scenario;              // the scenario's own num_steps
  std::vector<BreakEven> by_num_steps;  // num_steps 1..8
};

// Root finding (Boost TOMS 748) on tokens/s(accept) - baseline, which rises monotonically.
[[nodiscard]] BreakEven breakeven(const CycleModel& model);
[[nodiscard]] BreakEvenReport breakeven_report(const Scenario& scenario, int max_num_steps = 8);

// Monte Carlo of accepted lengths (and per-request acceptance spread) through the calibrated
// cycle time of each emitted length; its mean must agree with the closed form.
[[nodiscard]] MonteCarloResult monte_carlo(const CycleModel& model, const AcceptanceSettings& acceptance,
                                           const MonteCarloOptions& options);

}  // namespace specsim
