// `specsim validate`: predictions against public measurements of deployments specsim was never
// fitted to. Each row of the corpus (validation/<source>/<row>.yaml, docs/validation.md) is a
// scenario with a `validation:` source header; its measured plain tokens/s and acceptance are
// inputs, its measured speculative tokens/s is held out and only compared with:
//
//   error            = predicted_spec / measured_spec - 1          (signed; > 0 over-predicts)
//   speedup          = spec / plain (predicted: both predicted; measured: both measured)
//   sign right       = (predicted speedup > 1) == (measured speedup > 1)
//
// Summaries give the median and worst |error| and the sign accuracy, overall and split by batch
// (1 / > 1), engine and interconnect.
//
// Calibrating on one run (`--calibrate-on`): a source that measured several configurations in one
// run shares the engine's per-cycle overhead. The row calibrated on fixes
// host.spec_extra_per_cycle so that its predicted speculative tokens/s equals its measurement
// (CycleModel does it for any scenario whose measurements.speculative.held_out is false); the
// cycle is linear in that term, so
//
//   extra = B * tau / measured_spec - (T_cycle - extra_in_row)
//
// and the other rows of the source are predicted with it.
//
// One run -> siblings (`--calibrate-on all`): what a user with one measured speculative run gets.
// Each row j of a source calibrates the per-cycle term alone and predicts every sibling k (the rest
// of the source, narrowed to the same draft and then the same batch where any are left); j is never
// among the rows it predicts. The band is recomputed: the calibrated term no longer draws from its
// prior, and the model error is the calibrated residuals' of fit-set sources other than k's.
//
// Fit and check sets (validation/split.yaml, docs/validation.md#fit-and-check-sets): the model
// error comes from the fit set's rows only, each fit row's from the other fit sources; rows whose
// measured speculative run is an input are reported apart and never scored.
#pragma once

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "specsim/load.hpp"
#include "specsim/prior_band.hpp"
#include "specsim/scenario.hpp"

namespace specsim {

// Where one input of a prediction came from.
enum class InputOrigin { kMeasured, kCalibrated, kSet, kPrior };
[[nodiscard]] const char* to_string(InputOrigin o);

struct RowInput {
  std::string name;    // "acceptance", "all-reduce", "bandwidth efficiency", ...
  std::string code;    // its short name in the text table's last column ("bw", "host", ...)
  InputOrigin origin = InputOrigin::kPrior;
  std::string detail;  // the value and how it was obtained
};

struct ValidationRow {
  std::string file;
  std::string name;
  ValidationSource source;
  std::string engine;        // engine.name
  std::string interconnect;  // "nvlink" or "pcie": the class of the box's slowest link
  std::string gpu;
  std::string model;
  std::string draft;  // the draft model's name, or the method where it runs none (ngram)
  bool moe = false;
  int tp = 1;
  int batch = 1;
  bool tree = false;  // eagle_topk > 1
  int eagle_topk = 1;
  int num_steps = 0;
  int num_draft_tokens = 0;
  double measured_plain_tokens_per_s = 0.0;
  double measured_spec_tokens_per_s = 0.0;
  double predicted_plain_tokens_per_s = 0.0;
  double predicted_spec_tokens_per_s = 0.0;
  double tokens_per_cycle = 0.0;
  double spec_extra_per_cycle_s = 0.0;  // the per-cycle engine term the prediction used
  // The p10-p90 band of the predicted speculative tokens/s (prior_band.hpp): the priors' spread and,
  // where other sources give enough rows, specsim's error on those sources (model_error, held out
  // by source); the priors' band alone beside it.
  double band_p10_tokens_per_s = 0.0;
  double band_p90_tokens_per_s = 0.0;
  double prior_band_p10_tokens_per_s = 0.0;
  double prior_band_p90_tokens_per_s = 0.0;
  std::vector<double> prior_band_draws;    // the priors' draws, sorted (empty: no spread)
  std::optional<ModelError> model_error;   // the error the band carries, from the other sources' rows
  std::vector<RowInput> inputs;
  std::vector<std::string> warnings;
  // The row's value of each intervention key (intervention_keys), as the file writes it; "" where
  // the file leaves it to its default. What catalogue-intervention pairs are told apart by.
  std::map<std::string, std::string> settings;
  // validation/split.yaml's set of the row's source: "fit" or "check"; "" for a row not scored.
  std::string set;
  // Why the row is reported apart and never scored (its measured speculative run is an input, or
  // its inputs were derived from that run); "" for a scored row.
  std::string not_scored;

