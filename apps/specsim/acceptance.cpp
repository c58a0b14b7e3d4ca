// specsim acceptance: what engine logs say about acceptance, pooled across lines by cycles.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <ostream>

#include "cli.hpp"
#include "specsim/units.hpp"
#include "specsim/engine_log.hpp"

namespace specsim::cli {

namespace {

struct AcceptanceOptions {
  std::vector<std::string> logs;
  double confidence = 0.95;
  bool json = false;
};

std::string fixed(double v, int digits) { return units::format_fixed(v, digits); }

void run_acceptance(const AcceptanceOptions& o, Io& io) {
  std::vector<LogRecord> records;
  for (const auto& f : o.logs) {
    auto r = parse_engine_log_file(f);
    records.insert(records.end(), r.begin(), r.end());
  }
  const AcceptanceSummary s = summarize(records, o.confidence);
  std::string formats;
  for (auto f : s.formats) formats += (formats.empty() ? "" : ", ") + std::string(to_string(f));
  if (o.json) {
    nlohmann::json j;
    j["tokens_per_cycle"] = s.tokens_per_cycle;
    j["per_position"] = s.conditional_rates;
    j["per_position_unconditional"] = s.unconditional_rates;
    j["lines"] = s.num_records;
    j["formats"] = formats;
    j["cycles"] = s.cycles;
    j["cycles_are_counts"] = s.cycles_are_counts;
    if (s.throughput_tokens_per_s) j["throughput_tokens_per_s"] = *s.throughput_tokens_per_s;
    if (s.tokens_per_cycle_interval) {
      j["tokens_per_cycle_interval"] = {s.tokens_per_cycle_interval->low, s.tokens_per_cycle_interval->high};
    }
    if (s.draft_accept_rate) j["draft_accept_rate"] = *s.draft_accept_rate;
    j["confidence"] = o.confidence;
    j["notes"] = s.notes;
    j["warnings"] = s.warnings;
    io.out << j.dump(2) << "\n";
    return;
  }
  std::string out = "specsim acceptance: " + std::to_string(s.num_records) + " lines (" + formats + ")\n";
  out += "  tokens per cycle (tau)    " + fixed(s.tokens_per_cycle, 3);
  if (s.tokens_per_cycle_interval) {
    out += "  [" + fixed(100 * o.confidence, 0) + "% " + fixed(s.tokens_per_cycle_interval->low, 3) + ", " +
           fixed(s.tokens_per_cycle_interval->high, 3) + "]";
  }
  out += "\n";
  if (!s.conditional_rates.empty()) {
    out += "  conditional by position  ";
    for (double b : s.conditional_rates) out += " " + fixed(b, 3);
    out += "\n  unconditional (as logged)";
    for (double a : s.unconditional_rates) out += " " + fixed(a, 3);
    out += "\n";
  }
  if (s.throughput_tokens_per_s) out += "  throughput                " + fixed(*s.throughput_tokens_per_s, 2) + " tok/s\n";
  for (const auto& w : s.warnings) out += "  warning: " + w + "\n";
  for (const auto& n : s.notes) out += "  note: " + n + "\n";
  io.out << out;
}

}  // namespace

void setup_acceptance(CLI::App& app, Io& io) {
  auto opts = std::make_shared<AcceptanceOptions>();
  CLI::App* sub = app.add_subcommand("acceptance", "Summarise acceptance from SGLang, vLLM and llama.cpp logs and /metrics scrapes");
  sub->add_option("logs", opts->logs, "Engine logs or saved /metrics scrapes (SGLang, vLLM, llama-server, llama-speculative)")->required()->check(CLI::ExistingFile);
  sub->add_option("--confidence", opts->confidence, "Confidence of the intervals")->check(CLI::Range(0.5, 0.9999));
  sub->add_flag("--json", opts->json, "Print one JSON object");
  sub->callback([opts, &io]() { run_acceptance(*opts, io); });
}

}  // namespace specsim::cli
