#include "specsim/concurrency.hpp"

#include <algorithm>
#include <memory>

#include "specsim/cycle.hpp"
#include "specsim/error.hpp"
#include "specsim/prior_band.hpp"
#include "specsim/scenario_fields.hpp"
#include "specsim/scenario_rules.hpp"
#include "specsim/units.hpp"

namespace specsim {

namespace {

constexpr const char* kConcurrencyKey = "workload.concurrency";
constexpr const char* kBatchKey = "workload.batch";
// The draft depths a concurrency sweep tries when given no axis: those breakeven_report covers.
constexpr int kDefaultMaxNumSteps = 8;
constexpr int kDefaultMaxBlockSize = 16;

// The levels ascending, after the checks the loader makes with file and line (read_scenario.cpp,
// read_concurrency), repeated here for scenarios a library caller filled in itself.
std::vector<int> checked_levels(const Scenario& s) {
  const SourceLocation where{s.file, 0, 0};
  if (s.concurrency.empty()) throw Error(where, kConcurrencyKey, "no levels: give at least one (e.g. [1, 4, 16])");
  std::vector<int> levels = s.concurrency;
  std::sort(levels.begin(), levels.end());
  if (levels.front() < 1) {
    throw Error(where, kConcurrencyKey, "level " + std::to_string(levels.front()) + ": must be >= 1");
  }
  if (const auto twice = std::adjacent_find(levels.begin(), levels.end()); twice != levels.end()) {
    throw Error(where, kConcurrencyKey, "level " + std::to_string(*twice) + " is listed twice: list each level once");
  }
  return levels;
}

// A patched batch would be overwritten by every level without a word, and calibration never reads
// it (it runs on the scenario as its file states it): a conflict, not a setting.
void reject_batch_patch(const Scenario& s) {
  if (s.patched_keys.count(kBatchKey) == 0) return;
  throw Error({"--set", 0, 0}, kBatchKey,
              "conflicts with workload.concurrency: each level sets the batch, and calibration runs at the "
              "file's workload.batch (" +
                  std::to_string(s.as_measured ? s.as_measured->batch : s.batch) +
                  "); leave the patch out, or list the batch as a level");
}

int calibrated_batch(const Scenario& s) { return s.as_measured ? s.as_measured->batch : s.batch; }

// `s` at batch = c: what `--set workload.batch=c` gives, without reading the file again.
Scenario at_batch(const Scenario& s, const std::shared_ptr<const Scenario>& measured, int c) {
  Scenario at = s;
  at.as_measured = measured;
  set_field(at, parse_field_value(kBatchKey, std::to_string(c), {s.file, 0, 0}));
  throw_problems(what_if_problems(at));
  return at;
}

ConcurrencyLevel predict_level(const Scenario& s, const std::shared_ptr<const Scenario>& measured,
                               const Calibration& calibration, int c, bool only_level, LevelBands bands,
                               std::vector<std::string>& warnings) {
  ConcurrencyLevel level;
  level.concurrency = c;
  Scenario at = at_batch(s, measured, c);
  level.memory = memory_fit(at);
  if (!level.memory.fits()) {
    // One level alone is a predict of that batch: a deployment that cannot load predicts nothing.
    if (only_level) require_memory_fit(at);
    level.infeasible = describe_overflow(at, level.memory);
    return level;
  }
  const CycleModel model(std::move(at), calibration);
  const Prediction p = model.predict();
  // The calibration's warnings, and what the level's own box adds to them (a collective beyond its
  // measured table, ...): each said once for all the levels.
  for (const std::string& w : model.calibration().warnings) {
    if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
  }
  if (bands == LevelBands::kDraw) {
    const PredictionBand band = prediction_band(model, p);
    if (!band.draws.empty()) {
      level.spec_p10_aggregate_tokens_per_s = band.p10_tokens_per_s;
      level.spec_p90_aggregate_tokens_per_s = band.p90_tokens_per_s;
      level.spec_band_transfer_sigma = band.transfer_sigma;
    }
  }
  level.plain_step_s = p.baseline_step_s;
  level.cycle_s = p.cycle_s;
  level.tokens_per_cycle = p.tokens_per_cycle;
  level.plain_aggregate_tokens_per_s = p.baseline_tokens_per_s;
  level.spec_aggregate_tokens_per_s = p.spec_tokens_per_s;
  level.speedup = p.speedup;
  return level;
}

// Scanning from the highest level down, the feasible levels where speculation loses until the
// first where it pays: the lowest of them is where it stops paying.
template <typename Level, typename Pays>
std::optional<int> first_level_not_paying(const std::vector<Level>& levels, Pays pays) {
  std::optional<int> out;
  for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
    if (!it->feasible()) continue;
    if (pays(*it)) break;
    out = it->concurrency;
  }
  return out;
}

template <typename Level>
std::string payoff_of(const std::vector<Level>& levels, std::optional<int> stops_paying_at) {
  const auto first = std::find_if(levels.begin(), levels.end(), [](const Level& l) { return l.feasible(); });
  if (first == levels.end()) return "no level fits in GPU memory";
  if (!stops_paying_at) return "speculation pays at the highest feasible level";
  if (*stops_paying_at == first->concurrency) {
    return "speculation does not pay at any feasible level: plain decoding is faster";
  }
  return "speculation stops paying at concurrency " + std::to_string(*stops_paying_at) +
         ": plain decoding is faster from there on";
}

}  // namespace

