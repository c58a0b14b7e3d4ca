#include "specsim/comm_curve.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "specsim/error.hpp"
#include "specsim/nccl_prior.hpp"

namespace specsim {
namespace {

// Weighted least squares of relative residuals: minimise sum_i ((alpha + beta*n_i) / t_i - 1)^2,
// i.e. solve [1/t_i, n_i/t_i] [alpha, beta]^T = 1 (Eigen, column-pivoting QR). Relative weights
// keep 8 B rows (tens of us) from being drowned by 128 MiB rows (ms). alpha, beta >= 0: when the
// free solution has a negative parameter, that parameter is 0 and the other is refitted.
AlphaBeta fit_alpha_beta(const std::vector<CurvePoint>& p, std::size_t first, std::size_t last) {
  const auto m = static_cast<Eigen::Index>(last - first + 1);
  const double n_scale = p[last].bytes;  // columns of similar size for the QR
  Eigen::MatrixXd a(m, 2);
  Eigen::VectorXd ones = Eigen::VectorXd::Ones(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    const CurvePoint& q = p[first + static_cast<std::size_t>(i)];
    a(i, 0) = 1.0 / q.time_s;
    a(i, 1) = q.bytes / n_scale / q.time_s;
  }
  auto one_column = [&](Eigen::Index c) {
    return a.col(c).dot(ones) / a.col(c).squaredNorm();
  };
  if (m >= 2) {
    const Eigen::Vector2d x = a.colPivHouseholderQr().solve(ones);
    if (x(0) >= 0.0 && x(1) >= 0.0) return {x(0), x(1) / n_scale};
    if (x(1) < 0.0) return {one_column(0), 0.0};
    return {0.0, one_column(1) / n_scale};
  }
  return {p[first].time_s, 0.0};
}

// fit_alpha_beta(p, i, last).seconds_per_byte for every i in [first, last - 1], in O(last - first)
// instead of O((last - first)^2): the rows are added from `last` down, each folded into the 2x2
// triangular factor R (and Q^T 1) of the same least-squares problem by two Givens rotations
// (updating a QR factorisation by a row: Golub & Van Loan, Matrix Computations, 4th ed., 6.5.3).
// Entry i - first is the suffix [i, last]; the last entry (one point) is 0, as in fit_alpha_beta.
std::vector<double> suffix_seconds_per_byte(const std::vector<CurvePoint>& p, std::size_t first, std::size_t last) {
  const double n_scale = p[last].bytes;  // as fit_alpha_beta scales the second column
  double r00 = 0.0, r01 = 0.0, r11 = 0.0, z0 = 0.0, z1 = 0.0;
  double sum_a1 = 0.0, sum_a1_sq = 0.0;  // for the one-column refit when alpha < 0
  std::vector<double> out(last - first + 1, 0.0);
  for (std::size_t i = last + 1; i-- > first;) {
    double a0 = 1.0 / p[i].time_s, a1 = p[i].bytes / n_scale / p[i].time_s, b = 1.0;
    sum_a1 += a1;
    sum_a1_sq += a1 * a1;
    if (const double h = std::hypot(r00, a0); h > 0.0) {  // zero a0 against r00
      const double c = r00 / h, s = a0 / h;
      r00 = h;
      const double r01_new = c * r01 + s * a1;
      a1 = -s * r01 + c * a1;
      r01 = r01_new;
      const double z0_new = c * z0 + s * b;
      b = -s * z0 + c * b;
      z0 = z0_new;
    }
    if (const double h = std::hypot(r11, a1); h > 0.0) {  // zero a1 against r11
      const double c = r11 / h, s = a1 / h;
      r11 = h;
      z1 = c * z1 + s * b;
    }
    if (i == last || r11 == 0.0) continue;
    const double beta = z1 / r11;
    const double alpha = (z0 - r01 * beta) / r00;
    if (alpha >= 0.0 && beta >= 0.0) {
      out[i - first] = beta / n_scale;
    } else if (beta < 0.0) {
      out[i - first] = 0.0;
    } else {
      out[i - first] = sum_a1 / sum_a1_sq / n_scale;
    }
  }
  return out;
}

double secant_s_per_byte(const std::vector<CurvePoint>& p, std::size_t i) {
  return (p[i + 1].time_s - p[i].time_s) / (p[i + 1].bytes - p[i].bytes);
}

// Maximal runs [first, last] of point indices with no break after any point but the last.
std::vector<std::pair<std::size_t, std::size_t>> runs_between(const std::vector<bool>& break_after) {
  std::vector<std::pair<std::size_t, std::size_t>> runs;
  for (std::size_t first = 0; first < break_after.size();) {
    std::size_t last = first;
    while (last + 1 < break_after.size() && !break_after[last]) ++last;
    runs.emplace_back(first, last);
    first = last + 1;
  }
  return runs;
}

// Where NCCL's own model switches from Ring/LL to Ring/Simple, and LL's slope in that model, when
// Simple's measured algorithm bandwidth is 1 / simple_s_per_byte: the graph bandwidth is set so
// that nccl_prior's Ring/Simple bandwidth, busBw r / (2(r-1)), equals it; LL then gets half
// (tuning.cc; docs/references/nccl.md#bandwidth-model), and the two model lines cross at (lat_Simple - lat_LL) / (beta_LL -
// beta_Simple). 8 ranks: (88.2 - 20.6) us x 1/beta_Simple.
struct LlSimpleSwitch {
  double bytes = 0.0;
  double ll_s_per_byte = 0.0;
  double simple_latency_s = 0.0;  // NCCL's Ring/Simple latency for the rank count (PCI)
};

LlSimpleSwitch nccl_ll_simple_switch(int ranks, double simple_s_per_byte) {
  NcclPriorConfig c;
  c.ranks = ranks;
  c.link = NcclLink::kPci;
  c.graph_channels = 1;
  c.channel_bandwidth_bytes_per_s = 2.0 * (ranks - 1) / ranks / simple_s_per_byte;
  const NcclPriorEstimate ll = nccl_prior(c, NcclAlgo::kRing, NcclProto::kLL, 0.0);
  const NcclPriorEstimate simple = nccl_prior(c, NcclAlgo::kRing, NcclProto::kSimple, 0.0);
  const double ll_s_per_byte = 1.0 / ll.bandwidth_bytes_per_s;
  const double simple_model_s_per_byte = 1.0 / simple.bandwidth_bytes_per_s;
  return {(simple.latency_s - ll.latency_s) / (ll_s_per_byte - simple_model_s_per_byte), ll_s_per_byte,
          simple.latency_s};
}

// Cubic Hermite on [x0, x1] with the Fritsch-Carlson (1980) limiter: slopes against the secant's
// sign become 0 and (m0/d)^2 + (m1/d)^2 is capped at 9, which keeps the piece monotone.
double monotone_hermite(double x0, double y0, double m0, double x1, double y1, double m1, double x) {
  const double h = x1 - x0;
  const double d = (y1 - y0) / h;
  if (d == 0.0) {
    m0 = m1 = 0.0;
  } else {
    if (m0 * d < 0.0) m0 = 0.0;
    if (m1 * d < 0.0) m1 = 0.0;
    const double a = m0 / d, b = m1 / d;
    const double s = a * a + b * b;
    if (s > 9.0) {
      const double tau = 3.0 / std::sqrt(s);
      m0 *= tau;
      m1 *= tau;
    }
  }
  const double t = (x - x0) / h, t2 = t * t, t3 = t2 * t;
  return (2 * t3 - 3 * t2 + 1) * y0 + (t3 - 2 * t2 + t) * h * m0 + (-2 * t3 + 3 * t2) * y1 +
         (t3 - t2) * h * m1;
}

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const std::size_t k = v.size() / 2;
  return v.size() % 2 == 1 ? v[k] : 0.5 * (v[k - 1] + v[k]);
}

void check_curve_input(const std::vector<CurvePoint>& points, const CurveOptions& options) {
  if (points.empty()) throw Error(SourceLocation{}, "points", "a curve needs at least one point");
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& q = points[i];
    if (!(std::isfinite(q.bytes) && q.bytes > 0.0 && std::isfinite(q.time_s) && q.time_s > 0.0)) {
      throw Error(SourceLocation{}, "points[" + std::to_string(i) + "]",
                  "bytes = " + std::to_string(q.bytes) + ", time_s = " + std::to_string(q.time_s) +
                      ": both must be finite and > 0");
    }
  }
  if (options.ranks < 0) {
    throw Error(SourceLocation{}, "ranks", std::to_string(options.ranks) + ": must be >= 0");
  }
}

