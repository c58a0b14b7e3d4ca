// breakeven's views: per draft length, the acceptance and tokens per cycle at which speculation
// equals plain decoding.
#include <nlohmann/json.hpp>

#include <cstdio>

#include "report/csv.hpp"
#include "specsim/report.hpp"

namespace specsim {

namespace {

nlohmann::json breakeven_json(const BreakEven& b) {
  return {{"num_steps", b.num_steps},
          {"accept", b.accept ? nlohmann::json(*b.accept) : nlohmann::json(nullptr)},
          {"tokens_per_cycle", b.tokens_per_cycle},
          {"tokens_per_s_at_accept_1", b.speculative_tokens_per_s_at_accept_1}};
}

nlohmann::json report_json(const BreakEvenReport& r) {
  nlohmann::json j = breakeven_json(r.at_scenario);
  j["baseline_tokens_per_s"] = r.baseline_tokens_per_s;
  j["by_num_steps"] = nlohmann::json::array();
  for (const auto& b : r.by_num_steps) j["by_num_steps"].push_back(breakeven_json(b));
  return j;
}

std::string report_text(const std::string& scenario, const BreakEvenReport& r) {
  char buf[256];
  std::string out = "specsim breakeven: " + scenario + "\n";
  std::snprintf(buf, sizeof buf, "  plain decoding %.1f tok/s\n", r.baseline_tokens_per_s);
  out += buf;
  out += "  num_steps  break-even accept  break-even tokens/cycle  tok/s at accept 1\n";
  for (const auto& b : r.by_num_steps) {
    const bool mine = b.num_steps == r.at_scenario.num_steps;
    std::snprintf(buf, sizeof buf, "  %9d  %17s  %23.3f  %17.1f%s\n", b.num_steps,
                  b.accept ? (std::to_string(*b.accept).substr(0, 5)).c_str() : "never",
                  b.tokens_per_cycle, b.speculative_tokens_per_s_at_accept_1, mine ? "   <- scenario" : "");
    out += buf;
  }
  out += "  accept is the first draft position's rate, deeper positions keep the shape of the scenario's profile\n";
  return out;
}

}  // namespace

std::string render_breakeven(const std::string& scenario, const BreakEvenReport& report, Format format) {
  switch (format) {
    case Format::kText: return report_text(scenario, report);
    case Format::kJson: return report_json(report).dump(2) + "\n";
    case Format::kCsv:
      return csv_table({"num_steps", "accept", "tokens_per_cycle", "tokens_per_s_at_accept_1"},
                       report_json(report)["by_num_steps"]);
  }
  return "";
}

}  // namespace specsim