std::string calibration_note(int calibrated_batch) {
  return "calibrated at batch " + std::to_string(calibrated_batch) +
         " (workload.batch, where the measurements were taken), reused at every level";
}

std::string payoff_summary(const ConcurrencyPrediction& p) {
  // The point's verdict, then the levels whose band holds the plain rate (speculation_call): there
  // the verdict is within specsim's error.
  std::string close;
  for (const auto& l : p.levels) {
    if (l.feasible() && l.has_band() && l.call() == SpeculationCall::kTooClose) {
      close += (close.empty() ? "" : ", ") + std::to_string(l.concurrency);
    }
  }
  const std::string out = payoff_of(p.levels, p.stops_paying_at);
  if (close.empty()) return out;
  return out + "; too close to call at concurrency " + close + " (the band holds the plain rate)";
}
std::string payoff_summary(const ConcurrencySweep& s) { return payoff_of(s.levels, s.stops_paying_at); }

std::vector<std::string> transfer_warnings(const Scenario& s, const Calibration& calibration, int calibrated_batch,
                                           const std::vector<int>& levels) {
  const Scenario& basis = s.as_measured ? *s.as_measured : s;
  const bool elsewhere =
      std::any_of(levels.begin(), levels.end(), [&](int c) { return c != calibrated_batch; });
  const double per_token_s = calibration.host_per_output_token_s;
  if (!elsewhere || !basis.measurements.baseline_includes_prefill || per_token_s <= 0.0) return {};
  // The stated prompts' prefill is scaled to each level (CycleModel::scale_prefill_to_batch); what
  // is left is carried as read.
  const double scaled_s = s.rules.prefill_scales_with_batch ? calibration.prefill_per_output_token_s : 0.0;
  const double unchanged_s = per_token_s - scaled_s;
  if (unchanged_s <= 0.0) return {};
  const std::string b = std::to_string(calibrated_batch);
  const Measurements& m = basis.measurements;
  const std::string settle =
      m.baseline_tpot_s ? "the plain rate measured at one of the levels would settle it"
                        : "the plain rate measured at one of the levels, or the plain benchmark's mean TPOT" +
                              std::string(scaled_s > 0.0 ? "" : " with its prompt and output lengths") +
                              ", would settle it";
  const std::string what = std::string(scaled_s > 0.0 ? "batch tails" : "prefill, batch tails") +
                           (m.baseline_tpot_s ? "" : ", or host work");
  const std::string head =
      scaled_s > 0.0 ? "the plain rate at batch " + b + " is end to end (prefill included): of the " +
                           units::format_duration(per_token_s) + " per output token it holds beyond the forwards, the "
                           "stated prompts' prefill (" + units::format_duration(scaled_s) +
                           ") is scaled to each level's batch, and the rest (" + units::format_duration(unchanged_s) +
                           ": " + what + ") is read at batch " + b + " and charged unchanged at every level"
                     : "the plain rate at batch " + b + " is end to end (prefill included): " +
                           units::format_duration(per_token_s) + " per output token of it is time beyond the forwards (" +
                           what + ") read at batch " + b + " and charged unchanged at every level";
  const std::string why = scaled_s > 0.0 ? ". At another batch its tails take another share, which the levels do not price"
                                         : ". At another batch its prefill part grows with the batch and its tails shrink, "
                                           "which the levels do not price";
  return {head + why + ", so their plain and speculative rates can carry more error than the band holds (its "
          "transfer term is measured on the fit set's batch transfers, which the check set's exceed: "
          "docs/validation.md#batch-transfer); " + settle};
}

