#include "specsim/compute_fit.hpp"

#include <Eigen/Dense>
#include <unsupported/Eigen/NonLinearOptimization>
#include <unsupported/Eigen/NumericalDiff>
#include <boost/math/tools/minima.hpp>
#include <boost/math/tools/roots.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "specsim/compute_model.hpp"
#include "specsim/error.hpp"
#include "specsim/plausibility.hpp"
#include "specsim/priors.hpp"
#include "specsim/units.hpp"

namespace specsim {

namespace {

// Search brackets: efficiencies as fractions of the datasheet, launch costs in seconds.
constexpr double kMinEfficiency = 0.01;
constexpr double kMaxEfficiency = 1.0;
constexpr double kMinLaunchS = 0.1e-6;
constexpr double kMaxLaunchS = 1e-3;
constexpr int kBrentBits = 40;

ComputeModel make_model(const TransformerSpec& model, const GpuSpec& gpu, int tp, double context, int batch,
                        const ComputeSettings& s) {
  return ComputeModel(model, gpu, tp, batch, context, s, s.bandwidth_efficiency.value_or(kPriorBandwidthEfficiency.value),
                      s.routing_skew.value_or(1.0));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Columns of the linear stage; each is one term of T_gpu divided by its unknown.
enum Column { kWeights, kExperts, kKernels, kStep, kKvDecode, kKvVerify, kToken, kGraphLaunch, kColumns };

std::array<double, kColumns> features(const ComputeFitInput& in, const ComputeSettings& s) {
  const ComputeStep& st = in.step;
  const ForwardTerms t = make_model(in.model, in.gpu, st.tp, st.context_tokens, 1, s).terms(st.tokens);
  const double bw = in.gpu.memory_bandwidth_bytes_per_s;
  std::array<double, kColumns> f{};
  f[kWeights] = t.weight_bytes / bw;
  f[kExperts] = t.expert_bytes / bw;
  f[kKernels] = t.kernels;
  f[kStep] = st.tokens > 1 ? t.layers : 0.0;
  f[kKvDecode] = t.multi_token_request ? 0.0 : t.kv_bytes / bw;
  f[kKvVerify] = t.multi_token_request ? t.kv_bytes / bw : 0.0;
  f[kToken] = double(st.tokens) * t.layers;
  f[kGraphLaunch] = 1.0;
  return f;
}

// min || W (A x - t) ||, x >= 0, W = diag(1/t): relative errors. Active-set loop: the most negative
// coefficient is pinned to 0 and the rest refitted until none is negative.
// `b` is the part of t the unknowns must explain (t minus any fixed term).
Eigen::VectorXd nonnegative_relative_lsq(const Eigen::MatrixXd& a, const Eigen::VectorXd& t, const Eigen::VectorXd& b,
                                         std::vector<bool> active) {
  const Eigen::Index n = a.cols();
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  for (;;) {
    std::vector<Eigen::Index> cols;
    for (Eigen::Index j = 0; j < n; ++j) {
      if (active[j]) cols.push_back(j);
    }
    if (cols.empty()) return x;
    Eigen::MatrixXd w(a.rows(), Eigen::Index(cols.size()));
    for (Eigen::Index i = 0; i < a.rows(); ++i) {
      for (std::size_t k = 0; k < cols.size(); ++k) w(i, Eigen::Index(k)) = a(i, cols[k]) / t(i);
    }
    const Eigen::VectorXd rhs = b.cwiseQuotient(t);
    const Eigen::VectorXd sol = w.colPivHouseholderQr().solve(rhs);
    Eigen::Index worst = -1;
    for (std::size_t k = 0; k < cols.size(); ++k) {
      if (sol(Eigen::Index(k)) < 0 && (worst < 0 || sol(Eigen::Index(k)) < sol(worst))) worst = Eigen::Index(k);
    }
    if (worst < 0) {
      x.setZero();
      for (std::size_t k = 0; k < cols.size(); ++k) x(cols[k]) = sol(Eigen::Index(k));
      return x;
    }
    active[cols[worst]] = false;
  }
}

double predict(const ComputeFitInput& in, const ComputeSettings& s) {
  const ComputeStep& st = in.step;
  return predict_forward_s(in.model, in.gpu, st.tp, st.context_tokens, st.tokens, st.mode, s);
}

double squared_relative_error(const std::vector<const ComputeFitInput*>& rows, const ComputeSettings& s) {
  double sum = 0;
  for (const ComputeFitInput* r : rows) {
    const double e = predict(*r, s) / r->step.time_s - 1.0;
    sum += e * e;
  }
  return sum;
}

// True when no flop roofline binds in the row's forward under `s`: the prediction equals the one
// with unlimited FLOP/s.
bool memory_bound(const ComputeFitInput& r, const ComputeSettings& s) {
  ComputeSettings unlimited = s;
  unlimited.flop_efficiency = 1e9;
  return predict(r, s) == predict(r, unlimited);
}

// Stage 1 on `linear` (see the header comment); returns the settings with those terms replaced.
ComputeSettings fit_linear(const std::vector<const ComputeFitInput*>& linear, const ComputeFitOptions& options,
                           ComputeSettings s) {
  if (linear.size() < std::size_t(kColumns)) {
    throw Error("calibrate compute: " + std::to_string(linear.size()) + " memory-bound graph-mode rows with tokens <= " +
                std::to_string(kMemoryBoundMaxTokens) + " to fit on; need at least " + std::to_string(int(kColumns)));
  }
  Eigen::MatrixXd a(Eigen::Index(linear.size()), Eigen::Index(kColumns));
  Eigen::VectorXd t(Eigen::Index(linear.size()));
  std::vector<bool> active(kColumns, false);
  for (std::size_t i = 0; i < linear.size(); ++i) {
    const auto f = features(*linear[i], s);
    for (int j = 0; j < kColumns; ++j) {
      a(Eigen::Index(i), j) = f[j];
      if (f[j] != 0.0) active[j] = true;  // a term no row exercises stays at its prior
    }
    t(Eigen::Index(i)) = linear[i]->step.time_s;
  }
  Eigen::VectorXd b = t;
  if (options.bandwidth_efficiency) {
    active[kWeights] = false;
    b -= a.col(kWeights) / *options.bandwidth_efficiency;
  }
  // An efficiency is at most 1 (the datasheet's bandwidth): a column whose fit asks for more is
  // pinned at 1 (its time moved to the right-hand side) and the rest refitted, the most violated
  // first, as a negative term is pinned at 0. What the model's bytes cannot explain then goes to
  // the fixed terms, not into an efficiency above 100% (issue 31).
  std::vector<int> at_datasheet;
  Eigen::VectorXd x = nonnegative_relative_lsq(a, t, b, active);
  for (;;) {
    int worst = -1;
    for (int j : {kWeights, kExperts, kKvDecode, kKvVerify}) {
      if (active[j] && x(j) > 0 && x(j) < 1.0 && (worst < 0 || x(j) < x(worst))) worst = j;
    }
    if (worst < 0) break;
    active[worst] = false;
    at_datasheet.push_back(worst);
    b -= a.col(worst);
    x = nonnegative_relative_lsq(a, t, b, active);
  }
  for (int j : at_datasheet) {
    active[j] = true;
    x(j) = 1.0;
  }
  if (options.bandwidth_efficiency) {
    active[kWeights] = true;
    x(kWeights) = 1.0 / *options.bandwidth_efficiency;
  }
  auto efficiency = [&](int j) -> std::optional<double> {
    if (!active[j] || x(j) <= 0) return std::nullopt;
    return 1.0 / x(j);
  };
  if (auto e = efficiency(kWeights)) s.bandwidth_efficiency = *e;
  if (active[kExperts]) s.expert_bandwidth_efficiency = efficiency(kExperts);
  if (active[kKvDecode]) s.kv_efficiency_decode = efficiency(kKvDecode);
  if (active[kKvVerify]) s.kv_efficiency_verify = efficiency(kKvVerify);
  if (active[kKernels]) s.kernel_floor_s = x(kKernels);
  if (active[kStep]) s.multi_token_step_s = x(kStep);
  if (active[kToken]) s.per_token_layer_s = x(kToken);
  s.graph_launch_s = x(kGraphLaunch);
  return s;
}

constexpr double kMaxOverlapExponent = 64.0;  // p = 64: within 1.1% of the max

// The eager residuals for Eigen's Levenberg-Marquardt (numerical Jacobian). Unknowns, each mapped
// so that any real value is a valid setting: x0 = ln t_l, x1 = sqrt(t_step / 1 us) (t_step >= 0),
// x2 = ln(p - 1) (p > 1; p = 1, plain addition, is the limit).
struct EagerResiduals {
  using Scalar = double;
  using InputType = Eigen::VectorXd;
  using ValueType = Eigen::VectorXd;
  using JacobianType = Eigen::MatrixXd;
  enum { InputsAtCompileTime = Eigen::Dynamic, ValuesAtCompileTime = Eigen::Dynamic };

  const std::vector<const ComputeFitInput*>* rows;
  ComputeSettings base;

  [[nodiscard]] ComputeSettings settings(const Eigen::VectorXd& x) const {
    ComputeSettings s = base;
    s.eager_launch_per_kernel_s = std::exp(std::clamp(x(0), std::log(kMinLaunchS), std::log(kMaxLaunchS)));
    s.eager_multi_token_step_s = x(1) * x(1) * 1e-6;
    s.eager_overlap_exponent = 1.0 + std::min(std::exp(x(2)), kMaxOverlapExponent - 1.0);
    return s;
  }
  int operator()(const Eigen::VectorXd& x, Eigen::VectorXd& residuals) const {
    const ComputeSettings s = settings(x);
    for (std::size_t i = 0; i < rows->size(); ++i) {
      const ComputeFitInput& r = *(*rows)[i];
      residuals(Eigen::Index(i)) = predict(r, s) / r.step.time_s - 1.0;
    }
    return 0;
  }
  [[nodiscard]] int inputs() const { return 3; }
  [[nodiscard]] int values() const { return int(rows->size()); }
};

// Stage 3 (header comment). Starting point: the launch cost alone by Brent's minimum with the host
// step at 0 and p = 4, a middle value; Levenberg-Marquardt then moves all three together (the
// launch cost and the host step trade off against each other on q > 1 rows, which one-at-a-time
// minimisation follows only slowly).
void fit_eager(const std::vector<const ComputeFitInput*>& eager, ComputeSettings& s) {
  constexpr double kStartExponent = 4.0;
  constexpr double kStartHostStepUs = 10.0;  // away from 0, where d t_step / d x1 vanishes
  ComputeSettings start = s;
  start.eager_multi_token_step_s = 0.0;
  start.eager_overlap_exponent = kStartExponent;
  auto cost = [&](double log_launch) {
    ComputeSettings trial = start;
    trial.eager_launch_per_kernel_s = std::exp(log_launch);
    return squared_relative_error(eager, trial);
  };
  const double log_launch =
      boost::math::tools::brent_find_minima(cost, std::log(kMinLaunchS), std::log(kMaxLaunchS), kBrentBits).first;
  EagerResiduals f{&eager, s};
  Eigen::VectorXd x(3);
  x << log_launch, std::sqrt(kStartHostStepUs), std::log(kStartExponent - 1.0);
  if (eager.size() >= 3) {
    Eigen::NumericalDiff<EagerResiduals> diff(f);
    Eigen::LevenbergMarquardt<Eigen::NumericalDiff<EagerResiduals>> lm(diff);
    lm.parameters.xtol = 1e-12;
    lm.parameters.ftol = 1e-14;
    lm.minimize(x);
  }
  s = f.settings(x);
  // The step's parametrisation reaches 0 only in the limit; below a nanosecond per layer it is 0.
  constexpr double kNegligibleStepS = 1e-9;
  if (s.eager_multi_token_step_s < kNegligibleStepS) s.eager_multi_token_step_s = 0.0;
}

// Stage 1 and 2 alternate: which rows are memory-bound depends on eta_f, eta_f on stage 1's terms.
// Three rounds settle it on the shipped grid (the set of memory-bound rows stops changing).
constexpr int kAlternations = 3;

ComputeSettings fit_settings(const std::vector<const ComputeFitInput*>& rows, const ComputeFitOptions& options,
                             const ComputeSettings& prior) {
  ComputeSettings s = prior;
  s.kernels_per_dense_layer = options.kernels_per_dense_layer;
  s.kernels_per_moe_layer = options.kernels_per_moe_layer;

  std::vector<const ComputeFitInput*> graph, eager;
  for (const ComputeFitInput* r : rows) (r->step.mode == LaunchMode::kEager ? eager : graph).push_back(r);
  for (int round = 0; round < kAlternations; ++round) {
    // Stage 1: memory-bound graph rows (in round 0 every row up to kMemoryBoundMaxTokens).
    std::vector<const ComputeFitInput*> linear, flop_bound;
    for (const ComputeFitInput* r : graph) {
      const bool bytes_only = r->step.tokens <= kMemoryBoundMaxTokens && (round == 0 || memory_bound(*r, s));
      (bytes_only ? linear : flop_bound).push_back(r);
    }
    s = fit_linear(linear, options, s);
    // Stage 2: the flop efficiency, from the rows where a flop roofline binds.
    if (!flop_bound.empty()) {
      auto cost = [&](double eta_f) {
        ComputeSettings trial = s;
        trial.flop_efficiency = eta_f;
        return squared_relative_error(flop_bound, trial);
      };
      s.flop_efficiency = boost::math::tools::brent_find_minima(cost, 0.05, kMaxEfficiency, kBrentBits).first;
    }
  }
  // Stage 3: the eager host terms, with the GPU terms of stages 1-2 held: launch cost per kernel,
  // the host step once q > 1, and the overlap exponent. Each is a one-dimensional Brent minimum
  // with the others held, cycled until the cost stops moving (coordinate descent; the three act on
  // different rows: the launch cost on all, the step on q > 1, the exponent where host ~ GPU).
  if (!eager.empty()) fit_eager(eager, s);
  return s;
}

std::vector<ComputeErrorSummary> summarize(const std::vector<ComputeFitRow>& rows, bool held_out_only) {
  std::vector<ComputeErrorSummary> out;
  std::map<std::pair<std::string, LaunchMode>, std::vector<double>> errors;
  for (const ComputeFitRow& r : rows) {
    if (held_out_only && !r.held_out) continue;
    if (r.step.tokens > kMemoryBoundMaxTokens) continue;
    const auto key = std::make_pair(r.step.model, r.step.mode);
    if (!errors.count(key)) out.push_back({r.step.model, r.step.mode, 0, 0, 0});
    errors[key].push_back(std::abs(r.relative_error));
  }
  for (ComputeErrorSummary& s : out) {
    const auto& e = errors[{s.model, s.mode}];
    s.rows = int(e.size());
    s.median_abs_error = median(e);
    s.worst_abs_error = *std::max_element(e.begin(), e.end());
  }
  return out;
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string us(double s) { return fmt("%.4g", s * 1e6) + "us"; }

}  // namespace

std::vector<bool> checkerboard_holdout(const std::vector<ComputeStep>& steps) {
  std::map<std::pair<std::string, LaunchMode>, std::pair<std::set<int>, std::set<double>>> grid;
  for (const ComputeStep& s : steps) {
    auto& g = grid[{s.model, s.mode}];
    g.first.insert(s.tokens);
    g.second.insert(s.context_tokens);
  }
  std::vector<bool> out;
  for (const ComputeStep& s : steps) {
    const auto& g = grid[{s.model, s.mode}];
    const auto i = std::distance(g.first.begin(), g.first.find(s.tokens));
    const auto j = std::distance(g.second.begin(), g.second.find(s.context_tokens));
    out.push_back((i + j) % 2 == 1);
  }
  return out;
}

ComputeFitResult fit_compute(const std::vector<ComputeFitInput>& rows, const ComputeFitOptions& options,
                             const ComputeSettings& prior) {
  ComputeFitResult result;
  std::vector<ComputeStep> steps;
  std::vector<const ComputeFitInput*> all, train;
  for (const auto& r : rows) steps.push_back(r.step);
  const std::vector<bool> held = checkerboard_holdout(steps);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    all.push_back(&rows[i]);
    if (!held[i]) train.push_back(&rows[i]);
  }
  result.split =
      "per model and mode, tokens and contexts indexed in ascending order; rows with (token index + context index) "
      "odd are held out (a checkerboard: every token count and every context is both fitted and tested)";
  result.settings = fit_settings(all, options, prior);
  result.holdout_settings = fit_settings(train, options, prior);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double p = predict(rows[i], result.settings);
    result.rows.push_back({rows[i].step, p, p / rows[i].step.time_s - 1.0, false});
    const double h = predict(rows[i], result.holdout_settings);
    result.holdout_rows.push_back({rows[i].step, h, h / rows[i].step.time_s - 1.0, bool(held[i])});
  }
  result.residuals = summarize(result.rows, false);
  result.holdout = summarize(result.holdout_rows, true);
  return result;
}

double predict_forward_s(const TransformerSpec& model, const GpuSpec& gpu, int tp, double context_tokens,
                         double tokens, LaunchMode mode, const ComputeSettings& settings, int batch) {
  return make_model(model, gpu, tp, context_tokens, batch, settings).local_time_s(tokens, mode);
}

double solve_bandwidth_efficiency(const TransformerSpec& model, const GpuSpec& gpu, int tp, double context_tokens,
                                  LaunchMode mode, const ComputeSettings& settings, double decode_step_s) {
  auto gap = [&](double eta) {
    ComputeSettings s = settings;
    s.bandwidth_efficiency = eta;
    return predict_forward_s(model, gpu, tp, context_tokens, 1.0, mode, s) - decode_step_s;
  };
  // Never above the datasheet: a step faster than the forward there means the model reads more than
  // the kernels do (a value a user sets may go higher; kScenarioBounds allows up to 2).
  const double at_max = gap(kMaxEfficiency);
  const double at_min = gap(kMinEfficiency);
  if (at_max > 0) {
    throw Error("--decode-step " + units::format_duration(decode_step_s) + " is faster than the model allows at 100% " +
                "bandwidth efficiency (" + units::format_duration(at_max + decode_step_s) +
                "): lower the per-kernel costs or check the model, GPU and TP");
  }
  if (at_min < 0) {
    throw Error("--decode-step " + units::format_duration(decode_step_s) + " is slower than the model gives at 1% " +
                "bandwidth efficiency (" + units::format_duration(at_min + decode_step_s) +
                "): the step likely includes communication or host time; pass the compute part only");
  }
  // T_fwd falls monotonically in eta_bw, so [0.01, 1] brackets one root.
  boost::math::tools::eps_tolerance<double> tol(kBrentBits);
  std::uintmax_t iterations = 100;
  const auto [lo, hi] = boost::math::tools::toms748_solve(gap, kMinEfficiency, kMaxEfficiency, at_min, at_max, tol,
                                                          iterations);
  return 0.5 * (lo + hi);
}

namespace {

// The root of `f` in [lo, hi] by TOMS 748, where f(lo) and f(hi) bracket one (either sign order);
// nullopt where they do not.
template <class F>
std::optional<double> bracketed_root(F f, double lo, double hi) {
  const double at_lo = f(lo);
  const double at_hi = f(hi);
  if (at_lo == 0) return lo;
  if (at_hi == 0) return hi;
  if ((at_lo > 0) == (at_hi > 0)) return std::nullopt;
  boost::math::tools::eps_tolerance<double> tol(kBrentBits);
  std::uintmax_t iterations = 100;
  const auto [a, c] = boost::math::tools::toms748_solve(f, lo, hi, at_lo, at_hi, tol, iterations);
  return 0.5 * (a + c);
}

// The value of one term, set by `set`, in [lo, hi] at which the forward over `tokens` takes
// `step_s` (the forward is monotone in each term solved here).
template <class Set>
std::optional<double> solve_term(const ForwardFitBasis& b, ComputeSettings settings, double tokens, double step_s,
                                 Set set, double lo, double hi) {
  return bracketed_root(
      [&](double x) {
        set(settings, x);
        return predict_forward_s(*b.model, *b.gpu, b.tp, b.context_tokens, tokens, b.mode, settings) - step_s;
      },
      lo, hi);
}

void set_multi_token_step(ComputeSettings& s, double x) { s.multi_token_step_s = x; }
void set_kernel_floor(ComputeSettings& s, double x) { s.kernel_floor_s = x; }

constexpr double kMaxKernelFloorS = 1e-3;

// The decode step read as weight streaming within the plausible range of bandwidth efficiency
// (kMinPlausibleBandwidthEfficiency .. kMaxPlausibleBandwidthEfficiency, scenario.hpp); what the
// range cannot explain is the per-kernel fixed cost (kernel_floor), raised above its value for a
// slow step, lowered toward 0 for a fast one. Throws when neither explains the step.
void fit_decode_step(const ForwardFitBasis& b, ComputeSettings& settings, double decode_step_s, ForwardFit& fit) {
  const ComputeSettings given = settings;
  const auto at = [&](double eta) {
    ComputeSettings s = settings;
    s.bandwidth_efficiency = eta;
    return predict_forward_s(*b.model, *b.gpu, b.tp, b.context_tokens, 1.0, b.mode, s);
  };
  const double floor_eta = kMinPlausibleBandwidthEfficiency, top_eta = kMaxPlausibleBandwidthEfficiency;
  const bool slow = at(floor_eta) < decode_step_s, fast = at(top_eta) > decode_step_s;
  if (!slow && !fast) {
    settings.bandwidth_efficiency =
        solve_bandwidth_efficiency(*b.model, *b.gpu, b.tp, b.context_tokens, b.mode, settings, decode_step_s);
    fit.solved = "eta_bw from the decode step";
    return;
  }
  // An eager step faster than the model allows even at the datasheet's bandwidth, with the host's
  // launches at their prior: those launches, a prior, are dearer in the model than they were. Such a
  // step is the host's and says nothing of the GPU's rate, so the GPU side keeps its priors wherever
  // the launch cost alone, down to its prior's p10, can meet the step (docs/references/specdec.md#eager-launch);
  // only where it cannot does the GPU side go to its fastest (the datasheet, then no per-kernel cost).
  const bool host_bound = fast && b.mode != LaunchMode::kGraph && !settings.eager_launch_per_kernel_s;
  const PriorValue& launch = kPriorEagerLaunchPerKernelS;
  const auto set_launch = [](ComputeSettings& c, double x) { c.eager_launch_per_kernel_s = x; };
  const auto take = [&](const ComputeSettings& gpu_side, double l, std::string solved) {
    settings = gpu_side;
    settings.eager_launch_per_kernel_s = l;
    fit.solved = std::move(solved);
    fit.notes.push_back("the eager decode step is faster than the model's host launches allow at the prior " +
                        units::format_duration(launch.value) + " a kernel: the launch cost moved to " +
                        units::format_duration(l) + " (its prior's p10 is " + units::format_duration(launch.p10) + ")");
  };
  if (host_bound) {
    ComputeSettings at_priors = given;
    at_priors.bandwidth_efficiency = given.bandwidth_efficiency.value_or(kPriorBandwidthEfficiency.value);
    if (const auto l = solve_term(b, at_priors, 1.0, decode_step_s, set_launch, launch.p10, launch.value)) {
      take(at_priors, *l, "the eager launch cost from the decode step, the GPU side at its priors (a host-bound step)");
      return;
    }
  }
  const double from = settings.kernel_floor_s;
  settings.bandwidth_efficiency = slow ? floor_eta : top_eta;
  const auto floor = solve_term(b, settings, 1.0, decode_step_s, set_kernel_floor, slow ? from : 0.0,
                                slow ? kMaxKernelFloorS : from);
  if (!floor && host_bound) {
    ComputeSettings at_zero = settings;
    at_zero.kernel_floor_s = 0.0;
    if (const auto l = solve_term(b, at_zero, 1.0, decode_step_s, set_launch, launch.p10, launch.value)) {
      take(at_zero, *l, "eta_bw at the datasheet (100%), no per-kernel fixed cost and the eager launch cost from the "
                        "decode step");
      return;
    }
  }
  if (!floor) {
    throw Error("--decode-step " + units::format_duration(decode_step_s) + " is " +
                (slow ? "slower" : "faster") + " than the model allows at " +
                units::format_fixed(100.0 * (slow ? floor_eta : top_eta), 0) +
                "% bandwidth efficiency (the plausible range is 74-100%) with any per-kernel fixed cost " +
                (slow ? "up to 1 ms" : "down to 0") + ": " +
                (slow ? "the step likely includes communication or host time; pass the compute part only"
                      : "the model reads more bytes than this engine does, or its per-kernel costs are too high; "
                        "check the model, GPU and TP"));
  }
  settings.kernel_floor_s = *floor;
  fit.solved = std::string("eta_bw at ") + (slow ? "the plausible floor (74%)" : "the datasheet (100%)") +
               " and the per-kernel fixed cost from the decode step";
  fit.notes.push_back("the decode step is " + std::string(slow ? "slower" : "faster") +
                      " than weight streaming within 74-100% of datasheet bandwidth explains: the per-kernel fixed "
                      "cost moved from " + units::format_duration(from) + " to " + units::format_duration(*floor));
}

constexpr double kMaxMultiTokenStepS = 1e-2;  // per layer

}  // namespace

ForwardFit fit_forward_steps(const ForwardFitBasis& b, ComputeSettings settings, double decode_step_s,
                             std::optional<std::pair<double, double>> second) {
  ForwardFit fit;
  const auto bandwidth_for = [&](const ComputeSettings& s) {
    return solve_bandwidth_efficiency(*b.model, *b.gpu, b.tp, b.context_tokens, b.mode, s, decode_step_s);
  };
  // With a second width, an MoE target whose experts' rate is open solves eta_bw with eta_e below.
  const bool expert_pair = second && b.model->moe_layers() > 0 && !settings.expert_bandwidth_efficiency;
  if (!expert_pair) fit_decode_step(b, settings, decode_step_s, fit);
  if (!second) {
    fit.settings = settings;
    return fit;
  }
  const double wide_tokens = second->first;
  const double wide_s = second->second;
  if (b.model->moe_layers() > 0 && !settings.expert_bandwidth_efficiency) {
    // An MoE target whose experts' streaming rate is not known: a decode step read as bandwidth
    // alone prices the many experts of a wide forward at the rate of the step's few. The second
    // width sets the experts' rate eta_e; for each eta_e, eta_bw is solved again from the decode
    // step. More eta_e, less time at the wide forward (its experts outnumber the step's).
    const auto wide_gap = [&](double eta_e) {
      ComputeSettings s = settings;
      s.expert_bandwidth_efficiency = eta_e;
      try {
        s.bandwidth_efficiency = bandwidth_for(s);
      } catch (const Error&) {
        return std::optional<double>{};  // the experts alone, at this rate, outlast the decode step
      }
      return std::optional<double>{
          predict_forward_s(*b.model, *b.gpu, b.tp, b.context_tokens, wide_tokens, b.mode, s) - wide_s};
    };
    // Where the gap is undefined it counts as too slow (+1 s): the gap falls with eta_e.
    const auto gap_or_slow = [&](double eta_e) { return wide_gap(eta_e).value_or(1.0); };
    // The experts never stream faster than the datasheet: above it the model reads more expert bytes
    // than the kernel does (routing more concentrated than compute.routing_skew says).
    if (const auto eta_e = bracketed_root(gap_or_slow, kMinEfficiency, kMaxEfficiency)) {
      settings.expert_bandwidth_efficiency = *eta_e;
      settings.bandwidth_efficiency = bandwidth_for(settings);
      fit.solved = "eta_bw and the experts' eta_e from the two widths";
      // Out of the engine kernels' range the two efficiencies describe the measurement, not a
      // deployment: say so, beside the values.
      std::string outside;
      for (const auto& [name, value] : {std::pair<const char*, double>{"eta_bw", *settings.bandwidth_efficiency},
                                        std::pair<const char*, double>{"eta_e", *eta_e}}) {
        if (value >= kMinPlausibleBandwidthEfficiency && value <= kMaxPlausibleBandwidthEfficiency) continue;
        outside += (outside.empty() ? "" : " and ") + std::string(name) + " " + units::format_fixed(100.0 * value, 1) + "%";
      }
      if (!outside.empty()) {
        fit.notes.push_back(outside + " lie outside the 74-100% of datasheet bandwidth that engine kernels reach "
                            "(docs/references/measured-compute.md#gemm-efficiency): the measured forward's kernels "
                            "stream slower than an engine's (an unfused or eager PyTorch forward), or its steps hold "
                            "host time; `predict`, calibrating from an engine's plain step, keeps the range");
      }
    } else {
      // The decode step alone, as without a second width.
      fit_decode_step(b, settings, decode_step_s, fit);
      fit.notes.push_back("no expert efficiency in [1%, 100%] of datasheet bandwidth meets the second width: it is left "
                          "out (faster than the datasheet allows: fewer experts read than compute.routing_skew says)");
    }
    fit.settings = settings;
    return fit;
  }
  // Dense, or an MoE whose experts' rate is known (a profile): the jump from one token to several.
  if (const auto step = solve_term(b, settings, wide_tokens, wide_s, set_multi_token_step, 0.0, kMaxMultiTokenStepS)) {
    settings.multi_token_step_s = *step;
    fit.solved += ", the multi-token step from the second width";
  } else {
    fit.notes.push_back("no multi-token step in [0, 10 ms] per layer meets the second width: it is left out");
  }
  fit.settings = settings;
  return fit;
}

std::string render_compute_profile_yaml(const ComputeProfile& profile, const ComputeFitResult& fit,
                                        const ComputeProfileProvenance& prov) {
  const ComputeSettings& s = fit.settings;
  std::ostringstream y;
  auto quoted = [](const std::string& text) {
    std::string q = "\"";
    for (char c : text) {
      if (c == '"' || c == '\\') q += '\\';
      q += c;
    }
    return q + "\"";
  };
  auto pct = [](double f) { return fmt("%.2f", 100.0 * f) + "%"; };
  y << "schema_version: 1\n"
    << "kind: compute_profile\n"
    << "name: " << profile.name << "\n"
    << "description: " << quoted(profile.description) << "\n"
    << "source: " << quoted(profile.source) << "\n"
    << "gpu: " << profile.gpu << "\n"
    << "# Fitted values; the same keys as a scenario's compute block, whose own keys win.\n"
    << "compute:\n";
  auto eff = [&](const char* key, const std::optional<double>& v) {
    if (v) y << "  " << key << ": " << fmt("%.4f", *v) << "\n";
  };
  eff("bandwidth_efficiency", s.bandwidth_efficiency);
  eff("expert_bandwidth_efficiency", s.expert_bandwidth_efficiency);
  eff("kv_efficiency_decode", s.kv_efficiency_decode);
  eff("kv_efficiency_verify", s.kv_efficiency_verify);
  y << "  flop_efficiency: " << fmt("%.4f", s.flop_efficiency) << "\n"
    << "  kernel_floor: " << us(s.kernel_floor_s) << "\n"
    << "  multi_token_step: " << us(s.multi_token_step_s) << "\n"
    << "  per_token_layer: " << us(s.per_token_layer_s) << "\n"
    << "  graph_launch: " << us(s.graph_launch_s) << "\n";
  if (s.eager_launch_per_kernel_s) y << "  eager_launch_per_kernel: " << us(*s.eager_launch_per_kernel_s) << "\n";
  y << "  eager_multi_token_step: " << us(s.eager_multi_token_step_s) << "\n";
  if (s.eager_overlap_exponent) y << "  eager_overlap_exponent: " << fmt("%.3f", *s.eager_overlap_exponent) << "\n";
  if (s.kernels_per_dense_layer) y << "  kernels_per_dense_layer: " << *s.kernels_per_dense_layer << "\n";
  if (s.kernels_per_moe_layer) y << "  kernels_per_moe_layer: " << *s.kernels_per_moe_layer << "\n";
  y << "provenance:\n"
    << "  tool: " << quoted(prov.tool) << "\n"
    << "  command: " << quoted(prov.command) << "\n"
    << "  date_utc: " << quoted(prov.date_utc) << "\n"
    << "  file: " << quoted(prov.source_path) << "\n"
    << "  sha256: " << (prov.source_sha256.empty() ? "null" : prov.source_sha256) << "\n"
    << "  rows_used: " << prov.rows_used << "\n"
    << "  skipped: [" ;
  for (std::size_t i = 0; i < prov.skipped.size(); ++i) y << (i ? ", " : "") << quoted(prov.skipped[i]);
  y << "]\n  model_files:\n";
  for (const auto& m : prov.model_files) y << "    - " << quoted(m) << "\n";
  auto summaries = [&](const char* key, const std::vector<ComputeErrorSummary>& list) {
    y << "  " << key << ":  # |predicted / measured - 1| over rows with tokens <= " << kMemoryBoundMaxTokens << "\n";
    for (const auto& e : list) {
      y << "    - {model: " << e.model << ", mode: " << to_string(e.mode) << ", rows: " << e.rows
        << ", median: " << quoted(pct(e.median_abs_error)) << ", worst: " << quoted(pct(e.worst_abs_error)) << "}\n";
    }
  };
  summaries("fit_residuals", fit.residuals);
  y << "  holdout_split: " << quoted(fit.split) << "\n";
  summaries("holdout_errors", fit.holdout);
  return y.str();
}

}  // namespace specsim
