// comm's views: the all-reduce (or all-to-all) time per message size, measured at the rank count or estimated.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "report/csv.hpp"
#include "specsim/report.hpp"
#include "specsim/units.hpp"

namespace specsim {

namespace {

nlohmann::json comm_json(const CommTable& t) {
  nlohmann::json j;
  j["points"] = nlohmann::json::array();
  for (const auto& p : t.points) {
    // Whole byte counts print as JSON integers.
    const double b = p.bytes;
    nlohmann::json bytes = b == std::floor(b) && b < 9e15 ? nlohmann::json(static_cast<std::int64_t>(b)) : nlohmann::json(b);
    nlohmann::json point = {{"bytes", bytes}, {"time_s", p.time_s}};
    if (p.prior_s) {
      point["prior_s"] = *p.prior_s;
      point["measured_over_prior"] = p.time_s / *p.prior_s;
    }
    j["points"].push_back(std::move(point));
  }
  // A measured all-reduce prints {"points": [...]}, as scripts expect, plus the NCCL release when the
  // profile states one; an all-to-all and an estimate say what they are.
  if (t.collective != "all_reduce") j["collective"] = t.collective;
  if (t.library != "NCCL") j["library"] = t.library;  // RCCL's prior on an AMD box
  if (!t.nccl_version.empty()) j["nccl_version"] = t.nccl_version;
  if (!t.measured_at_ranks()) {
    j["ranks"] = t.ranks;
    j["measured_at_ranks"] = false;
    j["from_ranks"] = t.from_ranks;
    j["rank_scaling"] = t.rank_scaling == RankScaling::kPowerLaw ? "power" : "nccl";
  }
  return j;
}

std::string comm_text(const CommTable& t) {
  std::string text = t.measured_at_ranks()
                         ? t.collective + ", profile " + t.profile + " (" + std::to_string(t.ranks) + " ranks, " + t.mode +
                               (t.nccl_version.empty() ? "" : ", NCCL " + t.nccl_version) + ")\n"
                         : "all_reduce at " + std::to_string(t.ranks) + " ranks (" + t.mode +
                               "), NOT MEASURED: estimated from " + t.estimated_from + " by " +
                               to_string(t.rank_scaling) + "\n";
  for (const auto& p : t.points) {
    char line[192];
    std::snprintf(line, sizeof line, "  %-12s %12.3f us", units::format_bytes(p.bytes).c_str(), p.time_s * 1e6);
    text += line;
    if (p.prior_s) {
      std::snprintf(line, sizeof line, "   %s prior %10.3f us  (x %.2f)", t.library.c_str(), *p.prior_s * 1e6,
                    p.time_s / *p.prior_s);
      text += line;
    }
    text += p.in_measured_range ? "\n" : "  (outside measured range: extrapolated)\n";
  }
  return text;
}

}  // namespace

std::string render_comm(const CommTable& table, Format format) {
  switch (format) {
    case Format::kText: return comm_text(table);
    case Format::kJson: return comm_json(table).dump(2) + "\n";
    case Format::kCsv: {
      const bool prior = !table.points.empty() && table.points.front().prior_s;
      return prior ? csv_table({"bytes", "time_s", "prior_s", "measured_over_prior"}, comm_json(table)["points"])
                   : csv_table({"bytes", "time_s"}, comm_json(table)["points"]);
    }
  }
  return "";
}

}  // namespace specsim
