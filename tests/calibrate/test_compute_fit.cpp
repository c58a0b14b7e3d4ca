#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "specsim/compute_fit.hpp"
#include "specsim/compute_model.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/priors.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace fs = std::filesystem;

namespace {

const std::string kSource = SPECSIM_SOURCE_DIR;

// The acceptance thresholds of the issue: held-out error for tokens <= 64, per model and mode.
constexpr double kHeldOutMedianLimit = 0.05;
constexpr double kHeldOutWorstLimit = 0.15;
// The rows the shipped profile is fitted on: both modes of one run, the eager runs interleaved
// (measure_interleaved.py). The first run, h200-forward.csv, timed point after point and its eager
// rows drifted with the host CPU; it stays in the repository as the record of why.
const std::string kInterleaved = "/calibration/compute/h200-forward-interleaved.csv";

// The shipped rows with their shapes, as `specsim calibrate compute` resolves them; the unfused
// loop-MoE rows (first run only) have no model file and are left out, as the command does.
std::vector<specsim::ComputeFitInput> shipped_rows(const std::string& csv = kInterleaved) {
  const auto steps = specsim::read_compute_steps_csv(kSource + csv);
  const specsim::GpuSpec gpu = specsim::load_gpu(kSource + "/models/gpu/h200.yaml");
  std::vector<specsim::ComputeFitInput> rows;
  for (const auto& s : steps) {
    std::string path = kSource + "/calibration/compute/" + s.model + ".yaml";
    if (!fs::exists(path)) path = kSource + "/models/llm/" + s.model + ".yaml";
    if (!fs::exists(path)) continue;
    rows.push_back({s, specsim::load_model(path), gpu});
  }
  return rows;
}

specsim::ComputeFitOptions torch_kernels() {
  // h200-forward.conditions.yaml model_info.gpu_events_per_forward: 964 = 32 x 30 + 4 (8B),
  // 2403 = 80 x 30 + 3 (70B), 248 = 4 x 62 (grouped MoE).
  specsim::ComputeFitOptions o;
  o.kernels_per_dense_layer = 30;
  o.kernels_per_moe_layer = 62;
  return o;
}

}  // namespace

TEST_CASE("compute_fit: held-out error on the H200 forward measurements", "[compute_fit]") {
  const auto rows = shipped_rows();
  REQUIRE(rows.size() == 216);  // 3 models x 9 token counts x 4 contexts x 2 modes
  const specsim::ComputeFitResult fit = specsim::fit_compute(rows, torch_kernels());
  std::printf("held-out error (tokens <= %d; %s):\n", specsim::kMemoryBoundMaxTokens, fit.split.c_str());
  std::printf("  %-26s %-6s %5s %8s %8s\n", "model", "mode", "rows", "median", "worst");
  for (const auto& e : fit.holdout) {
    std::printf("  %-26s %-6s %5d %7.1f%% %7.1f%%\n", e.model.c_str(), specsim::to_string(e.mode), e.rows,
                100 * e.median_abs_error, 100 * e.worst_abs_error);
  }
  REQUIRE(fit.holdout.size() == 6);  // 3 models x 2 modes
  for (const auto& e : fit.holdout) {
    INFO(e.model << " " << specsim::to_string(e.mode));
    CHECK(e.rows == 14);  // 7 token counts (1..64) x 4 contexts, half held out
    CHECK(e.median_abs_error <= kHeldOutMedianLimit);
    CHECK(e.worst_abs_error <= kHeldOutWorstLimit);
  }
  // The shipped profile is this fit on all rows: its values must be the ones the code gives now.
  const specsim::ComputeProfile shipped =
      specsim::load_compute_profile(kSource + "/calibration/profiles/h200-torch-compute.yaml");
  CHECK_THAT(*shipped.settings.bandwidth_efficiency, WithinRel(*fit.settings.bandwidth_efficiency, 1e-3));
  CHECK_THAT(shipped.settings.kernel_floor_s, WithinRel(fit.settings.kernel_floor_s, 1e-3));
  CHECK_THAT(*shipped.settings.kv_efficiency_verify, WithinRel(*fit.settings.kv_efficiency_verify, 1e-3));
  CHECK_THAT(shipped.settings.eager_launch_per_kernel_or_prior_s(), WithinRel(fit.settings.eager_launch_per_kernel_or_prior_s(), 1e-3));
  REQUIRE(shipped.settings.eager_overlap_exponent);
  CHECK_THAT(*shipped.settings.eager_overlap_exponent, WithinRel(*fit.settings.eager_overlap_exponent, 1e-3));
  // One host cost per GPU kernel serves all three models: the interleaved medians at q = 2 are
  // 17.1 ms / 964 kernels = 17.7 us (8B, C = 1024), 42.1 ms / 2403 = 17.5 us (70B, C = 4096) and
  // 4.56 ms / 248 = 18.4 us (MoE, C = 1024); the fit must land among them.
  CHECK(fit.settings.eager_launch_per_kernel_or_prior_s() > 16e-6);
  CHECK(fit.settings.eager_launch_per_kernel_or_prior_s() < 19e-6);
  // Verify attention reads the KV cache far slower than decode attention: the conditions file
  // reports ~0.43 ms vs 0.12 ms per layer for cuDNN vs flash at C = 32768, and even flash with
  // T >= 2 does not split the KV length at batch 1.
  CHECK(*fit.settings.kv_efficiency_verify < 0.5 * *fit.settings.kv_efficiency_decode);
  // No efficiency above the datasheet (issue 31): unbounded, this fit asked for eta_bw 1.044; it is
  // pinned at 1, and so is the KV decode term that would take the excess, on all rows and on half.
  for (const specsim::ComputeSettings& s : {fit.settings, fit.holdout_settings}) {
    for (const auto& e : {s.bandwidth_efficiency, s.expert_bandwidth_efficiency, s.kv_efficiency_decode,
                          s.kv_efficiency_verify}) {
      if (e) CHECK(*e <= 1.0);
    }
    CHECK(s.flop_efficiency <= 1.0);
  }
  CHECK(*fit.settings.bandwidth_efficiency == 1.0);
}

