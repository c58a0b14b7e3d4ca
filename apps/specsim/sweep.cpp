// specsim sweep: the full grid of scenario settings, best configuration first. With concurrency
// levels (workload.concurrency, --concurrency), the best point per level (concurrency.hpp).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <ostream>

#include "cli.hpp"
#include "specsim/concurrency.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/whatif.hpp"

namespace specsim::cli {

namespace {

struct SweepOptions {
  std::string scenario = kDefaultScenario;
  std::vector<std::string> vary;
  std::vector<std::string> patches;
  std::string concurrency;  // "1,4,16": --set workload.concurrency=1,4,16, so the file's rules apply
  int top = 20;
  bool csv = false;
  bool json = false;
};

// Set by SIGINT while a sweep runs; std::atomic<bool> is lock-free here, so setting it is
// async-signal-safe.
std::atomic<bool> g_sweep_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_sweep_sigint(int) { g_sweep_interrupted.store(true); }

// Installs on_sweep_sigint for SIGINT for its lifetime, then puts back what was there.
class SigintToFlag {
 public:
  SigintToFlag() {
    g_sweep_interrupted.store(false);
    struct sigaction sa {};
    sa.sa_handler = on_sweep_sigint;
    sigemptyset(&sa.sa_mask);
    installed_ = sigaction(SIGINT, &sa, &previous_) == 0;
  }
  ~SigintToFlag() {
    if (installed_) sigaction(SIGINT, &previous_, nullptr);
  }
  SigintToFlag(const SigintToFlag&) = delete;
  SigintToFlag& operator=(const SigintToFlag&) = delete;

