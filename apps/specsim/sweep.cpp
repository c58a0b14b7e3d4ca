// specsim sweep: the full grid of scenario settings, best configuration first. With concurrency
// levels (workload.concurrency, --concurrency), the best point per level (concurrency.hpp).
#include <CLI/CLI.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <ostream>

#include "choices.hpp"
#include "cli.hpp"
#include "emit_option.hpp"
#include "format_option.hpp"
#include "specsim/concurrency.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/report.hpp"
#include "specsim/whatif.hpp"

namespace specsim::cli {

namespace {

struct SweepOptions {
  std::string scenario = kDefaultScenario;
  std::vector<std::string> vary;
  std::vector<std::string> patches;
  std::string concurrency;  // "1,4,16": --set workload.concurrency=1,4,16, so the file's rules apply
  int top = 20;
  bool top_given = false;  // --top on the command line: JSON and CSV list the best `top` too
  Format format = Format::kText;
  std::optional<Engine> emit;  // --emit: print the launch of the best setting (per level) on that engine
};

// JSON and CSV list every point unless --top is given: at most this many (about 300 bytes of JSON
// each, so 300 MB of output); a larger grid is refused before it runs, not after it filled memory.
constexpr std::size_t kMaxListedPoints = 1'000'000;

// How many points the view shows, so the sweep keeps no more (issue 36): the text's rows, or every
// point for JSON and CSV, refused beyond kMaxListedPoints.
std::size_t points_to_keep(const SweepOptions& o, const std::vector<SweepAxis>& axes) {
  if (o.format == Format::kText || o.top_given) return static_cast<std::size_t>(o.top);
  const std::size_t total = grid_size(axes);
  if (total > kMaxListedPoints) {
    throw CLI::ValidationError("--" + std::string(to_string(o.format)),
                               "lists every point of the grid, and " + std::to_string(total) +
                                   " points exceed the 1000000 it lists: give --top N for the best N, the text "
                                   "view, or a coarser grid");
  }
  return kKeepEveryPoint;
}

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

void run_concurrency_sweep(const SweepOptions& o, const std::vector<std::string>& patches,
                           const std::vector<SweepAxis>& axes, Io& io) {
  // Condition axes (workload.*, acceptance.*) make buckets, each with its own best per level.
  std::vector<ConcurrencySweep> buckets;
  {
    const SigintToFlag sigint;  // Ctrl-C keeps the levels done, as a plain sweep keeps its points
    buckets = sweep_by_workload(o.scenario, patches, axes, DataDir(), &g_sweep_interrupted);
  }
  std::optional<EmittedLaunch> launch;
  if (o.emit) {
    if (buckets.size() != 1) {
      throw CLI::ValidationError("--emit", "one launch per workload: fix the condition axes with --set (" +
                                               std::to_string(buckets.size()) + " buckets)");
    }
    launch = emit_launch(emit_levels(o.scenario, patches, buckets.front()), *o.emit);
  }
  io.out << emitted(render_workload_sweep(buckets, o.format), o.format, launch) << std::flush;
  if (!buckets.empty() && buckets.back().interrupted) {
    std::size_t done = 0;
    for (const auto& b : buckets) done += b.levels.size();
    throw Interrupted("sweep interrupted (SIGINT) after " + std::to_string(done) +
                      " concurrency levels; the levels done are printed above");
  }
  // CSV rows of such levels are empty; say why where the table cannot.
  std::size_t infeasible = 0, levels = 0;
  for (const auto& cs : buckets) {
    levels += cs.levels.size();
    infeasible += std::count_if(cs.levels.begin(), cs.levels.end(), [](const auto& l) { return !l.feasible(); });
  }
  if (infeasible > 0 && o.format == Format::kCsv) {
    io.err << "specsim: " << infeasible << " of " << levels << " levels do not fit in GPU memory at any point\n";
  }
}

void run_sweep(const SweepOptions& o, Io& io) {
  check_emit_format(o.emit, o.format);
  std::vector<SweepAxis> axes;
  for (const auto& v : o.vary) axes.push_back(parse_vary(v));
  // A key both set and varied has two values: which one the user meant is not guessed.
  for (const auto& p : o.patches) {
    const std::string key = p.substr(0, p.find_first_of("*="));
    for (const auto& a : axes) {
      if (a.key == key) {
        throw CLI::ValidationError("--set " + p, "'" + key + "' is also varied (--vary " + key +
                                                     "=...): drop one of the two");
      }
    }
  }
  std::vector<std::string> patches = o.patches;
  if (!o.concurrency.empty()) patches.push_back("workload.concurrency=" + o.concurrency);  // wins over the file
  if (!o.concurrency.empty() || has_concurrency(o.scenario, patches, !axes.empty())) {
    run_concurrency_sweep(o, patches, axes, io);
    return;
  }
  if (axes.empty()) throw CLI::RequiredError("--vary");
  const std::size_t keep = points_to_keep(o, axes);
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
    r = sweep(o.scenario, o.patches, axes, DataDir(), progress, &g_sweep_interrupted, keep);
  }
  if (shown && r.interrupted) io.err << "\n";
  std::optional<EmittedLaunch> launch;
  if (o.emit && !r.points.empty() && r.points.front().infeasible.empty()) {
    std::vector<std::string> best = o.patches;
    for (auto& p : point_patches(r.keys, r.points.front())) best.push_back(std::move(p));
    launch = emit_launch(load_scenario(o.scenario, best), *o.emit);
  }
  io.out << emitted(render_sweep(r, o.format, o.top), o.format, launch) << std::flush;
  // The text says these in its header; the other formats leave them to stderr.
  const bool for_programs = o.format != Format::kText;
  if (r.infeasible > 0 && for_programs) {
    io.err << "specsim: " << r.infeasible << " of " << r.evaluated << " points do not fit in GPU memory\n";
  }
  if (r.invalid > 0 && for_programs) {
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
                  "The best point per batch, c1,c2,... (workload.concurrency; replaces the file's list)")
      ->check(non_empty());
  sub->add_option("--set", opts->patches, "Patch a scenario field: key=value")->allow_extra_args(false);
  sub->add_option("--top", opts->top, "The best N points: rows of the text table (default 20); JSON and CSV list "
                                     "every point unless given")
      ->check(CLI::Range(1, 1000000))
      ->each([opts](const std::string&) { opts->top_given = true; });
  add_format_option(*sub, opts->format, {.csv_flag = true});
  add_emit_option(*sub, opts->emit, "the best setting (per concurrency level)");
  sub->callback([opts, &io]() { run_sweep(*opts, io); });
}

}  // namespace specsim::cli