TEST_CASE("compute_fit: recovers known parameters from synthetic rows", "[compute_fit]") {
  // Rows generated by the model itself with known settings on the shipped grid must give those
  // settings back: the linear stage is exact when the rows are, and Brent finds eta_f and the
  // eager launch cost to ~1e-12 (40 bits).
  auto rows = shipped_rows();
  specsim::ComputeSettings truth;
  truth.bandwidth_efficiency = 0.8;
  truth.expert_bandwidth_efficiency = 0.55;
  truth.kv_efficiency_decode = 0.9;
  truth.kv_efficiency_verify = 0.3;
  truth.flop_efficiency = 0.6;
  truth.kernel_floor_s = 2e-6;
  truth.multi_token_step_s = 10e-6;
  truth.per_token_layer_s = 0.2e-6;
  truth.graph_launch_s = 8e-6;
  truth.eager_launch_per_kernel_s = 20e-6;
  truth.eager_multi_token_step_s = 40e-6;
  truth.eager_overlap_exponent = 4.0;
  truth.kernels_per_dense_layer = 30;
  truth.kernels_per_moe_layer = 62;
  for (auto& r : rows) {
    r.step.time_s = specsim::predict_forward_s(r.model, r.gpu, r.step.tp, r.step.context_tokens, r.step.tokens,
                                               r.step.mode, truth);
  }
  const auto fit = specsim::fit_compute(rows, torch_kernels());
  const auto& s = fit.settings;
  CHECK_THAT(*s.bandwidth_efficiency, WithinRel(0.8, 1e-6));
  CHECK_THAT(*s.expert_bandwidth_efficiency, WithinRel(0.55, 1e-6));
  CHECK_THAT(*s.kv_efficiency_decode, WithinRel(0.9, 1e-6));
  CHECK_THAT(*s.kv_efficiency_verify, WithinRel(0.3, 1e-6));
  CHECK_THAT(s.kernel_floor_s, WithinRel(2e-6, 1e-6));
  CHECK_THAT(s.multi_token_step_s, WithinRel(10e-6, 1e-6));
  CHECK_THAT(s.per_token_layer_s, WithinRel(0.2e-6, 1e-6));
  CHECK_THAT(s.graph_launch_s, WithinRel(8e-6, 1e-6));
  CHECK_THAT(s.flop_efficiency, WithinRel(0.6, 1e-4));
  REQUIRE(s.eager_launch_per_kernel_s);
  CHECK_THAT(*s.eager_launch_per_kernel_s, WithinRel(20e-6, 1e-4));
  CHECK_THAT(s.eager_multi_token_step_s, WithinRel(40e-6, 1e-3));
  REQUIRE(s.eager_overlap_exponent);
  CHECK_THAT(*s.eager_overlap_exponent, WithinRel(4.0, 1e-3));
  for (const auto& e : fit.holdout) CHECK(e.worst_abs_error < 1e-4);
}

