// Fuzzes parse_nccl_tests (strict and lenient) and the curve fit on every table it returns.
// A specsim::Error is the expected answer to bad input; any other exception, a crash or a
// sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "specsim/comm_curve.hpp"
#include "specsim/error.hpp"
#include "specsim/nccl_tests.hpp"

namespace {
void parse_and_fit(const std::string& text, bool lenient) {
  specsim::ParseOptions options;
  options.lenient = lenient;
  std::istringstream in(text);
  try {
    const auto log = specsim::parse_nccl_tests(in, "<fuzz>", options);
    for (const auto& table : log.tables) {
      try {
        const auto curve = specsim::curve_from_table(table);
        (void)curve.time_s(0.0);
        (void)curve.time_s(1 << 20);
      } catch (const specsim::Error&) {
      }
    }
  } catch (const specsim::Error&) {
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  parse_and_fit(text, false);
  parse_and_fit(text, true);
  return 0;
}
