// Fuzzes parse_engine_log and, when lines parse, the pooled summary and the acceptance model it
// supports. specsim::Error is the expected answer to bad input; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "specsim/engine_log.hpp"
#include "specsim/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  try {
    const auto records = specsim::parse_engine_log(in, "<fuzz>");
    if (records.empty()) return 0;
    const auto summary = specsim::summarize(records);
    const auto acceptance = specsim::acceptance_from_summary(summary);
    specsim::validate(acceptance, specsim::DraftShape{});
  } catch (const specsim::Error&) {
  }
  return 0;
}
