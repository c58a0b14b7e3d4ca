// How long `specsim calibrate nccl LOG --holdout-every 2` takes on a 25-row nccl-tests log (the
// 8x RTX 4090 log, 8 B .. 128 MiB by 2x; aim: under 10 ms), without process start-up and without
// the write to disk: parse the file, hash it, fit the curve, refit with every other size held out
// and predict those, render the profile YAML. The parts are also timed alone.
//
// BM_CalibrateNcclScaling/N: the same parse + fit + held-out refit on a generated log of N rows
// with N distinct sizes (aim: near-linear in N; 10^6 rows in seconds). Compare the per-row time
// across N: a quadratic step shows as time per row growing with N.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "specsim/calibrate_nccl.hpp"
#include "specsim/comm_curve.hpp"
#include "specsim/hardware.hpp"
#include "specsim/nccl_tests.hpp"
#include "specsim/profile_writer.hpp"

namespace {

const std::string& log_path() {
  static const std::string p = std::string(SPECSIM_SOURCE_DIR) + "/calibration/nccl/chlc-8x4090-nop2p-sys.log";
  return p;
}

specsim::CurveOptions options_for(int ranks) {
  specsim::CurveOptions o;
  o.ranks = ranks;
  return o;
}

// The log's points and curve options, parsed once, for the benchmarks that time one part alone.
struct ParsedLog {
  std::vector<specsim::CurvePoint> points;
  specsim::CurveOptions options;
};

const ParsedLog& parsed_log() {
  static const ParsedLog p = [] {
    const specsim::NcclTestsTable table = specsim::parse_nccl_tests_file(log_path()).tables.at(0);
    return ParsedLog{specsim::curve_points(table), options_for(table.ranks)};
  }();
  return p;
}

void BM_CalibrateNccl25Rows(benchmark::State& state) {
  specsim::NcclCalibrationRequest request;
  request.logs = {log_path()};
  request.profile_name = "bench";
  request.holdout_every = 2;
  for (auto _ : state) {
    // The library's pipeline, as `specsim calibrate nccl` runs it (calibrate_nccl.hpp).
    const specsim::NcclCalibration c = specsim::calibrate_nccl(request);
    const std::string yaml = specsim::render_comm_profile_yaml(c.profile, c.provenance);
    benchmark::DoNotOptimize(yaml.data());
  }
  state.counters["rows"] = 25;
}
BENCHMARK(BM_CalibrateNccl25Rows)->Unit(benchmark::kMillisecond);

void BM_ParseNcclLog(benchmark::State& state) {
  for (auto _ : state) {
    const specsim::NcclTestsLog log = specsim::parse_nccl_tests_file(log_path());
    benchmark::DoNotOptimize(log.tables.data());
  }
}
BENCHMARK(BM_ParseNcclLog)->Unit(benchmark::kMicrosecond);

void BM_FitCurve25Rows(benchmark::State& state) {
  const ParsedLog& log = parsed_log();
  for (auto _ : state) {
    const auto curve = specsim::MeasuredCurve::fit(log.points, log.options);
    benchmark::DoNotOptimize(curve.regimes().data());
  }
}
BENCHMARK(BM_FitCurve25Rows)->Unit(benchmark::kMicrosecond);

void BM_Holdout25Rows(benchmark::State& state) {
  const ParsedLog& log = parsed_log();
  for (auto _ : state) {
    const auto report = specsim::holdout(log.points, 2, 1e300, log.options);
    benchmark::DoNotOptimize(report.rows.data());
  }
}
BENCHMARK(BM_Holdout25Rows)->Unit(benchmark::kMicrosecond);

void BM_CurveTime(benchmark::State& state) {
  const auto curve = specsim::MeasuredCurve::fit(parsed_log().points, parsed_log().options);
  double bytes = 14336;
  for (auto _ : state) {
    benchmark::DoNotOptimize(curve.time_s(bytes));
    bytes = bytes < 1e8 ? bytes * 1.37 : 14336;
  }
}
BENCHMARK(BM_CurveTime);

// An 8-rank all_reduce_perf log (2022+ layout) of `rows` rows at sizes 8, 16, 24, ... B: an
// alpha-beta line with a 512 B-per-rank step (the shipped 8x 5090 log's) and +-2% scatter from a
// fixed-seed LCG, printed with nccl-tests' own precision (time %7.2f us).
std::string generated_log(int rows) {
  std::string log =
      "# nThread 1 nGpus 8 minBytes 8 maxBytes 8000000 step: 8(bytes) warmup iters: 5 iters: 20 agg iters: 1 "
      "validation: 1 graph: 0\n#\n# Using devices\n";
  char line[256];
  for (int r = 0; r < 8; ++r) {
    std::snprintf(line, sizeof line, "#  Rank %2d Group  0 Pid  1000 on bench device %2d [0x%02x] NVIDIA Bench GPU\n", r, r, r);
    log += line;
  }
  log +=
      "#\n#                                                              out-of-place                       in-place\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";
  std::uint64_t state = 42;
  auto scatter = [&] {  // uniform in [-0.02, 0.02]
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(state >> 11) / 9007199254740992.0 - 0.5) * 0.04;
  };
  for (int i = 0; i < rows; ++i) {
    const long long bytes = 8LL * (i + 1);
    const double us = (bytes < 4096 ? 24.5 : 36.0) + static_cast<double>(bytes) / 20e3;  // 20 GB/s
    const double t = us * (1.0 + scatter());
    const double bw = static_cast<double>(bytes) / (t * 1e3);
    std::snprintf(line, sizeof line, "%12lld  %12lld     float     sum      -1  %7.2f  %6.2f  %6.2f      0  %7.2f  %6.2f  %6.2f      0\n",
                  bytes, bytes / 4, t, bw, bw * 1.75, t, bw, bw * 1.75);
    log += line;
  }
  return log;
}

const std::string& cached_log(int rows) {
  static std::map<int, std::string> logs;
  auto it = logs.find(rows);
  if (it == logs.end()) it = logs.emplace(rows, generated_log(rows)).first;
  return it->second;
}

void BM_CalibrateNcclScaling(benchmark::State& state) {
  const int rows = static_cast<int>(state.range(0));
  const std::string& text = cached_log(rows);
  for (auto _ : state) {
    std::istringstream in(text);
    const specsim::NcclTestsLog log = specsim::parse_nccl_tests(in, "generated.log");
    const specsim::NcclTestsTable& table = log.tables.at(0);
    const auto points = specsim::curve_points(table);
    const auto options = options_for(table.ranks);
    const auto curve = specsim::MeasuredCurve::fit(points, options);
    const auto report = specsim::holdout(points, 2, 1e300, options);
    benchmark::DoNotOptimize(curve.regimes().data());
    benchmark::DoNotOptimize(report.rows.data());
  }
  state.counters["rows"] = rows;
  state.SetItemsProcessed(state.iterations() * rows);  // rows per second
}
BENCHMARK(BM_CalibrateNcclScaling)->Arg(16384)->Arg(65536)->Arg(262144)->Arg(1000000)->Unit(benchmark::kMillisecond);

}  // namespace
