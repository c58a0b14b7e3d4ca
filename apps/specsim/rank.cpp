// specsim rank: every intervention of a catalogue alone, ranked by predicted gain and by gain per
// server launch, infeasible ones with the reason, then the cumulative plan.
#include <CLI/CLI.hpp>

#include <ostream>

#include "cli.hpp"
#include "emit_option.hpp"
#include "format_option.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/report.hpp"
#include "specsim/whatif.hpp"

namespace specsim::cli {

namespace {

struct RankOptions {
  std::string scenario = kDefaultScenario;
  std::string priorities;
  std::optional<double> accept;
  std::optional<double> draft_acceptance_rate;
  std::vector<std::string> patches;
  int path_steps = 4;
  Format format = Format::kText;
  std::optional<Engine> emit;  // --emit: print the launch of the top pick on that engine
};

void run_rank(const RankOptions& o, Io& io) {
  check_emit_format(o.emit, o.format);
  const DataDir data;
  std::vector<std::string> patches = o.patches;
  // As patches, so that every option rank weighs is priced with them (a patched form replaces the file's).
  if (o.accept) patches.push_back("acceptance.accept=" + std::to_string(*o.accept));
  if (o.draft_acceptance_rate) {
    patches.push_back("acceptance.draft_acceptance_rate=" + std::to_string(*o.draft_acceptance_rate));
  }
  const Scenario loaded = load_scenario(o.scenario, patches, data);
  const InterventionCatalogue catalogue = rank_catalogue(loaded, o.priorities, data);
  const RankReport r = rank(loaded, patches, catalogue, data, o.path_steps);
  const std::vector<LaunchProblem> problems = launch_problems(loaded);
  std::optional<EmittedLaunch> launch;
  if (o.emit) launch = emit_launch(top_pick(o.scenario, patches, r, data), *o.emit);
  io.out << emitted(with_problems(render_rank(o.scenario, r, o.format), o.format, problems), o.format, launch);
  if (o.format == Format::kCsv) {
    for (const auto& p : problems) io.err << "specsim: warning: " << describe(p) << "\n";
  }
}

}  // namespace

void setup_rank(CLI::App& app, Io& io) {
  auto opts = std::make_shared<RankOptions>();
  CLI::App* sub = app.add_subcommand("rank", "Rank tuning interventions by predicted gain");
  sub->add_option("--scenario", opts->scenario, "Scenario name or file")->capture_default_str();
  sub->add_option("--priorities", opts->priorities, "Intervention catalogue file (default: the scenario's `interventions`, else models/interventions/any-box.yaml); the box's own interventions are added")
      ->check(CLI::ExistingFile);
  auto* accept = sub->add_option("--accept", opts->accept, "First-position acceptance")->check(CLI::Range(0.0, 1.0));
  sub->add_option("--draft-acceptance-rate", opts->draft_acceptance_rate,
                  "Accepted over drafted tokens at the scenario's draft shape (vLLM's 'Avg Draft acceptance rate'; "
                  "SGLang's 'accept rate' is tau / num_draft_tokens), in place of --accept (docs/acceptance.md#rates)")
      ->check(CLI::Range(0.0, 1.0))
      ->excludes(accept);
  sub->add_option("--set", opts->patches, "Patch a scenario field: key=value")->allow_extra_args(false);
  sub->add_option("--path-steps", opts->path_steps, "Steps of the cumulative plan")->check(CLI::Range(0, 20));
  add_format_option(*sub, opts->format);
  add_emit_option(*sub, opts->emit, "the top pick");
  sub->callback([opts, &io]() { run_rank(*opts, io); });
}

}  // namespace specsim::cli
