// The validation corpus's summary against a committed baseline (`specsim validate --baseline`).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

#include "specsim/error.hpp"
#include "specsim/units.hpp"
#include "specsim/validate_corpus.hpp"

namespace specsim {

namespace {

std::string fixed(double v, int digits) { return units::format_fixed(v, digits); }

}  // namespace

std::vector<std::string> regressions_against(const ValidationReport& report, const std::string& baseline_file,
                                             const RegressionMargins& margins) {
  std::ifstream in(baseline_file);
  if (!in) throw Error(SourceLocation{baseline_file, 0, 0}, "", "cannot read the baseline summary");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(SourceLocation{baseline_file, 0, 0}, "", std::string("not JSON: ") + e.what());
  }
  if (!j.is_object() || !j.contains("summary") || !j["summary"].is_array()) {
    throw Error(SourceLocation{baseline_file, 0, 0}, "summary", "expected the `summary` array of `specsim validate --json`");
  }
  std::vector<std::string> out;
  for (const auto& b : j["summary"]) {
    const auto get = [&](const char* key) {
      if (!b.contains(key) || !b[key].is_number()) {
        throw Error(SourceLocation{baseline_file, 0, 0}, std::string("summary[].") + key, "expected a number");
      }
      return b[key].get<double>();
    };
    if (!b.contains("group") || !b["group"].is_string()) {
      throw Error(SourceLocation{baseline_file, 0, 0}, "summary[].group", "expected a text");
    }
    const std::string group = b["group"].get<std::string>();
    const auto it = std::find_if(report.summaries.begin(), report.summaries.end(),
                                 [&](const ErrorSummary& s) { return s.group == group; });
    if (it == report.summaries.end()) {
      out.push_back(group + ": in the baseline, not in this corpus");
      continue;
    }
    const int rows = static_cast<int>(get("rows"));
    if (rows != it->rows) {
      out.push_back(group + ": " + std::to_string(it->rows) + " rows, the baseline has " + std::to_string(rows) +
                    " (rewrite the baseline with the corpus change)");
      continue;
    }
    const double median = get("median_abs_error");
    const double worst = get("worst_abs_error");
    const int sign = static_cast<int>(get("sign_right"));
    if (it->median_abs_error > median + margins.median_abs_error) {
      out.push_back(group + ": median |error| " + fixed(100 * it->median_abs_error, 1) + "%, baseline " +
                    fixed(100 * median, 1) + "%");
    }
    if (it->worst_abs_error > worst + margins.worst_abs_error) {
      out.push_back(group + ": worst |error| " + fixed(100 * it->worst_abs_error, 1) + "% (" + it->worst_row +
                    "), baseline " + fixed(100 * worst, 1) + "%");
    }
    if (it->sign_right < sign - margins.sign_rows) {
      out.push_back(group + ": speedup sign right in " + std::to_string(it->sign_right) + " rows, baseline " +
                    std::to_string(sign));
    }
    // Older baselines carry no band count: nothing to compare.
    if (b.contains("in_band") && it->in_band < static_cast<int>(get("in_band")) - margins.band_rows) {
      out.push_back(group + ": measurement inside the p10-p90 band in " + std::to_string(it->in_band) +
                    " rows, baseline " + std::to_string(static_cast<int>(get("in_band"))));
    }
  }
  return out;
}

}  // namespace specsim