TEST_CASE("compute_fit: the roofline terms by hand", "[compute_fit]") {
  // Llama-3.1-8B at TP1, one token, context 0, graph mode, defaults but t_kernel = 0:
  //   weights = 32 x (attention 4096 x (32 + 16) x 128 + 32 x 128 x 4096 = 41.9M
  //             + MLP 3 x 4096 x 14336 = 176.2M) + LM head 128256 x 4096 = 525.3M params
  //           = 32 x 218.1M + 525.3M = 7.505G params = 15.01 GB in bf16
  //   T = 15.01 GB / (0.84 x 4.8 TB/s) + graph launch 5 us = 3.7227 ms + 5 us.
  const auto model = specsim::load_model(kSource + "/models/llm/llama-3.1-8b.yaml");
  const auto gpu = specsim::load_gpu(kSource + "/models/gpu/h200.yaml");
  specsim::ComputeSettings s;
  s.kernel_floor_s = 0;
  const double params = 32.0 * (4096.0 * 48 * 128 + 32.0 * 128 * 4096 + 3.0 * 4096 * 14336) + 128256.0 * 4096;
  const double expected = params * 2 / (0.84 * 4.8e12) + 5e-6;
  CHECK_THAT(specsim::predict_forward_s(model, gpu, 1, 0, 1, specsim::LaunchMode::kGraph, s), WithinRel(expected, 1e-9));
  // A step from 1 to 2 tokens adds exactly the step per layer: 32 x 10 us (flops are far below
  // the bytes at 2 tokens, and context 0 reads no KV).
  s.multi_token_step_s = 10e-6;
  const double one = specsim::predict_forward_s(model, gpu, 1, 0, 1, specsim::LaunchMode::kGraph, s);
  const double two = specsim::predict_forward_s(model, gpu, 1, 0, 2, specsim::LaunchMode::kGraph, s);
  CHECK_THAT(two - one, WithinRel(32 * 10e-6, 1e-9));
}

TEST_CASE("compute_fit: eager overlap by hand", "[compute_fit]") {
  // Llama-3.1-8B, TP1, context 0, defaults but t_kernel = 0, graph launch 0: T_gpu = 15.01 GB /
  // (0.84 x 4.8 TB/s) = 3.7227 ms (the case above). Eager host time: 966 kernels (32 x 30 + the
  // model file's default 6 per forward) x 4 us = 3.864 ms at one token; at two tokens + 32 layers
  // x 10 us = 4.184 ms.
  const auto model = specsim::load_model(kSource + "/models/llm/llama-3.1-8b.yaml");
  const auto gpu = specsim::load_gpu(kSource + "/models/gpu/h200.yaml");
  specsim::ComputeSettings s;
  s.kernel_floor_s = 0;
  s.graph_launch_s = 0;
  s.kernels_per_dense_layer = 30;
  s.eager_launch_per_kernel_s = 4e-6;
  s.eager_multi_token_step_s = 10e-6;
  const double params = 32.0 * (4096.0 * 48 * 128 + 32.0 * 128 * 4096 + 3.0 * 4096 * 14336) + 128256.0 * 4096;
  const double gpu_s = params * 2 / (0.84 * 4.8e12);
  const double host_s = 966 * 4e-6;
  using specsim::LaunchMode;
  // Perfect overlap (p infinite, what a measured eager verify is priced at): the slower side, 3.864 ms.
  s.eager_overlap_exponent = specsim::kPerfectOverlapExponent;
  CHECK_THAT(specsim::predict_forward_s(model, gpu, 1, 0, 1, LaunchMode::kEager, s), WithinRel(host_s, 1e-9));
  // p = 1: the two add, 7.587 ms; p = 2: sqrt(3.7227^2 + 3.864^2) = 5.365 ms.
  s.eager_overlap_exponent = 1.0;
  CHECK_THAT(specsim::predict_forward_s(model, gpu, 1, 0, 1, LaunchMode::kEager, s), WithinRel(gpu_s + host_s, 1e-9));
  s.eager_overlap_exponent = 2.0;
  CHECK_THAT(specsim::predict_forward_s(model, gpu, 1, 0, 1, LaunchMode::kEager, s),
             WithinRel(std::hypot(gpu_s, host_s), 1e-9));
  // Two tokens: the host step joins (the GPU side grows by the flops of one more token only,
  // still bytes-bound, and per-token terms are 0): host 4.184 ms.
  s.eager_overlap_exponent = specsim::kPerfectOverlapExponent;
  CHECK_THAT(specsim::predict_forward_s(model, gpu, 1, 0, 2, LaunchMode::kEager, s),
             WithinRel(host_s + 32 * 10e-6, 1e-9));
}

