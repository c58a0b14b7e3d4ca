// The measured all-reduce curve: exactness on an alpha-beta line, monotonicity, NCCL's steps on the
// real logs, and the held-out evaluation of issue "All-reduce cost calibrated from nccl-tests logs".
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "specsim/comm_curve.hpp"
#include "specsim/error.hpp"
#include "specsim/nccl_tests.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;
using specsim::CurvePoint;
using specsim::MeasuredCurve;

namespace {

const std::string kShared = std::string(SPECSIM_SOURCE_DIR) + "/calibration/nccl/";

specsim::NcclTestsTable table_of(const std::string& file) {
  return specsim::parse_nccl_tests_file(kShared + file).tables.at(0);
}

// Acceptance thresholds of the issue: K = 2, sizes up to 4 MiB.
constexpr int kEveryK = 2;
constexpr double kMaxBytes = 4.0 * 1048576.0;
constexpr double kMedianLimit = 0.03;
constexpr double kWorstLimit = 0.10;

}  // namespace

TEST_CASE("an alpha-beta line is reproduced between, at and beyond its points", "[comm_curve]") {
  // t = 5 us + n / (48 GB/s), sizes 1 KiB .. 1 MiB doubling.
  const double alpha_s = 5e-6, beta_s_per_byte = 1.0 / 48e9;
  std::vector<CurvePoint> points;
  for (double n = 1024; n <= 1048576; n *= 2) points.push_back({n, alpha_s + n * beta_s_per_byte});
  const auto curve = MeasuredCurve::fit(points);
  REQUIRE(curve.regimes().size() == 1);  // no steps on one line
  const auto& r = curve.regimes()[0];
  CHECK_THAT(r.fit.latency_s, WithinRel(alpha_s, 1e-9));
  CHECK_THAT(r.fit.bandwidth_bytes_per_s(), WithinRel(48e9, 1e-9));
  CHECK(r.max_relative_residual < 1e-12);
  // 14 KiB (between 8 and 16 KiB): 5 us + 14336 B / 48 GB/s = 5.29867 us. The log-log Hermite
  // pieces use the exact local slope, so only the cubic's own error remains (< 0.1%).
  CHECK_THAT(curve.time_s(14336), WithinRel(alpha_s + 14336 * beta_s_per_byte, 1e-3));
  CHECK_THAT(curve.time_s(65536), WithinRel(alpha_s + 65536 * beta_s_per_byte, 1e-12));  // a point
  // Beyond the range the line continues from the edge point: 4 MiB -> 5 us + 87.38 us.
  CHECK_THAT(curve.time_s(4194304), WithinRel(alpha_s + 4194304 * beta_s_per_byte, 1e-9));
  CHECK_THAT(curve.time_s(8), WithinRel(alpha_s + 8 * beta_s_per_byte, 1e-9));
}

TEST_CASE("the curve is monotone between measured neighbours (seeded random curves)", "[comm_curve]") {
  std::mt19937 rng(20240607);
  std::uniform_real_distribution<double> jitter(1.0, 1.3);
  int protocol_switches = 0;
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<CurvePoint> points;
    double t = 10e-6;
    for (double n = 8; n <= 1 << 24; n *= 2) {
      points.push_back({n, t});
      t *= jitter(rng);  // non-decreasing, with occasional large rises (steps)
    }
    // Half the trials without a rank count, half with 8 ranks (NCCL's LL -> Simple switch looked for).
    specsim::CurveOptions options;
    options.ranks = trial % 2 == 0 ? 0 : 8;
    const auto curve = MeasuredCurve::fit(points, options);
    for (auto kind : curve.boundary_kinds()) protocol_switches += kind == specsim::BoundaryKind::kProtocolSwitch;
    const auto& p = curve.points();
    for (std::size_t i = 0; i + 1 < p.size(); ++i) {
      double previous = curve.time_s(p[i].bytes);
      for (int s = 1; s <= 16; ++s) {
        const double n = p[i].bytes * std::pow(p[i + 1].bytes / p[i].bytes, s / 16.0);
        const double now = curve.time_s(n);
        INFO("trial " << trial << " bytes " << n);
        REQUIRE(now >= previous * (1 - 1e-12));
        previous = now;
      }
    }
  }
  CHECK(protocol_switches > 0);  // gaps with NCCL's LL -> Simple switch were walked through too
}

