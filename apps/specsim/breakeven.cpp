// specsim breakeven: the acceptance and tokens per cycle at which speculation equals plain decoding.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <ostream>

#include "cli.hpp"
#include "specsim/load.hpp"
#include "specsim/whatif.hpp"

namespace specsim::cli {

namespace {

struct BreakevenOptions {
  std::string scenario = kDefaultScenario;
  std::vector<std::string> patches;
  bool json = false;
};

nlohmann::json to_json(const BreakEven& b) {
  return {{"num_steps", b.num_steps},
          {"accept", b.accept ? nlohmann::json(*b.accept) : nlohmann::json(nullptr)},
          {"tokens_per_cycle", b.tokens_per_cycle},
          {"tokens_per_s_at_accept_1", b.speculative_tokens_per_s_at_accept_1}};
}

void run_breakeven(const BreakevenOptions& o, Io& io) {
  const BreakEvenReport r = breakeven_report(load_scenario(o.scenario, o.patches));
  if (o.json) {
    nlohmann::json j = to_json(r.at_scenario);
    j["baseline_tokens_per_s"] = r.baseline_tokens_per_s;
    j["by_num_steps"] = nlohmann::json::array();
    for (const auto& b : r.by_num_steps) j["by_num_steps"].push_back(to_json(b));
    io.out << j.dump(2) << "\n";
    return;
  }
  char buf[256];
  std::string out = "specsim breakeven: " + o.scenario + "\n";
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
  io.out << out;
}

}  // namespace

void setup_breakeven(CLI::App& app, Io& io) {
  auto opts = std::make_shared<BreakevenOptions>();
  CLI::App* sub = app.add_subcommand("breakeven", "Acceptance and tokens per cycle at which speculation pays");
  sub->add_option("--scenario", opts->scenario, "Scenario name or file")->capture_default_str();
  sub->add_option("--set", opts->patches, "Patch a scenario field: key=value")->allow_extra_args(false);
  sub->add_flag("--json", opts->json, "Print one JSON object");
  sub->callback([opts, &io]() { run_breakeven(*opts, io); });
}

}  // namespace specsim::cli
