// A measured collective-time curve: time vs message bytes for one (ranks, implementation, mode),
// built from nccl-tests rows or an engine's own per-op table.
//
// NCCL's curve is not one latency + bandwidth line: protocol and channel switches show as steps
// (e.g. when each rank's chunk crosses 512 B, docs/references/nccl.md#chunk-step) and as kinks (LL ->
// Simple, docs/references/nccl.md#protocols). So the curve is kept piecewise (docs/model.md#equations):
//   - regimes: maximal runs of measured points with no boundary between them. Two kinds of
//     boundary:
//     * a step: a rise of more than CurveOptions::step_min_rise (relative) that the neighbouring
//       points' slope cannot explain, or any drop of that size;
//     * NCCL's LL -> Simple switch. NCCL does not run the protocol that is fastest on the box but
//       the one its own model (tuning.cc, nccl_prior.hpp) says is fastest: Ring/LL at half Simple's
//       bandwidth with a lower latency, so it switches at n* = (lat_Simple - lat_LL) /
//       (beta_LL - beta_Simple) = (lat_Simple - lat_LL) / beta_Simple. The curve takes NCCL's
//       latencies (PCI column, `ranks`) and beta_Simple from the measured points above the gap,
//       and places a switch in the gap that holds n* when the data show LL's slope there: the
//       secant just below the gap is at least protocol_switch_min_slope_ratio x beta_Simple;
//   - inside a regime: monotone cubic Hermite interpolation in log-log space (Fritsch & Carlson
//     1980) through every point, with node slopes from the local alpha-beta line, so that an
//     alpha + n*beta regime is reproduced between points;
//   - between regimes: each side continued from its edge point up to the boundary, the upper side
//     never below where the lower side stopped (monotone through a rise). A step is placed at a
//     known NCCL threshold inside the gap (per-rank chunk of 512 B) or at the geometric middle of
//     the gap, and its sides are the two regimes' alpha-beta slopes; a protocol switch is placed
//     at n*, its lower side is NCCL's LL line (slope 2 beta_Simple) and its upper side NCCL's
//     Simple line drawn from NCCL's Simple latency at 0 B (the latency that placed n*) to the
//     first measured Simple point, i.e. the bandwidth Simple shows where it starts;
//   - outside the measured range: the edge regime's alpha-beta line continued from the edge point.
// Each regime's alpha (s) and beta (s/B) are a least-squares fit of relative residuals; the
// residuals are reported with the fit.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <vector>

namespace specsim {


struct CurvePoint {
  double bytes = 0.0;
  double time_s = 0.0;
};

// t(n) = latency_s + n * seconds_per_byte (Hockney).
struct AlphaBeta {
  double latency_s = 0.0;
  double seconds_per_byte = 0.0;

  [[nodiscard]] double time_s(double bytes) const { return latency_s + bytes * seconds_per_byte; }
  // 1 / beta; infinite for a flat regime.
  [[nodiscard]] double bandwidth_bytes_per_s() const;
};

struct Regime {
  std::size_t first_point = 0;       // index into MeasuredCurve::points()
  std::size_t last_point = 0;        // inclusive
  double first_bytes = 0.0;
  double last_bytes = 0.0;
  AlphaBeta fit;                     // least squares of (fit(n_i) - t_i) / t_i, alpha, beta >= 0
  double rms_relative_residual = 0.0;
  double max_relative_residual = 0.0;  // largest |fit(n_i) / t_i - 1|
};

// How one regime gives way to the next (see the header comment).
enum class BoundaryKind { kStep, kProtocolSwitch };

struct CurveOptions {
  // Total ranks; with it, a step whose gap contains a per-rank chunk threshold is placed there.
  // 0 = unknown: steps are placed at the geometric middle of their gap.
  int ranks = 0;
  // A rise between neighbours is a step when it exceeds this fraction of the lower time ...
  // 10%: the public PCIe logs' steps are +48% (8x 5090, 2 -> 4 KB) and +65% (4x 5090, 1 -> 2 KB),
  // while repeated small-size rows scatter by up to ~9% (2x 2080 Ti, 16 B vs 32 B).
  double step_min_rise = 0.10;
  // ... and exceeds this multiple of what the neighbouring segments' slope (s/B) predicts for the
  // gap. 5: an LL -> Simple kink seen through a 4x size gap (8x 4090, 64 -> 256 KB) is 3.2x the
  // neighbours' slope; the 512 B chunk step is 21x or more.
  double step_min_excess_over_trend = 5.0;
  // Per-rank chunk sizes (bytes / ranks) at which NCCL's curve is known to step: 512 B on two
  // independent logs (8x 5090 between 2 and 4 KB, 4x 5090 between 1 and 2 KB; docs/references/nccl.md#chunk-step).
  std::vector<double> step_chunk_bytes_per_rank = {512.0};
  // Look for NCCL's LL -> Simple switch (needs ranks >= 2). NCCL's PCI latencies are used: every
  // PCIe box, SHM (no P2P) included (docs/references/nccl.md#latency-tables). Turn off for NVLink curves, where LL128 sits
  // between LL and Simple.
  bool locate_protocol_switch = true;
  // The secant just below the gap must be at least this multiple of the Simple regime's slope.
  // NCCL's LL moves data at half Simple's bandwidth (ratio 2, docs/references/nccl.md#protocols); one line gives 1.
  // 1.5 sits between. The shipped logs, whole and with every other size held out: 1.7-1.9 (2x
  // 2080 Ti, secants within 4-32 KiB), 2.4-3.5 (8x 4090 SHM, 64-512 KiB), 0.9-1.0 (8x 5090 P2P,
  // 128 KiB-1 MiB, where no switch shows).
  double protocol_switch_min_slope_ratio = 1.5;
};

class MeasuredCurve {
 public:
  // Points may come in any order; sizes and times must be finite and > 0 (throws specsim::Error
  // naming the point otherwise). Repeated sizes are averaged. At least one point is required.
  [[nodiscard]] static MeasuredCurve fit(std::vector<CurvePoint> points,
                                         const CurveOptions& options = {});

