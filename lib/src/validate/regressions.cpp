// The validation corpus's summary against a committed baseline (`specsim validate --baseline`).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <fstream>

#include "specsim/error.hpp"
#include "specsim/units.hpp"
#include "specsim/validate_corpus.hpp"

namespace specsim {

namespace {

std::string fixed(double v, int digits) { return units::format_fixed(v, digits); }

struct BaselineGroup {
  std::string group;
  int rows = 0;
  double median = 0.0;
  double worst = 0.0;
  int sign = 0;
  std::optional<int> called, called_right;
  std::optional<int> in_band;
  std::optional<double> band_width;
};

// The keys of one entry of a baseline's array (`summary[i]` or `pair_summary[i]`), each refused by
// file and key where it could not describe real rows or pairs.
struct EntryReader {
  const nlohmann::json& b;
  const std::string& file;
  std::string at;  // "summary[2]."

  [[noreturn]] void fail(const char* key, const std::string& why) const {
    throw Error(SourceLocation{file, 0, 0}, at + key, why);
  }
  double number(const char* key) const {
    if (!b.contains(key) || !b[key].is_number()) fail(key, "expected a number");
    const double v = b[key].get<double>();
    if (!(v >= 0.0) || !std::isfinite(v)) fail(key, "expected a finite number >= 0");
    return v;
  }
  // A whole count (a group's pairs or points).
  int whole(const char* key) const {
    const double v = number(key);
    if (v != std::floor(v)) fail(key, "expected a whole count");
    return int(v);
  }
  // A whole count of at most `most` (`of` says what: "the group's 37 rows").
  int count(const char* key, int most, const std::string& of) const {
    const double v = number(key);
    if (v != std::floor(v) || v > most) fail(key, "expected a whole count of at most " + of);
    return int(v);
  }
};

// One `summary` entry, refused where it could not describe real rows.
BaselineGroup read_group(const nlohmann::json& b, const std::string& file, std::size_t index) {
  const EntryReader e{b, file, "summary[" + std::to_string(index) + "]."};
  if (!b.is_object() || !b.contains("group") || !b["group"].is_string()) e.fail("group", "expected a text");
  BaselineGroup g;
  g.group = b["group"].get<std::string>();
  const double rows = e.number("rows");
  if (rows < 1 || rows != std::floor(rows)) e.fail("rows", "expected a whole count >= 1 (a group without rows guards nothing)");
  g.rows = int(rows);
  const std::string of_rows = "the group's " + std::to_string(g.rows) + " rows";
  g.median = e.number("median_abs_error");
  g.worst = e.number("worst_abs_error");
  if (g.median > g.worst) e.fail("median_abs_error", "is above the group's worst |error|");
  g.sign = e.count("sign_right", g.rows, of_rows);
  if (b.contains("called")) g.called = e.count("called", g.rows, of_rows);
  if (b.contains("called_right")) {
    if (!g.called) e.fail("called_right", "needs `called`");
    g.called_right = e.count("called_right", *g.called, "the " + std::to_string(*g.called) + " rows called");
  }
  if (b.contains("in_band")) g.in_band = e.count("in_band", g.rows, of_rows);
  if (b.contains("median_band_width")) g.band_width = e.number("median_band_width");
  return g;
}

// The groups a baseline's `pair_summary` and `batch_transfer_summary` are guarded for.
const char* const kGuardedPairGroups[] = {"check", "all"};

// The entries of a baseline's `key` array whose group is guarded, with their index; none where the
// baseline was written before the array existed.
std::vector<std::pair<std::size_t, const nlohmann::json*>> guarded_entries(const nlohmann::json& j, const char* key,
                                                                           const std::string& file) {
  std::vector<std::pair<std::size_t, const nlohmann::json*>> out;
  if (!j.contains(key)) return out;
  const auto& a = j[key];
  if (!a.is_array()) throw Error(SourceLocation{file, 0, 0}, key, "expected an array");
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto& b = a[i];
    if (!b.is_object() || !b.contains("group") || !b["group"].is_string()) {
      throw Error(SourceLocation{file, 0, 0}, std::string(key) + "[" + std::to_string(i) + "].group", "expected a text");
    }
    const std::string group = b["group"].get<std::string>();
    if (std::any_of(std::begin(kGuardedPairGroups), std::end(kGuardedPairGroups), [&](const char* g) { return group == g; })) {
      out.emplace_back(i, &b);
    }
  }
  return out;
}

struct BaselinePairs {
  std::string group;
  int pairs = 0;
  double median_points = 0.0;
  int sign = 0;
  std::optional<int> called, called_right, in_band;
};

// One guarded `pair_summary` entry, refused where it could not describe real pairs.
BaselinePairs read_pair_group(const nlohmann::json& b, const std::string& file, std::size_t index) {
  const EntryReader e{b, file, "pair_summary[" + std::to_string(index) + "]."};
  BaselinePairs g;
  g.group = b["group"].get<std::string>();
  g.pairs = e.whole("pairs");
  const std::string of_pairs = "the group's " + std::to_string(g.pairs) + " pairs";
  g.median_points = e.number("median_gain_error_points");
  g.sign = e.count("sign_right", g.pairs, of_pairs);
  if (b.contains("called")) g.called = e.count("called", g.pairs, of_pairs);
  if (b.contains("called_right")) {
    if (!g.called) e.fail("called_right", "needs `called`");
    g.called_right = e.count("called_right", *g.called, "the " + std::to_string(*g.called) + " pairs called");
  }
  if (b.contains("in_band")) g.in_band = e.count("in_band", g.pairs, of_pairs);
  return g;
}

std::vector<BaselinePairs> read_pair_groups(const nlohmann::json& j, const std::string& file) {
  std::vector<BaselinePairs> out;
  for (const auto& [i, b] : guarded_entries(j, "pair_summary", file)) out.push_back(read_pair_group(*b, file, i));
  return out;
}

struct BaselineTransfers {
  std::string group;
  int points = 0;
  double median = 0.0;
  double worst = 0.0;
};

std::vector<BaselineTransfers> read_transfer_groups(const nlohmann::json& j, const std::string& file) {
  std::vector<BaselineTransfers> out;
  for (const auto& [i, b] : guarded_entries(j, "batch_transfer_summary", file)) {
    const EntryReader e{*b, file, "batch_transfer_summary[" + std::to_string(i) + "]."};
    BaselineTransfers t;
    t.group = (*b)["group"].get<std::string>();
    t.points = e.whole("points");
    t.median = e.number("median_abs_error");
    t.worst = e.number("worst_abs_error");
    if (t.median > t.worst) e.fail("median_abs_error", "is above the group's worst |error|");
    out.push_back(t);
  }
  return out;
}

// The ways the report's batch transfers are worse than the baseline's (the rows' margins).
void transfer_regressions(const ValidationReport& report, const std::vector<BaselineTransfers>& baseline,
                          const RegressionMargins& margins, std::vector<std::string>& out) {
  for (const BaselineTransfers& b : baseline) {
    const auto it = std::find_if(report.batch_transfer_summaries.begin(), report.batch_transfer_summaries.end(),
                                 [&](const BatchTransferSummary& s) { return s.group == b.group; });
    const std::string name = b.group + " batch transfers";
    const int points = it == report.batch_transfer_summaries.end() ? 0 : it->points;
    if (points != b.points) {
      out.push_back(name + ": " + std::to_string(points) + " points, the baseline has " + std::to_string(b.points) +
                    " (rewrite the baseline with the corpus change)");
      continue;
    }
    if (it->median_abs_error > b.median + margins.median_abs_error) {
      out.push_back(name + ": median |error| " + fixed(100 * it->median_abs_error, 1) + "%, baseline " +
                    fixed(100 * b.median, 1) + "%");
    }
    if (it->worst_abs_error > b.worst + margins.worst_abs_error) {
      out.push_back(name + ": worst |error| " + fixed(100 * it->worst_abs_error, 1) + "% (" + it->worst_point +
                    "), baseline " + fixed(100 * b.worst, 1) + "%");
    }
  }
}

nlohmann::json read_baseline_json(const std::string& baseline_file) {
  std::ifstream in(baseline_file);
  if (!in) throw Error(SourceLocation{baseline_file, 0, 0}, "", "cannot read the baseline summary");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(SourceLocation{baseline_file, 0, 0}, "", std::string("not JSON: ") + e.what());
  }
}

