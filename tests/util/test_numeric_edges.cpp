// Numeric edges: each value at the rim of its range either works with the meaning stated in
// docs/edge-cases.md or is rejected with a message that names the field, the value and the rule.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "specsim/acceptance.hpp"
#include "specsim/comm_curve.hpp"
#include "specsim/comm_model.hpp"
#include "specsim/cycle.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/nccl_tests.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

specsim::Scenario scenario_with(const std::vector<std::string>& patches) {
  return specsim::load_scenario(specsim::kDefaultScenario, patches, kRoot);
}

// tau of the default scenario (an EAGLE-3 chain) under `patches`.
double tau_with(const std::vector<std::string>& patches) {
  const specsim::CycleModel model(scenario_with(patches));
  return model.tokens_per_cycle(model.scenario().acceptance);
}

}  // namespace

TEST_CASE("edges: acceptance 0 and 1 give tau = 1 and k + 1", "[edges]") {
  // Leviathan Eq. 1: tau = (1 - a^(k+1)) / (1 - a). a = 0: only the bonus token, tau = 1. a = 1:
  // every draft token and the bonus, tau = k + 1. The default scenario's depth_profile scales
  // deeper positions, so it is flattened to 1 for the a = 1 case.
  CHECK_THAT(tau_with({"acceptance.accept=0"}), WithinRel(1.0, 1e-12));
  CHECK_THAT(tau_with({"acceptance.accept=1", "acceptance.depth_profile=[1,1,1]"}),
             WithinRel(3.0 + 1.0, 1e-12));  // k = num_steps = 3
  CHECK_THAT(specsim::leviathan_tokens_per_cycle(0.0, 3), WithinRel(1.0, 1e-12));
  CHECK_THAT(specsim::leviathan_tokens_per_cycle(1.0, 3), WithinRel(4.0, 1e-12));
  // Just outside [0, 1] is rejected, naming the patch, the field and the range.
  CHECK_THROWS_WITH(scenario_with({"acceptance.accept=1.0001"}),
                    Contains("--set acceptance.accept=1.0001: acceptance.accept: = 1.0001: must be in [0, 1]"));
  CHECK_NOTHROW(scenario_with({"acceptance.accept=-0"}));  // -0 == 0, the lower edge itself
}

TEST_CASE("edges: num_steps 1 and 64 through --set, 0 and 65 rejected", "[edges]") {
  // num_steps = 1: one draft token per cycle, a 2-token verify; with a = 1, tau = 2.
  const auto one = scenario_with({"speculation.num_steps=1"});
  CHECK(one.speculation.shape.num_steps == 1);
  CHECK(one.speculation.shape.num_draft_tokens == 2);
  CHECK_THAT(tau_with({"speculation.num_steps=1", "acceptance.accept=1"}), WithinRel(2.0, 1e-12));
  // num_steps = 64, the largest SGLang-style chain specsim takes: a = 1 gives tau = 65; the
  // depth_profile's 3 entries cover the first 3 positions, deeper ones use 1 (docs/edge-cases.md).
  const auto deep = scenario_with({"speculation.num_steps=64"});
  CHECK(deep.speculation.shape.num_draft_tokens == 65);
  CHECK_THAT(tau_with({"speculation.num_steps=64", "acceptance.accept=1", "acceptance.depth_profile=[1]"}),
             WithinRel(65.0, 1e-12));
  const specsim::CycleModel model(deep);
  const auto p = model.predict();
  CHECK(std::isfinite(p.spec_tokens_per_s));
  CHECK(p.spec_tokens_per_s > 0.0);
  CHECK_THROWS_WITH(scenario_with({"speculation.num_steps=0"}),
                    Contains("speculation.num_steps: = 0: must be in [1, 64]"));
  CHECK_THROWS_WITH(scenario_with({"speculation.num_steps=65"}),
                    Contains("speculation.num_steps: = 65: must be in [1, 64]"));
}

