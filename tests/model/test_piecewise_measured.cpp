// Piecewise CUDA graphs against a full graph and eager, measured on one H200
// (calibration/compute/h200-piecewise.csv, measure_piecewise.py; docs/model.md#launch-modes): how
// well the launch-mode equations track the overheads of a Llama-3.1-8B forward at batch 1 across
// context lengths.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "specsim/compute_fit.hpp"
#include "specsim/compute_model.hpp"
#include "specsim/load.hpp"

namespace {

const std::string kSource = SPECSIM_SOURCE_DIR;

// One (tokens, context) point of the measurement, per mode: seconds on each of its clocks.
struct Clocks {
  double time_s = 0;    // CUDA events around one forward, the GPU idle before it
  double wall_s = 0;    // host clock over back-to-back forwards, per forward
  double queued_s = 0;  // CUDA events around one forward queued behind a sleep kernel: GPU side only
};
using Point = std::pair<int, double>;  // tokens, context
using Measured = std::map<Point, std::map<std::string, Clocks>>;

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
  return cells;
}

// h200-piecewise.csv: model,gpu,tp,batch,tokens,context,mode,time_ms,wall_ms,host_ms,queued_ms
Measured read_measured() {
  std::ifstream in(kSource + "/calibration/compute/h200-piecewise.csv");
  REQUIRE(in);
  std::string line;
  std::getline(in, line);
  REQUIRE(line == "model,gpu,tp,batch,tokens,context,mode,time_ms,wall_ms,host_ms,queued_ms");
  Measured m;
  while (std::getline(in, line)) {
    const auto c = split(line);
    REQUIRE(c.size() == 11);
    m[{std::stoi(c[4]), std::stod(c[5])}][c[6]] = {std::stod(c[7]) * 1e-3, std::stod(c[8]) * 1e-3,
                                                   std::stod(c[10]) * 1e-3};
  }
  return m;
}

// The modelled forward of one point, in each mode.
struct Modelled {
  double graph_s = 0, piecewise_s = 0, eager_s = 0;
};

Modelled model_point(const specsim::TransformerSpec& model, const specsim::GpuSpec& gpu, const Point& p,
                     const specsim::ComputeSettings& s) {
  const auto at = [&](specsim::LaunchMode mode) {
    return specsim::predict_forward_s(model, gpu, 1, p.second, p.first, mode, s);
  };
  return {at(specsim::LaunchMode::kGraph), at(specsim::LaunchMode::kPiecewise), at(specsim::LaunchMode::kEager)};
}

}  // namespace

