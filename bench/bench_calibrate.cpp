// How long `specsim calibrate nccl LOG --holdout-every 2` takes on a 25-row nccl-tests log (the
// 8x RTX 4090 log, 8 B .. 128 MiB by 2x; aim: under 10 ms), without process start-up and without
// the write to disk: parse the file, hash it, fit the curve, refit with every other size held out
// and predict those, render the profile YAML. The parts are also timed alone.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "specsim/comm_curve.hpp"
#include "specsim/hardware.hpp"
#include "specsim/nccl_tests.hpp"
#include "specsim/profile_writer.hpp"
#include "specsim/sha256.hpp"

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
  for (auto _ : state) {
    const specsim::NcclTestsLog log = specsim::parse_nccl_tests_file(log_path());
    const specsim::NcclTestsTable& table = log.tables.at(0);
    const auto points = specsim::curve_points(table);
    const auto options = options_for(table.ranks);
    const auto curve = specsim::MeasuredCurve::fit(points, options);

    specsim::CommProfileProvenance prov;
    prov.files.push_back({log_path(), specsim::sha256_file_hex(log_path())});
    prov.regimes = curve.regimes();
    prov.holdout = specsim::holdout(points, 2, 1e300, options);
    specsim::CommProfile profile;
    profile.name = "bench";
    profile.implementation = "nccl";
    profile.ranks = table.ranks;
    for (const auto& p : points) profile.points.push_back({p.bytes, p.time_s});
    const std::string yaml = specsim::render_comm_profile_yaml(profile, prov);
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

}  // namespace