TEST_CASE("edges: zero, negative, NaN and infinite values are rejected with the rule", "[edges]") {
  // Quantities (units.cpp): a number that is not finite or is negative never becomes a duration.
  CHECK_THROWS_WITH(scenario_with({"compute.kernel_floor=-1us"}),
                    Contains("compute.kernel_floor: expected a duration with unit") && Contains("must not be negative"));
  CHECK_THROWS_WITH(scenario_with({"compute.kernel_floor=nanus"}), Contains("compute.kernel_floor") &&
                                                                     Contains("nanus"));
  CHECK_THROWS_WITH(scenario_with({"compute.kernel_floor=infus"}), Contains("compute.kernel_floor") &&
                                                                     Contains("infus"));
  // Plain numbers (yaml_reader.cpp): YAML's .nan and .inf are not finite numbers.
  CHECK_THROWS_WITH(scenario_with({"acceptance.accept=.nan"}),
                    Contains("acceptance.accept: expected a finite number, got '.nan'"));
  CHECK_THROWS_WITH(scenario_with({"compute.flop_efficiency=.inf"}),
                    Contains("compute.flop_efficiency: expected a finite number, got '.inf'"));
  CHECK_THROWS_WITH(scenario_with({"compute.flop_efficiency=0"}),
                    Contains("compute.flop_efficiency: = 0: must be in [0.01, 1]"));
  // Counts: zero and negative are out of range, a fraction is not an integer.
  CHECK_THROWS_WITH(scenario_with({"workload.batch=0"}), Contains("workload.batch: = 0: must be in [1, 1000000]"));
  CHECK_THROWS_WITH(scenario_with({"workload.batch=-4"}), Contains("workload.batch: = -4: must be in [1, 1000000]"));
  CHECK_THROWS_WITH(scenario_with({"workload.batch=1.5"}), Contains("workload.batch: expected an integer, got '1.5'"));
  CHECK_THROWS_WITH(scenario_with({"workload.batch=.nan"}), Contains("workload.batch: expected an integer, got '.nan'"));
  // Data files: tests/data/invalid/{llm,gpu,comm_profile} hold the file versions of these edges
  // (zero bandwidth, zero time, negative, NaN, .inf); test_invalid_corpus.cpp checks each message.
}

TEST_CASE("edges: all-reduce time at 0 B and 2^40 B is finite, non-negative and monotone", "[edges]") {
  // The default scenario's graph-mode NCCL table (8 ranks, 8 KiB .. 2 MiB measured). Below the
  // first point the curve continues the first regime's alpha-beta line down to 0 B (alpha alone);
  // above the last point the last regime's line: 2^40 B at the last segment's bandwidth.
  const auto s = scenario_with({});
  const auto comm = specsim::CommModel::baseline(s);
  double previous = -1.0;
  for (int e = -1; e <= 40; ++e) {
    const double bytes = e < 0 ? 0.0 : std::ldexp(1.0, e);
    INFO("bytes = " << bytes);
    for (const auto mode : {specsim::LaunchMode::kGraph, specsim::LaunchMode::kEager}) {
      const double t = comm.allreduce_s(bytes, mode);
      CHECK(std::isfinite(t));
      CHECK(t >= 0.0);
    }
    const double t = comm.allreduce_s(bytes, specsim::LaunchMode::kGraph);
    CHECK(t >= previous);
    previous = t;
  }
  CHECK(comm.allreduce_s(0.0, specsim::LaunchMode::kGraph) > 0.0);  // latency is paid even for 0 B
  // One rank: every all-reduce is free, at any size.
  const specsim::CommModel single;
  CHECK(single.allreduce_s(0.0, specsim::LaunchMode::kGraph) == 0.0);
  CHECK(single.allreduce_s(std::ldexp(1.0, 40), specsim::LaunchMode::kEager) == 0.0);
}

