// A deployment at several concurrency levels (workload.concurrency, docs/model.md#concurrency):
// each level is the scenario at batch = c, checked for memory first (memory_fit.hpp), on the one
// calibration made where the measurements were taken (workload.batch, Scenario::as_measured).
// Acceptance is per request and does not change with c; what changes is the forwards' batch
// (weights read once for c requests, KV read per request, all-reduces of c x H) and the KV held.
//
//   per request tok/s = 1 / TPOT:  plain 1 / T_base(c),  speculative tau / T_cycle(c)
//   aggregate tok/s   = c x per request
//
// (cycle.hpp: tok/s_base = B / T_base, tok/s_spec = B tau / T_cycle at B = c.)
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"
#include "specsim/prior_band.hpp"
#include "specsim/scenario.hpp"
#include "specsim/whatif.hpp"

namespace specsim {

struct ConcurrencyLevel {
  int concurrency = 1;
  MemoryFit memory;        // at batch = concurrency
  std::string infeasible;  // why the level cannot run (describe_overflow); "" when it fits
  // The figures below stay 0 for an infeasible level.
  double plain_step_s = 0.0;  // T_base(c)
  double cycle_s = 0.0;       // T_cycle(c)
  double tokens_per_cycle = 0.0;  // tau, the same at every level
  double plain_aggregate_tokens_per_s = 0.0;
  double spec_aggregate_tokens_per_s = 0.0;
  double speedup = 0.0;
  // The speculative rate's p10-p90 over the batch at this level: predict's band (prediction_band,
  // prior_band.hpp) of the level's model, on the one calibration. 0 where the band was not asked for.
  double spec_p10_aggregate_tokens_per_s = 0.0;
  double spec_p90_aggregate_tokens_per_s = 0.0;
  // What the band draws for carrying the calibration to this level (PredictionBand::transfer_sigma):
  // a ln sigma added to each tail; 0 at the measured batch.
  double spec_band_transfer_sigma = 0.0;
  [[nodiscard]] bool feasible() const { return infeasible.empty(); }
  [[nodiscard]] bool has_band() const { return spec_p90_aggregate_tokens_per_s > 0.0; }
  // predict's call at this level (speculation_call) on the aggregate band against plain decoding.
  [[nodiscard]] SpeculationCall call() const {
    return speculation_call(spec_p10_aggregate_tokens_per_s, spec_p90_aggregate_tokens_per_s,
                            spec_aggregate_tokens_per_s, plain_aggregate_tokens_per_s);
  }
  [[nodiscard]] double plain_per_request_tokens_per_s() const { return plain_aggregate_tokens_per_s / concurrency; }
  [[nodiscard]] double spec_per_request_tokens_per_s() const { return spec_aggregate_tokens_per_s / concurrency; }
};

struct ConcurrencyPrediction {
  int calibrated_batch = 1;  // where calibration ran (the measured workload.batch), reused at every level
  std::vector<ConcurrencyLevel> levels;  // ascending concurrency
  // The lowest level from which on speculation no longer beats plain decoding at any feasible
  // level; empty when it pays at the highest feasible level or no level is feasible.
  std::optional<int> stops_paying_at;
  // What the one calibration warns of (Calibration::warnings: it holds at every level), then what
  // carrying it to other batches leaves unpriced (transfer_warnings).
  std::vector<std::string> warnings;
};

// Whether predict_concurrency draws each level's band (predict's p10-p90): the CLI does; the corpus's
// batch transfers, which compare plain rates only, do not.
enum class LevelBands { kDraw, kSkip };

// `s` at batch = c for each c of s.concurrency, in ascending order, on one calibration. A level that
// does not fit in memory is marked infeasible when it is one of several; a single level that does
// not fit is an error, as for predict (require_memory_fit). Throws specsim::Error for an empty list,
// a level < 1, a repeated level, and a `--set workload.batch` patch (the levels set the batch; the
// calibration batch is the file's).
[[nodiscard]] ConcurrencyPrediction predict_concurrency(const Scenario& s, LevelBands bands = LevelBands::kDraw);

// What reusing `calibration` (made at `calibrated_batch`) at the batches `levels` leaves unpriced, for
// people: of an end-to-end plain rate's residual beyond the forward, the prefill its stated lengths
// price is scaled to each level (rules.prefill_scales_with_batch), and the rest (batch tails, and
// without lengths the prefill, or host work) is read at the measured batch and charged unchanged
// (docs/validation.md#batch-transfer). Empty where every level is the measured batch, the plain rate
// is a step time, or nothing is left unscaled.
[[nodiscard]] std::vector<std::string> transfer_warnings(const Scenario& s, const Calibration& calibration,
                                                         int calibrated_batch, const std::vector<int>& levels);

// The best draft shape at one level: sweep() over the axes at workload.batch = c.
struct ConcurrencyBest {
  int concurrency = 1;
  std::string infeasible;   // why no point of the grid fits at this level; "" when one does
  SweepPoint best;          // the fastest feasible point (aggregate speculative tok/s)
  std::size_t points = 0;   // grid points evaluated at this level
  std::size_t infeasible_points = 0;
  std::size_t invalid_points = 0;
  [[nodiscard]] bool feasible() const { return infeasible.empty(); }
  [[nodiscard]] bool pays() const { return feasible() && best.speedup > 1.0; }
};

struct ConcurrencySweep {
  // The workload bucket this sweep belongs to (sweep_by_workload): condition axes and their values
  // here, e.g. {"workload.context"} = {"32768"}; empty for a sweep over the scenario's own workload.
  std::vector<std::string> condition_keys;
  std::vector<std::string> condition_values;
  std::vector<std::string> keys;        // the axes
  int calibrated_batch = 1;             // as in ConcurrencyPrediction
  std::vector<ConcurrencyBest> levels;  // ascending concurrency; the levels done when interrupted
  std::optional<int> stops_paying_at;   // as in ConcurrencyPrediction, with each level's best shape
  bool interrupted = false;             // `stop` was set: the levels after the last done are missing
  std::vector<std::string> warnings;    // as in ConcurrencyPrediction: the calibration's, the transfer's
};

// Every evaluation a concurrency sweep makes (levels x buckets x grid points) stops here, as one
// grid's points do: 10^7.
inline constexpr std::size_t kMaxSweepEvaluations = kMaxSweepPoints;

// The draft shape varied when a concurrency sweep is given no axes: speculation.num_steps = 1..8.
[[nodiscard]] SweepAxis default_concurrency_axis();
// The same for `s`: a block drafter's (speculation.method dflash) is speculation.block_size = 2..16.
[[nodiscard]] SweepAxis default_concurrency_axis(const Scenario& s);

// For each level of workload.concurrency (the scenario's after `patches`; a `--set
// workload.concurrency=...` patch sets it), sweep() over `axes` (default_concurrency_axis() when
// empty) at workload.batch = c. Throws specsim::Error when the scenario has no levels, for an axis
// or patch on workload.batch (the levels set it), for a condition axis (is_condition_axis:
// sweep_by_workload buckets by those), and what sweep() throws.
// `stop` (SIGINT) ends it after the point in flight: the levels done are kept, `interrupted` set.
[[nodiscard]] ConcurrencySweep sweep_by_concurrency(const std::string& scenario, const std::vector<std::string>& patches,
                                                    std::vector<SweepAxis> axes, const DataDir& data = DataDir(),
                                                    const std::atomic<bool>* stop = nullptr);

// An axis that states a condition the deployment meets rather than a setting it chooses: the
// workload (workload.context, ...) and the acceptance the drafter reaches (acceptance.*). A "best
// context" per level means nothing; a best draft shape per (level, context) is what engines tabulate
// (vLLM RFC #48627: a (batch, context) -> K table).
[[nodiscard]] bool is_condition_axis(const std::string& key);

// sweep_by_concurrency once per combination of the condition axes among `axes` (each combination
// a bucket, patched in), over the remaining axes (default_concurrency_axis() when none remain);
// buckets in the axes' order, the first axis outermost. Without condition axes, one sweep with no
// condition. Throws what grid_size() throws for all the axes together (a key on two axes,
// workload.concurrency as an axis, ...) and what sweep_by_concurrency throws.
// The total of evaluations (every bucket's levels x grid) is refused above kMaxSweepEvaluations
// before any runs; `stop` ends it as sweep_by_concurrency's does (the buckets done kept).
[[nodiscard]] std::vector<ConcurrencySweep> sweep_by_workload(const std::string& scenario,
                                                              const std::vector<std::string>& patches,
                                                              const std::vector<SweepAxis>& axes,
                                                              const DataDir& data = DataDir(),
                                                              const std::atomic<bool>* stop = nullptr);

// For people, said by predict and sweep alike: "calibrated at batch B (workload.batch, where the
// measurements were taken), reused at every level".
[[nodiscard]] std::string calibration_note(int calibrated_batch);
// Where speculation stops paying: "speculation stops paying at concurrency 64", "... pays at the
// highest feasible level", "... does not pay at any feasible level" or "no level fits in GPU memory".
[[nodiscard]] std::string payoff_summary(const ConcurrencyPrediction& p);
[[nodiscard]] std::string payoff_summary(const ConcurrencySweep& s);

}  // namespace specsim
