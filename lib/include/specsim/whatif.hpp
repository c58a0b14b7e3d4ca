// Questions asked of a calibrated CycleModel: where speculation breaks even, how the tokens/s
// spread across cycles and requests (Monte Carlo), and (later) interventions, ranking and sweeps.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "specsim/cycle.hpp"
#include "specsim/interventions.hpp"
#include "specsim/load.hpp"
#include "specsim/monte_carlo.hpp"
#include "specsim/prior_band.hpp"

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
[[nodiscard]] MonteCarloResult monte_carlo(const CycleModel& model, const Acceptance& acceptance,
                                           const MonteCarloOptions& options);

// ---- rank ---------------------------------------------------------------------------------------

struct RankedIntervention {
  Intervention intervention;   // as offered on this box (`{library}` written out)
  bool feasible = false;
  std::string reason;          // why not, when infeasible
  double tokens_per_s = 0.0;   // speculative tokens/s with this intervention
  double gain = 0.0;           // tokens/s over the scenario as it is
  double gain_per_launch = 0.0;
  bool comm_calibrated = true;  // false: the all-reduce cost rests on NCCL's prior
  Prediction prediction;
  // The gain's p10-p90 (tok/s over the scenario as it is) from specsim's error on measured gains
  // (ModelError::gain_residual_*, docs/validation.md#pairs); empty without one.
  std::optional<std::pair<double, double>> gain_band;
  // The band holds 0: whether this change helps at all is within specsim's error on gains.
  [[nodiscard]] bool too_close_to_call() const { return gain_band && holds_zero(*gain_band); }
};

struct PlanStep {
  std::string name;
  double tokens_per_s = 0.0;  // after this step and all before it
  double gain = 0.0;          // over the previous step
  double baseline_tokens_per_s = 0.0;  // plain decoding with the same changes (all-reduce what-ifs speed it too)
  std::vector<std::string> patches;  // everything applied so far
};

struct RankReport {
  std::string catalogue;  // its name, "+ BOX" when the box's topology file adds interventions
  double baseline_tokens_per_s = 0.0;   // plain decoding
  double scenario_tokens_per_s = 0.0;   // speculative, as the scenario stands
  // predict's p10-p90 of that rate (prediction_band) and its call against plain decoding
  // (speculation_call, docs/model.md#the-call).
  double scenario_p10_tokens_per_s = 0.0;
  double scenario_p90_tokens_per_s = 0.0;
  SpeculationCall scenario_call = SpeculationCall::kTooClose;
  // Why the scenario as it stands cannot run (it does not fit in memory); "" when it can. Its
  // figures above are still computed, as the point the interventions start from.
  std::string scenario_infeasible;
  std::vector<RankedIntervention> ranked;  // feasible by gain, then infeasible
  // The catalogue's interventions not offered here: their preconditions do not hold on this box, or
  // the scenario already has what they set.
  std::vector<std::string> not_offered;
  std::vector<const RankedIntervention*> by_gain_per_effort;  // feasible ones
  std::vector<PlanStep> path;           // apply the best, re-rank the rest
  std::string gain_band_origin;         // where the gain bands come from; "" without them
  // The feasible interventions the top pick (ranked's first) is not ahead of beyond specsim's error
  // on gains: the band of the top pick's lead over each, its ratio times exp(p10) and exp(p90),
  // holds 1. Empty without gain bands or when the lead is clear over every other.
  std::vector<std::string> too_close_to_top;
  int path_steps = 4;                   // the plan's length asked for; 0: no plan
};

// Each intervention of `catalogue` and of the scenario's box (Topology::interventions) alone on
// `scenario` + `patches`, where its preconditions hold and it changes something, then the cumulative
// path of up to `path_steps` (stopping when nothing gains), at most one intervention per group. An
// intervention is infeasible when one of its constraints holds once applied, a launch check fails
// that did not before (launch_checks.hpp), or it does not fit in memory. The scenario is loaded once:
// interventions whose keys are scenario fields are set on its value and share its calibration; the
// others (parallel.tp, comm.profile, ...) load it again with their patches.
// The catalogue rank reads for `s`: the file `priorities` when given, else the catalogue the
// scenario names (`interventions:`), else models/interventions/any-box.yaml (kDefaultCatalogue).
[[nodiscard]] InterventionCatalogue rank_catalogue(const Scenario& s, const std::string& priorities,
                                                   const DataDir& data = DataDir());

[[nodiscard]] RankReport rank(const std::string& scenario, const std::vector<std::string>& patches,
                              const InterventionCatalogue& catalogue, const DataDir& data = DataDir(),
                              int path_steps = 4);