// Sorted by size, repeated sizes replaced by their mean time.
std::vector<CurvePoint> mean_per_size(std::vector<CurvePoint> points) {
  std::stable_sort(points.begin(), points.end(),
                   [](const CurvePoint& a, const CurvePoint& b) { return a.bytes < b.bytes; });
  std::vector<CurvePoint> out;
  for (std::size_t i = 0; i < points.size();) {
    std::size_t j = i;
    double sum = 0.0;
    while (j < points.size() && points[j].bytes == points[i].bytes) sum += points[j++].time_s;
    out.push_back({points[i].bytes, sum / static_cast<double>(j - i)});
    i = j;
  }
  return out;
}

// Steps. Inside one alpha-beta regime the rise over a gap is at most its slope times the gap; a
// rise far above what both neighbouring segments' slopes allow is a switch of protocol or
// channel count, and so is a drop (NCCL picked something faster).
std::vector<bool> find_steps(const std::vector<CurvePoint>& p, const CurveOptions& options) {
  const std::size_t n = p.size();
  std::vector<bool> step_after(n, false);
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const double rise = p[i + 1].time_s - p[i].time_s;
    double neighbour_slope = 0.0;
    if (i > 0) neighbour_slope = std::max(neighbour_slope, secant_s_per_byte(p, i - 1));
    if (i + 2 < n) neighbour_slope = std::max(neighbour_slope, secant_s_per_byte(p, i + 1));
    const double trend = neighbour_slope * (p[i + 1].bytes - p[i].bytes);
    const double threshold = options.step_min_rise * p[i].time_s;
    step_after[i] = (rise > threshold && rise > options.step_min_excess_over_trend * trend) ||
                    rise < -threshold;
  }
  return step_after;
}

