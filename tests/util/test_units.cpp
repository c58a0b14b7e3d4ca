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
