// forward's views: the compute time of one forward on one TP rank per token count.
#include <nlohmann/json.hpp>

#include <cstdio>

#include "report/csv.hpp"
#include "specsim/report.hpp"
#include "specsim/units.hpp"

namespace specsim {

namespace {

// ordered_json keeps "tokens" before "time_s": scripts read these names in this order.
nlohmann::ordered_json forward_json(const ForwardTable& t) {
  nlohmann::ordered_json j;
  j["points"] = nlohmann::ordered_json::array();
  for (const auto& p : t.points) j["points"].push_back({{"tokens", p.tokens}, {"time_s", p.time_s}});
  return j;
}

std::string forward_text(const ForwardTable& t) {
  std::string text = "forward of one TP rank, compute only: " + t.model + " on " + t.gpu + ", tp " +
                     std::to_string(t.tp) + ", context " + std::to_string(t.context) + ", " + to_string(t.mode) +
                     "\n" + "basis: " + t.basis + ", eta_bw " +
                     std::to_string(t.bandwidth_efficiency).substr(0, 6) + "\n";
  if (!t.tp_note.empty()) text += "note: " + t.tp_note + "\n";
  char line[128];
  std::snprintf(line, sizeof line, "  %8s  %12s  %10s\n", "tokens", "time", "vs 1 token");
  text += line;
  const double first = t.points.empty() ? 1.0 : t.points.front().time_s;
  for (const auto& p : t.points) {
    std::snprintf(line, sizeof line, "  %8d  %12s  %9.3fx\n", p.tokens, units::format_duration(p.time_s).c_str(),
                  p.time_s / first);
    text += line;
  }
  return text;
}

}  // namespace

std::string render_forward(const ForwardTable& table, Format format) {
  switch (format) {
    case Format::kText: return forward_text(table);
    case Format::kJson: return forward_json(table).dump() + "\n";
    case Format::kCsv: return csv_table({"tokens", "time_s"}, nlohmann::json(forward_json(table)["points"]));
  }
  return "";
}

}  // namespace specsim
