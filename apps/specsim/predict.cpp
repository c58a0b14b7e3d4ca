// specsim predict: tokens/s of speculative vs plain decoding for one scenario, with the cycle's
// breakdown, as a table, JSON or CSV (report.hpp); optionally a Monte Carlo spread of tokens/s. With
// concurrency levels (workload.concurrency, --concurrency), a row per level instead (concurrency.hpp).
#include <CLI/CLI.hpp>

#include <optional>
#include <ostream>

#include "choices.hpp"
#include "cli.hpp"
#include "emit_option.hpp"
#include "format_option.hpp"
#include "specsim/concurrency.hpp"
#include "specsim/cycle.hpp"
#include "specsim/engine_log.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"
#include "specsim/report.hpp"
#include "specsim/units.hpp"
#include "specsim/whatif.hpp"

namespace specsim::cli {

namespace {

struct PredictOptions {
  std::string scenario = kDefaultScenario;
  std::optional<double> accept;
  std::vector<double> accept_per_position;
  std::optional<double> accept_length;
  std::optional<double> draft_acceptance_rate;
  std::vector<double> accept_unconditional;
  std::vector<std::string> acceptance_logs;
  std::vector<std::string> patches;
  std::string calibrate_spec;  // a measured speculative rate, "60tok/s"
  std::string concurrency;  // "1,4,16": --set workload.concurrency=1,4,16, so the file's rules apply
  int monte_carlo = 0;  // simulated requests; 0 = off
  std::uint64_t seed = 1;
  double request_spread = 0.0;
  Format format = Format::kText;
  std::optional<Engine> emit;  // --emit: print the launch of this setting on that engine
};

// The acceptance a set of engine logs supports: pooled per-position rates when logged, else tau.
// The pooling's own warnings (draft lengths or engines that differ) are appended to `warnings`.
Acceptance from_logs(const std::vector<std::string>& files, std::vector<std::string>& warnings) {
  std::vector<LogRecord> records;
  for (const auto& f : files) {
    auto r = parse_engine_log_file(f);
    records.insert(records.end(), r.begin(), r.end());
  }
  const AcceptanceSummary sum = summarize(records);
  warnings.insert(warnings.end(), sum.warnings.begin(), sum.warnings.end());
  return acceptance_from_summary(sum);
}

// An acceptance an option states that the scenario's draft cannot have, refused naming the option.
void require_usable(const char* option, const Scenario& s) {
  try {
    validate(s.acceptance, s.speculation.shape);
  } catch (const Error& e) {
    throw Error({option, 0, 0}, "", e.message());
  }
}

// --accept, --accept-per-position, --accept-length, --draft-acceptance-rate, --accept-unconditional or
// the logs' pooled acceptance in place of the scenario's kind; its tree siblings (tree_positional) stay.
void apply_acceptance_options(const PredictOptions& o, Scenario& s, std::vector<std::string>& warnings) {
  if (o.accept) {
    if (accept_rate_replaces(s.acceptance.kind)) {
      warnings.push_back("--accept " + units::format_fixed(*o.accept, 3) +
                         " replaces the measured acceptance.tokens_per_cycle by a constant chain");
    }
    s.acceptance = with_accept_rate(std::move(s.acceptance), *o.accept);  // the profile's shape kept
  } else if (!o.accept_per_position.empty()) {
    s.acceptance.kind = ConditionalChain{o.accept_per_position};
  } else if (o.accept_length) {
    s.acceptance.kind = MeasuredTau{*o.accept_length};
  } else if (o.draft_acceptance_rate) {
    // Accepted over drafted tokens at the scenario's draft shape (docs/acceptance.md#rates).
    try {
      s.acceptance.kind = tau_from_draft_acceptance_rate(*o.draft_acceptance_rate, s.speculation.shape);
    } catch (const Error& e) {
      throw Error({"--draft-acceptance-rate", 0, 0}, "", e.message());
    }
  } else if (!o.accept_unconditional.empty()) {
    s.acceptance.kind = UnconditionalChain{o.accept_unconditional};
    require_usable("--accept-unconditional", s);
  } else if (!o.acceptance_logs.empty()) {
    s.acceptance.kind = from_logs(o.acceptance_logs, warnings).kind;
  }
  for (auto& w : acceptance_warnings(s)) warnings.push_back(std::move(w));
}

void run_predict(const PredictOptions& o, Io& io) {
  check_emit_format(o.emit, o.format);
  std::vector<std::string> patches = o.patches;
  if (!o.calibrate_spec.empty()) {
    // The user's own measured run: an input at the file's draft setting and batch, not held out.
    patches.insert(patches.begin(), {"measurements.speculative.tokens_per_s=" + o.calibrate_spec,
                                     "measurements.speculative.held_out=false"});
  }
  if (!o.concurrency.empty()) patches.push_back("workload.concurrency=" + o.concurrency);  // wins over the file
  Scenario s = load_scenario(o.scenario, patches);
  std::vector<std::string> warnings;
  apply_acceptance_options(o, s, warnings);
  const std::vector<LaunchProblem> problems = launch_problems(s);
  for (const auto& p : problems) warnings.push_back(describe(p));
  std::optional<EmittedLaunch> launch;
  if (o.emit) launch = emit_launch(s, *o.emit);
  if (!s.concurrency.empty()) {
    if (o.monte_carlo > 0) throw Error({"--monte-carlo", 0, 0}, "", "simulates one batch: leave out workload.concurrency");
    // Rendered whole before printing: a failure never leaves half a document on stdout.
    const std::string out = render_concurrency(s.name, predict_concurrency(s), o.format, warnings);
    io.out << emitted(o.format == Format::kJson ? with_problems(out, o.format, problems) : out, o.format, launch);
    return;
  }
  require_memory_fit(s);  // a deployment that cannot load predicts nothing
  const CycleModel model(std::move(s));
  const Prediction p = model.predict();
  std::optional<MonteCarloRun> mc;
  if (o.monte_carlo > 0) {
    MonteCarloOptions mo;
    mo.seed = o.seed;
    mo.num_requests = o.monte_carlo;
    mo.request_accept_stddev = o.request_spread;
    mc = MonteCarloRun{mo, monte_carlo(model, model.scenario().acceptance, mo), model.scenario().batch};
  }
  const std::string out = render_prediction(model, p, o.format, warnings, mc);
  io.out << emitted(o.format == Format::kJson ? with_problems(out, o.format, problems) : out, o.format, launch);
}

// A list of rates by draft position, comma-separated, each in [0, 1].
CLI::Option* add_rates_option(CLI::App& sub, const char* name, std::vector<double>& rates, const char* help) {
  return sub.add_option(name, rates, help)->delimiter(',')->check(CLI::Range(0.0, 1.0));
}

}  // namespace

void setup_predict(CLI::App& app, Io& io) {
  auto opts = std::make_shared<PredictOptions>();
  CLI::App* sub = app.add_subcommand("predict", "Predict tokens/s for plain and speculative decoding");
  sub->add_option("--scenario", opts->scenario, "Scenario name (models/scenarios) or file")
      ->capture_default_str();
  auto* accept = sub->add_option("--accept", opts->accept,
                                 "Per-token acceptance of the first draft position, in [0, 1]; deeper "
                                 "positions keep the shape of the scenario's profile (docs/acceptance.md). "
                                 "Not an engine's average over the drafted tokens: that is --draft-acceptance-rate")
                     ->check(CLI::Range(0.0, 1.0));
  auto* per_pos = add_rates_option(*sub, "--accept-per-position", opts->accept_per_position,
                                  "Conditional acceptance per draft position, b1,b2,...");
  auto* length = sub->add_option("--accept-length", opts->accept_length,
                                 "Measured tokens per cycle (tau, bonus token included), >= 1")
                     ->check(CLI::Range(1.0, 1e6));
  auto* rate = sub->add_option("--draft-acceptance-rate", opts->draft_acceptance_rate,
                               "Accepted over drafted tokens, in [0, 1], measured at the scenario's draft shape "
                               "(vLLM's 'Avg Draft acceptance rate'; not SGLang's 'accept rate', which is tau / "
                               "num_draft_tokens): tau = 1 + rate x (num_draft_tokens - 1)")
                   ->check(CLI::Range(0.0, 1.0));
  auto* unconditional = add_rates_option(
      *sub, "--accept-unconditional", opts->accept_unconditional,
      "Unconditional acceptance per draft position, a1,a2,... non-increasing (vLLM's 'Per-position acceptance "
      "rate', llama.cpp's 'acceptance rate per position')");
  auto* logs = sub->add_option("--acceptance-log", opts->acceptance_logs,
                               "Engine logs (SGLang, vLLM, llama.cpp) whose pooled acceptance to use")
                   ->check(CLI::ExistingFile);
  // One acceptance at a time: every pair of these options excludes each other.
  const std::vector<CLI::Option*> forms = {accept, per_pos, length, rate, unconditional, logs};
  for (std::size_t i = 0; i < forms.size(); ++i) {
    for (std::size_t j = i + 1; j < forms.size(); ++j) forms[i]->excludes(forms[j]);
  }
  sub->add_option("--set", opts->patches, "Patch a scenario field: key=value (dotted path, units as in files)")
      ->allow_extra_args(false);
  sub->add_option("--calibrate-spec", opts->calibrate_spec,
                  "A speculative rate you measured at the scenario file's draft setting and batch (e.g. "
                  "60tok/s): calibrates the engine's per-cycle term from it, then predicts the setting "
                  "asked for (--set speculation.num_steps=5 ...); docs/validation.md#one-run-calibration")
      ->check(non_empty());
  sub->add_option("--concurrency", opts->concurrency,
                  "Predict at these batches, c1,c2,... (workload.concurrency; replaces the file's list): "
                  "per-request and aggregate tok/s per level")
      ->check(non_empty());
  sub->add_option("--monte-carlo", opts->monte_carlo, "Simulate this many requests (100 cycles each)")
      ->check(CLI::Range(1, 10'000'000));
  sub->add_option("--seed", opts->seed, "Monte Carlo seed")->capture_default_str()->check(seed_value());
  sub->add_option("--request-spread", opts->request_spread,
                  "Standard deviation of per-request first-position acceptance (Beta)")
      ->check(CLI::Range(0.0, 0.5));
  add_format_option(*sub, opts->format);
  add_emit_option(*sub, opts->emit, "the scenario's setting");
  sub->callback([opts, &io]() { run_predict(*opts, io); });
}

}  // namespace specsim::cli