TEST_CASE("compute_fit: step-time CSV errors name file, line and column", "[compute_fit]") {
  const fs::path dir = fs::temp_directory_path() / "specsim_compute_fit_csv";
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    const fs::path p = dir / name;
    std::ofstream(p) << text;
    return p.string();
  };
  const std::string no_unit = write("no-unit.csv", "model,gpu,tp,tokens,context,mode,time\nm,H200,1,1,0,graph,5\n");
  CHECK_THROWS_WITH(specsim::read_compute_steps_csv(no_unit), Contains("no time column with a unit"));
  const std::string bad_unit = write("bad-unit.csv", "model,gpu,tp,tokens,context,mode,time_parsecs\n");
  CHECK_THROWS_WITH(specsim::read_compute_steps_csv(bad_unit), Contains("bad-unit.csv:1:7") && Contains("s, ms or us"));
  const std::string bad_mode = write("bad-mode.csv", "model,gpu,tp,tokens,context,mode,time_us\nm,H200,1,1,0,cuda,5\n");
  CHECK_THROWS_WITH(specsim::read_compute_steps_csv(bad_mode), Contains("bad-mode.csv:2:6") && Contains("'cuda'"));
  // A decimal comma splits the time into two cells: read as 5 ms before, now refused at the extra cell.
  const std::string comma = write("comma.csv", "model,gpu,tp,tokens,context,mode,time_ms\nm,H200,1,1,0,graph,5,9635\n");
  CHECK_THROWS_WITH(specsim::read_compute_steps_csv(comma),
                    Contains("comma.csv:2:8") && Contains("the row has 8 cells, the header 7") && Contains("5.96"));
  const std::string ok = write("ok.csv", "model,gpu,tp,tokens,context,mode,time_us\nm,H200,8,4,1024,eager,250\n");
  const auto rows = specsim::read_compute_steps_csv(ok);
  REQUIRE(rows.size() == 1);
  CHECK_THAT(rows[0].time_s, WithinRel(250e-6, 1e-12));  // 250 us
  CHECK(rows[0].tp == 8);
  CHECK(rows[0].mode == specsim::LaunchMode::kEager);
  fs::remove_all(dir);
}

