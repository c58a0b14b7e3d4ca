// Eager forwards without a measurement: the launch cost and overlap exponent come from the prior
// (kPriorEagerLaunchPerKernelS, kPriorEagerOverlapExponent), so eager is never cheaper than graph;
// a set value or a measured eager verify wins (docs/model.md#launch-modes).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "specsim/compute_model.hpp"
#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/prior_band.hpp"

using Catch::Matchers::StartsWith;
using Catch::Matchers::WithinRel;
using specsim::LaunchMode;

namespace {
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
const std::string kUncalibrated = "llama-3.1-8b-eagle3-1x-h200";  // no measurement, no profile
const std::string kHome = SPECSIM_SOURCE_DIR "/validation/home-kimi-k25-8x-rtx-pro-6000/home-kimi-k2.5-eagle3-8x-rtx-pro-6000.yaml";

double soft_max(double gpu, double host, double p) {
  return std::pow(std::pow(gpu, p) + std::pow(host, p), 1.0 / p);
}

bool has_term(const specsim::PredictionBand& band, const std::string& term) {
  return std::find(band.terms.begin(), band.terms.end(), term) != band.terms.end();
}
}  // namespace

TEST_CASE("eager prior: a batch-1 verify and draft forward cost more eager than in a graph", "[launch][eager]") {
  const auto s = specsim::load_scenario(kUncalibrated, {}, kRoot);
  REQUIRE_FALSE(s.compute.eager_launch_per_kernel_s);
  REQUIRE_FALSE(s.compute.eager_overlap_exponent);
  const double p = 2.91;  // kPriorEagerOverlapExponent
  // Verify of 5 tokens (4 draft tokens + 1) at batch 1, context 2048, 84% of the H200's 4.8 TB/s.
  const specsim::ComputeModel target(s.model, s.gpu, 1, 1, 2048, s.compute, 0.84, 1.0);
  REQUIRE(target.kernels() == 358);  // 32 layers x 11 + 6
  const double gpu = target.gpu_time_s(5.0);
  const double host = 358 * 17.39e-6;  // 6.226 ms of launches
  CHECK_THAT(target.eager_host_s(5.0), WithinRel(host, 1e-12));
  // gpu ~5.2 ms (16 GB of weights at 0.84 x 4.8 TB/s = 4.0 ms, 358 kernel floors of 3 us = 1.07 ms,
  // the multi-token step and the KV cache): the launches are the larger side, and
  // (5.2^2.91 + 6.226^2.91)^(1/2.91) ~ 6.226 x 1.17 ~ 7.3 ms against 5.2 ms + 5 us in a graph.
  CHECK(gpu > 4.5e-3);
  CHECK(gpu < 6e-3);
  const double eager = target.local_time_s(5.0, LaunchMode::kEager);
  const double graph = target.local_time_s(5.0, LaunchMode::kGraph);
  CHECK_THAT(eager, WithinRel(soft_max(gpu, host, p), 1e-12));
  CHECK_THAT(graph, WithinRel(gpu + 5e-6, 1e-12));
  CHECK(eager > graph);
  // The one-layer EAGLE-3 head, one token: its kernels' launches against a GPU time of its own.
  const specsim::ComputeModel draft(s.draft, s.gpu, 1, 1, 2048, s.compute, 0.84, 1.0);
  const double draft_gpu = draft.gpu_time_s(1.0);
  const double draft_host = draft.kernels() * 17.39e-6;
  CHECK_THAT(draft.local_time_s(1.0, LaunchMode::kEager),
             WithinRel(std::max(soft_max(draft_gpu, draft_host, p), draft_gpu + 17.39e-6), 1e-12));
  CHECK(draft.local_time_s(1.0, LaunchMode::kEager) > draft.local_time_s(1.0, LaunchMode::kGraph));
}

TEST_CASE("eager prior: a GPU-bound forward still pays at least its first launch", "[launch][eager]") {
  // A forward far larger than its launches: the soft max adds almost nothing, (1 + r^p)^(1/p) - 1
  // ~ r^p / p, so the floor gpu + one launch (17.39 us > the graph's 5 us replay) keeps eager >= graph.
  const auto s = specsim::load_scenario(kUncalibrated, {"workload.context=131072"}, kRoot);
  const specsim::ComputeModel m(s.model, s.gpu, 1, 1, 131072, s.compute, 0.84, 1.0);
  const double gpu = m.gpu_time_s(1.0);
  CHECK(m.local_time_s(1.0, LaunchMode::kEager) >= gpu + 17.39e-6);
  CHECK(m.local_time_s(1.0, LaunchMode::kEager) > m.local_time_s(1.0, LaunchMode::kGraph));
  CHECK(m.local_time_s(1.0, LaunchMode::kPiecewise) >= m.local_time_s(1.0, LaunchMode::kGraph));
}

