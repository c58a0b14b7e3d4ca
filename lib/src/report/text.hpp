// Pieces of the fixed-width text tables the reports print.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "specsim/units.hpp"

namespace specsim::text {

// `s` padded with spaces to `width` characters (longer text is left as it is).
inline std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

// A fraction as a percentage with `digits` decimals ("12.34%"); "n/a" when it is not finite.
inline std::string percent(double fraction, int digits) {
  if (!std::isfinite(fraction)) return "n/a";
  return units::format_fixed(100.0 * fraction, digits) + "%";
}

// Each warning on a line of its own, as the text reports end: "  warning: ...\n".
inline std::string warning_lines(const std::vector<std::string>& warnings) {
  std::string out;
  for (const auto& w : warnings) out += "  warning: " + w + "\n";
  return out;
}

}  // namespace specsim::text