// NCCL's LL -> Simple switch, at most one per run of points between steps: beta_Simple is fitted
// on the points from the gap's upper side to the run's end (two at least), the gap must hold
// the n* it gives, and the secant just below the gap must show LL's steeper slope. When the
// first gap holding its n* lacks that slope, the run shows no switch. Entry i: the switch in the
// gap after point i, if any.
std::vector<std::optional<LlSimpleSwitch>> find_protocol_switches(
    const std::vector<CurvePoint>& p, const std::vector<std::pair<std::size_t, std::size_t>>& step_runs,
    const CurveOptions& options) {
  std::vector<std::optional<LlSimpleSwitch>> switch_after(p.size());
  if (!options.locate_protocol_switch || options.ranks < 2) return switch_after;
  for (const auto& [first, last] : step_runs) {
    if (first + 3 > last) continue;  // no i with first + 1 <= i and i + 2 <= last
    const std::vector<double> suffix_slopes = suffix_seconds_per_byte(p, first, last);
    for (std::size_t i = first + 1; i + 2 <= last; ++i) {
      const double simple_s_per_byte = suffix_slopes[i + 1 - first];
      if (!(simple_s_per_byte > 0.0)) continue;
      const LlSimpleSwitch s = nccl_ll_simple_switch(options.ranks, simple_s_per_byte);
      if (!(p[i].bytes < s.bytes && s.bytes <= p[i + 1].bytes)) continue;
      if (secant_s_per_byte(p, i - 1) >= options.protocol_switch_min_slope_ratio * simple_s_per_byte) {
        switch_after[i] = s;
      }
      break;
    }
  }
  return switch_after;
}

// One regime per run of points between boundaries, each with its own alpha-beta fit.
std::vector<Regime> fit_regimes(const std::vector<CurvePoint>& p, const std::vector<bool>& boundary_after) {
  std::vector<Regime> regimes;
  for (const auto& [first, last] : runs_between(boundary_after)) {
    Regime r;
    r.first_point = first;
    r.last_point = last;
    r.first_bytes = p[first].bytes;
    r.last_bytes = p[last].bytes;
    r.fit = fit_alpha_beta(p, first, last);
    regimes.push_back(r);
  }
  return regimes;
}

