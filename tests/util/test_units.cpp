#include <catch2/catch.hpp>

#include "specsim/error.hpp"
#include "specsim/units.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;
namespace u = specsim::units;

TEST_CASE("units: durations, sizes, bandwidths and FLOP rates parse to SI", "[units]") {
  CHECK_THAT(u::parse_duration_s("2.5us"), WithinRel(2.5e-6, 1e-12));
  CHECK_THAT(u::parse_duration_s("30 ms"), WithinRel(0.030, 1e-12));
  CHECK_THAT(u::parse_duration_s("1s"), WithinRel(1.0, 1e-12));
  // GB = 1e9 and GiB = 2^30, always (SI and IEC prefixes, https://physics.nist.gov/cuu/Units/binary.html).
  CHECK_THAT(u::parse_bytes("14KiB"), WithinRel(14.0 * 1024, 1e-12));
  CHECK_THAT(u::parse_bytes("2MB"), WithinRel(2e6, 1e-12));
  CHECK_THAT(u::parse_bandwidth_bytes_per_s("48GB/s"), WithinRel(48e9, 1e-12));
  CHECK_THAT(u::parse_bandwidth_bytes_per_s("1GiB/s"), WithinRel(1073741824.0, 1e-12));
  CHECK_THAT(u::parse_flop_rate("989TFLOP/s"), WithinRel(989e12, 1e-12));
  CHECK_THAT(u::parse_flop_rate("989TFLOPS"), WithinRel(989e12, 1e-12));
  CHECK_THAT(u::parse_rate_per_s("82tok/s"), WithinRel(82.0, 1e-12));
}

TEST_CASE("units: a bare number or a wrong unit says how to fix it", "[units]") {
  CHECK_THROWS_WITH(u::parse_bandwidth_bytes_per_s("4.8"),
                    Contains("expected a bandwidth with unit (e.g. '48GB/s'), got '4.8': the unit is missing"));
  CHECK_THROWS_WITH(u::parse_duration_s("3 parsecs"), Contains("unknown unit 'parsecs'"));
  CHECK_THROWS_WITH(u::parse_bytes("-1KiB"), Contains("must not be negative"));
  CHECK_THROWS_WITH(u::parse_bytes("nanKiB"), Contains("got 'nanKiB'"));
  CHECK_THROWS_WITH(u::parse_bytes("Mb"), Contains("no number"));
  CHECK_THROWS_AS(u::parse_bandwidth_bytes_per_s("48Gb/s"), specsim::Error);  // bits are not bytes
}

TEST_CASE("units: formatting picks a readable prefix", "[units]") {
  CHECK(u::format_duration(0.030) == "30 ms");
  CHECK(u::format_duration(26.9e-6) == "26.9 us");
  CHECK(u::format_bytes(14336) == "14 KiB");
  CHECK(u::format_bandwidth(1.792e12) == "1.79 TB/s");
}

TEST_CASE("units: every prefix format prints reads back, small values included", "[units]") {
  // The fuzzer (fuzz_cli_values) found 9111111FLOP/s printed as '9.11 MFLOP/s', which parse refused.
  const std::pair<u::Quantity, double> values[] = {
      {u::Quantity::kFlopRate, 9.11e6}, {u::Quantity::kFlopRate, 512e3}, {u::Quantity::kFlopRate, 3.0},
      {u::Quantity::kBandwidth, 2e3},   {u::Quantity::kBandwidth, 7e6},  {u::Quantity::kBytes, 3e6},
      {u::Quantity::kDuration, 4e-9},   {u::Quantity::kRate, 12.5}};
  for (const auto& [q, v] : values) {
    const std::string printed = u::format(v, q);
    CAPTURE(printed);
    CHECK_THAT(u::parse(printed, q), WithinRel(v, 0.006));
  }
  CHECK(u::format(9.11e6, u::Quantity::kFlopRate) == "9.11 MFLOP/s");
}
