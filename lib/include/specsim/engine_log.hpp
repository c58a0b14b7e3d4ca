// Engine logs: the speculative-decoding metrics lines SGLang, vLLM (V1 and V0) and llama.cpp
// print, parsed into records and pooled into one acceptance summary.
//
// Formats (exact lines in docs/references/specdec.md#log-formats and tests/data/valid/logs/):
//   SGLang   `Decode batch. #running-req: N, ..., accept len: X[, accept rate: R], ...,
//             gen throughput (token/s): Y, ...`      (scheduler_metrics_mixin.py)
//   vLLM V1  `SpecDecoding metrics: Mean acceptance length: X, Accepted throughput: ... tokens/s,
//             Drafted throughput: ... tokens/s, Accepted: A tokens, Drafted: D tokens,
//             Per-position acceptance rate: a_1, ..., a_K[, Avg Draft acceptance rate: R%]`
//   vLLM V0  `Speculative metrics: Draft acceptance rate: R, System efficiency: E, Number of
//             speculative tokens: K, Number of accepted tokens: A, Number of draft tokens: D,
//             Number of emitted tokens: M.`       (counters cumulative since server start)
//   llama.cpp `draft acceptance = R ( A accepted / D generated), mean acceptance length = X,
//             acceptance rate per position = (a_1, ..., a_K)`
//   llama-speculative's end summary, one value a line: `n_draft = K`, `n_predict = P`,
//             `n_drafted = D`, `n_accept = A`, `accept = R%` (examples/speculative/speculative.cpp):
//             cycles = P - A (each verify emits its accepted drafts plus one), tau = P / (P - A).
//   Prometheus `/metrics` text (one scrape, or two: before and after, whose difference is used):
//     vLLM    counters vllm:spec_decode_num_drafts_total, _num_draft_tokens_total,
//             _num_accepted_tokens_total, _num_accepted_tokens_per_pos_total{position="j"}
//             (vllm/v1/spec_decode/metrics.py, SpecDecodingProm): tau = 1 + accepted / drafts,
//             a_j = per_pos_j / drafts. One record per label set (engine); different model_name
//             values in one file are refused.
//     SGLang  gauges sglang:spec_accept_length (tau of the last logged interval) and
//             sglang:spec_accept_rate, weighted by sglang:num_running_reqs when present
//             (python/sglang/srt/metrics/collector.py); one record per scrape and label set.
// A line carrying a format's marker ("Decode batch." with "accept len", "SpecDecoding metrics:",
// "Speculative metrics:", "draft acceptance =", "n_drafted", "vllm:spec_decode_", "sglang:spec_accept")
// must parse completely; otherwise parsing throws specsim::Error with file:line:column and what was
// expected there. Other lines are skipped.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "specsim/acceptance.hpp"
#include "specsim/error.hpp"

namespace specsim {

enum class LogFormat { kSglang, kVllmV1, kVllmV0, kLlamaCpp, kLlamaServer, kLlamaSpeculative, kVllmMetrics, kSglangMetrics };
// "sglang", "vllm-v1", "vllm-v0", "llama.cpp", "llama-speculative", "vllm-metrics", "sglang-metrics"
[[nodiscard]] std::string_view to_string(LogFormat format);

// One metrics line. Rates are fractions (vLLM's "88.8%" becomes 0.888).
struct LogRecord {
  LogFormat format = LogFormat::kSglang;
  SourceLocation where;  // file and line (column 0)

  double tokens_per_cycle = 1.0;  // tau incl. the bonus token (V0: System efficiency * (K + 1))

  // Request-cycles (one request through one verify) the line covers, the pooling weight:
  // vLLM V1 drafts = Drafted / K; V0 Draft tokens / K; llama.cpp accepted / sum(a_i) (rounded;
  // the line has no draft count); SGLang #running-req, which is proportional to the interval's
  // request-cycles when every line covers the same decode_log_interval batches.
  double cycles = 0.0;
  bool cycles_are_counts = false;  // false for SGLang: a relative weight, not a count

