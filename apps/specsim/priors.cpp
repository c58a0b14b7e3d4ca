// specsim priors: every figure specsim uses where a scenario neither sets nor measures it, read from
// the one registry (lib/src/model/priors.cpp): value, p10-p90, unit, what it feeds and its source;
// then the engine terms a prediction's band draws from models/engines.
#include <CLI/CLI.hpp>

#include <memory>
#include <ostream>

#include "cli.hpp"
#include "format_option.hpp"
#include "specsim/report.hpp"

namespace specsim::cli {

namespace {

struct PriorsOptions {
  Format format = Format::kText;
};

void run_priors(const PriorsOptions& o, Io& io) { io.out << render_priors(o.format); }

}  // namespace

void setup_priors(CLI::App& app, Io& io) {
  auto opts = std::make_shared<PriorsOptions>();
  CLI::App* sub = app.add_subcommand("priors", "List every prior: value, p10-p90, unit, what it feeds and its source");
  add_format_option(*sub, opts->format);
  sub->callback([opts, &io]() { run_priors(*opts, io); });
}

}  // namespace specsim::cli