// A one-point regime has no slope of its own: it borrows the nearest regime's beta that has
// one, and alpha keeps the fit through its point (beta = t/n when that alpha would be < 0).
// Nearest such regime on each side (at equal distance, the upper one), found in one pass each.
void borrow_slopes(const std::vector<CurvePoint>& p, std::vector<Regime>& regimes) {
  const std::size_t num_regimes = regimes.size();
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  auto has_slope = [&](std::size_t k) { return regimes[k].last_point > regimes[k].first_point; };
  std::vector<std::size_t> below(num_regimes, kNone), above(num_regimes, kNone);
  for (std::size_t k = 1; k < num_regimes; ++k) below[k] = has_slope(k - 1) ? k - 1 : below[k - 1];
  for (std::size_t k = num_regimes - 1; k-- > 0;) above[k] = has_slope(k + 1) ? k + 1 : above[k + 1];
  for (std::size_t k = 0; k < num_regimes; ++k) {
    Regime& r = regimes[k];
    if (has_slope(k)) continue;
    std::size_t other = above[k];
    if (below[k] != kNone && (other == kNone || k - below[k] < other - k)) other = below[k];
    if (other == kNone) continue;
    const double beta = regimes[other].fit.seconds_per_byte;
    const CurvePoint& q = p[r.first_point];
    r.fit = q.time_s - beta * q.bytes >= 0.0 ? AlphaBeta{q.time_s - beta * q.bytes, beta}
                                             : AlphaBeta{0.0, q.time_s / q.bytes};
  }
}

void set_residuals(const std::vector<CurvePoint>& p, std::vector<Regime>& regimes) {
  for (Regime& r : regimes) {
    double sum_sq = 0.0;
    for (std::size_t i = r.first_point; i <= r.last_point; ++i) {
      const double e = r.fit.time_s(p[i].bytes) / p[i].time_s - 1.0;
      sum_sq += e * e;
      r.max_relative_residual = std::max(r.max_relative_residual, std::abs(e));
    }
    r.rms_relative_residual = std::sqrt(sum_sq / static_cast<double>(r.last_point - r.first_point + 1));
  }
}

// The boundary between regime k and k + 1: where it sits, what it is, the lower side's slope in
// the gap and, above a protocol switch, NCCL's Simple latency (else NaN).
struct Boundary {
  double bytes = 0.0;
  BoundaryKind kind = BoundaryKind::kStep;
  double lower_side_s_per_byte = 0.0;
  double upper_side_latency_s = std::numeric_limits<double>::quiet_NaN();
};

// Where each boundary sits inside its gap: a protocol switch at NCCL's n*, with NCCL's LL line
// below it; a step at a per-rank chunk threshold when one falls in the gap (the threshold's size
// belongs to the upper regime), else at the geometric middle, with the lower regime's slope.
std::vector<Boundary> place_boundaries(const std::vector<CurvePoint>& p, const std::vector<Regime>& regimes,
                                       const std::vector<std::optional<LlSimpleSwitch>>& switch_after,
                                       const CurveOptions& options) {
  std::vector<Boundary> out;
  for (std::size_t k = 0; k + 1 < regimes.size(); ++k) {
    const std::size_t i = regimes[k].last_point;
    if (const auto& s = switch_after[i]) {
      out.push_back({s->bytes, BoundaryKind::kProtocolSwitch, s->ll_s_per_byte, s->simple_latency_s});
      continue;
    }
    const double lo = p[i].bytes;
    const double hi = p[regimes[k + 1].first_point].bytes;
    double at = std::sqrt(lo * hi);
    if (options.ranks > 0) {
      for (double chunk : options.step_chunk_bytes_per_rank) {
        const double bytes = chunk * options.ranks;
        if (lo < bytes && bytes <= hi) {
          at = bytes;
          break;
        }
      }
    }
    out.push_back({at, BoundaryKind::kStep, regimes[k].fit.seconds_per_byte,
                   std::numeric_limits<double>::quiet_NaN()});
  }
  return out;
}

