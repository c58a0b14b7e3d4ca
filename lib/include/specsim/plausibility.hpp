// Plausibility bounds: the one table of the widest range each kind of quantity may take, in SI,
// after its unit is applied. A value outside it is a typo or an overflow (`1e300TB/s` is inf once
// multiplied by 1e12), never hardware: specsim refuses it with the rule and its reason rather than
// predict from it. The bounds are deliberately loose (orders of magnitude past the largest real
// value, each row says which); the tight checks (a bandwidth must be > 0, accept in [0, 1]) stay
// with the readers that know the field. docs/edge-cases.md prints this table.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "specsim/units.hpp"

namespace specsim {

enum class Magnitude {
  kBytes,           // sizes: memory, messages, weights (B)
  kDuration,        // times: steps, collectives, launch costs, engineering effort (s)
  kBandwidth,       // memory and link bandwidth (B/s)
  kFlopRate,        // FLOP/s
  kRate,            // tokens/s, events/s
  kCount,           // counts in model and scenario files: layers, heads, widths, vocab, batch
  kTokenCount,      // token counters in engine logs (cumulative over a server's life)
  kTokensPerCycle,  // acceptance length: tokens a verify cycle emits, the bonus token included
};

struct PlausibleRange {
  Magnitude magnitude;
  std::string_view name;  // "size", "duration", ... as messages say it
  double min;             // SI, inclusive
  double max;             // SI, inclusive
  std::string_view reason;  // why this bound, with its source
};

// Every row, in the order of Magnitude.
[[nodiscard]] std::span<const PlausibleRange> plausible_ranges();
[[nodiscard]] const PlausibleRange& plausible_range(Magnitude m);
[[nodiscard]] Magnitude magnitude_of(units::Quantity q);

// Empty when `value` is finite and inside the range; otherwise why not, e.g.
// "= 1e+300 TB/s is 1e+312 B/s: not finite after the unit is applied" or
// "'2PB/s' = 2e+15: outside the plausible bandwidth range [0, 1e+15] (1 PB/s: ...)".
// `text` is the value as the user wrote it (shown first); may be empty.
[[nodiscard]] std::string implausible(double value, Magnitude m, std::string_view text = {});

// Throws specsim::Error (without a location: callers add file, line and key) when implausible.
void check_plausible(double value, Magnitude m, std::string_view text = {});

}  // namespace specsim
