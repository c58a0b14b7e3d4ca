// rank's views: every intervention alone, by gain and by gain per launch, then the cumulative plan.
#include <nlohmann/json.hpp>

#include <cstdio>

#include "report/csv.hpp"
#include "specsim/report.hpp"

namespace specsim {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

nlohmann::json breakdown(const Prediction& p) {
  return {{"verify_compute_s", p.verify.compute_s}, {"verify_comm_s", p.verify.comm_s}, {"draft_s", p.draft_s},
          {"host_s", p.spec_host_s}, {"cycle_s", p.cycle_s}, {"tokens_per_cycle", p.tokens_per_cycle}};
}

nlohmann::json intervention_json(const RankedIntervention& x) {
  const auto figure = [&](double v) { return x.feasible ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json e = {{"name", x.intervention.name},
                      {"description", x.intervention.description},
                      {"tokens_per_s", figure(x.tokens_per_s)},
                      {"gain", figure(x.gain)},
                      {"gain_per_launch", figure(x.gain_per_launch)},
                      {"feasible", x.feasible},
                      {"reason", x.reason},
                      {"effort_launches", x.intervention.effort_launches},
                      {"effort_hours", x.intervention.effort_hours},
                      {"comm_calibrated", x.comm_calibrated},
                      {"patches", x.intervention.patches},
                      {"risk", x.intervention.risk},
                      {"gain_band", x.gain_band ? nlohmann::json{{"p10", x.gain_band->first}, {"p90", x.gain_band->second},
                                                                 {"too_close_to_call", x.too_close_to_call()}}
                                                : nlohmann::json(nullptr)}};
  if (x.feasible) {
    e["breakdown"] = breakdown(x.prediction);
    e["baseline_tokens_per_s"] = x.prediction.baseline_tokens_per_s;
  }
  return e;
}

nlohmann::json rank_json(const RankReport& r) {
  nlohmann::json j;
  j["catalogue"] = r.catalogue;
  j["baseline_tokens_per_s"] = r.baseline_tokens_per_s;
  j["scenario_tokens_per_s"] = r.scenario_tokens_per_s;
  j["scenario_band"] = {{"p10_tokens_per_s", r.scenario_p10_tokens_per_s},
                        {"p90_tokens_per_s", r.scenario_p90_tokens_per_s}};
  j["scenario_call"] = to_string(r.scenario_call);
  j["gain_band_origin"] = r.gain_band_origin.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.gain_band_origin);
  j["too_close_to_top"] = r.too_close_to_top;
  if (!r.scenario_infeasible.empty()) j["scenario_infeasible"] = r.scenario_infeasible;
  j["interventions"] = nlohmann::json::array();
  for (const auto& x : r.ranked) j["interventions"].push_back(intervention_json(x));
  j["not_offered"] = r.not_offered;
  j["path"] = nlohmann::json::array();
  for (const auto& s : r.path) {
    j["path"].push_back({{"name", s.name}, {"tokens_per_s", s.tokens_per_s}, {"gain", s.gain},
                         {"baseline_tokens_per_s", s.baseline_tokens_per_s}, {"patches", s.patches}});
  }
  return j;
}

std::string ranked_lines(const RankReport& r) {
  std::string out = "  by predicted gain                          tok/s     gain  launches  gain/launch  note\n";
  for (const auto& x : r.ranked) {
    char buf[512];
    if (x.feasible) {
      std::snprintf(buf, sizeof buf, "  %-38s %9.1f %+8.1f %9.1f %12.1f  %s%s\n", x.intervention.name.c_str(),
                    x.tokens_per_s, x.gain, x.intervention.effort_launches, x.gain_per_launch,
                    x.tokens_per_s > x.prediction.baseline_tokens_per_s ? "beats plain decoding" : "",
                    (std::string(x.comm_calibrated ? "" : " [all-reduce uncalibrated]") +
                     (x.too_close_to_call() ? " [gain within specsim's error]" : ""))
                        .c_str());
      out += buf;
    } else {
      // The reason is as long as it needs to be: no fixed buffer.
      std::snprintf(buf, sizeof buf, "  %-38s   INFEASIBLE: ", x.intervention.name.c_str());
      out += buf + x.reason + "\n";
    }
  }
  return out;
}

std::string plan_lines(const RankReport& r) {
  std::string out = "\n\n  plan (apply the best, re-rank the rest):\n";
  double level = r.scenario_tokens_per_s;
  for (std::size_t i = 0; i < r.path.size(); ++i) {
    out += "    " + std::to_string(i + 1) + ". " + r.path[i].name + ": " + fmt("%.1f", level) + " -> " +
           fmt("%.1f", r.path[i].tokens_per_s) + " tok/s (" +
           fmt("%.2fx", r.path[i].tokens_per_s / r.path[i].baseline_tokens_per_s) + " its plain " +
           fmt("%.1f", r.path[i].baseline_tokens_per_s) + ")\n";
    level = r.path[i].tokens_per_s;
  }
  if (r.path.empty()) {
    out += r.path_steps == 0 ? "    not asked for (--path-steps 0)\n" : "    nothing in the catalogue gains\n";
  }
  if (r.path_steps > 0 &&
      (!r.path.empty() ? level < r.path.back().baseline_tokens_per_s : level < r.baseline_tokens_per_s)) {
    out += "  even after the plan speculation stays below plain decoding: keep speculation off on this box\n";
  }
  return out;
}

std::string rank_text(const std::string& scenario, const RankReport& r) {
  std::string out = "specsim rank: " + scenario + " with " + r.catalogue + "\n";
  const bool spread = r.scenario_p90_tokens_per_s > r.scenario_p10_tokens_per_s;
  out += "  now: speculative " + fmt("%.1f", r.scenario_tokens_per_s) + " tok/s" +
         (spread ? " (p10-p90 " + fmt("%.1f", r.scenario_p10_tokens_per_s) + " - " +
                       fmt("%.1f", r.scenario_p90_tokens_per_s) + ")"
                 : std::string()) +
         ", plain decoding " + fmt("%.1f", r.baseline_tokens_per_s) + " tok/s: " +
         (r.scenario_call == SpeculationCall::kTooClose ? "" : "speculation ") + std::string(to_string(r.scenario_call)) +
         "\n";
  if (!r.scenario_infeasible.empty()) out += "  INFEASIBLE as it stands: " + r.scenario_infeasible + "\n";
  out += "\n" + ranked_lines(r);
  if (r.ranked.empty()) {
    out += "  nothing in " + r.catalogue + " applies here (" + std::to_string(r.not_offered.size()) +
           " not offered: their preconditions do not hold, or the scenario has what they set)\n";
  }
  if (!r.gain_band_origin.empty()) {
    out += "  [gain within specsim's error]: the gain's p10-p90 holds 0, from " + r.gain_band_origin + "\n";
    if (!r.ranked.empty() && r.ranked.front().feasible) {
      const std::string& top = r.ranked.front().intervention.name;
      if (r.too_close_to_top.empty()) {
        out += "  try first: " + top + ", ahead of every other option beyond specsim's error on gains\n";
      } else {
        std::string names;
        for (const auto& n : r.too_close_to_top) names += (names.empty() ? "" : ", ") + n;
        out += "  try first: " + top + " or " + names + ": its lead over them is within specsim's error on gains\n";
      }
    }
  }
  out += "\n  best gain per launch: " + std::string(r.by_gain_per_effort.empty() ? "none" : "");
  for (std::size_t i = 0; i < r.by_gain_per_effort.size() && i < 3; ++i) {
    out += (i ? ", " : "") + r.by_gain_per_effort[i]->intervention.name + " (" +
           fmt("%+.1f", r.by_gain_per_effort[i]->gain_per_launch) + ")";
  }
  return out + plan_lines(r);
}

}  // namespace

std::string render_rank(const std::string& scenario, const RankReport& report, Format format) {
  switch (format) {
    case Format::kText: return rank_text(scenario, report);
    case Format::kJson: return rank_json(report).dump(2) + "\n";
    case Format::kCsv:
      return csv_table({"name", "feasible", "reason", "tokens_per_s", "gain", "gain_per_launch", "effort_launches",
                        "effort_hours", "comm_calibrated", "risk", "patches", "baseline_tokens_per_s",
                        "breakdown.verify_compute_s", "breakdown.verify_comm_s", "breakdown.draft_s",
                        "breakdown.host_s", "breakdown.cycle_s", "breakdown.tokens_per_cycle"},
                       rank_json(report)["interventions"]);
  }
  return "";
}

}  // namespace specsim
