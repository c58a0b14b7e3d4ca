// Fuzzes the Prometheus /metrics reader (vLLM's spec_decode counters, SGLang's accept-length
// gauges) inside parse_engine_log, with both ways two scrapes reach summarize(): two samples of one
// counter in one file (vllm_counters differences them), and two files (difference_scrapes). A line
// `# specsim-fuzz: next scrape` splits the input into two files; without it the input is one file.
// specsim::Error is the expected answer to bad input; a pooled summary must be finite, with
// tau >= 1 and rates in [0, 1].
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "scratch_file.hpp"
#include "specsim/engine_log.hpp"
#include "specsim/error.hpp"

namespace {

constexpr std::string_view kSplit = "# specsim-fuzz: next scrape";

std::vector<specsim::LogRecord> parse(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  return specsim::parse_engine_log(in, file);
}

void check_summary(const specsim::AcceptanceSummary& s) {
  SPECSIM_FUZZ_ASSERT(std::isfinite(s.tokens_per_cycle) && s.tokens_per_cycle >= 1.0);
  SPECSIM_FUZZ_ASSERT(std::isfinite(s.cycles) && s.cycles >= 0.0);
  for (const double a : s.unconditional_rates) SPECSIM_FUZZ_ASSERT(a >= 0.0 && a <= 1.0);
  for (const double b : s.conditional_rates) SPECSIM_FUZZ_ASSERT(std::isfinite(b) && b >= 0.0);
  if (s.draft_accept_rate) SPECSIM_FUZZ_ASSERT(*s.draft_accept_rate >= 0.0 && *s.draft_accept_rate <= 1.0);
}

// Summarizes what parsed, as `specsim calibrate acceptance` / `predict --log` would.
void pool(const std::vector<specsim::LogRecord>& records) {
  if (records.empty()) return;
  try {
    const auto summary = specsim::summarize(records);
    check_summary(summary);
    const auto acceptance = specsim::acceptance_from_summary(summary);
    specsim::validate(acceptance, specsim::DraftShape{});
  } catch (const specsim::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::size_t split = text.find(kSplit);
  try {
    if (split == std::string::npos) {
      pool(parse(text, "scrape.prom"));
      return 0;
    }
    std::vector<specsim::LogRecord> records = parse(text.substr(0, split), "before.prom");
    const auto after = parse(text.substr(split + kSplit.size()), "after.prom");
    pool(after);
    records.insert(records.end(), after.begin(), after.end());
    pool(records);
  } catch (const specsim::Error&) {
  }
  return 0;
}