std::vector<BaselineGroup> read_baseline(const nlohmann::json& j, const std::string& baseline_file) {
  if (!j.is_object() || !j.contains("summary") || !j["summary"].is_array() || j["summary"].empty()) {
    throw Error(SourceLocation{baseline_file, 0, 0}, "summary",
                "expected the non-empty `summary` array of `specsim validate --json`");
  }
  std::vector<BaselineGroup> groups;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < j["summary"].size(); ++i) {
    groups.push_back(read_group(j["summary"][i], baseline_file, i));
    if (!seen.insert(groups.back().group).second) {
      throw Error(SourceLocation{baseline_file, 0, 0}, "summary[" + std::to_string(i) + "].group",
                  "'" + groups.back().group + "' appears twice");
    }
  }
  for (const auto& wanted : kGuardedGroups) {
    if (!seen.count(wanted)) {
      throw Error(SourceLocation{baseline_file, 0, 0}, "summary",
                  "has no '" + wanted + "' group: the guard judges the out-of-sample figures");
    }
  }
  return groups;
}

// The ways the report's pairs are worse than the baseline's `pair_summary`.
void pair_regressions(const ValidationReport& report, const std::vector<BaselinePairs>& baseline,
                      const RegressionMargins& margins, std::vector<std::string>& out) {
  for (const BaselinePairs& b : baseline) {
    const auto it = std::find_if(report.pair_summaries.begin(), report.pair_summaries.end(),
                                 [&](const PairSummary& s) { return s.group == b.group; });
    const std::string name = b.group + " pairs";
    if (it == report.pair_summaries.end() || it->pairs != b.pairs) {
      out.push_back(name + ": " + std::to_string(it == report.pair_summaries.end() ? 0 : it->pairs) +
                    " pairs, the baseline has " + std::to_string(b.pairs) + " (rewrite the baseline with the corpus change)");
      continue;
    }
    if (it->median_gain_error_points > b.median_points + margins.gain_error_points) {
      out.push_back(name + ": median |gain error| " + fixed(it->median_gain_error_points, 1) + " points, baseline " +
                    fixed(b.median_points, 1));
    }
    if (it->sign_right < b.sign - margins.pair_sign) {
      out.push_back(name + ": gain sign right in " + std::to_string(it->sign_right) + " pairs, baseline " + std::to_string(b.sign));
    }
    if (b.called && b.called_right && it->called - it->called_right > *b.called - *b.called_right) {
      out.push_back(name + ": wrong signs among those rank commits to " + std::to_string(it->called - it->called_right) +
                    ", baseline " + std::to_string(*b.called - *b.called_right));
    }
    if (b.in_band && it->in_band < *b.in_band - margins.pair_band) {
      out.push_back(name + ": measured gain inside rank's band in " + std::to_string(it->in_band) + " pairs, baseline " +
                    std::to_string(*b.in_band));
    }
  }
}

}  // namespace