// Hermite node slopes in log-log space from the local alpha-beta line: the weighted harmonic
// mean of the two neighbouring linear secants (s/B), as PCHIP does for its derivative (Fritsch &
// Butland 1984), then d ln t / d ln n = beta_local * n / t. For points on one alpha + n*beta line
// this is the exact derivative. Secants are taken between steps only: NCCL's curve is continuous
// through a protocol switch (a kink, not a jump), and the harmonic mean is how PCHIP keeps the
// slope of a point beside a kink from overshooting.
std::vector<double> hermite_log_slopes(const std::vector<CurvePoint>& p,
                                       const std::vector<std::pair<std::size_t, std::size_t>>& step_runs) {
  std::vector<double> log_slopes(p.size(), 0.0);
  for (const auto& [first, last] : step_runs) {
    for (std::size_t i = first; i <= last; ++i) {
      const bool has_left = i > first, has_right = i < last;
      double beta = 0.0;
      if (has_left && has_right) {
        const double s0 = secant_s_per_byte(p, i - 1), s1 = secant_s_per_byte(p, i);
        if (s0 * s1 > 0.0) {
          const double h0 = p[i].bytes - p[i - 1].bytes, h1 = p[i + 1].bytes - p[i].bytes;
          const double w0 = 2 * h1 + h0, w1 = h1 + 2 * h0;
          beta = (w0 + w1) / (w0 / s0 + w1 / s1);
        }
      } else if (has_left) {
        beta = secant_s_per_byte(p, i - 1);
      } else if (has_right) {
        beta = secant_s_per_byte(p, i);
      }
      log_slopes[i] = beta * p[i].bytes / p[i].time_s;
    }
  }
  return log_slopes;
}

}  // namespace

double AlphaBeta::bandwidth_bytes_per_s() const {
  return seconds_per_byte > 0.0 ? 1.0 / seconds_per_byte : std::numeric_limits<double>::infinity();
}

MeasuredCurve MeasuredCurve::fit(std::vector<CurvePoint> points, const CurveOptions& options) {
  check_curve_input(points, options);
  MeasuredCurve c;
  c.options_ = options;
  c.points_ = mean_per_size(std::move(points));
  const auto& p = c.points_;

  // Boundaries between regimes: steps, then NCCL's protocol switch inside a run between steps.
  const std::vector<bool> step_after = find_steps(p, options);
  const auto step_runs = runs_between(step_after);
  const auto switch_after = find_protocol_switches(p, step_runs, options);
  std::vector<bool> boundary_after(p.size(), false);
  for (std::size_t i = 0; i < p.size(); ++i) boundary_after[i] = step_after[i] || switch_after[i].has_value();

  c.regimes_ = fit_regimes(p, boundary_after);
  borrow_slopes(p, c.regimes_);
  set_residuals(p, c.regimes_);
  for (const Boundary& b : place_boundaries(p, c.regimes_, switch_after, options)) {
    c.steps_bytes_.push_back(b.bytes);
    c.boundary_kinds_.push_back(b.kind);
    c.lower_side_s_per_byte_.push_back(b.lower_side_s_per_byte);
    c.upper_side_latency_s_.push_back(b.upper_side_latency_s);
  }
  c.log_slopes_ = hermite_log_slopes(p, step_runs);
  return c;
}