 private:
  struct sigaction previous_ {};
  bool installed_ = false;
};

// Whether the scenario lists concurrency levels. With axes, a scenario that does not load answers
// no: the plain sweep then reports the problem as it always has. Without, the problem is reported
// here, before "--vary is required" would hide it.
bool has_concurrency(const std::string& scenario, const std::vector<std::string>& patches, bool has_axes) {
  try {
    return !load_scenario(scenario, patches).concurrency.empty();
  } catch (const Error&) {
    if (!has_axes) throw;
    return false;
  }
}

nlohmann::json best_json(const ConcurrencySweep& cs, const ConcurrencyBest& l) {
  nlohmann::json set;
  for (std::size_t i = 0; i < cs.keys.size(); ++i) set[cs.keys[i]] = l.best.values[i];
  const double c = l.concurrency;
  return {{"set", set},
          {"tokens_per_s", l.best.tokens_per_s},
          {"per_request_tokens_per_s", l.best.tokens_per_s / c},
          {"speedup", l.best.speedup},
          {"tokens_per_cycle", l.best.tokens_per_cycle},
          {"cycle_s", l.best.cycle_s},
          {"baseline_tokens_per_s", l.best.baseline_tokens_per_s},
          {"baseline_per_request_tokens_per_s", l.best.baseline_tokens_per_s / c}};
}

std::string concurrency_json(const ConcurrencySweep& cs) {
  nlohmann::json levels = nlohmann::json::array();
  for (const auto& l : cs.levels) {
    nlohmann::json j{{"concurrency", l.concurrency},
                     {"points", l.points},
                     {"infeasible_points", l.infeasible_points},
                     {"invalid_points", l.invalid_points},
                     {"feasible", l.feasible()}};
    if (l.feasible()) {
      j["best"] = best_json(cs, l);
      j["pays"] = l.pays();
    } else {
      j["best"] = nullptr;
      j["infeasible"] = l.infeasible;
    }
    levels.push_back(std::move(j));
  }
  const nlohmann::json j{{"keys", cs.keys},
                         {"calibrated_at_batch", cs.calibrated_batch},
                         {"note", calibration_note(cs.calibrated_batch)},
                         {"payoff", payoff_summary(cs)},
                         {"concurrency", levels},
                         {"stops_paying_at", cs.stops_paying_at ? nlohmann::json(*cs.stops_paying_at) : nlohmann::json()}};
  return j.dump(1) + "\n";
}

std::string concurrency_csv(const ConcurrencySweep& cs) {
  std::string out = "concurrency,";
  for (const auto& k : cs.keys) out += k + ",";
  out += "tokens_per_s,per_request_tokens_per_s,speedup,tokens_per_cycle,baseline_tokens_per_s\n";
  char buf[160];
  for (const auto& l : cs.levels) {
    out += std::to_string(l.concurrency) + ",";
    for (std::size_t i = 0; i < cs.keys.size(); ++i) out += (l.feasible() ? l.best.values[i] : "") + ",";
    if (!l.feasible()) {
      out += ",,,,\n";  // no point fits at this level
      continue;
    }
    std::snprintf(buf, sizeof buf, "%.6g,%.6g,%.6g,%.6g,%.6g\n", l.best.tokens_per_s,
                  l.best.tokens_per_s / l.concurrency, l.best.speedup, l.best.tokens_per_cycle,
                  l.best.baseline_tokens_per_s);
    out += buf;
  }
  return out;
}

std::string concurrency_text(const ConcurrencySweep& cs) {
  std::string keys;
  for (const auto& k : cs.keys) keys += (keys.empty() ? "" : ", ") + k;
  std::string out = "specsim sweep: the best " + keys + " per concurrency level\n";
  out += "  " + calibration_note(cs.calibrated_batch) + "\n";
  out += "  concurrency  ";
  for (const auto& k : cs.keys) out += k + "  ";
  out += "tok/s/req      tok/s  plain tok/s  speedup  tokens/cycle  points\n";
  char buf[256];
  for (const auto& l : cs.levels) {
    std::snprintf(buf, sizeof buf, "  %11d  ", l.concurrency);
    out += buf;
    if (!l.feasible()) {
      out += "INFEASIBLE at every point: " + l.infeasible + "\n";
      continue;
    }
    for (std::size_t i = 0; i < cs.keys.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%*s  ", int(cs.keys[i].size()), l.best.values[i].c_str());
      out += buf;
    }
    std::snprintf(buf, sizeof buf, "%9.1f  %9.1f  %11.1f  %6.3fx  %12.3f  %6zu", l.best.tokens_per_s / l.concurrency,
                  l.best.tokens_per_s, l.best.baseline_tokens_per_s, l.best.speedup, l.best.tokens_per_cycle, l.points);
    out += buf;
    if (l.infeasible_points > 0) out += " (" + std::to_string(l.infeasible_points) + " do not fit)";
    out += "\n";
  }
  out += "  " + payoff_summary(cs) + "\n";
  return out;
}

void run_concurrency_sweep(const SweepOptions& o, const std::vector<std::string>& patches,
                           const std::vector<SweepAxis>& axes, Io& io) {
  const ConcurrencySweep cs = sweep_by_concurrency(o.scenario, patches, axes);
  io.out << (o.json ? concurrency_json(cs) : o.csv ? concurrency_csv(cs) : concurrency_text(cs)) << std::flush;
  // CSV rows of such levels are empty; say why where the table cannot.
  const auto infeasible = std::count_if(cs.levels.begin(), cs.levels.end(), [](const auto& l) { return !l.feasible(); });
  if (infeasible > 0 && o.csv) {
    io.err << "specsim: " << infeasible << " of " << cs.levels.size() << " levels do not fit in GPU memory at any point\n";
  }
}

void run_sweep(const SweepOptions& o, Io& io) {
  std::vector<SweepAxis> axes;
  for (const auto& v : o.vary) axes.push_back(parse_vary(v));
  std::vector<std::string> patches = o.patches;
  if (!o.concurrency.empty()) patches.push_back("workload.concurrency=" + o.concurrency);  // wins over the file
  if (!o.concurrency.empty() || has_concurrency(o.scenario, patches, !axes.empty())) {
    run_concurrency_sweep(o, patches, axes, io);
    return;
  }
  if (axes.empty()) throw CLI::RequiredError("--vary");
  const auto start = std::chrono::steady_clock::now();
  // A progress line on a terminal only, and only once the sweep has run for a second.
  const bool tty = &io.err == &std::cerr && isatty(STDERR_FILENO);
  bool shown = false;
  SweepProgress progress = [&](std::size_t done, std::size_t total) {
    if (!tty) return;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s < 1.0 && !shown) return;
    shown = true;
    io.err << "\rsweep: " << done << "/" << total << " (" << (100 * done / total) << "%)" << std::flush;
    if (done == total) io.err << "\n";
  };
  SweepResult r;
  {
    // Ctrl-C stops the grid; the points done so far are printed below, then the exit code says so.
    const SigintToFlag sigint;
    r = sweep(o.scenario, o.patches, axes, DataDir(), progress, &g_sweep_interrupted);
  }
  if (shown && r.interrupted) io.err << "\n";
  std::string out;
  if (o.json) {
    nlohmann::json j;
    j["baseline_tokens_per_s"] = r.baseline_tokens_per_s;
    j["invalid"] = r.invalid;
    j["invalid_example"] = r.invalid_example;
    j["points"] = nlohmann::json::array();
    if (r.infeasible > 0) j["infeasible"] = r.infeasible;
    for (const auto& p : r.points) {
      nlohmann::json set;
      for (std::size_t i = 0; i < r.keys.size(); ++i) set[r.keys[i]] = p.values[i];
      if (!p.infeasible.empty()) {
        j["points"].push_back({{"set", set}, {"feasible", false}, {"infeasible", p.infeasible}});
        continue;
      }
      j["points"].push_back({{"set", set}, {"tokens_per_s", p.tokens_per_s}, {"speedup", p.speedup},
                             {"tokens_per_cycle", p.tokens_per_cycle}, {"cycle_s", p.cycle_s},
                             {"baseline_tokens_per_s", p.baseline_tokens_per_s}});
    }
    if (r.interrupted) {
      j["interrupted"] = true;
      j["evaluated"] = r.evaluated;
      j["total"] = r.total;
    }
    out = j.dump(1) + "\n";
  } else if (o.csv) {
    for (const auto& k : r.keys) out += k + ",";
    out += "tokens_per_s,speedup,tokens_per_cycle,cycle_s,baseline_tokens_per_s\n";
    char buf[160];
    for (const auto& p : r.points) {
      for (const auto& v : p.values) out += v + ",";
      if (!p.infeasible.empty()) {
        out += ",,,,\n";  // no figures: the point does not fit in memory (stderr says so)
        continue;
      }
      std::snprintf(buf, sizeof buf, "%.6g,%.6g,%.6g,%.6g,%.6g\n", p.tokens_per_s, p.speedup, p.tokens_per_cycle,
                    p.cycle_s, p.baseline_tokens_per_s);
      out += buf;
    }
  } else {
    char buf[256];
    if (r.interrupted) {
      std::snprintf(buf, sizeof buf, "specsim sweep: INTERRUPTED after %zu of %zu points\n", r.evaluated, r.total);
      out += buf;
    }
    // Axes on the model, the box or the compute terms move plain decoding too: then each row shows
    // its own plain rate, which its speedup is against.
    const auto feasible_end = r.points.end() - static_cast<std::ptrdiff_t>(r.infeasible);  // infeasible points sort last
    const auto [low, high] = std::minmax_element(r.points.begin(), feasible_end, [](const auto& a, const auto& b) {
      return a.baseline_tokens_per_s < b.baseline_tokens_per_s;
    });
    const bool plain_varies = r.points.begin() != feasible_end && low->baseline_tokens_per_s != high->baseline_tokens_per_s;
    if (plain_varies) {
      std::snprintf(buf, sizeof buf,
                    "specsim sweep: %zu valid, %zu invalid skipped; plain decoding %.1f to %.1f tok/s (per row)\n",
                    r.points.size(), r.invalid, low->baseline_tokens_per_s, high->baseline_tokens_per_s);
    } else {
      std::snprintf(buf, sizeof buf, "specsim sweep: %zu valid, %zu invalid skipped; plain decoding %.1f tok/s\n",
                    r.points.size(), r.invalid, r.baseline_tokens_per_s);
    }
    out += buf;
    if (r.invalid) out += "  first invalid: " + r.invalid_example + "\n";
    if (r.infeasible) {
      out += "  " + std::to_string(r.infeasible) + " of them do not fit in GPU memory (INFEASIBLE, listed last)\n";
    }
    out += "  ";
    for (const auto& k : r.keys) out += k + "  ";
    out += plain_varies ? "tok/s  plain tok/s  speedup  tokens/cycle\n" : "tok/s  speedup  tokens/cycle\n";
    for (std::size_t n = 0; n < r.points.size() && int(n) < o.top; ++n) {
      out += "  ";
      for (std::size_t i = 0; i < r.keys.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%*s  ", int(r.keys[i].size()), r.points[n].values[i].c_str());
        out += buf;
      }
      const auto& p = r.points[n];
      if (!p.infeasible.empty()) {
        out += "INFEASIBLE: " + p.infeasible + "\n";
      } else if (plain_varies) {
        std::snprintf(buf, sizeof buf, "%5.1f  %11.1f  %6.3fx  %12.3f\n", p.tokens_per_s, p.baseline_tokens_per_s,
                      p.speedup, p.tokens_per_cycle);
      } else {
        std::snprintf(buf, sizeof buf, "%5.1f  %6.3fx  %12.3f\n", p.tokens_per_s, p.speedup, p.tokens_per_cycle);
      }
      out += buf;
    }
  }
  io.out << out << std::flush;
  if (r.infeasible > 0 && (o.csv || o.json)) {
    io.err << "specsim: " << r.infeasible << " of " << r.evaluated << " points do not fit in GPU memory\n";
  }
  if (r.invalid > 0 && (o.csv || o.json)) {
    io.err << "specsim: " << r.invalid << " of " << r.evaluated << " points invalid; the first: " << r.invalid_example
           << "\n";
  }
  if (r.interrupted) {
    throw Interrupted("sweep interrupted (SIGINT) after " + std::to_string(r.evaluated) + " of " +
                      std::to_string(r.total) + " points; the results above cover those");
  }
}

}  // namespace

void setup_sweep(CLI::App& app, Io& io) {
  auto opts = std::make_shared<SweepOptions>();
  CLI::App* sub = app.add_subcommand("sweep", "Evaluate a grid of settings, best first");
  sub->add_option("--scenario", opts->scenario, "Scenario name or file")->capture_default_str();
  sub->add_option("--vary", opts->vary,
                  "key=v1,v2,... or key=a..b (repeatable); required, but for a concurrency sweep, where it "
                  "defaults to speculation.num_steps=1..8")
      ->allow_extra_args(false);
  sub->add_option("--concurrency", opts->concurrency,
                  "The best point per batch, c1,c2,... (workload.concurrency; replaces the file's list)");
  sub->add_option("--set", opts->patches, "Patch a scenario field: key=value")->allow_extra_args(false);
  sub->add_option("--top", opts->top, "Rows in the text table")->check(CLI::Range(1, 1000000));
  auto* csv = sub->add_flag("--csv", opts->csv, "Print CSV");
  auto* json = sub->add_flag("--json", opts->json, "Print one JSON object");
  csv->excludes(json);
  sub->callback([opts, &io]() { run_sweep(*opts, io); });
}

}  // namespace specsim::cli
