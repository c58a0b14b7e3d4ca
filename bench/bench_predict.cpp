// How long one prediction takes once the scenario is loaded and calibrated (aim: under 1 us),
// and how long loading + calibration take; a 10^5-point sweep of draft settings (aim: under 1 s)
// (threads: wall time) and 10^5 Monte Carlo cycles of an SGLang (5,4,8) tree (aim: under 50 ms), which the unit tests
// used to time (CI builds Debug, so the budgets live here); predict --concurrency's four levels with
// and without each level's band (aim: under 100 ms with them, what an interactive command can take);
// rank on the home scenario (aim: under 200 ms).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "specsim/acceptance.hpp"
#include "specsim/concurrency.hpp"
#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/monte_carlo.hpp"
#include "specsim/whatif.hpp"

namespace {

const specsim::DataDir& data() {
  static const specsim::DataDir d(SPECSIM_SOURCE_DIR);
  return d;
}

void BM_Predict(benchmark::State& state) {
  const specsim::CycleModel model(specsim::load_scenario(specsim::kDefaultScenario, {}, data()));
  specsim::Acceptance a = model.scenario().acceptance;
  double accept = 0.5;
  for (auto _ : state) {
    a = specsim::with_accept_rate(std::move(a), accept);
    accept = accept > 0.9 ? 0.5 : accept + 0.001;
    benchmark::DoNotOptimize(model.predict(a).spec_tokens_per_s);
  }
}
BENCHMARK(BM_Predict);

void BM_CycleTime(benchmark::State& state) {
  const specsim::CycleModel model(specsim::load_scenario(specsim::kDefaultScenario, {}, data()));
  double tau = 1.0;
  for (auto _ : state) {
    tau = tau > 3.9 ? 1.0 : tau + 0.01;
    benchmark::DoNotOptimize(model.cycle_s(tau));
  }
}
BENCHMARK(BM_CycleTime);

void BM_LoadAndCalibrate(benchmark::State& state) {
  for (auto _ : state) {
    const specsim::CycleModel model(specsim::load_scenario(specsim::kDefaultScenario, {}, data()));
    benchmark::DoNotOptimize(model.calibration().routing_skew.value);
  }
}
BENCHMARK(BM_LoadAndCalibrate)->Unit(benchmark::kMillisecond);

// The home scenario at 1, 4, 16 and 32 requests: one calibration, four levels; Arg(1) draws each
// level's band (prediction_band: 64 recalibrations and 4000 draws a level), Arg(0) skips it.
void BM_PredictConcurrency(benchmark::State& state) {
  const specsim::Scenario s = specsim::load_scenario(specsim::kDefaultScenario, {"workload.concurrency=1,4,16,32"}, data());
  const auto bands = state.range(0) ? specsim::LevelBands::kDraw : specsim::LevelBands::kSkip;
  for (auto _ : state) benchmark::DoNotOptimize(specsim::predict_concurrency(s, bands).levels.back().speedup);
}
BENCHMARK(BM_PredictConcurrency)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// `specsim rank` on the home scenario once it is loaded: every catalogue intervention priced, the
// gain bands, the plan (4 steps) and the scenario's own band and call (aim: under 200 ms, an
// interactive command).
void BM_Rank(benchmark::State& state) {
  const specsim::Scenario s = specsim::load_scenario(specsim::kDefaultScenario, {}, data());
  const specsim::InterventionCatalogue catalogue = specsim::rank_catalogue(s, "", data());
  for (auto _ : state) benchmark::DoNotOptimize(specsim::rank(s, {}, catalogue, data()).scenario_call);
}
BENCHMARK(BM_Rank)->Unit(benchmark::kMillisecond);

void BM_Sweep(benchmark::State& state) {
  // 8 x 4 x 63 x 50 = 100800 points, all on the fast path (one calibration).
  std::vector<specsim::SweepAxis> axes{specsim::parse_vary("speculation.num_steps=1..8"),
                                       specsim::parse_vary("speculation.eagle_topk=1,2,4,8"),
                                       specsim::parse_vary("speculation.num_draft_tokens=2..64"),
                                       specsim::parse_vary("acceptance.accept=0..49")};
  for (auto& v : axes[3].values) v = std::to_string(0.5 + std::stoi(v) * 0.01);  // 0.50 .. 0.99
  for (auto _ : state) {
    const auto r = specsim::sweep(specsim::kDefaultScenario, {}, axes, data());
    benchmark::DoNotOptimize(r.points.data());
  }
  state.counters["points"] = 8 * 4 * 63 * 50;
}
BENCHMARK(BM_Sweep)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_MonteCarloTree(benchmark::State& state) {
  const specsim::Acceptance m{specsim::ConstantChain{0.7, {}}, {}};
  const specsim::DraftShape shape{5, 4, 8};  // num_steps, eagle_topk, num_draft_tokens
  specsim::MonteCarloOptions options;  // 1000 requests x 100 cycles = 10^5 cycles
  options.request_accept_stddev = state.range(0) / 100.0;  // Arg 10: a Beta spread of 0.1
  const auto cycle_time = [](int t) { return 0.030 + 0.0005 * t; };
  for (auto _ : state) {
    const auto r = specsim::simulate_cycles(m, shape, options, cycle_time);
    benchmark::DoNotOptimize(r.mean_tokens_per_cycle);
  }
}
BENCHMARK(BM_MonteCarloTree)->Arg(0)->Arg(10)->Unit(benchmark::kMillisecond);

}  // namespace

// calibrate() of a loaded scenario, then a prediction with it: what a sweep over a calibrated key
// (compute.bandwidth_efficiency) pays per point, the copy of the scenario included.
void BM_CalibrateLoaded(benchmark::State& state) {
  const specsim::Scenario s = specsim::load_scenario(specsim::kDefaultScenario, {}, data());
  for (auto _ : state) {
    specsim::Scenario copy = s;
    const specsim::Calibration c = specsim::calibrate(copy);
    const specsim::CycleModel model(std::move(copy), c);
    benchmark::DoNotOptimize(model.predict().spec_tokens_per_s);
  }
}
BENCHMARK(BM_CalibrateLoaded)->Unit(benchmark::kMicrosecond);

// 10^5 points over a calibrated key, each set on a copy of the loaded scenario and calibrated
// again (aim: under 1 s on 2 cores), and over a key calibration does not read (one calibration).
void BM_SweepKey(benchmark::State& state, const char* axis) {
  const std::vector<specsim::SweepAxis> axes{specsim::parse_vary(axis)};
  for (auto _ : state) {
    const auto r = specsim::sweep(specsim::kDefaultScenario, {}, axes, data());
    benchmark::DoNotOptimize(r.points.data());
  }
  state.counters["points"] = 100000;
}
BENCHMARK_CAPTURE(BM_SweepKey, bandwidth_efficiency, "compute.bandwidth_efficiency=0.2..0.8:100000")
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_SweepKey, kernel_floor, "compute.kernel_floor=1us..10us:100000")
    ->Unit(benchmark::kMillisecond)->UseRealTime();
