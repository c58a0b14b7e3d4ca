// sweep's views: every point of a grid, best first; and the best point per concurrency level.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "report/csv.hpp"
#include "report/text.hpp"
#include "specsim/error.hpp"
#include "specsim/report.hpp"

namespace specsim {

namespace {

// The axes' values of a point, under their keys.
nlohmann::json set_json(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  nlohmann::json set;
  for (std::size_t i = 0; i < keys.size(); ++i) set[keys[i]] = values[i];
  return set;
}

nlohmann::json point_json(const std::vector<std::string>& keys, const SweepPoint& p) {
  const nlohmann::json set = set_json(keys, p.values);
  if (!p.infeasible.empty()) return {{"set", set}, {"feasible", false}, {"infeasible", p.infeasible}};
  return {{"set", set}, {"tokens_per_s", p.tokens_per_s}, {"speedup", p.speedup}, {"tokens_per_cycle", p.tokens_per_cycle},
          {"cycle_s", p.cycle_s}, {"baseline_tokens_per_s", p.baseline_tokens_per_s}};
}

// The sweep's JSON object without its points ("points" an empty array).
nlohmann::json sweep_head_json(const SweepResult& r) {
  nlohmann::json j;
  j["baseline_tokens_per_s"] = r.baseline_tokens_per_s;
  j["invalid"] = r.invalid;
  j["invalid_example"] = r.invalid_example;
  j["points"] = nlohmann::json::array();
  if (r.infeasible > 0) j["infeasible"] = r.infeasible;
  // Fewer points than valid ones: the listing is the best of them (--top).
  if (r.points.size() < r.valid) j["valid"] = r.valid;
  if (r.interrupted) {
    j["interrupted"] = true;
    j["evaluated"] = r.evaluated;
    j["total"] = r.total;
  }
  return j;
}

// The point as an item of `"points"` in dump(1): an item of an array at depth 1 opens at 2 spaces,
// its lines 2 deeper than alone; after the array's `[` when `first`, else after a comma.
std::string json_point_item(const std::vector<std::string>& keys, const SweepPoint& p, bool first) {
  std::string item = point_json(keys, p).dump(1);
  for (std::size_t nl = item.find('\n'); nl != std::string::npos; nl = item.find('\n', nl + 3)) item.insert(nl + 1, "  ");
  return (first ? "\n  " : ",\n  ") + item;
}

// dump(1) of the whole object, written a point at a time: a million points never stand in memory
// as JSON values (each costs about 1 KB there), only as the text they print as.
std::string sweep_json_text(const SweepResult& r) {
  const std::string head = sweep_head_json(r).dump(1);
  constexpr std::string_view kEmpty = "\"points\": []";
  const std::size_t at = head.find(kEmpty);
  if (r.points.empty() || at == std::string::npos) return head + "\n";
  std::string out = head.substr(0, at) + "\"points\": [";
  for (std::size_t i = 0; i < r.points.size(); ++i) out += json_point_item(r.keys, r.points[i], i == 0);
  return out + "\n ]" + head.substr(at + kEmpty.size()) + "\n";
}

std::vector<CsvColumn> sweep_csv_columns(const std::vector<std::string>& keys);

// The point's CSV row (without the header).
std::string csv_point_row(const std::vector<std::string>& keys, const SweepPoint& p) {
  const std::string table = csv_table(sweep_csv_columns(keys), nlohmann::json::array({point_json(keys, p)}));
  return table.substr(table.find('\n') + 1);
}

// The CSV table a point at a time (the header once), for the same reason.
std::string sweep_csv_text(const SweepResult& r) {
  std::string out = csv_table(sweep_csv_columns(r.keys), nlohmann::json::array());
  for (const auto& p : r.points) out += csv_point_row(r.keys, p);
  return out;
}

// The axes' columns, named by their keys (as the text's header names them), then `figures`.
std::vector<CsvColumn> axis_columns(const std::vector<std::string>& keys, const std::vector<std::string>& set_path,
                                    const std::vector<CsvColumn>& figures) {
  std::vector<CsvColumn> columns;
  for (const auto& k : keys) {
    std::vector<std::string> path = set_path;
    path.push_back(k);
    columns.emplace_back(k, path);
  }
  columns.insert(columns.end(), figures.begin(), figures.end());
  return columns;
}

// The rows of the table, `rows` at most: each row's axis values right-aligned under their keys.
std::string point_lines(const SweepResult& r, bool plain_varies, int rows) {
  std::string out;
  char buf[256];
  for (std::size_t n = 0; n < r.points.size() && int(n) < rows; ++n) {
    out += "  ";
    for (std::size_t i = 0; i < r.keys.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%*s  ", int(r.keys[i].size()), r.points[n].values[i].c_str());
      out += buf;
    }
    const auto& p = r.points[n];
    if (!p.infeasible.empty()) {
      out += "INFEASIBLE: " + p.infeasible + "\n";
    } else if (plain_varies) {
      std::snprintf(buf, sizeof buf, "%5.1f  %11.1f  %6.3fx  %12.3f\n", p.tokens_per_s, p.baseline_tokens_per_s,
                    p.speedup, p.tokens_per_cycle);
    } else {
      std::snprintf(buf, sizeof buf, "%5.1f  %6.3fx  %12.3f\n", p.tokens_per_s, p.speedup, p.tokens_per_cycle);
    }
    out += buf;
  }
  return out;
}

std::string sweep_text(const SweepResult& r, int rows) {
  std::string out;
  char buf[256];
  if (r.interrupted) {
    std::snprintf(buf, sizeof buf, "specsim sweep: INTERRUPTED after %zu of %zu points\n", r.evaluated, r.total);
    out += buf;
  }
  // Axes on the model, the box or the compute terms move plain decoding too: then each row shows
  // its own plain rate, which its speedup is against.
  const bool plain_varies = r.plain_low_tokens_per_s != r.plain_high_tokens_per_s;
  if (plain_varies) {
    std::snprintf(buf, sizeof buf,
                  "specsim sweep: %zu valid, %zu invalid skipped; plain decoding %.1f to %.1f tok/s (per row)\n",
                  r.valid, r.invalid, r.plain_low_tokens_per_s, r.plain_high_tokens_per_s);
  } else {
    std::snprintf(buf, sizeof buf, "specsim sweep: %zu valid, %zu invalid skipped; plain decoding %.1f tok/s\n",
                  r.valid, r.invalid, r.baseline_tokens_per_s);
  }
  out += buf;
  if (r.invalid) out += "  first invalid: " + r.invalid_example + "\n";
  if (r.infeasible) {
    out += "  " + std::to_string(r.infeasible) + " of them do not fit in GPU memory (INFEASIBLE, listed last)\n";
  }
  out += "  ";
  for (const auto& k : r.keys) out += k + "  ";
  out += plain_varies ? "tok/s  plain tok/s  speedup  tokens/cycle\n" : "tok/s  speedup  tokens/cycle\n";
  return out + point_lines(r, plain_varies, rows);
}

nlohmann::json best_json(const ConcurrencySweep& cs, const ConcurrencyBest& l) {
  const double c = l.concurrency;
  return {{"set", set_json(cs.keys, l.best.values)},
          {"tokens_per_s", l.best.tokens_per_s},
          {"per_request_tokens_per_s", l.best.tokens_per_s / c},
          {"speedup", l.best.speedup},
          {"tokens_per_cycle", l.best.tokens_per_cycle},
          {"cycle_s", l.best.cycle_s},
          {"baseline_tokens_per_s", l.best.baseline_tokens_per_s},
          {"baseline_per_request_tokens_per_s", l.best.baseline_tokens_per_s / c}};
}

nlohmann::json concurrency_sweep_json(const ConcurrencySweep& cs) {
  nlohmann::json levels = nlohmann::json::array();
  for (const auto& l : cs.levels) {
    nlohmann::json j{{"concurrency", l.concurrency},
                     {"points", l.points},
                     {"infeasible_points", l.infeasible_points},
                     {"invalid_points", l.invalid_points},
                     {"feasible", l.feasible()}};
    if (l.feasible()) {
      j["best"] = best_json(cs, l);
      j["pays"] = l.pays();
    } else {
      j["best"] = nullptr;
      j["infeasible"] = l.infeasible;
    }
    levels.push_back(std::move(j));
  }
  nlohmann::json out{{"keys", cs.keys},
                     {"calibrated_at_batch", cs.calibrated_batch},
                     {"note", calibration_note(cs.calibrated_batch)},
                     {"payoff", payoff_summary(cs)},
                     {"concurrency", levels},
                     {"stops_paying_at", cs.stops_paying_at ? nlohmann::json(*cs.stops_paying_at) : nlohmann::json()}};
  if (!cs.warnings.empty()) out["warnings"] = cs.warnings;
  return out;
}

// The table of one sweep's levels (header, a row per level, where speculation stops paying),
// each line after `indent`.
std::string concurrency_levels_text(const ConcurrencySweep& cs, const std::string& indent) {
  std::string out = indent + "concurrency  ";
  for (const auto& k : cs.keys) out += k + "  ";
  out += "tok/s/req      tok/s  plain tok/s  speedup  tokens/cycle  points\n";
  char buf[256];
  for (const auto& l : cs.levels) {
    std::snprintf(buf, sizeof buf, "%11d  ", l.concurrency);
    out += indent + buf;
    if (!l.feasible()) {
      out += "INFEASIBLE at every point: " + l.infeasible + "\n";
      continue;
    }
    for (std::size_t i = 0; i < cs.keys.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%*s  ", int(cs.keys[i].size()), l.best.values[i].c_str());
      out += buf;
    }
    std::snprintf(buf, sizeof buf, "%9.1f  %9.1f  %11.1f  %6.3fx  %12.3f  %6zu", l.best.tokens_per_s / l.concurrency,
                  l.best.tokens_per_s, l.best.baseline_tokens_per_s, l.best.speedup, l.best.tokens_per_cycle, l.points);
    out += buf;
    if (l.infeasible_points > 0) out += " (" + std::to_string(l.infeasible_points) + " do not fit)";
    out += "\n";
  }
  return out + indent + payoff_summary(cs) + "\n";
}

std::string joined(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out;
}

std::string concurrency_sweep_text(const ConcurrencySweep& cs) {
  return "specsim sweep: the best " + joined(cs.keys) + " per concurrency level\n" + "  " +
         calibration_note(cs.calibrated_batch) + "\n" + concurrency_levels_text(cs, "  ") +
         text::warning_lines(cs.warnings);
}

// One table per bucket of condition values, under a line naming them.
std::string workload_sweep_text(const std::vector<ConcurrencySweep>& buckets) {
  const ConcurrencySweep& first = buckets.front();
  std::string out = "specsim sweep: the best " + joined(first.keys) + " per concurrency level, for each " +
                    joined(first.condition_keys) + "\n  " + calibration_note(first.calibrated_batch) + "\n";
  for (const auto& b : buckets) {
    std::string title;
    for (std::size_t i = 0; i < b.condition_keys.size(); ++i) {
      title += (title.empty() ? "" : ", ") + b.condition_keys[i] + " = " + b.condition_values[i];
    }
    out += "  " + title + "\n" + concurrency_levels_text(b, "    ");
  }
  // Each bucket's calibration warns on its own workload; a warning they share is said once.
  std::vector<std::string> warnings;
  for (const auto& b : buckets) {
    for (const auto& w : b.warnings) {
      if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
    }
  }
  return out + text::warning_lines(warnings);
}

// {"condition_keys", "keys", "calibrated_at_batch", "note", "buckets": [each bucket's sweep JSON with
// its "conditions"]}; a level row of "buckets[].concurrency" also carries its bucket's "conditions"
// (what the CSV reads).
nlohmann::json workload_sweep_json(const std::vector<ConcurrencySweep>& buckets) {
  const ConcurrencySweep& first = buckets.front();
  nlohmann::json out{{"condition_keys", first.condition_keys},
                     {"keys", first.keys},
                     {"calibrated_at_batch", first.calibrated_batch},
                     {"note", calibration_note(first.calibrated_batch)},
                     {"buckets", nlohmann::json::array()}};
  for (const auto& b : buckets) {
    nlohmann::json j = concurrency_sweep_json(b);
    j.erase("keys");
    j.erase("calibrated_at_batch");
    j.erase("note");
    j["conditions"] = set_json(b.condition_keys, b.condition_values);
    for (auto& level : j["concurrency"]) level["conditions"] = j["conditions"];
    out["buckets"].push_back(std::move(j));
  }
  return out;
}

// A sweep point's columns: the axes by their keys, then its figures.
std::vector<CsvColumn> sweep_csv_columns(const std::vector<std::string>& keys) {
  return axis_columns(keys, {"set"}, {"tokens_per_s", "speedup", "tokens_per_cycle", "cycle_s", "baseline_tokens_per_s"});
}

std::vector<CsvColumn> concurrency_csv_columns(const std::vector<std::string>& condition_keys,
                                               const std::vector<std::string>& keys) {
  std::vector<CsvColumn> figures;
  for (const char* key : {"tokens_per_s", "per_request_tokens_per_s", "speedup", "tokens_per_cycle",
                          "baseline_tokens_per_s"}) {
    figures.emplace_back(key, std::vector<std::string>{"best", key});
  }
  std::vector<CsvColumn> columns = axis_columns(keys, {"best", "set"}, figures);
  columns.insert(columns.begin(), CsvColumn("concurrency"));
  const std::vector<CsvColumn> conditions = axis_columns(condition_keys, {"conditions"}, {});
  columns.insert(columns.begin(), conditions.begin(), conditions.end());
  return columns;
}

}  // namespace

std::string render_sweep(const SweepResult& result, Format format, int text_rows) {
  switch (format) {
    case Format::kText: return sweep_text(result, text_rows);
    case Format::kJson: return sweep_json_text(result);
    case Format::kCsv: return sweep_csv_text(result);
  }
  return "";
}

SweepStream::SweepStream(std::vector<std::string> keys, Format format) : keys_(std::move(keys)), format_(format) {
  if (format == Format::kText) throw Error("sweep: a streamed listing is CSV or JSON, not text");
}

std::string SweepStream::head() const {
  if (format_ == Format::kCsv) return csv_table(sweep_csv_columns(keys_), nlohmann::json::array());
  return "{\n \"order\": \"grid\",\n \"points\": [";
}

std::string SweepStream::point(const SweepPoint& p) {
  const bool first = points_++ == 0;
  const std::string row = format_ == Format::kCsv ? csv_point_row(keys_, p) : json_point_item(keys_, p, first);
  return first ? head() + row : row;
}

// JSON: the counts after the points, as render_sweep gives them but `valid` (every valid point is
// listed) and `points`, each key on its line at depth 1.
std::string SweepStream::end(const SweepResult& result) const {
  const std::string opening = points_ == 0 ? head() : "";
  if (format_ == Format::kCsv) return opening;
  nlohmann::json counts = sweep_head_json(result);
  counts.erase("points");
  counts.erase("valid");
  const std::string text = counts.dump(1);  // "{\n ...\n}"
  return opening + (points_ == 0 ? "]" : "\n ]") + ",\n" + text.substr(2, text.size() - 4) + "\n}\n";
}

// CSV: a row per level, `concurrency` first, then the best point's values and figures (no
// `best.` prefix: the row is the level's best); a level where nothing fits has empty fields.
std::string render_concurrency_sweep(const ConcurrencySweep& sweep, Format format) {
  switch (format) {
    case Format::kText: return concurrency_sweep_text(sweep);
    case Format::kJson: return concurrency_sweep_json(sweep).dump(1) + "\n";
    case Format::kCsv: return csv_table(concurrency_csv_columns({}, sweep.keys), concurrency_sweep_json(sweep)["concurrency"]);
  }
  return "";
}

// Without condition axes, render_concurrency_sweep of the one sweep. With them, a table per bucket
// (text), the buckets in one object (JSON), or one CSV table whose rows start with the bucket's values.
std::string render_workload_sweep(const std::vector<ConcurrencySweep>& buckets, Format format) {
  if (buckets.size() == 1 && buckets.front().condition_keys.empty()) return render_concurrency_sweep(buckets.front(), format);
  switch (format) {
    case Format::kText: return workload_sweep_text(buckets);
    case Format::kJson: return workload_sweep_json(buckets).dump(1) + "\n";
    case Format::kCsv: {
      const nlohmann::json all = workload_sweep_json(buckets);
      nlohmann::json rows = nlohmann::json::array();
      for (const auto& b : all["buckets"]) {
        for (const auto& level : b["concurrency"]) rows.push_back(level);
      }
      return csv_table(concurrency_csv_columns(buckets.front().condition_keys, buckets.front().keys), rows);
    }
  }
  return "";
}

}  // namespace specsim