namespace {

struct CurveErrors {
  double median = 0;
  double worst = 0;
  int points = 0;
};

// For each context of `model` on the held-out unfused H200 curve: its measured 1-token step (and,
// with `second_tokens`, that width too) through fit_forward_steps on `settings`, then every other
// width of 2..64 tokens predicted and compared.
CurveErrors held_out_curve(const std::string& model, const specsim::ComputeSettings& settings, int second_tokens = 0) {
  const auto rows = shipped_rows("/calibration/compute/h200-forward-unfused.csv");
  std::map<double, std::map<int, const specsim::ComputeFitInput*>> by_context;
  for (const auto& r : rows) {
    if (r.step.model == model && r.step.mode == specsim::LaunchMode::kGraph) by_context[r.step.context_tokens][r.step.tokens] = &r;
  }
  std::vector<double> errors;
  for (const auto& [context, widths] : by_context) {
    const auto& one = *widths.at(1);
    std::optional<std::pair<double, double>> second;
    if (second_tokens) second = std::pair{double(second_tokens), widths.at(second_tokens)->step.time_s};
    const specsim::ForwardFit fit = specsim::fit_forward_steps(
        {&one.model, &one.gpu, one.step.tp, context, specsim::LaunchMode::kGraph}, settings, one.step.time_s, second);
    for (const auto& [tokens, r] : widths) {
      if (tokens < 2 || tokens > 64 || tokens == second_tokens) continue;
      const double p = specsim::predict_forward_s(r->model, r->gpu, r->step.tp, context, tokens,
                                                  specsim::LaunchMode::kGraph, fit.settings);
      errors.push_back(std::fabs(p / r->step.time_s - 1.0));
    }
  }
  std::sort(errors.begin(), errors.end());
  const std::size_t n = errors.size();
  return {n % 2 ? errors[n / 2] : 0.5 * (errors[n / 2 - 1] + errors[n / 2]), errors.back(), int(n)};
}

}  // namespace

// Issue 19's bar for a measured decode step: the width curve of a GPU the profile never saw, here a
// second H200 run with another kernel mix (h200-forward-unfused.csv: RMSNorm, q/k/v and gate/up
// unfused, flash attention everywhere; 50 GPU events per dense layer against the profile's 30).
TEST_CASE("compute_fit: one measured step rescales the profile to a held-out kernel mix", "[compute_fit]") {
  const specsim::ComputeSettings profile =
      specsim::load_compute_profile(kSource + "/calibration/profiles/h200-torch-compute.yaml").settings;
  // Dense, from one step: median <= 5%, worst <= 15% over 2..64 tokens and 4 contexts (24 points).
  for (const char* model : {"llama-3.1-8b", "llama-3.3-70b"}) {
    INFO(model);
    const CurveErrors e = held_out_curve(model, profile);
    CHECK(e.points == 24);
    CHECK(e.median <= 0.05);  // measured: 8B 2.4%, 70B 2.3%
    CHECK(e.worst <= 0.15);   // 10.9%, 5.6%
  }
  // MoE, from one step: median <= 15%, worst <= 30% (measured 2.2%, 6.1%).
  const CurveErrors moe = held_out_curve("deepseek-v3-moe-grouped", profile);
  CHECK(moe.median <= 0.15);
  CHECK(moe.worst <= 0.30);
}

TEST_CASE("compute_fit: without a profile, a second measured width sets an MoE's expert efficiency", "[compute_fit]") {
  const specsim::ComputeSettings prior;
  // One step read as bandwidth alone prices the experts of a wide forward at the step's rate:
  // median 20.7%, worst 55.5% on the held-out curve (the shortfall the issue describes).
  const CurveErrors one = held_out_curve("deepseek-v3-moe-grouped", prior);
  CHECK(one.median > 0.15);
  // The verify's width (4 tokens) beside it: eta_e and eta_bw fitted together. Bar: median <= 10%,
  // worst <= 20% (measured 3.5%, 11.4% over the 20 other points).
  const CurveErrors two = held_out_curve("deepseek-v3-moe-grouped", prior, 4);
  CHECK(two.points == 20);
  CHECK(two.median <= 0.10);
  CHECK(two.worst <= 0.20);
  CHECK(two.median < one.median);
  // Dense without a profile, the second width sets the multi-token step: 8B 5.3% / 13.7%.
  const CurveErrors dense = held_out_curve("llama-3.1-8b", prior, 4);
  CHECK(dense.median <= 0.10);
  CHECK(dense.worst <= 0.20);
}

