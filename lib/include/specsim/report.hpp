// Every result specsim computes, rendered for people (a text table read at a glance), for programs
// (JSON) and for spreadsheets (CSV): one render_x(result, format) per result, so the command line
// parses its options, calls the library and picks a view. A view prints only what its result
// holds, and the three formats of one result always agree.
//
// JSON key names are a contract scripts and notebooks rely on (docs/cli.md lists them per command);
// seconds and counts are plain numbers.
//
// CSV (RFC 4180): one header row, then one row per item of the result's natural table (predict: one
// row with the main figures; rank: one per intervention; sweep: one per point; comm: one per size).
// A column carries its JSON key's name; where the table flattens a nested object the keys are
// joined by dots (`speculative.tokens_per_s`), and an array of two bounds reads `.low` / `.high`.
// Values are spelled as the JSON spells them, so a cell and its JSON value read alike: numbers in
// the shortest text that reads back the same double, booleans true/false, no value (JSON null) an
// empty field. A field holding a comma, a quote or a line break is quoted, its quotes doubled.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "specsim/comm_table.hpp"
#include "specsim/comm_scaling.hpp"
#include "specsim/concurrency.hpp"
#include "specsim/cycle.hpp"
#include "specsim/engine_log.hpp"
#include "specsim/memory_fit.hpp"
#include "specsim/monte_carlo.hpp"
#include "specsim/validate_corpus.hpp"
#include "specsim/whatif.hpp"

namespace specsim {

enum class Format { kText, kJson, kCsv };
inline constexpr std::array kFormats = {Format::kText, Format::kJson, Format::kCsv};
// "text", "json", "csv"
[[nodiscard]] const char* to_string(Format format);
// The format of one of those names; empty for any other text.
[[nodiscard]] std::optional<Format> parse_format(std::string_view name);

// Why the scenario's measured speculative rate is no yardstick for its prediction; "" when it is.
// It is one only for the deployment that was measured: the scenario as its file states it (no
// `--set` patch: any patch makes a what-if), with measurements taken on its own target model and
// box (no measurements.model, measurements.topology or measurements.gpu naming another).
// docs/model.md, "Measurements of another deployment".
[[nodiscard]] std::string held_out_mismatch(const Scenario& s);

// What predict warns about a scenario's acceptance before it predicts: a per-position list that
// the draft length cuts or repeats (cycle.cpp), and tree siblings a measured tau leaves unused.
// The command line and the Python module print the same.
[[nodiscard]] std::vector<std::string> acceptance_warnings(const Scenario& s);

// A Monte Carlo of the cycle as it was run: the options say how (seed, requests, per-request
// spread) so a reader can repeat it.
struct MonteCarloRun {
  MonteCarloOptions options;
  MonteCarloResult result;
  // Requests per forward: the result's tokens/s are one request's, the view's the batch's.
  int batch = 1;
};

// predict at one batch: the prediction on its calibrated model, then the warnings the run raised
// (text: `warning:` lines; JSON: `warnings`, left out when there are none) and, when given, the
// Monte Carlo of the same cycle (JSON: `monte_carlo`).
[[nodiscard]] std::string render_prediction(const CycleModel& model, const Prediction& p, Format format,
                                            const std::vector<std::string>& warnings = {},
                                            const std::optional<MonteCarloRun>& monte_carlo = std::nullopt);
// The Monte Carlo alone: the section predict's text ends with, the object its JSON holds under
// `monte_carlo`, one CSV row.
[[nodiscard]] std::string render_monte_carlo(const MonteCarloRun& run, Format format);
// predict at several concurrency levels (concurrency.hpp) of the scenario named `scenario`: a row
// per level, infeasible ones with the reason.
[[nodiscard]] std::string render_concurrency(const std::string& scenario, const ConcurrencyPrediction& p,
                                             Format format, const std::vector<std::string>& warnings = {});

// The memory a deployment needs per GPU: the section predict's text holds (a heading line, then a
// line per part), the object its JSON holds under "memory" (gpu, batch, capacity_bytes, used_bytes,
// fits, engine_fraction, engine_rule, parts[{name, bytes, basis}]), a CSV row per part.
[[nodiscard]] std::string render_memory(const MemoryFit& fit, Format format);

// rank of the scenario named `scenario` (as the user gave it). CSV: a row per intervention.
[[nodiscard]] std::string render_rank(const std::string& scenario, const RankReport& report, Format format);
// sweep: the text shows the best `text_rows` points; JSON and CSV every point of result.points
// (sweep() kept those), each rendered alone, so memory is the text's, not a JSON tree's.
[[nodiscard]] std::string render_sweep(const SweepResult& result, Format format, int text_rows = 20);
// sweep --stream: every point of a grid in grid order, rendered as sweep() hands it over (SweepSink),
// so that no point is held. CSV: the header row and the rows render_sweep prints. JSON: one
// document, `"order": "grid"` first, then `"points"` (each object as render_sweep prints it), then
// the counts render_sweep gives (`invalid`, `invalid_example`, `baseline_tokens_per_s`, `infeasible`,
// `interrupted`, `evaluated`, `total`), known only at the end. Text has no such view (throws Error).
class SweepStream {
 public:
  SweepStream(std::vector<std::string> keys, Format format);
  // The point, preceded by the head (CSV's header row; JSON up to `"points": [`) when it is the first.
  [[nodiscard]] std::string point(const SweepPoint& p);
  // What closes the listing: the head when no point came, then (JSON) the counts of `result`.
  [[nodiscard]] std::string end(const SweepResult& result) const;

