// specsim sweep: the full grid of scenario settings, best configuration first.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <ostream>

#include "cli.hpp"
#include "specsim/load.hpp"
#include "specsim/whatif.hpp"

namespace specsim::cli {

namespace {

struct SweepOptions {
  std::string scenario = kDefaultScenario;
  std::vector<std::string> vary;
  std::vector<std::string> patches;
  int top = 20;
  bool csv = false;
  bool json = false;
};

void run_sweep(const SweepOptions& o, Io& io) {
  std::vector<SweepAxis> axes;
  for (const auto& v : o.vary) axes.push_back(parse_vary(v));
  const auto start = std::chrono::steady_clock::now();
  // A progress bar on a terminal, once the sweep has run for a second.
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
  const SweepResult r = sweep(o.scenario, o.patches, axes, DataDir(), progress);
  std::string out;
  if (o.json) {
    nlohmann::json j;
    j["baseline_tokens_per_s"] = r.baseline_tokens_per_s;
    j["invalid"] = r.invalid;
    j["invalid_example"] = r.invalid_example;
    j["points"] = nlohmann::json::array();
    for (const auto& p : r.points) {
      nlohmann::json set;
      for (std::size_t i = 0; i < r.keys.size(); ++i) set[r.keys[i]] = p.values[i];
      j["points"].push_back({{"set", set}, {"tokens_per_s", p.tokens_per_s}, {"speedup", p.speedup},
                             {"tokens_per_cycle", p.tokens_per_cycle}, {"cycle_s", p.cycle_s}});
    }
    out = j.dump(1) + "\n";
  } else if (o.csv) {
    for (const auto& k : r.keys) out += k + ",";
    out += "tokens_per_s,speedup,tokens_per_cycle,cycle_s\n";
    char buf[128];
    for (const auto& p : r.points) {
      for (const auto& v : p.values) out += v + ",";
      std::snprintf(buf, sizeof buf, "%.6g,%.6g,%.6g,%.6g\n", p.tokens_per_s, p.speedup, p.tokens_per_cycle, p.cycle_s);
      out += buf;
    }
  } else {
    char buf[256];
    std::snprintf(buf, sizeof buf, "specsim sweep: %zu valid, %zu invalid skipped; plain decoding %.1f tok/s\n",
                  r.points.size(), r.invalid, r.baseline_tokens_per_s);
    out += buf;
    if (r.invalid) out += "  first invalid: " + r.invalid_example + "\n";
    out += "  ";
    for (const auto& k : r.keys) out += k + "  ";
    out += "tok/s  speedup  tokens/cycle\n";
    for (std::size_t n = 0; n < r.points.size() && int(n) < o.top; ++n) {
      out += "  ";
      for (std::size_t i = 0; i < r.keys.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%*s  ", int(r.keys[i].size()), r.points[n].values[i].c_str());
        out += buf;
      }
      std::snprintf(buf, sizeof buf, "%5.1f  %6.3fx  %12.3f\n", r.points[n].tokens_per_s, r.points[n].speedup,
                    r.points[n].tokens_per_cycle);
      out += buf;
    }
  }
  io.out << out;
}

}  // namespace

void setup_sweep(CLI::App& app, Io& io) {
  auto opts = std::make_shared<SweepOptions>();
  CLI::App* sub = app.add_subcommand("sweep", "Evaluate a grid of settings, best first");
  sub->add_option("--scenario", opts->scenario, "Scenario name or file")->capture_default_str();
  sub->add_option("--vary", opts->vary, "key=v1,v2,... or key=a..b (repeatable)")->required()->allow_extra_args(false);
  sub->add_option("--set", opts->patches, "Patch a scenario field: key=value")->allow_extra_args(false);
  sub->add_option("--top", opts->top, "Rows in the text table")->check(CLI::Range(1, 1000000));
  auto* csv = sub->add_flag("--csv", opts->csv, "Print CSV");
  auto* json = sub->add_flag("--json", opts->json, "Print one JSON object");
  csv->excludes(json);
  sub->callback([opts, &io]() { run_sweep(*opts, io); });
}

}  // namespace specsim::cli
