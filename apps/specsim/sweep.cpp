// specsim sweep: the full grid of scenario settings, best configuration first. With concurrency
// levels (workload.concurrency, --concurrency), the best point per level (concurrency.hpp).
#include <CLI/CLI.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <optional>
#include <ostream>
#include <sstream>
#include <string_view>

#include "choices.hpp"
#include "cli.hpp"
#include "emit_option.hpp"
#include "format_option.hpp"
#include "specsim/concurrency.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/output_file.hpp"
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
  bool stream = false;         // --stream: every point written as it is computed, in grid order
  std::string output;          // -o FILE; "" for standard output
  bool force = false;          // --force: -o may replace a read-only file, or write a device in place
};

// JSON and CSV list every point best first unless --top is given, so they hold every point until
// the grid is done: at most this many (about 300 bytes of JSON each, so 300 MB of output); a larger
// grid is refused before it runs, not after it filled memory. --stream has no such bound.
constexpr std::size_t kMaxListedPoints = 1'000'000;

// How many points the view shows, so the sweep keeps no more (issue 36): the text's rows, none when
// streamed (each point is written as it comes), or every point for JSON and CSV, refused beyond
// kMaxListedPoints.
std::size_t points_to_keep(const SweepOptions& o, const std::vector<SweepAxis>& axes) {
  if (o.stream) return 0;
  if (o.format == Format::kText || o.top_given) return static_cast<std::size_t>(o.top);
  const std::size_t total = grid_size(axes);
  if (total > kMaxListedPoints) {
    throw CLI::ValidationError("--" + std::string(to_string(o.format)),
                               "lists every point of the grid best first, and " + std::to_string(total) +
                                   " points exceed the 1000000 it holds for that: give --stream to write every "
                                   "point as it is computed (grid order), --top N for the best N, the text view, "
                                   "or a coarser grid");
  }
  return kKeepEveryPoint;
}

// The files a sweep reads, none of which -o may name: the scenario (a path, or its file in the data
// directory), every data file under models/ and calibration/ (the scenario names some, a --set or
// --vary value others), and every value of --set and --vary that is a path.
std::vector<std::string> files_read(const SweepOptions& o) {
  const DataDir data;
  std::vector<std::string> read = {o.scenario};
  try {
    read.push_back(data.resolve(DataKind::kScenario, o.scenario));
  } catch (const Error&) {
    // Not a data-directory name: the path itself, added above.
  }
  const std::vector<std::string> data_files = data.files();
  read.insert(read.end(), data_files.begin(), data_files.end());
  for (const auto* options : {&o.patches, &o.vary}) {
    for (const std::string& option : *options) {
      const auto eq = option.find('=');
      if (eq == std::string::npos) continue;
      std::istringstream values(option.substr(eq + 1));
      for (std::string value; std::getline(values, value, ',');) read.push_back(value);
    }
  }
  return read;
}

// Where the sweep writes: standard output as it goes, or with -o a temporary file beside FILE,
// renamed over it by commit() (output_file.hpp); an error before that leaves FILE as it was.
class SweepOutput {
 public:
  SweepOutput(const SweepOptions& o, Io& io) : io_(io) {
    if (o.output.empty()) return;
    OutputOptions options;
    options.inputs = files_read(o);
    options.force = o.force;
    file_.emplace(o.output, options);
  }

  // A write that fails (a full disk, a closed standard output) throws, which stops a streamed grid.
  void write(std::string_view text) {
    if (file_) {
      file_->write(text);
      return;
    }
    io_.out << text;
    if (!io_.out) throw Error("cannot write the output to standard output (full, closed or not writable)");
  }

  void commit() {
    if (file_) file_->commit();
    io_.out << std::flush;
  }

 private:
  Io& io_;
  std::optional<OutputFile> file_;
};

// Where the points done are, for the message of an interrupted sweep.
std::string where_written(const SweepOptions& o) {
  return o.output.empty() ? "printed above" : "written to " + o.output;
}