TEST_CASE("compute_fit: an eager step faster than the launch prior allows lowers the launch cost, never below p10",
          "[compute_fit]") {
  // Llama-3.1-8B on one H200, eager, context 1024: the model's own eager 1-token forward at the
  // datasheet's bandwidth, no per-kernel GPU cost and a 10 us launch, taken as the measured step.
  const specsim::TransformerSpec model = specsim::load_model(kSource + "/models/llm/llama-3.1-8b.yaml");
  const specsim::GpuSpec gpu = specsim::load_gpu(kSource + "/models/gpu/h200.yaml");
  const specsim::ForwardFitBasis basis{&model, &gpu, 1, 1024.0, specsim::LaunchMode::kEager};
  specsim::ComputeSettings truth;
  truth.bandwidth_efficiency = 1.0;
  truth.kernel_floor_s = 0.0;
  truth.eager_launch_per_kernel_s = 10e-6;
  const double step = specsim::predict_forward_s(model, gpu, 1, 1024.0, 1.0, specsim::LaunchMode::kEager, truth);
  const specsim::ComputeSettings prior;
  const specsim::ForwardFit fit = specsim::fit_forward_steps(basis, prior, step);
  REQUIRE(fit.settings.eager_launch_per_kernel_s);
  CHECK_THAT(*fit.settings.eager_launch_per_kernel_s, Catch::Matchers::WithinRel(10e-6, 1e-4));
  CHECK(*fit.settings.bandwidth_efficiency == 1.0);
  CHECK(fit.settings.kernel_floor_s == 0.0);
  CHECK_THAT(fit.solved, Catch::Matchers::Contains("the eager launch cost from the decode step"));
  // Faster than the prior's p10 (5 us) allows: refused, not fitted below the range.
  truth.eager_launch_per_kernel_s = 2e-6;
  const double too_fast = specsim::predict_forward_s(model, gpu, 1, 1024.0, 1.0, specsim::LaunchMode::kEager, truth);
  CHECK_THROWS_WITH(specsim::fit_forward_steps(basis, prior, too_fast), Catch::Matchers::Contains("faster"));
  // A launch cost the scenario sets stays as set: the same step is refused.
  specsim::ComputeSettings set = prior;
  set.eager_launch_per_kernel_s = 17.39e-6;
  CHECK_THROWS(specsim::fit_forward_steps(basis, set, step));
}

TEST_CASE("compute_fit: a host-bound eager step sets the launch cost and leaves the GPU side at its priors",
          "[compute_fit]") {
  // Qwen3-1.7B on one H200, eager, batch 1: ~314 kernels x 8 us = 2.5 ms of launches against ~0.9 ms
  // of GPU work (3.4 GB at 84% of 4.8 TB/s). The step is the model's own at the GPU priors and an
  // 8 us launch; it tells the launch cost, not the GPU's rate, so the fit keeps eta_bw at its prior
  // (0.84) and the per-kernel cost as given, where the datasheet reading would have set 100% and 0.
  const specsim::TransformerSpec model = specsim::load_model(kSource + "/models/llm/qwen3-1.7b.yaml");
  const specsim::GpuSpec gpu = specsim::load_gpu(kSource + "/models/gpu/h200.yaml");
  const specsim::ForwardFitBasis basis{&model, &gpu, 1, 1024.0, specsim::LaunchMode::kEager};
  const specsim::ComputeSettings prior;
  specsim::ComputeSettings truth = prior;
  truth.eager_launch_per_kernel_s = 8e-6;
  const double step = specsim::predict_forward_s(model, gpu, 1, 1024.0, 1.0, specsim::LaunchMode::kEager, truth);
  const specsim::ForwardFit fit = specsim::fit_forward_steps(basis, prior, step);
  REQUIRE(fit.settings.eager_launch_per_kernel_s);
  CHECK_THAT(*fit.settings.eager_launch_per_kernel_s, Catch::Matchers::WithinRel(8e-6, 1e-4));
  REQUIRE(fit.settings.bandwidth_efficiency);
  CHECK(*fit.settings.bandwidth_efficiency == specsim::kPriorBandwidthEfficiency.value);
  CHECK(fit.settings.kernel_floor_s == prior.kernel_floor_s);
  CHECK_THAT(fit.solved, Catch::Matchers::Contains("the GPU side at its priors"));
  // The same forward over 64 tokens, predicted from the fit, is the truth's.
  CHECK_THAT(specsim::predict_forward_s(model, gpu, 1, 1024.0, 64.0, specsim::LaunchMode::kEager, fit.settings),
             Catch::Matchers::WithinRel(
                 specsim::predict_forward_s(model, gpu, 1, 1024.0, 64.0, specsim::LaunchMode::kEager, truth), 1e-3));
}
