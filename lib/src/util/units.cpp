#include "specsim/units.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

#include "specsim/error.hpp"
#include "specsim/plausibility.hpp"

namespace specsim::units {
namespace {

struct Unit {
  std::string_view symbol;
  double factor;
};

// Suffixes are matched exactly (case-sensitive: "Mb" is not "MB"). Bits are deliberately absent:
// nccl-tests and datasheets state bytes.
constexpr std::array kDurationUnits{Unit{"ns", 1e-9}, Unit{"us", 1e-6}, Unit{"µs", 1e-6},
                                    Unit{"ms", 1e-3}, Unit{"s", 1.0},    Unit{"min", 60.0},
                                    Unit{"h", 3600.0}};
constexpr std::array kByteUnits{
    Unit{"B", 1.0},          Unit{"kB", 1e3},           Unit{"KB", 1e3},
    Unit{"MB", 1e6},         Unit{"GB", 1e9},           Unit{"TB", 1e12},
    Unit{"PB", 1e15},        Unit{"KiB", 1024.0},       Unit{"MiB", 1048576.0},
    Unit{"GiB", 1073741824.0}, Unit{"TiB", 1099511627776.0}, Unit{"PiB", 1125899906842624.0}};
// Every prefix format_flop_rate prints reads back (k and M included: a tiny rate is implausible
// somewhere else, not unreadable here).
constexpr std::array kFlopUnits{Unit{"FLOP/s", 1.0},  Unit{"kFLOP/s", 1e3},  Unit{"MFLOP/s", 1e6},
                                Unit{"GFLOP/s", 1e9}, Unit{"TFLOP/s", 1e12}, Unit{"PFLOP/s", 1e15},
                                Unit{"FLOPS", 1.0},   Unit{"kFLOPS", 1e3},   Unit{"MFLOPS", 1e6},
                                Unit{"GFLOPS", 1e9},  Unit{"TFLOPS", 1e12},  Unit{"PFLOPS", 1e15}};
constexpr std::array kRateUnits{Unit{"/s", 1.0}, Unit{"tok/s", 1.0}, Unit{"tokens/s", 1.0},
                                Unit{"Hz", 1.0}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

[[noreturn]] void fail(std::string_view text, Quantity q, std::string_view why) {
  throw Error("expected a " + std::string(to_string(q)) + " with unit (e.g. '" +
              std::string(example(q)) + "'), got '" + std::string(text) + "'" +
              (why.empty() ? "" : ": " + std::string(why)));
}

// Splits "12.5 GB/s" into 12.5 and "GB/s".
std::pair<double, std::string_view> split_number(std::string_view text, Quantity q) {
  const std::string_view t = trim(text);
  double value = 0.0;
  const char* begin = t.data();
  const char* end = t.data() + t.size();
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr == begin) fail(text, q, "no number");
  if (!std::isfinite(value)) fail(text, q, "not a finite number");
  if (value < 0.0) fail(text, q, "must not be negative");
  return {value, trim(std::string_view(ptr, static_cast<std::size_t>(end - ptr)))};
}

template <std::size_t N>
double apply(std::string_view text, Quantity q, const std::array<Unit, N>& table,
             std::string_view per_second = {}) {
  auto [value, suffix] = split_number(text, q);
  if (suffix.empty()) fail(text, q, "the unit is missing");
  if (!per_second.empty()) {
    if (suffix.size() <= per_second.size() ||
        suffix.substr(suffix.size() - per_second.size()) != per_second) {
      fail(text, q, "unknown unit '" + std::string(suffix) + "'");
    }
    suffix.remove_suffix(per_second.size());
  }
  for (const Unit& u : table) {
    if (u.symbol == suffix) return value * u.factor;
  }
  fail(text, q, "unknown unit '" + std::string(suffix) + std::string(per_second) + "'");
}

std::string with_prefix(double value, const char* unit, bool binary) {
  static constexpr std::array kDecimal{"", "k", "M", "G", "T", "P"};
  static constexpr std::array kBinary{"", "Ki", "Mi", "Gi", "Ti", "Pi"};
  const double step = binary ? 1024.0 : 1000.0;
  std::size_t i = 0;
  double v = value;
  while (std::fabs(v) >= step && i + 1 < kDecimal.size()) {
    v /= step;
    ++i;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g %s%s", v, binary ? kBinary[i] : kDecimal[i], unit);
  return buf;
}

}  // namespace

std::string_view to_string(Quantity q) {
  switch (q) {
    case Quantity::kDuration: return "duration";
    case Quantity::kBytes: return "size";
    case Quantity::kBandwidth: return "bandwidth";
    case Quantity::kFlopRate: return "FLOP rate";
    case Quantity::kRate: return "rate";
  }
  return "value";
}

std::string_view example(Quantity q) {
  switch (q) {
    case Quantity::kDuration: return "2.5us";
    case Quantity::kBytes: return "14KiB";
    case Quantity::kBandwidth: return "48GB/s";
    case Quantity::kFlopRate: return "989TFLOP/s";
    case Quantity::kRate: return "82tok/s";
  }
  return "";
}

namespace {
double convert(std::string_view text, Quantity q) {
  switch (q) {
    case Quantity::kDuration: return apply(text, q, kDurationUnits);
    case Quantity::kBytes: return apply(text, q, kByteUnits);
    case Quantity::kBandwidth: return apply(text, q, kByteUnits, "/s");
    case Quantity::kFlopRate: return apply(text, q, kFlopUnits);
    case Quantity::kRate: return apply(text, q, kRateUnits);
  }
  fail(text, q, "");
}
}  // namespace

double parse(std::string_view text, Quantity q) {
  const double si = convert(text, q);
  // A finite number can overflow once its unit is applied (1e300TB/s); plausibility.hpp's table
  // also refuses finite values no hardware has.
  check_plausible(si, magnitude_of(q), trim(text));
  return si;
}

double parse_duration_s(std::string_view t) { return parse(t, Quantity::kDuration); }
double parse_bytes(std::string_view t) { return parse(t, Quantity::kBytes); }
double parse_bandwidth_bytes_per_s(std::string_view t) { return parse(t, Quantity::kBandwidth); }
double parse_flop_rate(std::string_view t) { return parse(t, Quantity::kFlopRate); }
double parse_rate_per_s(std::string_view t) { return parse(t, Quantity::kRate); }

std::string format_duration(double seconds) {
  char buf[64];
  const double a = std::fabs(seconds);
  if (a == 0.0) return "0 s";
  if (a < 1e-6) std::snprintf(buf, sizeof buf, "%.3g ns", seconds * 1e9);
  else if (a < 1e-3) std::snprintf(buf, sizeof buf, "%.3g us", seconds * 1e6);
  else if (a < 1.0) std::snprintf(buf, sizeof buf, "%.3g ms", seconds * 1e3);
  else std::snprintf(buf, sizeof buf, "%.3g s", seconds);
  return buf;
}

std::string format_bytes(double bytes) { return with_prefix(bytes, "B", true); }
std::string format_bandwidth(double bytes_per_s) { return with_prefix(bytes_per_s, "B/s", false); }
std::string format_flop_rate(double flop_per_s) { return with_prefix(flop_per_s, "FLOP/s", false); }

std::string format_fixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

std::string format(double value, Quantity q) {
  switch (q) {
    case Quantity::kDuration: return format_duration(value);
    case Quantity::kBytes: return format_bytes(value);
    case Quantity::kBandwidth: return format_bandwidth(value);
    case Quantity::kFlopRate: return format_flop_rate(value);
    case Quantity::kRate: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3g /s", value);
      return buf;
    }
  }
  return std::to_string(value);
}

}  // namespace specsim::units