// What the measurement shows (medians of 30 interleaved rounds; ms). "model" = predict_forward_s
// with the compute profile fitted on the same plain-PyTorch harness (h200-torch-compute.yaml) and the
// harness's attention part: 5 host-launched kernels, 8.2 us on the GPU each
// (kPriorPiecewiseGpuPerAttentionS at 5 kernels); "prior" = specsim's defaults for an engine's
// 2-kernel part (5.2 us on the GPU, 2 x 17.39 us of host launches):
//
//   T  context  graph   piecewise - graph                    eager - graph
//                       events  wall  GPU    model  prior    events  model/prior
//   1     512   6.119   0.794  0.277 0.238  0.658  0.194    17.91  11.14/2.29
//   1    2048   6.271   0.772  0.294 0.252  0.652  0.193    15.64  11.10/2.27
//   1    8192   6.556   0.764  0.296 0.263  0.631  0.191    18.26  10.94/2.17
//   1   32768   7.311   0.691  0.310 0.266  0.562  0.184    11.46  10.32/1.81
//   4     512   6.359   0.755  0.294 0.260  0.600  0.192    15.41  10.68/2.20
//   4    2048   6.597   0.771  0.302 0.256  0.585  0.191    18.93  10.54/2.15
//   4    8192   7.264   0.646  0.304 0.267  0.532  0.187     9.90  10.00/1.97
//   4   32768   9.891   0.678  0.320 0.279  0.406  0.177    11.96   8.02/1.39
//
// "events" is the clock the model's local_time_s stands for (one forward, the GPU idle before it),
// "wall" the host clock over back-to-back forwards, "GPU" the forward queued behind a sleep kernel
// (no wait for the host). The piecewise overhead is flat in context, 0.65-0.79 ms, and a third of it
// (0.24-0.28 ms) is paid on the GPU even with the host ahead: hence the GPU-side term per attention
// part (docs/model.md#launch-modes). Without it the model priced 0.004-0.054 ms, its host launches
// hidden under ~6 ms of GPU work by the overlap soft max. With it and the harness's kernel count the
// model gives 0.54-0.85x of the measurement; it still falls with context where the measurement
// does not (the host's 5 launches per part, 83-184 us here against 5 x 17.39 us modelled, do not
// hide under the attention's growing GPU time as the soft max says). Eager, whose prior was fitted
// on this harness, is within 0.56-1.01x: the host's pace moves between runs (the eager rows' p10
// and p90 are 15 and 27 ms at one point), so its bar is a factor of 2.
TEST_CASE("piecewise measured: overheads over a full graph on one H200 across contexts", "[launch][piecewise][measured]") {
  const Measured measured = read_measured();
  REQUIRE(measured.size() == 8);  // tokens 1 and 4 x contexts 512, 2048, 8192, 32768
  const auto model = specsim::load_model(kSource + "/models/llm/llama-3.1-8b.yaml");
  const auto gpu = specsim::load_gpu(kSource + "/models/gpu/h200.yaml");
  specsim::ComputeSettings profile =
      specsim::load_compute_profile(kSource + "/calibration/profiles/h200-torch-compute.yaml").settings;
  // The harness's attention part: 5 kernels launched from the host (4 PyTorch ops), and the GPU side
  // these runs measured for it (both readings of kPriorPiecewiseGpuPerAttentionS agree at 5 kernels).
  profile.piecewise_attention_kernels = 5;
  profile.piecewise_gpu_per_attention_s = 8.2e-6;
  const specsim::ComputeSettings prior;
  std::map<int, std::map<double, std::pair<double, double>>> overhead;  // tokens -> context -> measured, model
  for (const auto& [point, modes] : measured) {
    const Clocks& g = modes.at("graph");
    const Clocks& pw = modes.at("piecewise");
    const Clocks& e = modes.at("eager");
    const Modelled fit = model_point(model, gpu, point, profile);
    const Modelled pri = model_point(model, gpu, point, prior);
    const double pw_measured = pw.time_s - g.time_s, pw_model = fit.piecewise_s - fit.graph_s;
    const double eager_measured = e.time_s - g.time_s, eager_model = fit.eager_s - fit.graph_s;
    INFO("T=" << point.first << " C=" << point.second << " (ms) piecewise - graph: measured " << pw_measured * 1e3
              << " (wall " << (pw.wall_s - g.wall_s) * 1e3 << ", GPU side " << (pw.queued_s - g.queued_s) * 1e3
              << "), model " << pw_model * 1e3 << " (prior " << (pri.piecewise_s - pri.graph_s) * 1e3
              << "); eager - graph: measured " << eager_measured * 1e3 << ", model " << eager_model * 1e3
              << " (prior " << (pri.eager_s - pri.graph_s) * 1e3 << ")");
    // The order of the modes holds on both sides.
    CHECK(g.time_s < pw.time_s);
    CHECK(pw.time_s < e.time_s);
    CHECK(fit.graph_s < fit.piecewise_s);
    CHECK(fit.piecewise_s < fit.eager_s);
    // Eager over graph within a factor of 2 (measured 0.56-1.01x).
    CHECK(eager_model > 0.5 * eager_measured);
    CHECK(eager_model < 2.0 * eager_measured);
    // Piecewise over graph: 0.54-0.85x of the measurement; its GPU side, 32 parts x 8.2 us = 0.262 ms,
    // within 12% of the queued clock's 0.238-0.279 ms.
    CHECK(pw_model > 0.5 * pw_measured);
    CHECK(pw_model < 1.0 * pw_measured);
    CHECK_THAT(32 * 8.2e-6, Catch::Matchers::WithinRel(pw.queued_s - g.queued_s, 0.12));
    overhead[point.first][point.second] = {pw_measured, pw_model};
  }
  // Against context: the measured overhead stays within 25% of its 512-token value at 32K (0.87x at
  // one token, 0.90x at four); the model's falls more (0.85x, 0.68x) as the GPU time its host
  // launches hide behind grows, but no longer to nothing.
  for (const auto& [tokens, by_context] : overhead) {
    INFO("tokens " << tokens);
    const auto& [short_measured, short_model] = by_context.at(512);
    const auto& [long_measured, long_model] = by_context.at(32768);
    CHECK(long_measured > 0.75 * short_measured);
    CHECK(long_measured < 1.25 * short_measured);
    CHECK(long_model < short_model);
    CHECK(long_model > 0.6 * short_model);
  }
}
