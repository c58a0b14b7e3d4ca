// Units: the one place where text with a unit becomes an SI double and back.
//
// Inside specsim every dimensional value is an SI double whose name carries its unit
// (`latency_s`, `message_bytes`, `bandwidth_bytes_per_s`, `flop_per_s`). Text in data files and on
// the command line must carry a unit; a bare number where a unit is required is an error that says
// how to fix it. Decimal prefixes are powers of ten and binary prefixes powers of two, always:
// GB = 1e9, GiB = 2^30 (SimGrid's xbt_parse_units.cpp; ASTRA-sim's analytical backend reading
// "GB/s" as 2^30 is 7.4% off a datasheet, the counter-example).
#pragma once

#include <string>
#include <string_view>

namespace specsim::units {

enum class Quantity { kDuration, kBytes, kBandwidth, kFlopRate, kRate };

[[nodiscard]] std::string_view to_string(Quantity q);
[[nodiscard]] std::string_view example(Quantity q);  // e.g. "2.5us" for kDuration

// Each parser throws specsim::Error (without a location; callers add file, line and key) when the
// text is not a finite non-negative number followed by a known unit of that quantity, or when the
// value in SI is not finite or lies outside its row of plausibility.hpp (`1e300TB/s`).
[[nodiscard]] double parse(std::string_view text, Quantity q);
[[nodiscard]] double parse_duration_s(std::string_view text);          // "2.5us" "30 ms" "1s"
[[nodiscard]] double parse_bytes(std::string_view text);               // "14KiB" "2MB" "8B"
[[nodiscard]] double parse_bandwidth_bytes_per_s(std::string_view t);  // "48GB/s" "1.5TiB/s"
[[nodiscard]] double parse_flop_rate(std::string_view text);           // "989TFLOP/s" "989TFLOPS"
[[nodiscard]] double parse_rate_per_s(std::string_view text);          // "82tok/s" "82/s"

// Human formatting with three significant digits and a fitting prefix: "30.0 ms", "14.0 KiB".
[[nodiscard]] std::string format_duration(double seconds);
[[nodiscard]] std::string format_bytes(double bytes);                  // binary prefixes
[[nodiscard]] std::string format_bandwidth(double bytes_per_s);        // decimal prefixes, "GB/s"
[[nodiscard]] std::string format_flop_rate(double flop_per_s);
[[nodiscard]] std::string format(double value, Quantity q);
// A plain number with `digits` decimals ("57.14"), for tables of counts and rates.
[[nodiscard]] std::string format_fixed(double value, int digits);

}  // namespace specsim::units