ConcurrencyPrediction predict_concurrency(const Scenario& s, LevelBands bands) {
  const std::vector<int> levels = checked_levels(s);
  reject_batch_patch(s);
  ConcurrencyPrediction out;
  out.calibrated_batch = calibrated_batch(s);
  // Calibrated once, where the measurements were taken; every level reuses it.
  const Calibration calibration = calibrate(s);
  const auto measured = s.as_measured ? s.as_measured : std::make_shared<const Scenario>(s);
  for (const int c : levels) {
    out.levels.push_back(predict_level(s, measured, calibration, c, levels.size() == 1, bands, out.warnings));
  }
  if (out.warnings.empty()) out.warnings = calibration.warnings;  // no level fits: the measurement's own
  for (auto& w : transfer_warnings(s, calibration, out.calibrated_batch, levels)) out.warnings.push_back(std::move(w));
  out.stops_paying_at =
      first_level_not_paying(out.levels, [](const ConcurrencyLevel& l) { return l.speedup > 1.0; });
  return out;
}

SweepAxis default_concurrency_axis() {
  return {"speculation.num_steps", [] {
            std::vector<std::string> v;
            for (int k = 1; k <= kDefaultMaxNumSteps; ++k) v.push_back(std::to_string(k));
            return v;
          }()};
}

SweepAxis default_concurrency_axis(const Scenario& s) {
  if (!s.speculation.drafts_block()) return default_concurrency_axis();
  // A block drafter's shape is its block: 2 .. 16, the block the published DFlash drafters were
  // trained on (docs/references/specdec.md#dflash), or the drafter's own when larger.
  const int largest = std::max(kDefaultMaxBlockSize, s.draft.dflash ? s.draft.dflash->block_size : 0);
  std::vector<std::string> v;
  for (int b = 2; b <= largest; ++b) v.push_back(std::to_string(b));
  return {"speculation.block_size", v};
}

