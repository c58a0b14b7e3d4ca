// How long one prediction takes once the scenario is loaded and calibrated (aim: under 1 us),
// and how long loading + calibration take.
#include <benchmark/benchmark.h>

#include "specsim/cycle.hpp"
#include "specsim/load.hpp"

namespace {

const specsim::DataDir& data() {
  static const specsim::DataDir d(SPECSIM_SOURCE_DIR);
  return d;
}

void BM_Predict(benchmark::State& state) {
  const specsim::CycleModel model(specsim::load_scenario(specsim::kDefaultScenario, {}, data()));
  specsim::AcceptanceSettings a = model.scenario().acceptance;
  double accept = 0.5;
  for (auto _ : state) {
    a.accept = accept;
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

}  // namespace