  [[nodiscard]] bool scored() const { return not_scored.empty(); }
  // The band's width relative to the point: (p90 - p10) / predicted.
  [[nodiscard]] double band_width() const {
    return (band_p90_tokens_per_s - band_p10_tokens_per_s) / predicted_spec_tokens_per_s;
  }

  [[nodiscard]] double error() const { return predicted_spec_tokens_per_s / measured_spec_tokens_per_s - 1.0; }
  [[nodiscard]] double measured_speedup() const { return measured_spec_tokens_per_s / measured_plain_tokens_per_s; }
  [[nodiscard]] double predicted_speedup() const {
    return predicted_spec_tokens_per_s / predicted_plain_tokens_per_s;
  }
  [[nodiscard]] bool sign_right() const { return (predicted_speedup() > 1.0) == (measured_speedup() > 1.0); }
  // Whether speculation pays as predict calls it (speculation_call): the band against the plain rate,
  // the point where the band has no spread.
  [[nodiscard]] SpeculationCall call() const {
    return speculation_call(band_p10_tokens_per_s, band_p90_tokens_per_s, predicted_spec_tokens_per_s,
                            predicted_plain_tokens_per_s);
  }
  [[nodiscard]] bool called() const { return call() != SpeculationCall::kTooClose; }
  [[nodiscard]] bool call_right() const {
    return called() && (call() == SpeculationCall::kPays) == (measured_speedup() > 1.0);
  }
  [[nodiscard]] bool in_band() const {
    return band_p10_tokens_per_s <= measured_spec_tokens_per_s && measured_spec_tokens_per_s <= band_p90_tokens_per_s;
  }
  [[nodiscard]] bool in_prior_band() const {
    return prior_band_p10_tokens_per_s <= measured_spec_tokens_per_s &&
           measured_spec_tokens_per_s <= prior_band_p90_tokens_per_s;
  }
};

struct ErrorSummary {
  std::string group;  // "all", "batch 1", "engine sglang", ...
  int rows = 0;
  double median_abs_error = 0.0;
  double worst_abs_error = 0.0;
  std::string worst_row;
  double mean_signed_error = 0.0;  // bias: > 0 over-predicts
  int sign_right = 0;
  int called = 0;         // rows whose band clears the plain rate (ValidationRow::called)
  int called_right = 0;   // of those, the rows where speculation pays or loses as called
  int in_band = 0;        // rows whose measurement lies inside the predicted p10-p90 band
  int in_prior_band = 0;  // the same for the priors' band alone
  double median_band_width = 0.0;  // the rows' median (p90 - p10) / predicted
  [[nodiscard]] double sign_accuracy() const { return rows > 0 ? double(sign_right) / rows : 0.0; }
};

// One row predicted after calibrating the per-cycle term on other rows of its source.
struct CalibratedRow {
  ValidationRow row;               // predicted with the calibrated term
  std::vector<std::string> calibrated_on;  // the row(s) the term was fitted on
};

struct CalibrationRun {
  std::string mode;  // "one run -> siblings" or "on <row>"
  std::vector<CalibratedRow> rows;
  std::vector<std::string> sources_skipped;  // sources with too few rows, with the reason
  ErrorSummary summary;                      // every calibrated row
  std::vector<ErrorSummary> splits;          // the same by set ("check", "fit") and K sweeps
};

// A scenario key that an intervention catalogue patches (models/interventions/*.yaml), or an engine
// setting that public before/after pairs measure, with the kind of intervention it belongs to: two
// rows of one source that differ in the keys of one kind only form a catalogue-intervention pair
// (docs/validation.md#pairs).
struct InterventionKey {
  std::string key;   // "comm.nccl_proto"
  std::string kind;  // the catalogue entry's group, else its name: "nccl-proto", "cuda-graph-verify"
  // The plain step runs under it too (every comm.* key, the decode launch mode): a change of it
  // re-measures the plain run, so the two rows need not share one.
  bool plain_too = true;
};

// Two rows of one source that differ in one tuning setting (docs/validation.md#pairs): the gain of
// the second over the first, measured and predicted (the ratio of the two rows' own predictions).
struct GainPair {
  std::string source;
  std::string set;      // the source's set: "fit" or "check"
  // "draft shape" (K, top-k, draft tokens), "draft", "tp", or a catalogue intervention's kind
  // (InterventionKey::kind: "allreduce-impl", "nccl-proto", "cuda-graph-verify", ...)
  std::string setting;
  bool intervention = false;  // a catalogue intervention, not the draft shape, draft or TP
  std::string before;   // the first row's name
  std::string after;
  std::string change;   // what changed, "3/1/4 -> 5/1/6"
  double measured_gain = 0.0;   // spec_after / spec_before - 1
  double predicted_gain = 0.0;
  // The predicted gain's p10-p90 as `rank` gives it (whatif.cpp add_gain_bands): the fit set's gain
  // residuals applied to this ratio, those of the pair's own source left out. Empty where fewer than
  // kMinModelErrorRows pairs remain (a fit source with most of the fit set's pairs).
  std::optional<std::pair<double, double>> gain_band;
  [[nodiscard]] bool sign_right() const { return (measured_gain > 0.0) == (predicted_gain > 0.0); }
  [[nodiscard]] double gain_error_points() const { return 100.0 * std::abs(predicted_gain - measured_gain); }
  // Whether rank commits to a sign here: the band is clear of 0 (else rank says "too close to call").
  [[nodiscard]] bool called() const { return gain_band && !holds_zero(*gain_band); }
  [[nodiscard]] bool band_holds() const {
    return gain_band && measured_gain >= gain_band->first && measured_gain <= gain_band->second;
  }
};

// Three or more rows of one source measured on one box that differ only in one tuning setting: the
// options a user ranks. Kendall tau between the predicted and the measured order of their
// speculative rates, and whether the predicted best is the measured best.
struct OptionRanking {
  std::string source;
  std::string set;
  std::string setting;
  bool intervention = false;
  std::vector<std::string> options;  // row names, in file order
  std::vector<double> predicted;     // each option's predicted and measured speculative tokens/s
  std::vector<double> measured;
  double kendall_tau = 0.0;
  bool top_pick_right = false;
  std::string predicted_best;
  std::string measured_best;
  // The options rank cannot tell from its pick: those whose gain over the pick has a band that holds
  // 0 (add_gain_bands; the pick itself included), and whether the measured best is among them.
  // Empty where the pairs give no band.
  std::vector<std::string> shortlist;
  bool shortlist_holds_best = false;
};

struct PairSummary {
  // "check", "fit", "all", then every set's pairs by family: "draft/tp" (the draft shape, draft
  // and TP) and "interventions" (catalogue interventions)
  std::string group;
  int pairs = 0;
  double median_gain_error_points = 0.0;
  int sign_right = 0;
  int sources = 0;
  int rankings = 0;
  double mean_kendall_tau = 0.0;
  int top_pick_right = 0;
  int with_band = 0;     // pairs with a gain band (GainPair::gain_band)
  int called = 0;        // of those, the band clear of 0: rank commits to the sign
  int called_right = 0;  // of those, the sign right
  int in_band = 0;       // pairs whose measured gain lies in the band
  int with_shortlist = 0;        // rankings with a shortlist (OptionRanking::shortlist)
  int shortlist_holds_best = 0;  // of those, the measured best among the options rank cannot tell apart
  int shortlisted_options = 0;   // options on those shortlists, and on those rankings in all
  int shortlist_ranking_options = 0;
};

// The pairs and rankings of scored rows (every source, by set), and their summaries. Rows pair on the
// draft shape, the draft and TP, and on the kinds of `keys` (their `settings`); rows that differ in
// two of these never pair.
void derive_pairs(const std::vector<ValidationRow>& rows, const std::vector<InterventionKey>& keys,
                  std::vector<GainPair>& pairs, std::vector<OptionRanking>& rankings,
                  std::vector<PairSummary>& summaries);
// The spread of specsim's error on measured gains (docs/validation.md#pairs): the fit set's pair
// residuals r = ln((1 + measured gain) / (1 + predicted gain)), each taken both ways (r and -r: a
// pair's before and after are in file order, and its reverse is as much a pair): p90 = the
// nearest-rank p80 of |r|, p10 = -p90. `leave_out` drops a source's pairs. None below
// kMinModelErrorRows pairs.
struct GainResidualBand {
  int pairs = 0;
  double p10 = 0.0;
  double p90 = 0.0;
};
[[nodiscard]] std::optional<GainResidualBand> gain_residual_band(const std::vector<GainPair>& pairs,
                                                                 const std::string& leave_out = "");
// Each pair's gain band as `rank` draws one (whatif.cpp add_gain_bands) from gain_residual_band with
// the pair's own source left out: (1 + predicted) exp(r_p10) - 1 .. (1 + predicted) exp(r_p90) - 1.
// A check pair's band is then what a user would have read; a fit pair's never holds its own
// residual. Each ranking's shortlist from the same band, over each option's predicted ratio to the pick.
void add_gain_bands(std::vector<GainPair>& pairs, std::vector<OptionRanking>& rankings);
// The summaries of pairs and rankings: "check", "fit", "all", then "draft/tp" and "interventions"
// (what derive_pairs fills; again once the pairs carry their gain bands).
[[nodiscard]] std::vector<PairSummary> summarize_pairs(const std::vector<GainPair>& pairs,
                                                       const std::vector<OptionRanking>& rankings);
// The keys the data directory's intervention catalogues patch, beside the engine settings that no
// catalogue tries yet (the decode launch mode, async scheduling), sorted by key. Entries that change
// the draft shape or TP are left out: those pair as "draft shape" and "tp".
[[nodiscard]] std::vector<InterventionKey> intervention_keys(const DataDir& data = DataDir());
// A loaded row's value of each key (after the settings its speculative run changed,
// validation.applied), as a patch would write it; "" where the file leaves it to its default.
[[nodiscard]] std::map<std::string, std::string> row_settings(const Scenario& row, const std::vector<InterventionKey>& keys);
// Kendall's tau-a of two equally long sequences: (concordant - discordant) / (n (n - 1) / 2); ties
// count neither way.
[[nodiscard]] double kendall_tau(const std::vector<double>& a, const std::vector<double>& b);

// A plain rate predicted at another batch of one deployment (docs/validation.md#batch-transfer): the
// source's row at its lowest batch is calibrated as `predict --concurrency` calibrates it (at the
// file's workload.batch, reused at every level) and predicts the plain rate its sibling measured at
// a higher batch. Acceptance plays no part: it tests the forward and host model across batch, which
// the verify's width and every --concurrency level rest on. Siblings share the source, the target,
// the box, TP, context, engine, the plain run's settings and how its rate was measured.
struct BatchTransfer {
  std::string source;
  std::string set;        // the source's set ("fit", "check"), or "" where its rows are not scored
  std::string from_row;   // the calibrating row (the lowest batch)
  int from_batch = 1;
  std::string to_row;     // the first row at the predicted batch
  int to_batch = 1;
  double measured_plain_tokens_per_s = 0.0;   // to_row's
  double predicted_plain_tokens_per_s = 0.0;
  [[nodiscard]] double error() const { return predicted_plain_tokens_per_s / measured_plain_tokens_per_s - 1.0; }
  // The speculative rate at to_row's batch, as predict --concurrency gives it from from_row's plain
  // run: to_row's scenario (its acceptance, draft shape and the settings of its speculative run),
  // calibrated on from_row's plain measurement, with predict's band (the priors' spread, widened by
  // specsim's error on the fit set's rows of other sources). 0 where to_row is not scored.
  double measured_spec_tokens_per_s = 0.0;
  double predicted_spec_tokens_per_s = 0.0;
  double spec_p10_tokens_per_s = 0.0;
  double spec_p90_tokens_per_s = 0.0;
  // The band as a prediction at the measured batch carries it (the priors and the fit set's row
  // error), before the transfer's own error (transfer_error_of) widens it to spec_p10/p90.
  double spec_own_p10_tokens_per_s = 0.0;
  double spec_own_p90_tokens_per_s = 0.0;
  [[nodiscard]] bool has_spec() const { return measured_spec_tokens_per_s > 0.0 && predicted_spec_tokens_per_s > 0.0; }
  [[nodiscard]] double spec_error() const { return predicted_spec_tokens_per_s / measured_spec_tokens_per_s - 1.0; }
  [[nodiscard]] bool spec_in_band() const {
    return measured_spec_tokens_per_s >= spec_p10_tokens_per_s && measured_spec_tokens_per_s <= spec_p90_tokens_per_s;
  }
};

struct BatchTransferSummary {
  std::string group;  // "check", "fit", "all"
  int points = 0;
  int sources = 0;
  double median_abs_error = 0.0;
  double worst_abs_error = 0.0;
  std::string worst_point;  // "from_row -> to_row"
  double mean_signed_error = 0.0;  // > 0: the plain rate at the higher batch over-predicted
  // The speculative rate at the higher batch (BatchTransfer::spec_error), over the points that have one.
  int spec_points = 0;
  double spec_median_abs_error = 0.0;
  double spec_mean_signed_error = 0.0;
  int spec_in_band = 0;
  double spec_median_band_width = 0.0;  // (p90 - p10) / predicted
};

// Every deployment of `files` measured at two or more batches, each higher batch predicted from the
// lowest (the rows' files as loaded, the settings their speculative runs changed left out: the
// plain run is the file's). `rows` are the files' predicted rows, in the same order: their names,
// batches, sets, measured plain and speculative rates and plain-run settings. Each scored higher
// batch also gets its speculative rate and band (BatchTransfer::predicted_spec_tokens_per_s), the
// band widened by model_error_of the fit set's scored rows from other sources than its own, then
// (rules.batch_transfer_error) by transfer_error_of the fit set's transfers from other sources.
[[nodiscard]] std::vector<BatchTransfer> derive_batch_transfers(const std::vector<std::string>& files,
                                                                const std::vector<ValidationRow>& rows,
                                                                const std::vector<InterventionKey>& keys,
                                                                const DataDir& data = DataDir(),
                                                                const ModelRules& rules = {});
// The least a transfer error is measured on: one slope, estimated by moments, from this many
// speculative transfers of kMinModelErrorSources sources.
inline constexpr int kMinTransferErrorPoints = 5;
struct TransferError {
  int points = 0;
  int sources = 0;
  double sigma_per_ln_batch = 0.0;
};
// The error a rate carried to another batch adds (ModelError::transfer_sigma_per_ln_batch), over the
// fit set's transfers with a speculative side, those of `without_source` left out: with r_i =
// ln(measured / predicted), s_i the ln sigma of the transfer's own band on r_i's side
// (spec_own_p10/p90 as a z_0.9 point) and d_i = |ln(to_batch / from_batch)|, each weighted 1 / its
// source's points, sigma^2 = max(0, sum w (r^2 - s^2)) / sum w d^2 (the moments of r ~ N(0, s^2 +
// sigma^2 d^2)), times t_0.9(sources - 1) / z_0.9 where rules.model_error_small_sample. Empty below
// kMinTransferErrorPoints points or kMinModelErrorSources sources.
[[nodiscard]] std::optional<TransferError> transfer_error_of(const std::vector<BatchTransfer>& transfers,
                                                             const std::string& without_source,
                                                             const ModelRules& rules = {});
// "check", "fit" and "all" (every transfer, a not-scored source's too).
[[nodiscard]] std::vector<BatchTransferSummary> summarize_batch_transfers(const std::vector<BatchTransfer>& transfers);

struct ValidationReport {
  std::vector<ValidationRow> rows;  // every row, scored or not
  // Scored rows only: "check", "fit" and "leave-source-out" (every scored row, each band fitted
  // without its source) first, then the leave-source-out rows split by batch, engine, ...
  std::vector<ErrorSummary> summaries;
  std::optional<ErrorSummary> not_scored;  // the rows reported apart, for reading only
  std::string split_file;                  // validation/split.yaml read, or "" when there is none
  std::vector<std::string> split_notes;    // sources the split does not list (scored as check), ...
  std::optional<CalibrationRun> calibration;
  std::vector<GainPair> pairs;          // docs/validation.md#pairs
  std::vector<OptionRanking> rankings;
  std::vector<PairSummary> pair_summaries;  // "check", "fit", "all", "draft/tp", "interventions"
  // specsim's error over the fit set's rows (what --write-model-error writes); empty below the minimum.
  std::optional<ModelError> model_error;
  std::string model_error_note;  // why some rows' bands carry no model error; "" when all do
  std::vector<BatchTransfer> batch_transfers;  // docs/validation.md#batch-transfer
  std::vector<BatchTransferSummary> batch_transfer_summaries;
};

struct ValidateOptions {
  // Empty: leave the per-cycle term as each row states it. "all": every row of a source with at
  // least kMinRowsForLeaveOneOut rows calibrates the term alone and predicts each sibling (the
  // same draft, then batch, where the source has any). Otherwise a row's name: fit on it, predict
  // the rest of its source.
  std::string calibrate_on;
  // The fit/check split; empty: the nearest split.yaml in a folder above the row files, else the data
  // directory's validation/split.yaml where it exists, else every scored row is in the fit set (its
  // band still fitted without its own source).
  std::string split_file;
  // The calibration rules every row is predicted under (all as the model ships them, unless an
  // ablation flips one).
  ModelRules rules;
};

inline constexpr int kMinRowsForLeaveOneOut = 2;

// The row files under each path (a file, or a folder searched recursively for *.yaml), sorted.
// An empty list means the data directory's validation/ folder.
[[nodiscard]] std::vector<std::string> find_validation_rows(const std::vector<std::string>& paths,
                                                            const DataDir& data = DataDir());

// Loads and predicts one row; throws specsim::Error naming the file and key of a missing field.
[[nodiscard]] ValidationRow validate_row(const std::string& file, const DataDir& data = DataDir());
// The same row with its per-cycle engine term replaced.
[[nodiscard]] ValidationRow validate_row(const std::string& file, double spec_extra_per_cycle_s,
                                         const DataDir& data = DataDir(), const ModelRules& rules = {});

// The per-cycle term that makes a row's predicted speculative tokens/s equal its measurement.
[[nodiscard]] double fit_spec_extra_per_cycle(const std::string& file, const DataDir& data = DataDir(),
                                              const ModelRules& rules = {});

// One rule of calibration (ModelRules, model_rule_names) flipped against the model as it ships: the
// check, fit and leave-source-out summaries with the rule as shipped and flipped
// (docs/validation.md#ablation). A rule stays on only where it helps on the check set, whose
// sources no rule was derived from.
struct RuleAblation {
  std::string rule;
  bool shipped = true;  // the rule's state in the model as it ships
  std::vector<ErrorSummary> as_shipped;  // "check", "fit", "leave-source-out"
  std::vector<ErrorSummary> flipped;     // the same with the rule flipped
  // The batch transfers' summaries, "check" and "fit" (their speculative side: median |error|, band),
  // as shipped and flipped: a rule that moves no row can move a rate carried to another batch.
  std::vector<BatchTransferSummary> transfers_as_shipped;
  std::vector<BatchTransferSummary> transfers_flipped;
};
// Every rule of model_rule_names() flipped in turn over `files` (each a full validate_corpus run).
[[nodiscard]] std::vector<RuleAblation> ablate_rules(const std::vector<std::string>& files,
                                                     const ValidateOptions& options = {},
                                                     const DataDir& data = DataDir());

// The term a fit carries to another row: engine work is never negative. A row whose fit is below 0
// has a modelled cycle longer than it measured (at batch > 1, at long context): that error is its
// own, and carried to a row of another batch or context it would move that row by the same amount
// (a -7 ms term from batch 8-128 rows took a batch-1 Kimi row from +27% to +134%). Taken as 0, and
// said so in the predicted row's warnings.
[[nodiscard]] double transferable_spec_extra(double fitted_s);

// specsim's error beyond the priors (docs/validation.md#model-error): over the rows' residuals
// r = ln(measured / predicted) with nearest-rank p10/p90 and their prior bands' ln sigmas s_i =
// (ln p90_i - ln p10_i) / (2 z_0.9),
//
//   sigma_r = (r_p90 - r_p10) / (2 z_0.9),   sigma = sqrt(max(0, sigma_r^2 - mean s_i^2))
//
// the part of the residuals' spread that the priors' own spread does not already account for.
// Empty below kMinModelErrorRows rows from kMinModelErrorSources sources.
inline constexpr int kMinModelErrorRows = 10;
inline constexpr int kMinModelErrorSources = 3;
// With rules.model_error_per_source each row weighs 1 / its source's rows in the quantiles (nearest
// rank on the cumulative weight); with rules.model_error_small_sample the spread is multiplied by
// t_0.9(sources - 1) / z_0.9 before the priors' part is taken out (ModelError::small_sample_factor).
[[nodiscard]] std::optional<ModelError> model_error_of(const std::vector<const ValidationRow*>& rows,
                                                       const ModelRules& rules = {});
// The model error as models/model-error.yaml holds it (load_model_error reads it back).
[[nodiscard]] std::string model_error_yaml(const ModelError& e);

// A validation row's scenario as validate predicts it: the file, with the settings its speculative
// run changed (validation.applied) patched in over the file as written (the plain run, as_measured),
// under `rules`. Throws specsim::Error naming the file and the key a row must carry.
[[nodiscard]] Scenario load_validation_row(const std::string& file, const DataDir& data, const ModelRules& rules = {});

[[nodiscard]] ErrorSummary summarize_errors(const std::string& group, const std::vector<const ValidationRow*>& rows);

[[nodiscard]] ValidationReport validate_corpus(const std::vector<std::string>& files, const ValidateOptions& options,
                                               const DataDir& data = DataDir());

// How much worse than the committed summary a change may make the corpus before CI fails: a guard
// against regressions, not a target (docs/validation.md). Per summary group present in both.
struct RegressionMargins {
  double median_abs_error = 0.01;  // one percentage point of median |error|
  double worst_abs_error = 0.03;   // three points of the worst row
  int sign_rows = 0;               // rows whose sign may turn wrong
  int band_rows = 2;               // rows whose measurement may leave the p10-p90 band
  double median_band_width = 0.05;  // five points of (p90 - p10) / predicted: a band may not widen to hold
  // The check set's and all pairs' gains (`pair_summary`, where the baseline has one):
  double gain_error_points = 1.0;  // one point of median |predicted - measured gain|
  int pair_sign = 1;               // pairs whose gain sign may turn wrong
  int pair_band = 2;               // pairs whose measured gain may leave rank's band
  // and no sign rank commits to (its band clear of 0) may turn wrong, nor a call predict commits to
  // (a row's band clear of its plain rate, ValidationRow::called).
};

// The groups a baseline must hold: the guard judges the out-of-sample figures.
inline const std::vector<std::string> kGuardedGroups = {"check", "leave-source-out"};

// The ways `report` is worse than the summary in `baseline_file` (the `summary` array of
// `specsim validate --json`), and than its `pair_summary` for the "check" and "all" pairs where the
// baseline has one; empty when it is not. A corpus whose row or pair count changed is a difference
// too: the baseline must be rewritten with the rows. A vacuous baseline is refused (an Error naming
// the file and key): no summary, a kGuardedGroups group missing, a group twice, counts below 0 or
// above its rows (or pairs), a median above its worst.
[[nodiscard]] std::vector<std::string> regressions_against(const ValidationReport& report,
                                                           const std::string& baseline_file,
                                                           const RegressionMargins& margins = {});

// Its text, JSON and CSV views: render_validation in report.hpp.

}  // namespace specsim