 private:
  [[nodiscard]] std::string head() const;
  std::vector<std::string> keys_;
  Format format_;
  std::size_t points_ = 0;
};
// sweep at concurrency levels: the best point per level.
[[nodiscard]] std::string render_concurrency_sweep(const ConcurrencySweep& sweep, Format format);
// sweep_by_workload's buckets: render_concurrency_sweep when there is one without conditions; else a
// table per bucket (text), {"condition_keys", "keys", "buckets": [...]} (JSON), one CSV table.
[[nodiscard]] std::string render_workload_sweep(const std::vector<ConcurrencySweep>& buckets, Format format);
// breakeven of the scenario named `scenario`. CSV: a row per draft length.
[[nodiscard]] std::string render_breakeven(const std::string& scenario, const BreakEvenReport& report,
                                           Format format);

// Text: a line per size. JSON: {"points": [{bytes, time_s}]} (with `prior_s` and `measured_over_prior`
// when a topology gave NCCL's model), and for an estimate `ranks`, `measured_at_ranks`,
// `from_ranks`, `rank_scaling` ("power" or "nccl"). CSV: a row per size.
[[nodiscard]] std::string render_comm(const CommTable& table, Format format);

// The compute time of one forward on one TP rank per token count (specsim forward).
struct ForwardTable {
  struct Point {
    int tokens = 0;
    double time_s = 0.0;
  };
  std::string model;
  std::string gpu;
  int tp = 1;
  long long context = 0;
  LaunchMode mode = LaunchMode::kGraph;
  std::string basis;  // where the compute settings come from: defaults, a profile, a measured step
  double bandwidth_efficiency = 0.0;  // eta_bw the times rest on
  std::string tp_note;  // what check_tensor_parallel said about the split; "" when nothing
  std::vector<Point> points;
};
// Text: a line per token count with its ratio to the first. JSON: {"points":[{tokens, time_s}]},
// in that key order. CSV: a row per token count.
[[nodiscard]] std::string render_forward(const ForwardTable& table, Format format);

// Every registered prior (priors.hpp), the calibration's readings and the engine terms a band draws
// (prior_band.hpp), as `specsim priors` prints them. Text: a block per prior (value, p10-p90, what it
// feeds, any cut or second reading, its source), then a line per reading and per engine term. JSON:
// {"priors": [{key, label, value, p10, p90, unit, drawn, draw_min?, draw_max?, second_reading?:
// {label, weight}, feeds, source, evidence}], "readings": [{key, label, point, other, weight,
// settles, source}], "engine_terms": [{label, key, charged}]}, in that key order. CSV: a row per prior.
[[nodiscard]] std::string render_priors(Format format);

// What engine logs say about acceptance (specsim acceptance). CSV: one row, the per-position rates
// as `per_position.1` ... (first draft position first).
[[nodiscard]] std::string render_acceptance(const AcceptanceSummary& summary, Format format);

// The validation corpus (specsim validate). CSV: a row per corpus row, then one per calibrated row
// (`set` says which).
[[nodiscard]] std::string render_validation(const ValidationReport& report, Format format);

// Each calibration rule flipped against the model as shipped (specsim validate --ablate). Text: per
// rule, the check, fit and leave-source-out lines as shipped and flipped, and whether the rule as
// shipped does better on the check set. JSON: {"rules":[{rule, shipped, as_shipped[], flipped[]}]}.
// CSV: a row per rule and group.
[[nodiscard]] std::string render_ablation(const std::vector<RuleAblation>& rules, Format format);

}  // namespace specsim