TEST_CASE("eager prior: the cycle is slower eager, and predict says where the values come from", "[launch][eager]") {
  const auto at = [](const std::string& mode) {
    return specsim::CycleModel(specsim::load_scenario(
        SPECSIM_SOURCE_DIR "/validation/vllm-issue-20780-llama8b/vllm20780-llama31-8b-eagle3-k4-bs1.yaml",
        {"engine.verify_mode=" + mode, "engine.draft_mode=" + mode}, kRoot));
  };
  const specsim::CycleModel graph = at("graph"), eager = at("eager");
  const auto pg = graph.predict(), pe = eager.predict();
  // Before the prior, eager priced max(gpu, host) and came out 0.3% faster than graph (327.7 vs
  // 326.8 tok/s); now every eager forward is dearer, so the cycle is.
  CHECK(pe.verify.compute_s > pg.verify.compute_s);
  CHECK(pe.draft_s > pg.draft_s);
  CHECK(pe.spec_tokens_per_s < pg.spec_tokens_per_s);
  const auto& cal = eager.calibration();
  CHECK_THAT(cal.eager_launch_per_kernel_s.value, WithinRel(17.39e-6, 1e-12));
  CHECK_THAT(cal.eager_launch_per_kernel_s.origin, StartsWith("prior: 17.4 us, p10-p90 5 us to 40 us"));
  CHECK_THAT(cal.eager_overlap_exponent.value, WithinRel(2.91, 1e-12));
  CHECK_THAT(cal.eager_overlap_exponent.origin, StartsWith("prior: 2.91, p10-p90 2.0 to 5.0"));
  // Their spread widens the prior band only where a forward launches from the host.
  const auto band_eager = specsim::prior_band(eager, pe);
  CHECK(has_term(band_eager, "eager launch per kernel"));
  CHECK(has_term(band_eager, "eager overlap exponent"));
  const auto band_graph = specsim::prior_band(graph, pg);
  CHECK_FALSE(has_term(band_graph, "eager launch per kernel"));
  CHECK_FALSE(has_term(band_graph, "eager overlap exponent"));
}

TEST_CASE("eager prior: a set value wins over the prior", "[launch][eager]") {
  const specsim::CycleModel m(specsim::load_scenario(
      kUncalibrated,
      {"engine.verify_mode=eager", "compute.eager_launch_per_kernel=8us", "compute.eager_overlap_exponent=2"}, kRoot));
  const auto& cal = m.calibration();
  CHECK_THAT(cal.eager_launch_per_kernel_s.value, WithinRel(8e-6, 1e-12));
  CHECK(cal.eager_launch_per_kernel_s.origin == "set");
  CHECK_THAT(cal.eager_overlap_exponent.value, WithinRel(2.0, 1e-12));
  CHECK(cal.eager_overlap_exponent.origin == "set");
  // 358 kernels x 8 us = 2.864 ms of launches against the 5-token verify's GPU time: their hypotenuse.
  const auto& s = m.scenario();
  const specsim::ComputeModel target(s.model, s.gpu, 1, 1, 2048, s.compute, 0.84, 1.0);
  CHECK_THAT(target.local_time_s(5.0, LaunchMode::kEager), WithinRel(std::hypot(target.gpu_time_s(5.0), 358 * 8e-6), 1e-12));
  // Set, they are not priors: the band leaves them out.
  const auto band = specsim::prior_band(m, m.predict());
  CHECK_FALSE(has_term(band, "eager launch per kernel"));
  CHECK_FALSE(has_term(band, "eager overlap exponent"));
}

TEST_CASE("eager prior: the home row's measured eager verify keeps max(gpu, host)", "[launch][eager]") {
  const specsim::CycleModel m(specsim::load_scenario(kHome, {}, kRoot));
  const auto& cal = m.calibration();
  CHECK(cal.eager_launch_per_kernel_s.origin == "set");  // 5us in the file
  CHECK(std::isinf(cal.eager_overlap_exponent.value));
  CHECK_THAT(cal.eager_overlap_exponent.origin, StartsWith("calibrated: the measured eager verify compute 5 ms"));
  // Unchanged by the prior: a 37.148 ms cycle before it (specsim at d972e24), when the file set the
  // engine's per-cycle overhead to 0.5 ms. Under the priors every row gets (issue 31) it takes SGLang's
  // 2 ms instead: the cycle is 1.5 ms longer, to the last digit, and nothing else moved.
  const auto p = m.predict();
  CHECK_THAT(p.cycle_s, WithinRel(0.03714819478301089 + 1.5e-3, 1e-9));
  CHECK_THAT(p.spec_tokens_per_s, WithinRel(p.tokens_per_cycle / p.cycle_s, 1e-12));
  // A what-if that leaves the measurement in place keeps it too.
  const specsim::CycleModel what_if(specsim::load_scenario(kHome, {"workload.batch=2"}, kRoot));
  CHECK(std::isinf(what_if.calibration().eager_overlap_exponent.value));
}
