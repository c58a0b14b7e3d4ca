// The compute model's measured inputs read from files: the step-time CSV that `specsim calibrate
// compute` fits (compute_fit.hpp) and, in read_profiles.cpp, the compute profiles it writes.
#include "specsim/compute_profile.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "specsim/error.hpp"
#include "specsim/plausibility.hpp"
#include "specsim/units.hpp"

namespace specsim {

namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) {
    const auto b = cell.find_first_not_of(" \t\r");
    const auto e = cell.find_last_not_of(" \t\r");
    out.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
  }
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// The step-time CSV's header: each column's index ("time" is the time_<unit> column) and the
// time unit.
struct StepColumns {
  std::map<std::string, int> index;
  double time_unit_s = 0;
  std::string time_unit_name;  // "ms" of time_ms
  std::size_t columns = 0;     // cells in the header: every row has as many
};

StepColumns read_step_header(const std::vector<std::string>& cells, const std::string& path, int line_no) {
  auto where = [&](int column) { return SourceLocation{path, line_no, column}; };
  StepColumns h;
  auto& col = h.index;
  h.columns = cells.size();
  for (std::size_t i = 0; i < cells.size(); ++i) col[cells[i]] = int(i);
  for (const char* need : {"model", "gpu", "tp", "tokens", "context", "mode"}) {
    if (!col.count(need)) throw Error(where(1), need, "header has no '" + std::string(need) + "' column");
  }
  if (col.count("time")) {
    throw Error(where(col.at("time") + 1), "time", "no time column with a unit: name it time_s, time_ms or time_us");
  }
  for (const auto& [name, i] : col) {
    if (!name.starts_with("time_")) continue;
    try {
      h.time_unit_s = units::parse_duration_s("1" + name.substr(5));
    } catch (const Error&) {
      throw Error(where(i + 1), name, "time column unit must be s, ms or us (e.g. 'time_ms')");
    }
    col["time"] = i;
    h.time_unit_name = name.substr(5);
    break;
  }
  if (!col.count("time")) throw Error(where(1), "time", "header has no time column with a unit (e.g. 'time_ms')");
  return h;
}

ComputeStep read_step_row(const std::vector<std::string>& cells, const StepColumns& h, const std::string& path,
                          int line_no) {
  const auto& col = h.index;
  auto where = [&](int column) { return SourceLocation{path, line_no, column}; };
  auto cell = [&](const std::string& name) -> const std::string& {
    const int i = col.at(name);
    if (i >= int(cells.size())) throw Error(where(i + 1), name, "missing value (row has " + std::to_string(cells.size()) + " cells)");
    return cells[std::size_t(i)];
  };
  // Counts stop at the plausibility table's bound, so a value never wraps when narrowed to int.
  const long max_count = static_cast<long>(plausible_range(Magnitude::kCount).max);
  auto integer = [&](const std::string& name, long min) {
    const std::string& c = cell(name);
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(c.c_str(), &end, 10);
    if (c.empty() || *end || errno == ERANGE || v < min || v > max_count) {
      throw Error(where(col.at(name) + 1), name, "expected an integer in [" + std::to_string(min) + ", " +
                                                     std::to_string(max_count) + "], got '" + c + "'");
    }
    return int(v);
  };
  // More cells than the header: a decimal comma ("5,9635") or a stray comma has split a field, and
  // every value after it would be read from the wrong column.
  if (cells.size() > h.columns) {
    throw Error(where(int(h.columns) + 1), "", "the row has " + std::to_string(cells.size()) + " cells, the header " +
                                                   std::to_string(h.columns) +
                                                   ": a decimal comma or a stray comma splits a field (write 5.96, not 5,96)");
  }
  ComputeStep s;
  s.line = line_no;
  s.model = cell("model");
  s.gpu = cell("gpu");
  s.tp = integer("tp", 1);
  if (col.count("layers_timed")) s.layers_timed = integer("layers_timed", 1);
  s.tokens = integer("tokens", 1);
  s.context_tokens = integer("context", 0);
  const std::string mode = cell("mode");
  if (mode != "graph" && mode != "eager") {
    throw Error(where(col.at("mode") + 1), "mode", "expected 'graph' or 'eager', got '" + mode + "'");
  }
  s.mode = mode == "graph" ? LaunchMode::kGraph : LaunchMode::kEager;
  const std::string& tc = cell("time");
  char* end = nullptr;
  const double t = std::strtod(tc.c_str(), &end);
  if (tc.empty() || *end || !(t > 0) || !std::isfinite(t)) {
    throw Error(where(col.at("time") + 1), "time", "expected a positive number, got '" + tc + "'");
  }
  s.time_s = t * h.time_unit_s;
  if (const std::string why = implausible(s.time_s, Magnitude::kDuration, tc + h.time_unit_name); !why.empty()) {
    throw Error(where(col.at("time") + 1), "time", why);
  }
  return s;
}

}  // namespace

std::vector<ComputeStep> read_compute_steps_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error({path, 0, 0}, "", "cannot open the step-time CSV");
  std::string line;
  int line_no = 0;
  std::optional<StepColumns> header;
  std::vector<ComputeStep> rows;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line[0] == '#' || line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto cells = split_csv(line);
    if (!header) {
      header = read_step_header(cells, path, line_no);
    } else {
      rows.push_back(read_step_row(cells, *header, path, line_no));
    }
  }
  if (rows.empty()) throw Error({path, line_no, 0}, "", "no data rows");
  return rows;
}

}  // namespace specsim