ConcurrencySweep sweep_by_concurrency(const std::string& scenario, const std::vector<std::string>& patches,
                                      std::vector<SweepAxis> axes, const DataDir& data, const std::atomic<bool>* stop) {
  const Scenario base = load_scenario(scenario, patches, data);
  const std::vector<int> levels = checked_levels(base);
  reject_batch_patch(base);
  if (axes.empty()) axes.push_back(default_concurrency_axis(base));
  ConcurrencySweep out;
  out.calibrated_batch = calibrated_batch(base);
  // Every point's calibration is this one (sweep() calibrates on the file's scenario): its warnings
  // and the transfer's hold at each level, whatever the grid sets.
  const Calibration calibration = calibrate(base);
  out.warnings = calibration.warnings;
  for (auto& w : transfer_warnings(base, calibration, out.calibrated_batch, levels)) out.warnings.push_back(std::move(w));
  for (const auto& a : axes) {
    if (a.key == kBatchKey) {
      throw Error({"--vary", 0, 0}, a.key, "conflicts with workload.concurrency: each level sets the batch");
    }
    if (is_condition_axis(a.key)) {
      throw Error({"--vary", 0, 0}, a.key,
                  "is a condition of the deployment, not a setting to pick per level: sweep_by_workload makes "
                  "each of its values a bucket");
    }
    out.keys.push_back(a.key);
  }
  if (double(levels.size()) * double(grid_size(axes)) > double(kMaxSweepEvaluations)) {
    throw Error({"--concurrency", 0, 0}, "workload.concurrency",
                std::to_string(levels.size()) + " levels x " + std::to_string(grid_size(axes)) +
                    " grid points exceed 10^7 evaluations: fewer levels or a coarser grid");
  }
  for (const int c : levels) {
    if (stop != nullptr && stop->load()) {
      out.interrupted = true;
      break;
    }
    // The same grid as `sweep --set workload.batch=c`: calibration runs on the file's scenario
    // (as_measured) there too.
    std::vector<std::string> at = patches;
    at.push_back(std::string(kBatchKey) + "=" + std::to_string(c));
    // The level shows its best point only: one kept, the grid's counts beside it.
    const SweepResult r = sweep(scenario, at, axes, data, {}, stop, 1);
    if (r.interrupted) {
      out.interrupted = true;  // this level's grid is partial: left out
      break;
    }
    ConcurrencyBest level;
    level.concurrency = c;
    level.points = r.evaluated;
    level.infeasible_points = r.infeasible;
    level.invalid_points = r.invalid;
    // sweep() sorts infeasible points last: the first is feasible when any is.
    if (!r.points.front().infeasible.empty()) {
      level.infeasible = r.points.front().infeasible;
    } else {
      level.best = r.points.front();
    }
    out.levels.push_back(std::move(level));
  }
  out.stops_paying_at = first_level_not_paying(out.levels, [](const ConcurrencyBest& l) { return l.pays(); });
  return out;
}

bool is_condition_axis(const std::string& key) {
  return key.starts_with("workload.") || key.starts_with("acceptance.");
}

std::vector<ConcurrencySweep> sweep_by_workload(const std::string& scenario, const std::vector<std::string>& patches,
                                                const std::vector<SweepAxis>& axes, const DataDir& data,
                                                const std::atomic<bool>* stop) {
  // The buckets times each bucket's grid: the same refusals as one grid over every axis (no values,
  // a key on two axes, workload.concurrency as an axis, too many points).
  const std::size_t grid = grid_size(axes);
  const std::size_t levels = checked_levels(load_scenario(scenario, patches, data)).size();
  if (double(grid) * double(levels) > double(kMaxSweepEvaluations)) {
    throw Error({"--concurrency", 0, 0}, "workload.concurrency",
                std::to_string(levels) + " levels x " + std::to_string(grid) +
                    " points of every bucket's grid exceed 10^7 evaluations: fewer levels or a coarser grid");
  }
  std::vector<SweepAxis> conditions, settings;
  for (const auto& a : axes) (is_condition_axis(a.key) && a.key != kBatchKey ? conditions : settings).push_back(a);
  // Every combination of the condition values, the first axis outermost (an odometer).
  std::vector<std::size_t> at(conditions.size(), 0);
  std::vector<ConcurrencySweep> out;
  while (true) {
    std::vector<std::string> bucket = patches, values;
    for (std::size_t i = 0; i < conditions.size(); ++i) {
      values.push_back(conditions[i].values[at[i]]);
      bucket.push_back(conditions[i].key + "=" + values.back());
    }
    ConcurrencySweep sweep = sweep_by_concurrency(scenario, bucket, settings, data, stop);
    for (const auto& c : conditions) sweep.condition_keys.push_back(c.key);
    sweep.condition_values = std::move(values);
    const bool interrupted = sweep.interrupted;
    out.push_back(std::move(sweep));
    if (interrupted) break;
    // The next combination, the last axis fastest; done when the first wraps around.
    std::size_t i = conditions.size();
    while (i > 0 && ++at[i - 1] == conditions[i - 1].values.size()) at[--i] = 0;
    if (i == 0) break;
  }
  return out;
}

}  // namespace specsim
