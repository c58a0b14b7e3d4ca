// Fuzzes the values a user types on the command line. The first line is a quantity with its unit
// (units::parse, behind --decode-step, comm sizes and every quantity a --set patch writes); the
// first byte picks the quantity. The other lines are `--set` patches, applied to the default
// scenario by the loader; each patched key that is a field is read back off the loaded value
// (field_text).
// Invariants: an accepted quantity is finite and inside its plausibility row; printed with
// units::format it reads back within the 3 significant digits format prints.
#include <cmath>
#include <sstream>

#include "scratch_file.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/plausibility.hpp"
#include "specsim/scenario_fields.hpp"
#include "specsim/units.hpp"

namespace {

constexpr specsim::units::Quantity kQuantities[] = {
    specsim::units::Quantity::kDuration, specsim::units::Quantity::kBytes, specsim::units::Quantity::kBandwidth,
    specsim::units::Quantity::kFlopRate, specsim::units::Quantity::kRate};

// format() prints 3 significant digits: within 0.5% (plus a little for the binary prefixes'
// division) of the value.
constexpr double kPrintedRelativeError = 0.006;

void check_quantity(const std::string& text, specsim::units::Quantity q) {
  double v = 0.0;
  try {
    v = specsim::units::parse(text, q);
  } catch (const specsim::Error&) {
    return;
  }
  const auto m = specsim::magnitude_of(q);
  SPECSIM_FUZZ_ASSERT(std::isfinite(v));
  SPECSIM_FUZZ_ASSERT(specsim::implausible(v, m).empty());
  // Rounding to 3 digits may step just past the upper bound; leave that 1% out.
  if (v > 0.99 * specsim::plausible_range(m).max) return;
  const std::string printed = specsim::units::format(v, q);
  double back = 0.0;
  try {
    back = specsim::units::parse(printed, q);
  } catch (const specsim::Error& e) {
    std::fprintf(stderr, "'%s' -> %.17g -> '%s' does not read back: %s\n", text.c_str(), v, printed.c_str(), e.what());
    std::abort();
  }
  // Below the smallest normal double the 3-digit print is all that is kept; compare absolutely.
  SPECSIM_FUZZ_ASSERT(std::fabs(back - v) <= kPrintedRelativeError * v || std::fabs(back - v) < 1e-300);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const specsim::DataDir root(SPECSIM_SOURCE_DIR);
  if (size == 0) return 0;
  const auto q = kQuantities[data[0] % std::size(kQuantities)];
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  std::string value;
  std::getline(lines, value);
  check_quantity(value, q);
  std::vector<std::string> patches, keys;
  for (std::string line; std::getline(lines, line);) {
    patches.push_back(line);
    keys.push_back(line.substr(0, line.find_first_of("*=")));
  }
  if (patches.empty()) return 0;
  try {
    const specsim::Scenario s = specsim::load_scenario(specsim::kDefaultScenario, patches, root);
    for (const auto& key : keys) {
      // A field the patch set reads back; any other key reads as "".
      SPECSIM_FUZZ_ASSERT(specsim::is_scenario_field(key) || specsim::field_text(s, key).empty());
    }
  } catch (const specsim::Error&) {
  }
  return 0;
}
