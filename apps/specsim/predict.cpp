// specsim predict: tokens/s of speculative vs plain decoding for one scenario, with the cycle's
// breakdown, as a table or JSON; optionally a Monte Carlo spread of tokens/s. With concurrency
// levels (workload.concurrency, --concurrency), a row per level instead (concurrency.hpp).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <optional>
#include <ostream>

#include "cli.hpp"
#include "specsim/units.hpp"
#include "specsim/concurrency.hpp"
#include "specsim/cycle.hpp"
#include "specsim/engine_log.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"
#include "specsim/report.hpp"
#include "specsim/whatif.hpp"

namespace specsim::cli {

namespace {

struct PredictOptions {
  std::string scenario = kDefaultScenario;
  std::optional<double> accept;
  std::vector<double> accept_per_position;
  std::optional<double> accept_length;
  std::vector<std::string> acceptance_logs;
  std::vector<std::string> patches;
  std::string concurrency;  // "1,4,16": --set workload.concurrency=1,4,16, so the file's rules apply
  int monte_carlo = 0;  // simulated requests; 0 = off
  std::uint64_t seed = 1;
  double request_spread = 0.0;
  bool json = false;
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

std::string fixed(double v, int digits) { return units::format_fixed(v, digits); }

// The cycle model fits a per-position list to the draft length (cycle.cpp: a longer list is cut,
// a shorter one repeats its last rate); say so as a warning, rather than let measured positions
// vanish silently.
// A measured tau is what a cycle emits on any shape, so a tree's measured siblings go unused.
std::vector<std::string> acceptance_warnings(const Scenario& s) {
  std::vector<std::string> out;
  std::string w = position_mismatch_warning(listed_positions(s.acceptance.kind), s.speculation.shape.num_steps);
  if (!w.empty()) out.push_back(std::move(w));
  if (std::holds_alternative<MeasuredTau>(s.acceptance.kind) && !s.acceptance.siblings.positional.empty() &&
      !s.speculation.shape.is_chain()) {
    out.push_back("acceptance.tree_positional is not used: a measured tokens per cycle already says what the tree emits");
  }
  return out;
}

// --accept, --accept-per-position, --accept-length or the logs' pooled acceptance in place of the
// scenario's kind; the scenario's tree siblings (tree_positional) stay.
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
  } else if (!o.acceptance_logs.empty()) {
    s.acceptance.kind = from_logs(o.acceptance_logs, warnings).kind;
  }
  for (auto& w : acceptance_warnings(s)) warnings.push_back(std::move(w));
}

std::string gigabytes(double bytes) { return fixed(bytes / 1e9, 1) + " GB"; }

// The levels' table; infeasible levels keep their row, with the reason.
std::string concurrency_text(const Scenario& s, const ConcurrencyPrediction& cp) {
  std::string levels;
  for (const auto& l : cp.levels) levels += (levels.empty() ? "" : ", ") + std::to_string(l.concurrency);
  std::string out = "specsim predict: " + s.name + " at concurrency " + levels + "\n";
  out += "  " + calibration_note(cp.calibrated_batch) + "\n";
  for (const auto& l : cp.levels) {
    if (!l.feasible()) continue;
    out += "  acceptance per request, the same at every level: " + fixed(l.tokens_per_cycle, 3) + " tokens per cycle\n";
    break;
  }
  out += "  concurrency  plain tok/s/req  spec tok/s/req  plain tok/s  spec tok/s  speedup  memory per GPU\n";
  char buf[256];
  for (const auto& l : cp.levels) {
    if (!l.feasible()) {
      std::snprintf(buf, sizeof buf, "  %11d  INFEASIBLE: ", l.concurrency);
      out += buf + l.infeasible + "\n";
      continue;
    }
    std::snprintf(buf, sizeof buf, "  %11d  %15.1f  %14.1f  %11.1f  %10.1f  %6.3fx  %s of %s\n", l.concurrency,
                  l.plain_per_request_tokens_per_s(), l.spec_per_request_tokens_per_s(),
                  l.plain_aggregate_tokens_per_s, l.spec_aggregate_tokens_per_s, l.speedup,
                  gigabytes(l.memory.used_bytes()).c_str(), gigabytes(l.memory.capacity_bytes).c_str());
    out += buf;
  }
  out += "  " + payoff_summary(cp) + "\n";
  return out;
}

nlohmann::json concurrency_json(const Scenario& s, const ConcurrencyPrediction& cp) {
  nlohmann::json levels = nlohmann::json::array();
  for (const auto& l : cp.levels) {
    nlohmann::json j{{"concurrency", l.concurrency},
                     {"feasible", l.feasible()},
                     {"memory", nlohmann::json::parse(render_memory_json(l.memory))}};
    if (!l.feasible()) {
      j["infeasible"] = l.infeasible;
    } else {
      j["plain"] = {{"per_request_tokens_per_s", l.plain_per_request_tokens_per_s()},
                    {"aggregate_tokens_per_s", l.plain_aggregate_tokens_per_s},
                    {"step_s", l.plain_step_s}};
      j["speculative"] = {{"per_request_tokens_per_s", l.spec_per_request_tokens_per_s()},
                          {"aggregate_tokens_per_s", l.spec_aggregate_tokens_per_s},
                          {"cycle_s", l.cycle_s},
                          {"tokens_per_cycle", l.tokens_per_cycle}};
      j["speedup"] = l.speedup;
    }
    levels.push_back(std::move(j));
  }
  return {{"scenario", s.name},
          {"calibrated_at_batch", cp.calibrated_batch},
          {"note", calibration_note(cp.calibrated_batch)},
          {"payoff", payoff_summary(cp)},
          {"concurrency", levels},
          {"stops_paying_at", cp.stops_paying_at ? nlohmann::json(*cp.stops_paying_at) : nlohmann::json()}};
}

// Rendered whole before printing, as run_predict does: a failure never leaves half a document.
std::string render_concurrency(const Scenario& s, const ConcurrencyPrediction& cp,
                               const std::vector<std::string>& warnings, bool json) {
  if (json) {
    auto j = concurrency_json(s, cp);
    if (!warnings.empty()) j["warnings"] = warnings;
    return j.dump(2) + "\n";
  }
  std::string text = concurrency_text(s, cp);
  for (const auto& w : warnings) text += "  warning: " + w + "\n";
  return text;
}

void run_predict(const PredictOptions& o, Io& io) {
  std::vector<std::string> patches = o.patches;
  if (!o.concurrency.empty()) patches.push_back("workload.concurrency=" + o.concurrency);  // wins over the file
  Scenario s = load_scenario(o.scenario, patches);
  std::vector<std::string> warnings;
  apply_acceptance_options(o, s, warnings);
  if (!s.concurrency.empty()) {
    if (o.monte_carlo > 0) throw Error({"--monte-carlo", 0, 0}, "", "simulates one batch: leave out workload.concurrency");
    io.out << render_concurrency(s, predict_concurrency(s), warnings, o.json);
    return;
  }
  require_memory_fit(s);  // a deployment that cannot load predicts nothing
  const CycleModel model(std::move(s));
  const Prediction p = model.predict();
  std::optional<MonteCarloResult> mc;
  if (o.monte_carlo > 0) {
    MonteCarloOptions mo;
    mo.seed = o.seed;
    mo.num_requests = o.monte_carlo;
    mo.request_accept_stddev = o.request_spread;
    mc = monte_carlo(model, model.scenario().acceptance, mo);
  }
  const double batch = model.scenario().batch;
  // Rendered whole before printing: a failure never leaves half a document on stdout.
  std::string text;
  if (o.json) {
    auto j = nlohmann::json::parse(render_json(model, p));
    if (mc) {
      j["monte_carlo"] = {{"seed", o.seed},
                          {"requests", o.monte_carlo},
                          {"cycles", mc->num_cycles},
                          {"request_spread", o.request_spread},
                          {"mean_tokens_per_cycle", mc->mean_tokens_per_cycle},
                          {"mean_tokens_per_cycle_ci99", {mc->mean_tokens_per_cycle_interval.low,
                                                          mc->mean_tokens_per_cycle_interval.high}},
                          {"closed_form_tokens_per_cycle", mc->closed_form_tokens_per_cycle},
                          {"tokens_per_s", {{"mean", batch * mc->tokens_per_s},
                                            {"p10", batch * mc->request_tokens_per_s.p10},
                                            {"p50", batch * mc->request_tokens_per_s.p50},
                                            {"p90", batch * mc->request_tokens_per_s.p90}}}};
    }
    if (!warnings.empty()) j["warnings"] = warnings;
    text = j.dump(2) + "\n";
  } else {
    text = render_text(model, p);
    for (const auto& w : warnings) text += "  warning: " + w + "\n";
    if (mc) {
      text += "\n  Monte Carlo (seed " + std::to_string(o.seed) + ", " + std::to_string(mc->num_cycles) +
              " cycles): tokens per cycle " + fixed(mc->mean_tokens_per_cycle, 3) + " [99% " +
              fixed(mc->mean_tokens_per_cycle_interval.low, 3) + ", " +
              fixed(mc->mean_tokens_per_cycle_interval.high, 3) + "], closed form " +
              fixed(mc->closed_form_tokens_per_cycle, 3) + "\n  tokens/s per request p10 / p50 / p90: " +
              fixed(batch * mc->request_tokens_per_s.p10, 1) + " / " + fixed(batch * mc->request_tokens_per_s.p50, 1) +
              " / " + fixed(batch * mc->request_tokens_per_s.p90, 1) + " (batch total, mean " +
              fixed(batch * mc->tokens_per_s, 1) + ")\n";
    }
  }
  io.out << text;
}

}  // namespace

