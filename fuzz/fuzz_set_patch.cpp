// Fuzzes `--set` patches: each input line is one `key=value` patch applied to the default
// scenario of the source tree, which is then resolved and validated. specsim::Error is the
// expected answer; anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "specsim/error.hpp"
#include "specsim/load.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const specsim::DataDir root(SPECSIM_SOURCE_DIR);
  const std::string text(reinterpret_cast<const char*>(data), size);
  // A patch may name a file; device and process files never end (/dev/zero) or block (/dev/stdin).
  for (const char* endless : {"/dev", "/proc", "/sys"}) {
    if (text.find(endless) != std::string::npos) return 0;
  }
  std::vector<std::string> patches;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) patches.push_back(line);
  try {
    (void)specsim::load_scenario(specsim::kDefaultScenario, patches, root);
  } catch (const specsim::Error&) {
  }
  return 0;
}