double MeasuredCurve::time_s(double bytes) const {
  if (!(std::isfinite(bytes) && bytes >= 0.0)) {
    throw Error(SourceLocation{}, "bytes", std::to_string(bytes) + ": must be finite and >= 0");
  }
  const auto& p = points_;
  if (bytes <= p.front().bytes) {
    const CurvePoint& q = p.front();
    const double beta = regimes_.front().fit.seconds_per_byte;
    return std::max(q.time_s - beta * (q.bytes - bytes), q.time_s * bytes / q.bytes);
  }
  if (bytes >= p.back().bytes) {
    const CurvePoint& q = p.back();
    return q.time_s + regimes_.back().fit.seconds_per_byte * (bytes - q.bytes);
  }
  const auto upper = std::upper_bound(p.begin(), p.end(), bytes,
                                      [](double b, const CurvePoint& q) { return b < q.bytes; });
  const auto j = static_cast<std::size_t>(upper - p.begin()) - 1;  // p[j].bytes <= bytes < p[j+1]
  if (p[j].bytes == bytes) return p[j].time_s;
  // The regime holding point j: the first whose last point is not below j.
  const auto r = static_cast<std::size_t>(
      std::lower_bound(regimes_.begin(), regimes_.end(), j,
                       [](const Regime& regime, std::size_t point) { return regime.last_point < point; }) -
      regimes_.begin());
  if (regimes_[r].last_point > j) {
    const double y = monotone_hermite(std::log(p[j].bytes), std::log(p[j].time_s), log_slopes_[j],
                                      std::log(p[j + 1].bytes), std::log(p[j + 1].time_s),
                                      log_slopes_[j + 1], std::log(bytes));
    return std::exp(y);
  }
  // In the gap of a boundary between regime r and r + 1: each side's line from its edge point,
  // kept between the two edge times; for a rise, the upper side never starts below where the
  // lower side stopped, so the curve stays monotone through the boundary.
  const CurvePoint& lo = p[j];
  const CurvePoint& hi = p[j + 1];
  auto lower_side = [&](double b) { return lo.time_s + lower_side_s_per_byte_[r] * (b - lo.bytes); };
  const double floor_s = std::min(lo.time_s, hi.time_s), ceil_s = std::max(lo.time_s, hi.time_s);
  const double step = steps_bytes_[r];
  if (bytes < step) return std::clamp(lower_side(bytes), floor_s, ceil_s);
  // Above a protocol switch: NCCL's Simple line, from its tuning.cc latency at 0 B to the first
  // measured Simple point (the latency that placed the switch). Above a step: the upper regime's
  // slope back from its edge point.
  const double latency = upper_side_latency_s_[r];
  double t = 0.0;
  if (std::isfinite(latency) && latency < hi.time_s) {
    t = latency + (hi.time_s - latency) * bytes / hi.bytes;
  } else {
    const double beta = regimes_[r + 1].fit.seconds_per_byte;
    t = std::max(hi.time_s - beta * (hi.bytes - bytes), hi.time_s * bytes / hi.bytes);
  }
  if (hi.time_s > lo.time_s) t = std::max(t, std::min(lower_side(step), ceil_s));
  return std::clamp(t, floor_s, ceil_s);
}

bool MeasuredCurve::in_measured_range(double bytes) const {
  return bytes >= points_.front().bytes && bytes <= points_.back().bytes;
}

std::vector<double> MeasuredCurve::step_bytes() const { return steps_bytes_; }

HoldoutReport holdout(std::vector<CurvePoint> points, int every_k, double max_bytes,
                      const CurveOptions& options, std::optional<std::size_t> first_held_out) {
  if (every_k < 2) {
    throw Error(SourceLocation{}, "every_k", std::to_string(every_k) + ": must be >= 2");
  }
  const auto k = static_cast<std::size_t>(every_k);
  const std::size_t first = first_held_out.value_or(k - 1);
  if (first >= k) {
    throw Error(SourceLocation{}, "first_held_out",
                std::to_string(first) + ": must be < every_k = " + std::to_string(every_k));
  }
  std::stable_sort(points.begin(), points.end(),
                   [](const CurvePoint& a, const CurvePoint& b) { return a.bytes < b.bytes; });
  std::vector<CurvePoint> train, held;
  for (std::size_t i = 0; i < points.size(); ++i) {
    (i % k == first ? held : train).push_back(points[i]);
  }
  if (train.empty()) throw Error(SourceLocation{}, "points", "nothing left to fit after holding out");
  const MeasuredCurve curve = MeasuredCurve::fit(train, options);
  HoldoutReport report;
  report.every_k = every_k;
  report.first_held_out = first;
  report.max_bytes = max_bytes;
  std::vector<double> errors;
  for (const CurvePoint& q : held) {
    if (q.bytes > max_bytes) continue;
    const double predicted = curve.time_s(q.bytes);
    const double e = std::abs(predicted / q.time_s - 1.0);
    report.rows.push_back({q.bytes, q.time_s, predicted, e});
    errors.push_back(e);
  }
  report.median_relative_error = median(errors);
  report.worst_relative_error =
      errors.empty() ? std::numeric_limits<double>::quiet_NaN() : *std::max_element(errors.begin(), errors.end());
  return report;
}

}  // namespace specsim