void setup_predict(CLI::App& app, Io& io) {
  auto opts = std::make_shared<PredictOptions>();
  CLI::App* sub = app.add_subcommand("predict", "Predict tokens/s for plain and speculative decoding");
  sub->add_option("--scenario", opts->scenario, "Scenario name (models/scenarios) or file")
      ->capture_default_str();
  auto* accept = sub->add_option("--accept", opts->accept,
                                 "Per-token acceptance of the first draft position, in [0, 1]; deeper "
                                 "positions keep the shape of the scenario's profile (docs/acceptance.md)")
                     ->check(CLI::Range(0.0, 1.0));
  auto* per_pos = sub->add_option("--accept-per-position", opts->accept_per_position,
                                  "Conditional acceptance per draft position, b1,b2,...")
                      ->delimiter(',')
                      ->check(CLI::Range(0.0, 1.0));
  auto* length = sub->add_option("--accept-length", opts->accept_length,
                                 "Measured tokens per cycle (tau, bonus token included), >= 1")
                     ->check(CLI::Range(1.0, 1e6));
  auto* logs = sub->add_option("--acceptance-log", opts->acceptance_logs,
                               "Engine logs (SGLang, vLLM, llama.cpp) whose pooled acceptance to use")
                   ->check(CLI::ExistingFile);
  accept->excludes(per_pos)->excludes(length)->excludes(logs);
  per_pos->excludes(length)->excludes(logs);
  length->excludes(logs);
  sub->add_option("--set", opts->patches, "Patch a scenario field: key=value (dotted path, units as in files)")
      ->allow_extra_args(false);
  sub->add_option("--concurrency", opts->concurrency,
                  "Predict at these batches, c1,c2,... (workload.concurrency; replaces the file's list): "
                  "per-request and aggregate tok/s per level");
  sub->add_option("--monte-carlo", opts->monte_carlo, "Simulate this many requests (100 cycles each)")
      ->check(CLI::Range(1, 10'000'000));
  sub->add_option("--seed", opts->seed, "Monte Carlo seed")->capture_default_str();
  sub->add_option("--request-spread", opts->request_spread,
                  "Standard deviation of per-request first-position acceptance (Beta)")
      ->check(CLI::Range(0.0, 0.5));
  sub->add_flag("--json", opts->json, "Print one JSON object");
  sub->callback([opts, &io]() { run_predict(*opts, io); });
}

}  // namespace specsim::cli
