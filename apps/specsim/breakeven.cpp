// specsim breakeven: the acceptance and tokens per cycle at which speculation equals plain decoding.
#include <CLI/CLI.hpp>

#include <ostream>

#include "cli.hpp"
#include "format_option.hpp"
#include "specsim/load.hpp"
#include "specsim/report.hpp"
#include "specsim/whatif.hpp"

namespace specsim::cli {

namespace {

struct BreakevenOptions {
  std::string scenario = kDefaultScenario;
  std::vector<std::string> patches;
  Format format = Format::kText;
};

void run_breakeven(const BreakevenOptions& o, Io& io) {
  const BreakEvenReport r = breakeven_report(load_scenario(o.scenario, o.patches));
  io.out << render_breakeven(o.scenario, r, o.format);
}

}  // namespace

void setup_breakeven(CLI::App& app, Io& io) {
  auto opts = std::make_shared<BreakevenOptions>();
  CLI::App* sub = app.add_subcommand("breakeven", "Acceptance and tokens per cycle at which speculation pays");
  sub->add_option("--scenario", opts->scenario, "Scenario name or file")->capture_default_str();
  sub->add_option("--set", opts->patches, "Patch a scenario field: key=value")->allow_extra_args(false);
  add_format_option(*sub, opts->format);
  sub->callback([opts, &io]() { run_breakeven(*opts, io); });
}

}  // namespace specsim::cli