TEST_CASE("NCCL's LL -> Simple switch sits where NCCL's own model puts it", "[comm_curve]") {
  // A curve drawn from NCCL's model for 8 ranks on PCIe (docs/references/nccl.md#latency-tables, #latency-vs-ranks, #bandwidth-model) with Simple's algorithm
  // bandwidth at 10 GB/s: Ring/Simple 88.2 us + n x 0.1 ns/B, Ring/LL at half the bandwidth
  // 20.6 us + n x 0.2 ns/B. Sizes 64 KiB .. 512 KiB on the LL line, 1 .. 8 MiB on the Simple line.
  const double simple_s_per_byte = 1e-10, ll_s_per_byte = 2e-10;
  auto ll = [&](double n) { return 20.6e-6 + n * ll_s_per_byte; };
  auto simple = [&](double n) { return 88.2e-6 + n * simple_s_per_byte; };
  std::vector<CurvePoint> points;
  for (double n = 65536; n <= 524288; n *= 2) points.push_back({n, ll(n)});
  for (double n = 1048576; n <= 8388608; n *= 2) points.push_back({n, simple(n)});
  specsim::CurveOptions options;
  options.ranks = 8;
  const auto curve = MeasuredCurve::fit(points, options);
  // 512 KiB -> 1 MiB rises 67.6 us, less than 5x what the 0.2 ns/B slope beside it allows
  // (5 x 104.9 us): no step. The secant below the gap is 2x Simple's slope (>= 1.5): a switch.
  REQUIRE(curve.regimes().size() == 2);
  CHECK(curve.boundary_kinds() == std::vector{specsim::BoundaryKind::kProtocolSwitch});
  CHECK(curve.regimes()[0].last_bytes == 524288);
  CHECK_THAT(curve.regimes()[0].fit.latency_s, WithinRel(20.6e-6, 1e-9));
  CHECK_THAT(curve.regimes()[1].fit.seconds_per_byte, WithinRel(simple_s_per_byte, 1e-9));
  // n* = (88.2 - 20.6) us / (0.2 - 0.1) ns/B = 676,000 B, inside the 512 KiB .. 1 MiB gap.
  REQUIRE(curve.step_bytes().size() == 1);
  CHECK_THAT(curve.step_bytes()[0], WithinRel(676000.0, 1e-9));
  // Below n*, LL's line: 600,000 B -> 20.6 us + 120 us = 140.6 us; above, Simple's line:
  // 800,000 B -> 88.2 us + 80 us = 168.2 us; at n* both give 20.6 + 135.2 = 88.2 + 67.6 = 155.8 us.
  CHECK_THAT(curve.time_s(600000), WithinRel(140.6e-6, 1e-9));
  CHECK_THAT(curve.time_s(800000), WithinRel(168.2e-6, 1e-9));
  CHECK_THAT(curve.time_s(676000), WithinRel(155.8e-6, 1e-9));
  // Continuous through n*: 1 B below it, LL's line gives 155.8 us - 0.2 ns.
  CHECK_THAT(curve.time_s(675999), WithinRel(ll(675999), 1e-9));

  // LL at only 1.4x Simple's slope (20.6 us + n x 0.14 ns/B) is not told apart from one line.
  std::vector<CurvePoint> shallow;
  for (double n = 65536; n <= 524288; n *= 2) shallow.push_back({n, 20.6e-6 + n * 1.4e-10});
  for (double n = 1048576; n <= 8388608; n *= 2) shallow.push_back({n, simple(n)});
  CHECK(MeasuredCurve::fit(shallow, options).regimes().size() == 1);
  // Without a rank count, or with the search off, the LL/Simple curve is one regime too.
  CHECK(MeasuredCurve::fit(points).regimes().size() == 1);
  options.locate_protocol_switch = false;
  CHECK(MeasuredCurve::fit(points, options).regimes().size() == 1);
}

