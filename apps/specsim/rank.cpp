// specsim rank: every intervention of a catalogue alone, ranked by predicted gain and by gain per
// server launch, infeasible ones with the reason, then the cumulative plan.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <ostream>

#include "cli.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/whatif.hpp"

namespace specsim::cli {

namespace {

struct RankOptions {
  std::string scenario = kDefaultScenario;
  std::string priorities;
  std::optional<double> accept;
  std::vector<std::string> patches;
  int path_steps = 4;
  bool json = false;
};

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

nlohmann::json breakdown(const Prediction& p) {
  return {{"verify_compute_s", p.verify.compute_s}, {"verify_comm_s", p.verify.comm_s}, {"draft_s", p.draft_s},
          {"host_s", p.spec_host_s}, {"cycle_s", p.cycle_s}, {"tokens_per_cycle", p.tokens_per_cycle}};
}

void run_rank(const RankOptions& o, Io& io) {
  const DataDir data;
  std::vector<std::string> patches = o.patches;
  if (o.accept) patches.push_back("acceptance.accept=" + std::to_string(*o.accept));
  std::string catalogue_path = o.priorities;
  if (catalogue_path.empty()) {
    const std::string name = load_scenario(o.scenario, patches, data).interventions;
    if (name.empty()) {
      throw specsim::Error("scenario '" + o.scenario + "' names no intervention catalogue (key `interventions`); pass --priorities FILE");
    }
    catalogue_path = data.resolve(DataKind::kInterventions, name);
  }
  const InterventionCatalogue catalogue = load_interventions(catalogue_path);
  const RankReport r = rank(o.scenario, patches, catalogue, data, o.path_steps);
  if (o.json) {
    nlohmann::json j;
    j["catalogue"] = r.catalogue;
    j["baseline_tokens_per_s"] = r.baseline_tokens_per_s;
    j["scenario_tokens_per_s"] = r.scenario_tokens_per_s;
    if (!r.scenario_infeasible.empty()) j["scenario_infeasible"] = r.scenario_infeasible;
    j["interventions"] = nlohmann::json::array();
    for (const auto& x : r.ranked) {
      nlohmann::json e = {{"name", x.intervention->name},
                          {"tokens_per_s", x.feasible ? nlohmann::json(x.tokens_per_s) : nlohmann::json(nullptr)},
                          {"gain", x.feasible ? nlohmann::json(x.gain) : nlohmann::json(nullptr)},
                          {"gain_per_launch", x.feasible ? nlohmann::json(x.gain_per_launch) : nlohmann::json(nullptr)},
                          {"feasible", x.feasible},
                          {"reason", x.reason},
                          {"effort_launches", x.intervention->effort_launches},
                          {"effort_hours", x.intervention->effort_hours},
                          {"comm_calibrated", x.comm_calibrated},
                          {"patches", x.intervention->patches},
                          {"risk", x.intervention->risk}};
      if (x.feasible) {
        e["breakdown"] = breakdown(x.prediction);
        e["baseline_tokens_per_s"] = x.prediction.baseline_tokens_per_s;
      }
      j["interventions"].push_back(e);
    }
    j["path"] = nlohmann::json::array();
    for (const auto& s : r.path) {
      j["path"].push_back({{"name", s.name}, {"tokens_per_s", s.tokens_per_s}, {"gain", s.gain},
                           {"baseline_tokens_per_s", s.baseline_tokens_per_s}, {"patches", s.patches}});
    }
    io.out << j.dump(2) << "\n";
    return;
  }
  std::string out = "specsim rank: " + o.scenario + " with " + r.catalogue + "\n";
  out += "  now: speculative " + fmt("%.1f", r.scenario_tokens_per_s) + " tok/s, plain decoding " +
         fmt("%.1f", r.baseline_tokens_per_s) + " tok/s\n";
  if (!r.scenario_infeasible.empty()) out += "  INFEASIBLE as it stands: " + r.scenario_infeasible + "\n";
  out += "\n";
  out += "  by predicted gain                          tok/s     gain  launches  gain/launch  note\n";
  for (const auto& x : r.ranked) {
    char buf[512];
    if (x.feasible) {
      std::snprintf(buf, sizeof buf, "  %-38s %9.1f %+8.1f %9.1f %12.1f  %s%s\n", x.intervention->name.c_str(),
                    x.tokens_per_s, x.gain, x.intervention->effort_launches, x.gain_per_launch,
                    x.tokens_per_s > x.prediction.baseline_tokens_per_s ? "beats plain decoding" : "",
                    x.comm_calibrated ? "" : " [all-reduce uncalibrated]");
    } else {
      std::snprintf(buf, sizeof buf, "  %-38s   INFEASIBLE: %s\n", x.intervention->name.c_str(), x.reason.c_str());
    }
    out += buf;
  }
  out += "\n  best gain per launch: ";
  for (std::size_t i = 0; i < r.by_gain_per_effort.size() && i < 3; ++i) {
    out += (i ? ", " : "") + r.by_gain_per_effort[i]->intervention->name + " (" +
           fmt("%+.1f", r.by_gain_per_effort[i]->gain_per_launch) + ")";
  }
  out += "\n\n  plan (apply the best, re-rank the rest):\n";
  double level = r.scenario_tokens_per_s;
  for (std::size_t i = 0; i < r.path.size(); ++i) {
    out += "    " + std::to_string(i + 1) + ". " + r.path[i].name + ": " + fmt("%.1f", level) + " -> " +
           fmt("%.1f", r.path[i].tokens_per_s) + " tok/s (" + fmt("%.2fx", r.path[i].tokens_per_s / r.path[i].baseline_tokens_per_s) + " its plain " +
           fmt("%.1f", r.path[i].baseline_tokens_per_s) + ")\n";
    level = r.path[i].tokens_per_s;
  }
  if (r.path.empty()) out += "    nothing in the catalogue gains\n";
  if (!r.path.empty() ? level < r.path.back().baseline_tokens_per_s : level < r.baseline_tokens_per_s) {
    out += "  even after the plan speculation stays below plain decoding: keep speculation off on this box\n";
  }
  io.out << out;
}

}  // namespace

void setup_rank(CLI::App& app, Io& io) {
  auto opts = std::make_shared<RankOptions>();
  CLI::App* sub = app.add_subcommand("rank", "Rank tuning interventions by predicted gain");
  sub->add_option("--scenario", opts->scenario, "Scenario name or file")->capture_default_str();
  sub->add_option("--priorities", opts->priorities, "Intervention catalogue file (default: the scenario's)")
      ->check(CLI::ExistingFile);
  sub->add_option("--accept", opts->accept, "First-position acceptance")->check(CLI::Range(0.0, 1.0));
  sub->add_option("--set", opts->patches, "Patch a scenario field: key=value")->allow_extra_args(false);
  sub->add_option("--path-steps", opts->path_steps, "Steps of the cumulative plan")->check(CLI::Range(0, 20));
  sub->add_flag("--json", opts->json, "Print one JSON object");
  sub->callback([opts, &io]() { run_rank(*opts, io); });
}

}  // namespace specsim::cli