  std::optional<std::int64_t> accepted_tokens;  // draft tokens accepted (V0: emitted - steps)
  std::optional<std::int64_t> drafted_tokens;   // draft tokens proposed
  std::optional<int> num_draft_positions;       // K when the line says it
  std::vector<double> unconditional_rates;      // a_i per position when logged
  std::optional<double> logged_accept_rate;     // the line's own "acceptance rate", as printed
  std::optional<double> throughput_tokens_per_s;  // generated tokens/s of the interval
  std::optional<int> running_requests;            // SGLang #running-req
  bool cumulative = false;  // V0: counters accumulate since server start
};

// nullopt for a line without any format's marker; a record; or specsim::Error for a damaged line.
[[nodiscard]] std::optional<LogRecord> parse_engine_log_line(std::string_view line,
                                                             const SourceLocation& where);
// Every metrics line of a stream or file, in order. file_name labels errors.
[[nodiscard]] std::vector<LogRecord> parse_engine_log(std::istream& in, const std::string& file_name);
// Throws specsim::Error when the file cannot be read or holds no metrics line.
[[nodiscard]] std::vector<LogRecord> parse_engine_log_file(const std::string& path);

// Clopper-Pearson ("exact") interval for a binomial proportion: successes of trials.
[[nodiscard]] ConfidenceInterval clopper_pearson(std::int64_t successes, std::int64_t trials,
                                                 double confidence);

// The pooled view of many lines. Pooling is by request-cycles, never by lines:
//   tau = sum_i w_i tau_i / sum_i w_i (w_i = cycles; for vLLM/llama.cpp that is 1 + accepted/drafts
//   exactly), a_j = sum_i w_i a_ij / sum_i w_i over lines with per-position rates,
//   throughput = sum tokens_i / sum time_i with tokens_i = w_i tau_i, time_i = tokens_i / tput_i.
// V0 lines are cumulative: each run of non-decreasing counters contributes its last line.
struct AcceptanceSummary {
  int num_records = 0;                 // lines that entered the pool
  std::vector<LogFormat> formats;      // distinct formats seen, in order of appearance
  double cycles = 0.0;                 // total request-cycles (relative for SGLang)
  bool cycles_are_counts = false;      // every record counted its cycles
  double tokens_per_cycle = 1.0;       // pooled tau
  std::vector<double> unconditional_rates;  // pooled a_j (positions every contributing line has)
  std::vector<double> conditional_rates;    // b_j = a_j / a_{j-1}
  std::optional<double> throughput_tokens_per_s;  // pooled over lines that report it
  double confidence = 0.95;  // of the intervals below, as summarize() was asked

  // From counts, only when every pooled line has them (not SGLang): accepted / drafted tokens
  // with a Clopper-Pearson interval, and tau = 1 + (drafted / drafts) * accepted / drafted mapped
  // through the same interval (drafted / drafts = K for vLLM).
  std::optional<std::int64_t> accepted_tokens, drafted_tokens;
  std::optional<double> draft_accept_rate;  // accepted / drafted
  std::optional<ConfidenceInterval> draft_accept_rate_interval;
  std::optional<ConfidenceInterval> tokens_per_cycle_interval;
  // Per position j: successes round(a_j * drafts) of drafts trials, Clopper-Pearson.
  std::vector<ConfidenceInterval> unconditional_rate_intervals;

  std::vector<std::string> notes;     // assumptions the numbers rest on, for reports
  std::vector<std::string> warnings;  // what the reader must see: pooled lines that disagree (draft
                                      // lengths, engines), positions left out
};

// Throws specsim::Error when records is empty or confidence is outside (0, 1).
[[nodiscard]] AcceptanceSummary summarize(std::span<const LogRecord> records,
                                          double confidence = 0.95);

// The acceptance a summary supports: UnconditionalChain with the pooled a_j when per-position
// rates were logged, otherwise MeasuredTau with the pooled tau. Validated where it meets a draft
// shape (validate(), the cycle model): SGLang lines do not say the chain length, the scenario does.
[[nodiscard]] Acceptance acceptance_from_summary(const AcceptanceSummary& summary);

// The warning to show when measured per-position rates (count `positions`) meet a scenario that
// drafts `num_draft_steps`: positions beyond the scenario are not used, or the scenario's extra
// steps repeat the last measured conditional rate. Empty when they agree or nothing is per-position.
[[nodiscard]] std::string position_mismatch_warning(std::size_t positions, int num_draft_steps);

}  // namespace specsim