TEST_CASE("the 8x RTX 4090 and 2x RTX 2080 Ti logs switch LL -> Simple inside the right gap", "[comm_curve]") {
  // 8x 4090 (SHM): 512 KiB 196.9 us is LL, 1 MiB 222.8 us Simple. The Simple regime (1 - 128 MiB)
  // is fitted at 1 / beta = 8.7 GB/s, so n* = (88.2 - 20.6) us x 8.7 GB/s = 589 kB.
  const auto chlc = specsim::curve_from_table(table_of("chlc-8x4090-nop2p-sys.log"));
  REQUIRE(chlc.regimes().size() == 2);
  CHECK(chlc.boundary_kinds() == std::vector{specsim::BoundaryKind::kProtocolSwitch});
  CHECK(chlc.regimes()[1].first_bytes == 1048576);
  CHECK_THAT(chlc.step_bytes()[0], WithinRel(67.6e-6 / chlc.regimes()[1].fit.seconds_per_byte, 1e-9));
  CHECK(chlc.step_bytes()[0] > 524288);
  // Between n* and the first Simple row, Simple's line runs from NCCL's Ring/Simple latency
  // (8 ranks, PCI: 88.2 us) to that row. With 1 MiB left out, the first Simple row is 2 MiB
  // (373.4 us): 1 MiB -> 88.2 + (373.4 - 88.2) / 2 = 230.8 us (measured 222.8 us).
  std::vector<CurvePoint> without_1mib;
  for (const auto& q : specsim::curve_points(table_of("chlc-8x4090-nop2p-sys.log"))) {
    if (q.bytes != 1048576) without_1mib.push_back(q);
  }
  specsim::CurveOptions eight;
  eight.ranks = 8;
  const auto held = MeasuredCurve::fit(without_1mib, eight);
  REQUIRE(held.boundary_kinds() == std::vector{specsim::BoundaryKind::kProtocolSwitch});
  CHECK(held.step_bytes()[0] < 1048576);
  CHECK_THAT(held.time_s(1048576), WithinRel(88.2e-6 + (373.4e-6 - 88.2e-6) / 2, 1e-9));
  // 2 ranks: n* = (19.8 - 8.6) us x 4.0 GB/s = 45 kB, between 32 KiB (24.62 us, LL at 0.47 us/KiB)
  // and 64 KiB (40.10 us, Simple at 0.25 us/KiB).
  const auto two = specsim::curve_from_table(table_of("anthonyhoo-2x2080ti-nop2p-pix.log"));
  REQUIRE(two.regimes().size() == 2);
  CHECK(two.regimes()[0].last_bytes == 32768);
  CHECK_THAT(two.step_bytes()[0], WithinRel(11.2e-6 / two.regimes()[1].fit.seconds_per_byte, 1e-9));
  // 8x 5090 (P2P): 128 KiB - 2 MiB rises at Simple's own slope (ratio ~1): no switch is seen, and
  // the 512 B-per-rank step stays the only boundary (next test).
  CHECK(specsim::curve_from_table(table_of("aikitoria-8x5090-p2p-turin.log")).boundary_kinds() ==
        std::vector{specsim::BoundaryKind::kStep});
}

TEST_CASE("the 8x RTX 5090 log keeps its 512 B-per-rank step", "[comm_curve]") {
  const auto t = table_of("aikitoria-8x5090-p2p-turin.log");
  const auto curve = specsim::curve_from_table(t);
  // 2048 B -> 24.54 us, 4096 B -> 36.29 us: +48% where the neighbours rise < 1 us per doubling.
  REQUIRE(curve.regimes().size() == 2);
  CHECK(curve.regimes()[0].last_bytes == 2048);
  CHECK(curve.regimes()[1].first_bytes == 4096);
  CHECK(curve.step_bytes() == std::vector<double>{4096});  // 512 B x 8 ranks
  // The flat regime: alpha = mean-like fit of 24.5-25.5 us, no bandwidth term.
  CHECK_THAT(curve.regimes()[0].fit.latency_s, WithinRel(24.7e-6, 0.01));
  CHECK(curve.regimes()[0].fit.seconds_per_byte == 0.0);
  // 3 KiB lies before the step: the flat regime continued from 2048 B (24.54 us).
  CHECK_THAT(curve.time_s(3072), WithinRel(24.54e-6, 1e-9));
  // Every measured point is reproduced.
  for (const auto& row : t.rows) CHECK_THAT(curve.time_s(row.size_bytes), WithinRel(row.out_of_place.time_s, 1e-12));
  // The 14,336 B token: between 8 KiB (37.00 us) and 16 KiB (38.06 us).
  const double token = curve.time_s(14336);
  CHECK(token > 37.00e-6);
  CHECK(token < 38.06e-6);
}