TEST_CASE("edges: every generated profile's curve is finite, positive and monotone from 0 B to 2^40 B", "[edges]") {
  // Property test over seeded random profiles shaped like nccl-tests tables: 1 to 24 sizes, each
  // 1.5x to 8x the last, from 1 B to 4 KiB up; times alpha + n / bandwidth (alpha 2-50 us,
  // bandwidth 1-500 GB/s, the range of the shipped PCIe and NVSwitch tables), with +-3% noise,
  // steps of +20% to +100% (NCCL's 512 B chunk steps are +48% and +65%, comm_curve.hpp) and
  // flat stretches. Times never fall with size (a measured table is monotone up to noise, which
  // the generator evens out), so the curve must not fall either, anywhere.
  std::mt19937_64 rng(20261203);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto log_uniform = [&](double lo, double hi) { return std::exp(uniform(std::log(lo), std::log(hi))); };
  constexpr int kProfiles = 300;
  for (int trial = 0; trial < kProfiles; ++trial) {
    specsim::CurveOptions options;
    options.ranks = std::array{2, 4, 8}[std::size_t(trial % 3)];
    options.locate_protocol_switch = trial % 2 == 0;
    const int n = 1 + int(uniform(0, 24));
    const double alpha = log_uniform(2e-6, 50e-6), bandwidth = log_uniform(1e9, 500e9);
    std::vector<specsim::CurvePoint> points;
    double bytes = std::ldexp(1.0, int(uniform(0, 13))), jump = 1.0, last = 0.0;
    for (int i = 0; i < n; ++i) {
      if (uniform(0, 1) < 0.15) jump *= uniform(1.2, 2.0);
      double t = (alpha + bytes / bandwidth) * jump * uniform(0.97, 1.03);
      if (uniform(0, 1) < 0.1) t = last;  // a flat stretch
      t = std::max(t, last);
      if (t <= 0.0) t = alpha;
      points.push_back({bytes, t});
      last = t;
      bytes *= uniform(1.5, 8.0);
    }
    const auto curve = specsim::MeasuredCurve::fit(points, options);
    INFO("profile " << trial << ": " << n << " points, ranks " << options.ranks);
    double previous = 0.0;
    for (int e = -1; e <= 80; ++e) {
      const double at = e < 0 ? 0.0 : std::ldexp(1.0, e / 2) * (e % 2 ? 1.5 : 1.0);  // 2^k and 1.5 x 2^k
      const double t = curve.time_s(at);
      INFO("bytes " << at);
      REQUIRE(std::isfinite(t));
      REQUIRE(t > 0.0);
      REQUIRE(t >= previous * (1 - 1e-12));
      previous = t;
    }
    // Between and at the measured sizes too: the points themselves are where a step would hide.
    for (std::size_t i = 0; i + 1 < points.size(); ++i) {
      double prev = curve.time_s(points[i].bytes);
      for (int k = 1; k <= 8; ++k) {
        const double at = points[i].bytes + (points[i + 1].bytes - points[i].bytes) * k / 8.0;
        const double t = curve.time_s(at);
        INFO("between point " << i << " and " << i + 1 << ", bytes " << at);
        REQUIRE(t >= prev * (1 - 1e-12));
        prev = t;
      }
    }
  }
}

TEST_CASE("edges: a one-row nccl-tests log parses and its curve is a constant", "[edges]") {
  // calibration/nccl/anthonyhoo-2x2080ti-nop2p-pix.log, lines 10-18 and its 1 MiB row (line 36).
  const std::string text =
      "# nThread 1 nGpus 2 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
      "#\n"
      "# Using devices\n"
      "#  Rank  0 Group  0 Pid  31706 on autodl-container-xxxxx device  0 [0000:b4:00] NVIDIA GeForce RTX 2080 Ti\n"
      "#  Rank  1 Group  0 Pid  31706 on autodl-container-xxxxx device  1 [0000:b5:00] NVIDIA GeForce RTX 2080 Ti\n"
      "#\n"
      "#                                                              out-of-place                       in-place\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "     1048576        262144     float     sum      -1    279.5    3.75    3.75      0    280.2    3.74    3.74      0\n";
  std::istringstream in(text);
  const auto log = specsim::parse_nccl_tests(in, "<one-row>");
  REQUIRE(log.tables.size() == 1);
  REQUIRE(log.tables[0].rows.size() == 1);
  CHECK(log.tables[0].ranks == 2);
  // One point fixes one number: the curve is alpha = 279.5 us with beta = 0, at every size.
  const auto curve = specsim::curve_from_table(log.tables[0]);
  REQUIRE(curve.regimes().size() == 1);
  for (const double bytes : {0.0, 1.0, 1048576.0, std::ldexp(1.0, 40)}) {
    INFO("bytes = " << bytes);
    CHECK_THAT(curve.time_s(bytes), WithinRel(279.5e-6, 1e-12));
  }
  CHECK(curve.in_measured_range(1048576.0));
}
