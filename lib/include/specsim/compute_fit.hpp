// Calibrating the compute model from measured forward times. A CSV of step times (model, GPU, TP,
// tokens, context, launch mode, time with its unit in the header) becomes a compute profile: the
// ComputeSettings terms of compute_model.hpp fitted by least squares, with the residuals per model
// and mode and the error on a held-out half of the grid (docs/compute-calibration.md).
//
// The fit, in three stages (all errors relative, |predicted / measured - 1|):
//   1. graph-mode rows with q <= kMemoryBoundMaxTokens: every term of T_gpu is linear in one
//      unknown (1/eta_bw, 1/eta_e, t_kernel, t_step, 1/eta_kv decode and verify, t_token, the graph
//      launch), solved by non-negative least squares (Eigen, column-pivoting QR; a term that comes
//      out negative is pinned to 0 and the rest refitted, Lawson & Hanson 1974 ch. 23 simplified);
//   2. eta_f: Brent's minimum of the squared error on graph rows with q > kMemoryBoundMaxTokens;
//   3. the eager host terms with the GPU terms held: launch cost per kernel t_l, host step per
//      layer once q > 1, and the overlap exponent p of (T_gpu^p + T_host^p)^(1/p), by Brent's
//      minimum on each in turn (coordinate descent) over the eager rows.
// `specsim forward --decode-step` instead solves eta_bw alone from one measured decode step
// (TOMS 748, solve_bandwidth_efficiency).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "specsim/compute_profile.hpp"
#include "specsim/hardware.hpp"
#include "specsim/model_spec.hpp"
#include "specsim/scenario.hpp"

namespace specsim {

// The largest tokens per forward at which the measured models' GEMMs are still memory-bound
// (Llama-3.1-8B: 64 * 2 * 218M flop / 495 TFLOP/s = 56 us < 436 MB / 3.8 TB/s = 115 us per layer).
inline constexpr int kMemoryBoundMaxTokens = 64;


// A measured row with the shapes it needs.
struct ComputeFitInput {
  ComputeStep step;
  TransformerSpec model;
  GpuSpec gpu;
};

struct ComputeFitOptions {
  // Kernels per layer of the measured engine (override the model files'); see ComputeSettings.
  std::optional<int> kernels_per_dense_layer;
  std::optional<int> kernels_per_moe_layer;
  // Fixes eta_bw instead of fitting it. Across models the weight bytes and the kernel counts move
  // together (30 kernels per layer in every measured model), so a free eta_bw trades against
  // t_kernel and can land above 1; a value measured on the GEMM kernels alone pins it
  // (docs/compute-calibration.md derives 0.91 from h200-forward-profile.txt).
  std::optional<double> bandwidth_efficiency;
};

struct ComputeFitRow {
  ComputeStep step;
  double predicted_s = 0;
  double relative_error = 0;  // predicted / measured - 1
  bool held_out = false;
};

// Error summary of one model (CSV name) and mode, over rows with q <= kMemoryBoundMaxTokens.
struct ComputeErrorSummary {
  std::string model;
  LaunchMode mode = LaunchMode::kGraph;
  int rows = 0;
  double median_abs_error = 0;
  double worst_abs_error = 0;
};

struct ComputeFitResult {
  ComputeSettings settings;                      // the fitted values (all rows)
  std::vector<ComputeFitRow> rows;               // every row, fit on all rows
  std::vector<ComputeErrorSummary> residuals;    // of that fit
  ComputeSettings holdout_settings;              // fitted on the training half only
  std::vector<ComputeFitRow> holdout_rows;       // every row: held_out marks the other half
  std::vector<ComputeErrorSummary> holdout;      // held-out rows only
  std::string split;                             // how the grid was cut, in words
};

// True for the rows the held-out evaluation leaves out: per model and mode, the i-th distinct token
// count and the j-th distinct context form a checkerboard, (i + j) odd is held out.
[[nodiscard]] std::vector<bool> checkerboard_holdout(const std::vector<ComputeStep>& steps);

// Fits the compute terms on `rows` (the settings not fitted keep `prior`'s values).
[[nodiscard]] ComputeFitResult fit_compute(const std::vector<ComputeFitInput>& rows, const ComputeFitOptions& options,
                                           const ComputeSettings& prior = {});

// Predicted forward time of one TP rank, compute only: ComputeModel::local_time_s with
// eta_bw = settings.bandwidth_efficiency (0.84 when empty) and the settings' routing skew.
[[nodiscard]] double predict_forward_s(const TransformerSpec& model, const GpuSpec& gpu, int tp, double context_tokens,
                                       double tokens, LaunchMode mode, const ComputeSettings& settings, int batch = 1);

// eta_bw such that the 1-token forward (batch 1) takes `decode_step_s` (TOMS 748 on [0.01, 2]);
// throws specsim::Error when even eta_bw = 2 is slower or 0.01 faster than the measurement.
[[nodiscard]] double solve_bandwidth_efficiency(const TransformerSpec& model, const GpuSpec& gpu, int tp,
                                                double context_tokens, LaunchMode mode,
                                                const ComputeSettings& settings, double decode_step_s);

// What a measured step is read against: one TP rank of `model` on `gpu` at a context, in a mode.
struct ForwardFitBasis {
  const TransformerSpec* model = nullptr;
  const GpuSpec* gpu = nullptr;
  int tp = 1;
  double context_tokens = 0;
  LaunchMode mode = LaunchMode::kGraph;
};
struct ForwardFit {
  ComputeSettings settings;
  std::string solved;               // which terms the steps set
  std::vector<std::string> notes;   // a second width that set nothing, and why
};
// `settings` with the terms one measured decode step (and optionally a second width, {tokens,
// time}) set (docs/compute-calibration.md#from-measured-steps): eta_bw from the decode step
// (solve_bandwidth_efficiency); a second width sets, for an MoE target whose experts' efficiency
// is not known, that efficiency (eta_bw solved again from the step for each value: nested TOMS
// 748), and otherwise the multi-token step per layer. Throws as solve_bandwidth_efficiency does.
[[nodiscard]] ForwardFit fit_forward_steps(const ForwardFitBasis& basis, ComputeSettings settings, double decode_step_s,
                                           std::optional<std::pair<double, double>> second = std::nullopt);


// Written by `specsim calibrate compute`; the provenance a profile records besides the fit.
struct ComputeProfileProvenance {
  std::string tool;
  std::string command;
  std::string date_utc;
  std::string source_path;
  std::string source_sha256;
  int rows_used = 0;
  std::vector<std::string> skipped;  // "model: N rows (why)"
  std::vector<std::string> model_files;  // "csv name -> path (sha256)"
};

[[nodiscard]] std::string render_compute_profile_yaml(const ComputeProfile& profile, const ComputeFitResult& fit,
                                                      const ComputeProfileProvenance& provenance);


}  // namespace specsim
