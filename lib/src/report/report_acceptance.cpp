// acceptance's views: what engine logs say about acceptance, pooled across lines by cycles.
#include <nlohmann/json.hpp>

#include <algorithm>

#include "report/csv.hpp"
#include "report/text.hpp"
#include "specsim/report.hpp"
#include "specsim/units.hpp"

namespace specsim {

namespace {

std::string fixed(double v, int digits) { return units::format_fixed(v, digits); }

std::string format_names(const AcceptanceSummary& s) {
  std::string formats;
  for (auto f : s.formats) formats += (formats.empty() ? "" : ", ") + std::string(to_string(f));
  return formats;
}

nlohmann::json acceptance_json(const AcceptanceSummary& s) {
  nlohmann::json j;
  j["tokens_per_cycle"] = s.tokens_per_cycle;
  j["per_position"] = s.conditional_rates;
  j["per_position_unconditional"] = s.unconditional_rates;
  j["lines"] = s.num_records;
  j["formats"] = format_names(s);
  j["cycles"] = s.cycles;
  j["cycles_are_counts"] = s.cycles_are_counts;
  if (s.throughput_tokens_per_s) j["throughput_tokens_per_s"] = *s.throughput_tokens_per_s;
  if (s.tokens_per_cycle_interval) {
    j["tokens_per_cycle_interval"] = {s.tokens_per_cycle_interval->low, s.tokens_per_cycle_interval->high};
  }
  if (s.draft_accept_rate) j["draft_accept_rate"] = *s.draft_accept_rate;
  j["confidence"] = s.confidence;
  j["notes"] = s.notes;
  j["warnings"] = s.warnings;
  return j;
}

std::string acceptance_text(const AcceptanceSummary& s) {
  std::string out = "specsim acceptance: " + std::to_string(s.num_records) + " lines (" + format_names(s) + ")\n";
  out += "  tokens per cycle (tau)    " + fixed(s.tokens_per_cycle, 3);
  if (s.tokens_per_cycle_interval) {
    out += "  [" + fixed(100 * s.confidence, 0) + "% " + fixed(s.tokens_per_cycle_interval->low, 3) + ", " +
           fixed(s.tokens_per_cycle_interval->high, 3) + "]";
  }
  out += "\n";
  if (!s.conditional_rates.empty()) {
    out += "  conditional by position  ";
    for (double b : s.conditional_rates) out += " " + fixed(b, 3);
    out += "\n  unconditional (as logged)";
    for (double a : s.unconditional_rates) out += " " + fixed(a, 3);
    out += "\n";
  }
  if (s.throughput_tokens_per_s) out += "  throughput                " + fixed(*s.throughput_tokens_per_s, 2) + " tok/s\n";
  out += text::warning_lines(s.warnings);
  for (const auto& n : s.notes) out += "  note: " + n + "\n";
  return out;
}

// One row: the pooled figures, then a column per draft position and kind of rate.
std::vector<CsvColumn> acceptance_columns(const AcceptanceSummary& s) {
  std::vector<CsvColumn> columns = {"lines", "formats", "cycles", "cycles_are_counts", "tokens_per_cycle",
                                    "tokens_per_cycle_interval.low", "tokens_per_cycle_interval.high",
                                    "confidence", "draft_accept_rate", "throughput_tokens_per_s"};
  const std::size_t positions = std::max(s.conditional_rates.size(), s.unconditional_rates.size());
  for (const char* key : {"per_position", "per_position_unconditional"}) {
    for (std::size_t i = 1; i <= positions; ++i) {
      columns.emplace_back(key + ("." + std::to_string(i)), std::vector<std::string>{key, std::to_string(i)});
    }
  }
  columns.insert(columns.end(), {"warnings", "notes"});
  return columns;
}

}  // namespace

std::string render_acceptance(const AcceptanceSummary& summary, Format format) {
  switch (format) {
    case Format::kText: return acceptance_text(summary);
    case Format::kJson: return acceptance_json(summary).dump(2) + "\n";
    case Format::kCsv:
      return csv_table(acceptance_columns(summary), nlohmann::json::array({acceptance_json(summary)}));
  }
  return "";
}

}  // namespace specsim