// --stream, --emit and the formats that exclude each other; before anything runs.
void check_stream_options(const SweepOptions& o) {
  if (!o.stream) return;
  if (o.format == Format::kText) {
    throw CLI::ValidationError("--stream", "writes every point as it is computed: give --csv or --json");
  }
  if (o.emit) throw CLI::ValidationError("--stream", "--emit needs the best point before the output: not with --stream");
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
  if (o.stream) {
    throw CLI::ValidationError("--stream", "lists a grid's every point; a concurrency sweep prints a row per level");
  }
  SweepOutput out(o, io);
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
  out.write(emitted(render_workload_sweep(buckets, o.format), o.format, launch));
  out.commit();
  if (!buckets.empty() && buckets.back().interrupted) {
    std::size_t done = 0;
    for (const auto& b : buckets) done += b.levels.size();
    throw Interrupted("sweep interrupted (SIGINT) after " + std::to_string(done) + " concurrency levels; the levels done are " +
                      where_written(o));
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

// The progress line on stderr: on a terminal only, and only once the sweep has run for a second.
SweepProgress progress_line(Io& io, bool& shown) {
  const auto start = std::chrono::steady_clock::now();
  const bool tty = &io.err == &std::cerr && isatty(STDERR_FILENO);
  return [&io, &shown, start, tty](std::size_t done, std::size_t total) {
    if (!tty) return;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s < 1.0 && !shown) return;
    shown = true;
    io.err << "\rsweep: " << done << "/" << total << " (" << (100 * done / total) << "%)" << std::flush;
    if (done == total) io.err << "\n";
  };
}

// The grid's output, all of it (render_sweep, with --emit's launch) or, streamed, what follows the
// last point (SweepStream::end).
std::string sweep_output(const SweepOptions& o, const SweepResult& r, std::optional<SweepStream>& stream) {
  if (stream) return stream->end(r);
  std::optional<EmittedLaunch> launch;
  if (o.emit && !r.points.empty() && r.points.front().infeasible.empty()) {
    std::vector<std::string> best = o.patches;
    for (auto& p : point_patches(r.keys, r.points.front())) best.push_back(std::move(p));
    launch = emit_launch(load_scenario(o.scenario, best), *o.emit);
  }
  return emitted(render_sweep(r, o.format, o.top), o.format, launch);
}

// The text says these in its header; the other formats leave them to stderr.
void report_counts(const SweepOptions& o, const SweepResult& r, Io& io) {
  if (o.format == Format::kText) return;
  if (r.infeasible > 0) {
    io.err << "specsim: " << r.infeasible << " of " << r.evaluated << " points do not fit in GPU memory\n";
  }
  if (r.invalid > 0) {
    io.err << "specsim: " << r.invalid << " of " << r.evaluated << " points invalid; the first: " << r.invalid_example
           << "\n";
  }
}

void run_grid_sweep(const SweepOptions& o, const std::vector<SweepAxis>& axes, Io& io) {
  const std::size_t keep = points_to_keep(o, axes);
  SweepOutput out(o, io);
  std::optional<SweepStream> stream;
  SweepSink sink;
  if (o.stream) {
    std::vector<std::string> keys;
    for (const auto& a : axes) keys.push_back(a.key);
    stream.emplace(keys, o.format);
    sink = [&out, &stream](const SweepPoint& p) { out.write(stream->point(p)); };
  }
  bool shown = false;
  SweepResult r;
  {
    // Ctrl-C stops the grid; the points done so far are written below, then the exit code says so.
    const SigintToFlag sigint;
    r = sweep(o.scenario, o.patches, axes, DataDir(), progress_line(io, shown), &g_sweep_interrupted, keep, sink);
  }
  if (shown && r.interrupted) io.err << "\n";
  out.write(sweep_output(o, r, stream));
  out.commit();
  report_counts(o, r, io);
  if (r.interrupted) {
    throw Interrupted("sweep interrupted (SIGINT) after " + std::to_string(r.evaluated) + " of " +
                      std::to_string(r.total) + " points; the results " + where_written(o) + " cover those");
  }
}

void run_sweep(const SweepOptions& o, Io& io) {
  check_emit_format(o.emit, o.format);
  check_stream_options(o);
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
  run_grid_sweep(o, axes, io);
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
  CLI::Option* top = sub->get_option("--top");
  sub->add_flag("--stream", opts->stream,
                "With --csv or --json: write every point as it is computed, in grid order (the last --vary "
                "fastest), holding none: a grid of any size")
      ->excludes(top);
  add_format_option(*sub, opts->format, {.csv_flag = true});
  add_emit_option(*sub, opts->emit, "the best setting (per concurrency level)");
  sub->add_option("-o,--output", opts->output,
                  "Write the output to FILE (a temporary file beside it, renamed at the end) instead of stdout");
  sub->add_flag("--force", opts->force, "Replace a read-only output, or write into a device or FIFO in place");
  sub->callback([opts, &io]() { run_sweep(*opts, io); });
}

}  // namespace specsim::cli
