// specsim acceptance: what engine logs say about acceptance, pooled across lines by cycles.
#include <CLI/CLI.hpp>

#include <ostream>

#include "cli.hpp"
#include "format_option.hpp"
#include "specsim/engine_log.hpp"
#include "specsim/report.hpp"

namespace specsim::cli {

namespace {

struct AcceptanceOptions {
  std::vector<std::string> logs;
  double confidence = 0.95;
  Format format = Format::kText;
};

void run_acceptance(const AcceptanceOptions& o, Io& io) {
  std::vector<LogRecord> records;
  for (const auto& f : o.logs) {
    auto r = parse_engine_log_file(f);
    records.insert(records.end(), r.begin(), r.end());
  }
  io.out << render_acceptance(summarize(records, o.confidence), o.format);
}

}  // namespace

void setup_acceptance(CLI::App& app, Io& io) {
  auto opts = std::make_shared<AcceptanceOptions>();
  CLI::App* sub = app.add_subcommand("acceptance", "Summarise acceptance from SGLang, vLLM and llama.cpp logs and /metrics scrapes");
  sub->add_option("logs", opts->logs, "Engine logs or saved /metrics scrapes (SGLang, vLLM, llama-server, llama-speculative)")->required()->check(CLI::ExistingFile);
  sub->add_option("--confidence", opts->confidence, "Confidence of the intervals")->check(CLI::Range(0.5, 0.9999));
  add_format_option(*sub, opts->format);
  sub->callback([opts, &io]() { run_acceptance(*opts, io); });
}

}  // namespace specsim::cli
