// specsim predict: tokens/s of speculative vs plain decoding for one scenario, with the cycle's
// breakdown, as a table or JSON.
#include <CLI/CLI.hpp>

#include <optional>
#include <ostream>

#include "cli.hpp"
#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/report.hpp"

namespace specsim::cli {

namespace {

struct PredictOptions {
  std::string scenario = kDefaultScenario;
  std::optional<double> accept;
  std::vector<double> accept_per_position;
  std::optional<double> accept_length;
  std::vector<std::string> patches;
  bool json = false;
};

void run_predict(const PredictOptions& o, Io& io) {
  Scenario s = load_scenario(o.scenario, o.patches);
  if (o.accept) {
    s.acceptance.kind = AcceptanceSettings::Kind::kConstant;
    s.acceptance.accept = *o.accept;  // the scenario's depth profile, if any, still applies
  } else if (!o.accept_per_position.empty()) {
    s.acceptance.kind = AcceptanceSettings::Kind::kConditional;
    s.acceptance.per_position = o.accept_per_position;
  } else if (o.accept_length) {
    s.acceptance.kind = AcceptanceSettings::Kind::kTokensPerCycle;
    s.acceptance.tokens_per_cycle = *o.accept_length;
  }
  const CycleModel model(std::move(s));
  const Prediction p = model.predict();
  // Rendered whole before printing: a failure never leaves half a document on stdout.
  io.out << (o.json ? render_json(model, p) : render_text(model, p));
}

}  // namespace

void setup_predict(CLI::App& app, Io& io) {
  auto opts = std::make_shared<PredictOptions>();
  CLI::App* sub = app.add_subcommand("predict", "Predict tokens/s for plain and speculative decoding");
  sub->add_option("--scenario", opts->scenario, "Scenario name (models/scenarios) or file")
      ->capture_default_str();
  auto* accept = sub->add_option("--accept", opts->accept,
                                 "Per-token acceptance of the first draft position, in [0, 1]; deeper "
                                 "positions follow the scenario's depth_profile (constant when it has none)")
                     ->check(CLI::Range(0.0, 1.0));
  auto* per_pos = sub->add_option("--accept-per-position", opts->accept_per_position,
                                  "Conditional acceptance per draft position, b1,b2,...")
                      ->delimiter(',')
                      ->check(CLI::Range(0.0, 1.0));
  auto* length = sub->add_option("--accept-length", opts->accept_length,
                                 "Measured tokens per cycle (tau, bonus token included), >= 1")
                     ->check(CLI::Range(1.0, 1e6));
  accept->excludes(per_pos)->excludes(length);
  per_pos->excludes(length);
  sub->add_option("--set", opts->patches, "Patch a scenario field: key=value (dotted path, units as in files)")
      ->allow_extra_args(false);
  sub->add_flag("--json", opts->json, "Print one JSON object");
  sub->callback([opts, &io]() { run_predict(*opts, io); });
}

}  // namespace specsim::cli