// The same on `loaded`, which is load_scenario(scenario, patches, data) already made: every
// intervention is set on its value (the catalogue's keys are fields), and no file is read again
// beyond the tables the interventions name.
[[nodiscard]] RankReport rank(const Scenario& loaded, const std::vector<std::string>& patches,
                              const InterventionCatalogue& catalogue, const DataDir& data = DataDir(),
                              int path_steps = 4);

// ---- sweep --------------------------------------------------------------------------------------

struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
};
// "key=v1,v2,..." or "key=a..b" (integers, inclusive); throws specsim::Error naming the option.
[[nodiscard]] SweepAxis parse_vary(const std::string& text);

struct SweepPoint {
  std::vector<std::string> values;  // one per axis
  double tokens_per_s = 0.0;
  double speedup = 0.0;
  double tokens_per_cycle = 0.0;
  double cycle_s = 0.0;
  double baseline_tokens_per_s = 0.0;  // plain decoding at this point (axes on the model or box move it)
  // Why the deployment cannot run at this point (it does not fit in GPU memory: memory_fit.hpp);
  // "" when it can. An infeasible point has no figures and sorts after every feasible one.
  std::string infeasible;
};

struct SweepResult {
  std::vector<std::string> keys;
  // The best `keep` points of sweep(), best first, infeasible ones last (in grid order); every valid
  // point when keep is kKeepEveryPoint.
  std::vector<SweepPoint> points;
  std::size_t valid = 0;           // points evaluated that are not invalid (feasible or not), kept or not
  std::size_t infeasible = 0;      // of them, points that do not fit in memory (those kept are marked)
  std::size_t invalid = 0;         // combinations skipped
  std::string invalid_example;     // the first one's reason, in grid order
  double baseline_tokens_per_s = 0.0;  // plain decoding of the last feasible point in grid order
  // The lowest and highest plain decoding rate over every feasible point (0 when none is feasible).
  double plain_low_tokens_per_s = 0.0;
  double plain_high_tokens_per_s = 0.0;
  bool fast_path = false;          // every axis a scenario field: points set values on one loaded scenario
  std::size_t total = 0;           // points in the grid
  std::size_t evaluated = 0;       // points tried: total, or fewer when interrupted
  bool interrupted = false;        // `stop` was set before the grid was done
};

using SweepProgress = std::function<void(std::size_t done, std::size_t total)>;
// Given each point that is not invalid (feasible or not), in grid order, as the grid runs: a view
// that lists every point writes it out here instead of asking sweep() to keep it (`sweep --stream`).
// Calls come one at a time, from whichever worker finished the earlier points; an exception thrown
// here (a failed write) stops the grid and leaves sweep().
using SweepSink = std::function<void(const SweepPoint& point)>;

// A grid has at most 10^7 points (grid_size), and a concurrency sweep makes at most 10^7
// evaluations in all (kMaxSweepEvaluations).
inline constexpr std::size_t kMaxSweepPoints = 10'000'000;
// sweep()'s `keep` for every valid point.
inline constexpr std::size_t kKeepEveryPoint = static_cast<std::size_t>(-1);

// The number of points of the grid over `axes`. Throws specsim::Error naming the option for an axis
// with no values, a key given on two axes, workload.concurrency as an axis, or more than 10^7 points.
[[nodiscard]] std::size_t grid_size(const std::vector<SweepAxis>& axes);

// The full grid. When every axis is a scenario field (scenario_fields.hpp), the scenario is loaded
// once and each point sets its values on a copy; calibration runs once too unless an axis is a
// calibrated key. Any other key (a model, a profile, parallel.tp) reloads the scenario per point.
// Throws specsim::Error naming the option for a key given on two axes, a malformed value or a key
// the loader does not know (before the grid runs), and, once the grid is done, when no point is
// valid (naming the axis key of the first failure). `stop`,
// when given, is read before each point (a signal handler may set it): once set, the sweep returns
// the points evaluated so far, best first, with `interrupted` set.
// `keep` bounds the points returned, and the memory the sweep holds: the best `keep` (then infeasible
// ones in grid order), while the counts, the plain range and the first invalid point cover every
// point evaluated. Points are not held beyond that: a view that shows the top N asks for N.
// `sink`, when given, gets every point that is not invalid in grid order as it is evaluated (the
// grid's order: the last axis fastest); after a stop, every point evaluated, with a gap where a
// worker's block was cut short. A grid of any size then needs no memory per point (keep = 0).
[[nodiscard]] SweepResult sweep(const std::string& scenario, const std::vector<std::string>& patches,
                                const std::vector<SweepAxis>& axes, const DataDir& data = DataDir(),
                                const SweepProgress& progress = {}, const std::atomic<bool>* stop = nullptr,
                                std::size_t keep = kKeepEveryPoint, const SweepSink& sink = {});

}  // namespace specsim