  // Time of one collective of `bytes` (>= 0); monotone between measured neighbours.
  [[nodiscard]] double time_s(double bytes) const;
  [[nodiscard]] bool in_measured_range(double bytes) const;

  [[nodiscard]] const std::vector<CurvePoint>& points() const { return points_; }
  [[nodiscard]] const std::vector<Regime>& regimes() const { return regimes_; }
  [[nodiscard]] const CurveOptions& options() const { return options_; }
  // Sizes at which the curve steps from one regime to the next (one per regime boundary).
  [[nodiscard]] std::vector<double> step_bytes() const;
  // What each of those boundaries is.
  [[nodiscard]] const std::vector<BoundaryKind>& boundary_kinds() const { return boundary_kinds_; }

 private:
  std::vector<CurvePoint> points_;          // sorted by bytes, unique sizes
  std::vector<double> log_slopes_;          // d ln t / d ln n at each point (Hermite nodes)
  std::vector<Regime> regimes_;
  std::vector<double> steps_bytes_;         // boundary between regime i and i+1
  std::vector<BoundaryKind> boundary_kinds_;
  std::vector<double> lower_side_s_per_byte_;  // slope of the lower side's line in each gap
  std::vector<double> upper_side_latency_s_;   // NCCL's Simple latency above a switch, else NaN
  CurveOptions options_;
};

// What a curve is a curve of. `implementation` names the collective implementation ("nccl",
// "nccl:NCCL_ALGO=Ring", "custom_one_shot"); `mode` is "eager" or "graph" (CUDA graph replay).
struct CommCurveKey {
  int ranks = 0;
  std::string implementation;
  std::string mode;
  auto operator<=>(const CommCurveKey&) const = default;
};

// Held-out evaluation: fit on every point except the held-out ones, predict those.
struct HoldoutRow {
  double bytes = 0.0;
  double measured_s = 0.0;
  double predicted_s = 0.0;
  double relative_error = 0.0;  // |predicted / measured - 1|
};

struct HoldoutReport {
  int every_k = 0;
  std::size_t first_held_out = 0;
  double max_bytes = 0.0;
  std::vector<HoldoutRow> rows;   // held-out points with bytes <= max_bytes
  double median_relative_error = 0.0;  // NaN when rows is empty
  double worst_relative_error = 0.0;   // NaN when rows is empty
};

// Sorts the points by size and holds out indices first_held_out, first_held_out + every_k, ...
// (default every_k - 1: the k-th, 2k-th, ... size, so the smallest size stays in the fit).
// Only held-out points with bytes <= max_bytes are reported. every_k must be >= 2.
[[nodiscard]] HoldoutReport holdout(std::vector<CurvePoint> points, int every_k, double max_bytes,
                                    const CurveOptions& options = {},
                                    std::optional<std::size_t> first_held_out = std::nullopt);

}  // namespace specsim