std::vector<std::string> regressions_against(const ValidationReport& report, const std::string& baseline_file,
                                             const RegressionMargins& margins) {
  std::vector<std::string> out;
  const nlohmann::json j = read_baseline_json(baseline_file);
  const std::vector<BaselineGroup> groups = read_baseline(j, baseline_file);
  const std::vector<BaselinePairs> pairs = read_pair_groups(j, baseline_file);
  const std::vector<BaselineTransfers> transfers = read_transfer_groups(j, baseline_file);
  for (const BaselineGroup& b : groups) {
    const auto it = std::find_if(report.summaries.begin(), report.summaries.end(),
                                 [&](const ErrorSummary& s) { return s.group == b.group; });
    if (it == report.summaries.end()) {
      out.push_back(b.group + ": in the baseline, not in this corpus");
      continue;
    }
    if (b.rows != it->rows) {
      out.push_back(b.group + ": " + std::to_string(it->rows) + " rows, the baseline has " + std::to_string(b.rows) +
                    " (rewrite the baseline with the corpus change)");
      continue;
    }
    if (it->median_abs_error > b.median + margins.median_abs_error) {
      out.push_back(b.group + ": median |error| " + fixed(100 * it->median_abs_error, 1) + "%, baseline " +
                    fixed(100 * b.median, 1) + "%");
    }
    if (it->worst_abs_error > b.worst + margins.worst_abs_error) {
      out.push_back(b.group + ": worst |error| " + fixed(100 * it->worst_abs_error, 1) + "% (" + it->worst_row +
                    "), baseline " + fixed(100 * b.worst, 1) + "%");
    }
    if (it->sign_right < b.sign - margins.sign_rows) {
      out.push_back(b.group + ": speedup sign right in " + std::to_string(it->sign_right) + " rows, baseline " +
                    std::to_string(b.sign));
    }
    if (b.called && b.called_right && it->called - it->called_right > *b.called - *b.called_right) {
      out.push_back(b.group + ": wrong calls among those predict commits to " +
                    std::to_string(it->called - it->called_right) + ", baseline " +
                    std::to_string(*b.called - *b.called_right));
    }
    if (b.in_band && it->in_band < *b.in_band - margins.band_rows) {
      out.push_back(b.group + ": measurement inside the p10-p90 band in " + std::to_string(it->in_band) +
                    " rows, baseline " + std::to_string(*b.in_band));
    }
    if (b.band_width && it->median_band_width > *b.band_width + margins.median_band_width) {
      out.push_back(b.group + ": median band width " + fixed(100 * it->median_band_width, 1) + "% of the point, baseline " +
                    fixed(100 * *b.band_width, 1) + "%");
    }
  }
  pair_regressions(report, pairs, margins, out);
  transfer_regressions(report, transfers, margins, out);
  return out;
}

}  // namespace specsim
