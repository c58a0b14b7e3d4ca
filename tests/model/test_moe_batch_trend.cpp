// Issue 31 section 3: the public trend that speculation's gain on an MoE target peaks at a medium
// batch and falls by the largest one, reproduced from one measured plain rate. The measurement is
// the vLLM P-EAGLE post's sweep of gpt-oss-20b on one B200 (docs/references/batch-speculation.md#p-eagle):
// P-EAGLE's gain over plain decoding at concurrency 1..64 on three datasets; only its c=1
// SPEED-Bench point is a validation row, the c >= 2 bars are in no row and nothing was fitted to them.
//
// The scenario is the post's deployment (models/scenarios/gpt-oss-20b-p-eagle-1x-b200.yaml): the
// c=1 plain rate 456 tok/s calibrates it, its SPEED-Bench acceptance (3.38 tokens per cycle at K=7)
// holds at every batch (the post gives none per concurrency), and the batch is set as a what-if.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "specsim/cycle.hpp"
#include "specsim/load.hpp"

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

// P-EAGLE / baseline tok/s, the post's Figures 4-6 as docs/references/batch-speculation.md reads them.
const std::map<int, double> kSpeedBench = {{1, 1.88}, {2, 1.97}, {4, 2.37}, {8, 2.47}, {16, 2.29}, {32, 1.79}, {64, 1.88}};
const std::map<int, double> kMtBench = {{1, 2.24}, {2, 1.91}, {4, 2.04}, {8, 2.18}, {16, 2.11}, {32, 1.78}, {64, 1.53}};
const std::map<int, double> kHumanEval = {{1, 2.32}, {2, 2.52}, {4, 2.47}, {8, 2.31}, {16, 2.14}, {32, 2.06}, {64, 1.81}};

// The gain at the largest batch over the best gain at concurrency 4..16 (where the post's peak lies).
double fall_from_peak(const std::map<int, double>& gain) {
  double peak = 0.0;
  for (int c : {4, 8, 16}) peak = std::max(peak, gain.at(c));
  return gain.at(64) / peak;
}

}  // namespace

TEST_CASE("moe batch trend: gpt-oss-20b's speculative gain peaks at a medium batch and falls by 64, as measured",
          "[moe][batch]") {
  std::map<int, double> predicted;
  for (const auto& [c, measured] : kSpeedBench) {
    const auto p = specsim::CycleModel(
                       specsim::load_scenario("gpt-oss-20b-p-eagle-1x-b200", {"workload.batch=" + std::to_string(c)}, kRoot))
                       .predict();
    predicted[c] = p.spec_tokens_per_s / p.baseline_tokens_per_s;
    std::printf("c=%-3d measured %.2fx  predicted %.2fx\n", c, measured, predicted[c]);
  }
  // Measured (computed from the post's bars): the gain at c=64 is 0.76 (SPEED-Bench), 0.70 (MT-Bench)
  // and 0.73 (HumanEval) of its c=4..16 peak. Predicted: 1.51 / 2.02 = 0.75.
  const double measured_low = std::min({fall_from_peak(kSpeedBench), fall_from_peak(kMtBench), fall_from_peak(kHumanEval)});
  const double measured_high = std::max({fall_from_peak(kSpeedBench), fall_from_peak(kMtBench), fall_from_peak(kHumanEval)});
  CHECK(measured_low == Approx(0.70).margin(0.005));
  CHECK(measured_high == Approx(0.76).margin(0.005));
  const double fall = fall_from_peak(predicted);
  CHECK(fall >= measured_low - 0.05);
  CHECK(fall <= measured_high + 0.05);
  // The peak is at a medium batch, above both ends, as on every dataset of the post.
  const auto best = std::max_element(predicted.begin(), predicted.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  CHECK(best->first >= 4);
  CHECK(best->first <= 32);
  CHECK(predicted.at(1) < best->second);
  CHECK(predicted.at(64) < best->second);
  // What falls short: the level and the place of the peak. From the c=1 plain rate alone the gain is
  // 12-31% below the measured one at c <= 16 and at 64 (c=1: 1.42x against 1.88x, the validation
  // row's -24%) and 9% above at 32; the predicted peak is at 16, the measured at 8.
  for (const auto& [c, measured] : kSpeedBench) {
    CHECK(predicted.at(c) > 0.65 * measured);
    CHECK(predicted.at(c) < 1.15 * measured);
  }
}