TEST_CASE("held-out error on every shipped log (K = 2, sizes <= 4 MiB)", "[comm_curve][holdout]") {
  // Both halves are held out in turn: first_held_out = 1 (the 'every other size', the
  // smallest size stays in the fit) and first_held_out = 0.
  std::printf("\nheld-out relative error, K = %d, sizes <= 4 MiB, out-of-place time\n", kEveryK);
  std::printf("%-36s %5s %5s %8s %8s %s\n", "log", "ranks", "held", "median", "worst", "worst at");
  // chlc-8x4090, first_held_out = 1, was the hard case: 1 MiB (222.8 us) is held out between
  // 512 KiB (LL, 196.9 us) and 2 MiB (Simple, 373.4 us, itself 14.6% above the line through the
  // 8 and 32 MiB rows). Simple's line from NCCL's latency to 2 MiB gives 230.8 us (+3.6%); the
  // regime's slope back from 2 MiB gave 253.5 us (+13.8%). Its worst row is now 64 KiB.
  const char* const logs[] = {"aikitoria-8x5090-p2p-turin.log", "anthonyhoo-2x2080ti-nop2p-pix.log",
                              "chlc-8x4090-nop2p-sys.log", "ncclt290-8xH100-nvswitch-large.log"};
  for (const std::string file : logs) {
    const auto t = table_of(file);
    specsim::CurveOptions options;
    options.ranks = t.ranks;
    for (std::size_t first : {std::size_t{1}, std::size_t{0}}) {
      const auto report = specsim::holdout(specsim::curve_points(t), kEveryK, kMaxBytes, options, first);
      const std::string name = file + " [" + std::to_string(first) + "]";
      if (report.rows.empty()) {
        // The H100 log starts at 128 MiB: nothing at or below 4 MiB to hold out.
        std::printf("%-36s %5d %5zu %8s %8s\n", name.c_str(), t.ranks, report.rows.size(), "-", "-");
        CHECK(file == "ncclt290-8xH100-nvswitch-large.log");
        continue;
      }
      double worst_at = 0;
      for (const auto& r : report.rows) {
        if (r.relative_error == report.worst_relative_error) worst_at = r.bytes;
      }
      std::printf("%-36s %5d %5zu %7.2f%% %7.2f%% %.0f B\n", name.c_str(), t.ranks, report.rows.size(),
                  100 * report.median_relative_error, 100 * report.worst_relative_error, worst_at);
      INFO(name);
      CHECK(report.median_relative_error <= kMedianLimit);
      CHECK(report.worst_relative_error <= kWorstLimit);
    }
  }
  // The rows beside the 8x 5090 step (2048 B and 4096 B) are each held out in one of the halves.
  const auto t = table_of("aikitoria-8x5090-p2p-turin.log");
  specsim::CurveOptions options;
  options.ranks = 8;
  for (std::size_t first : {std::size_t{0}, std::size_t{1}}) {
    const auto report = specsim::holdout(specsim::curve_points(t), 2, kMaxBytes, options, first);
    for (const auto& r : report.rows) {
      if (r.bytes == 2048 || r.bytes == 4096) {
        INFO("held out " << r.bytes << " B: measured " << r.measured_s << " predicted " << r.predicted_s);
        CHECK(r.relative_error <= kMedianLimit);
      }
    }
  }
}

TEST_CASE("the H100 log is evaluated over its own range", "[comm_curve][holdout]") {
  // 128 MiB .. 4 GiB, one regime: busbw 383 -> 474 GB/s. Holding out 256 MiB, 1 GiB, 4 GiB.
  const auto t = table_of("ncclt290-8xH100-nvswitch-large.log");
  const auto report = specsim::holdout(specsim::curve_points(t), 2, 1e12);
  REQUIRE(report.rows.size() == 3);
  std::printf("ncclt290-8xH100 full range: median %.2f%%, worst %.2f%%\n",
              100 * report.median_relative_error, 100 * report.worst_relative_error);
  CHECK(report.median_relative_error <= kMedianLimit);
  CHECK(report.worst_relative_error <= kWorstLimit);
}

TEST_CASE("curve and holdout inputs are validated", "[comm_curve][invalid]") {
  CHECK_THROWS_WITH(MeasuredCurve::fit({}), Contains("at least one point"));
  CHECK_THROWS_WITH(MeasuredCurve::fit({{8, 1e-5}, {0, 1e-5}}), Contains("points[1]: bytes = 0"));
  CHECK_THROWS_WITH(MeasuredCurve::fit({{8, -1e-5}}), Contains("must be finite and > 0"));
  const auto curve = MeasuredCurve::fit({{8, 1e-5}});
  CHECK(curve.time_s(1024) == 1e-5);  // one point: flat both ways
  CHECK_THROWS_WITH(curve.time_s(-1), Contains("bytes: "));
  CHECK_THROWS_WITH(specsim::holdout({{8, 1e-5}, {16, 1e-5}}, 1, 1e9), Contains("every_k: 1: must be >= 2"));
  CHECK_THROWS_WITH(specsim::holdout({{8, 1e-5}, {16, 1e-5}}, 2, 1e9, {}, 2), Contains("must be < every_k"));
  // Repeated sizes are averaged: 8 B at 10 and 12 us -> 11 us.
  CHECK_THAT(MeasuredCurve::fit({{8, 10e-6}, {8, 12e-6}, {16, 11e-6}}).points()[0].time_s, WithinRel(11e-6, 1e-12));
}
