#include "specsim/prior_band.hpp"

#include <boost/math/distributions/normal.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>

#include "specsim/monte_carlo.hpp"

namespace specsim {

namespace {

constexpr double kFloorS = 1e-9;  // a p10 of 0 s has no logarithm
// The weight of a measured plain step's GPU reading against its host reading (cycle.hpp,
// Calibration::plain_step_readings).
constexpr double kGpuReadingWeight = 0.5;

// Boost's normal in double throughout (its default promotes to long double, ~4x slower here).
using Normal = boost::math::normal_distribution<double, boost::math::policies::policy<boost::math::policies::promote_double<false>>>;

double normal_quantile(double u) { return boost::math::quantile(Normal(), u); }

struct LogNormal {
  double mu = 0.0;
  double sigma = 0.0;
};

LogNormal through(double p10, double p90) {
  const double z90 = normal_quantile(0.9);
  const double lo = std::log(std::max(p10, kFloorS));
  const double hi = std::log(std::max(p90, kFloorS));
  return {0.5 * (lo + hi), (hi - lo) / (2.0 * z90)};
}

LogNormal through(const EnginePrior::Term& t) { return through(t.p10_s, t.p90_s); }
LogNormal through(const PriorValue& v) { return through(v.p10, v.p90); }

// A uniform in (0, 1) from the generator's 53 high bits, never 0 or 1.
double uniform(std::mt19937_64& g) { return ((g() >> 11) + 0.5) * 0x1.0p-53; }

// The log-normal's quantile at u in (0, 1).
double at(const LogNormal& d, double u) {
  if (d.sigma <= 0.0) return std::exp(d.mu);
  return std::exp(d.mu + d.sigma * normal_quantile(u));
}

double draw(std::mt19937_64& g, const LogNormal& d) { return at(d, uniform(g)); }

// The compute priors' dimensions (ComputeDraw's fields, and which reading of a plain step).
constexpr int kComputeDims = 9;
using ComputeUniforms = std::array<double, kComputeDims>;

// n points of a Latin hypercube in (0, 1)^kComputeDims: in every dimension each of the n strata
// [k/n, (k+1)/n) holds exactly one point, the strata paired at random across dimensions
// (Fisher-Yates on the generator's uniforms, so the points are the same on every library).
std::vector<ComputeUniforms> latin_hypercube(int n, std::mt19937_64& g) {
  const auto count = static_cast<std::size_t>(n);
  std::vector<ComputeUniforms> points(count);
  std::vector<int> strata(count);
  for (int dim = 0; dim < kComputeDims; ++dim) {
    for (int k = 0; k < n; ++k) strata[std::size_t(k)] = k;
    for (int k = n - 1; k > 0; --k) {
      const int j = std::min(k, int(uniform(g) * (k + 1)));
      std::swap(strata[std::size_t(k)], strata[std::size_t(j)]);
    }
    for (int k = 0; k < n; ++k) points[std::size_t(k)][std::size_t(dim)] = (strata[std::size_t(k)] + uniform(g)) / n;
  }
  return points;
}

// The priors' draws are kept sorted: the model error pairs each with one normal draw in that order,
// so the order is part of the band.
void set_percentiles(PredictionBand& band, std::vector<double> rates) {
  std::sort(rates.begin(), rates.end());
  band.p10_tokens_per_s = nearest_rank(rates, 0.1);
  band.p50_tokens_per_s = nearest_rank(rates, 0.5);
  band.p90_tokens_per_s = nearest_rank(rates, 0.9);
  band.draws = std::move(rates);
}

// The same three nearest ranks without sorting all draws (nothing pairs with the final ones):
// each nth_element leaves the ranks below it on its left, so the next runs on what is left.
void select_percentiles(PredictionBand& band, std::vector<double> rates) {
  const std::size_t n = rates.size();
  const auto rank = [n](double q) {
    const auto r = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
    return std::min(n - 1, r == 0 ? 0 : r - 1);
  };
  const auto at = [&](std::size_t from, double q) {
    const auto k = rates.begin() + std::ptrdiff_t(rank(q));
    std::nth_element(rates.begin() + std::ptrdiff_t(from), k, rates.end());
    return *k;
  };
  band.p10_tokens_per_s = at(0, 0.1);
  band.p50_tokens_per_s = at(rank(0.1), 0.5);
  band.p90_tokens_per_s = at(rank(0.5), 0.9);
  band.draws = std::move(rates);
}

bool is_prior(const CalibratedValue& v) { return v.origin.rfind("prior", 0) == 0; }

// The compute priors of `s` that no file, patch, profile or measurement replaced.
struct ComputePriors {
  bool bandwidth = false;
  bool kv_verify = false;
  bool multi_token_step = false;
  // Only where a forward launches kernels from the host (eager or piecewise).
  bool eager_launch = false;
  bool eager_overlap = false;
  // Where no table was measured: NCCL's model (or an engine kernel's) prices every collective.
  bool allreduce = false;
  bool piecewise_gpu = false;  // where a forward runs piecewise
  bool all_to_all = false;     // where an all-to-all runs with no table and no set latency
  [[nodiscard]] bool any() const {
    return bandwidth || kv_verify || multi_token_step || eager_launch || eager_overlap || allreduce || piecewise_gpu ||
           all_to_all;
  }
};

struct ComputeDraw {
  double eta = 0.0;
  double kv_ratio = 0.0;
  double multi_token_step_s = 0.0;
  double eager_launch_s = 0.0;
  double eager_overlap_exponent = 0.0;
  double allreduce_ratio = 1.0;
  double piecewise_gpu_s = 0.0;
  double all_to_all_latency_s = 0.0;
};

ComputePriors compute_priors(const Scenario& s, const Calibration& cal) {
  ComputePriors c;
  const bool no_profile = s.compute.profile.empty();
  // Only the built-in prior: a compute profile's value was fitted to measured steps.
  c.bandwidth = no_profile && is_prior(cal.bandwidth_efficiency);
  c.kv_verify = no_profile && !s.compute.kv_efficiency_verify && !s.explicit_keys.count("compute.kv_verify_ratio");
  c.multi_token_step = no_profile && !s.explicit_keys.count("compute.multi_token_step");
  const bool eager = launches_eagerly(s);
  c.eager_launch = eager && is_prior(cal.eager_launch_per_kernel_s);
  c.eager_overlap = eager && is_prior(cal.eager_overlap_exponent);
  c.allreduce = runs_collectives(s) && !cal.comm_calibrated;
  c.piecewise_gpu = runs_piecewise(s) && is_prior(cal.piecewise_gpu_per_attention_s);
  c.all_to_all = !cal.all_to_all_source.empty() && !cal.all_to_all_calibrated && !s.comm.all_to_all_latency_s;
  return c;
}

// `s` with the drawn compute priors, in the scenario and in the one calibration runs on.
Scenario with_compute(const Scenario& s, const ComputePriors& c, const ComputeDraw& d) {
  const auto apply = [&](Scenario& x) {
    if (c.bandwidth) x.compute.bandwidth_efficiency = d.eta;
    if (c.kv_verify) x.compute.kv_verify_ratio = d.kv_ratio;
    if (c.multi_token_step) x.compute.multi_token_step_s = d.multi_token_step_s;
    if (c.eager_launch) x.compute.eager_launch_per_kernel_s = d.eager_launch_s;
    if (c.eager_overlap) x.compute.eager_overlap_exponent = d.eager_overlap_exponent;
    if (c.allreduce) x.comm.scale *= d.allreduce_ratio;
    if (c.piecewise_gpu) x.compute.piecewise_gpu_per_attention_s = d.piecewise_gpu_s;
    if (c.all_to_all) x.comm.all_to_all_latency_s = d.all_to_all_latency_s;
  };
  Scenario out = s;
  apply(out);
  if (s.as_measured) {
    auto measured = std::make_shared<Scenario>(*s.as_measured);
    apply(*measured);
    out.as_measured = std::move(measured);
  }
  return out;
}

// One draw of every open compute prior. A plain step with two readings (host or GPU time,
// Calibration::plain_step_readings): half the draws take the GPU reading's efficiency; no public
// measurement favours either on a given engine, so they weigh the same.
ComputeDraw draw_compute(const ComputeUniforms& u, const ComputePriors& compute, const Calibration& cal) {
  ComputeDraw d;
  if (compute.bandwidth) d.eta = at(through(kPriorBandwidthEfficiency), u[0]);
  if (compute.bandwidth && !cal.plain_step_readings.empty() && u[1] < kGpuReadingWeight) {
    d.eta = cal.plain_step_readings.back().bandwidth_efficiency;
  }
  // The ratio's log-normal passes 1 in ~5% of draws; verify reading its KV faster than decode
  // does is not what the prior describes (split-KV kernels reach ~1), so it is cut there.
  if (compute.kv_verify) d.kv_ratio = std::min(1.0, at(through(kPriorKvVerifyRatio), u[2]));
  if (compute.multi_token_step) d.multi_token_step_s = at(through(kPriorMultiTokenStepS), u[3]);
  if (compute.eager_launch) d.eager_launch_s = at(through(kPriorEagerLaunchPerKernelS), u[4]);
  // p < 1 would price overlap as worse than none: the log-normal's tail is cut at 1 (~0.5% of draws).
  if (compute.eager_overlap) d.eager_overlap_exponent = std::max(1.0, at(through(kPriorEagerOverlapExponent), u[5]));
  if (compute.allreduce) d.allreduce_ratio = at(through(kPriorAllReduceRatio), u[6]);
  if (compute.piecewise_gpu) d.piecewise_gpu_s = at(through(kPriorPiecewiseGpuPerAttentionS), u[7]);
  if (compute.all_to_all) d.all_to_all_latency_s = at(through(kPriorAllToAllLatencyS), u[8]);
  return d;
}

// What one compute draw changes: the cycle without the engine terms, relative to the model's,
// and the plain step's host time the drawn model leaves.
struct ComputeShift {
  double base_delta_s = 0.0;
  double step_host_s = 0.0;
};

std::vector<ComputeShift> compute_shifts(const CycleModel& model, const Prediction& p, const ComputePriors& compute,
                                         int strata, std::mt19937_64& g) {
  const Scenario& s = model.scenario();
  const Calibration& cal = model.calibration();
  if (!compute.any()) return {ComputeShift{0.0, model.step_host_s()}};
  const double own_s = model.cycle_s(p.tokens_per_cycle) - cal.unhidden_host_s;
  std::vector<ComputeShift> shifts;
  shifts.reserve(std::size_t(strata));
  for (const ComputeUniforms& u : latin_hypercube(strata, g)) {
    const CycleModel drawn(with_compute(s, compute, draw_compute(u, compute, cal)));
    shifts.push_back({drawn.cycle_s(p.tokens_per_cycle) - drawn.calibration().unhidden_host_s - own_s,
                      drawn.step_host_s()});
  }
  return shifts;
}

}  // namespace

PredictionBand prior_band(const CycleModel& model, const Prediction& p, int samples, std::uint64_t seed) {
  const Scenario& s = model.scenario();
  const Calibration& cal = model.calibration();
  PredictionBand band;
  const bool cycle_prior = s.engine_prior && is_prior(cal.spec_extra_per_cycle_s);
  const bool step_prior = s.engine_prior && is_prior(cal.draft_step_overhead_s);
  // Drawn only where it is charged (batch > 1, a synchronous speculative run): a batch-1 band is the
  // same draws as without the term.
  const double others = std::max(0.0, s.batch - 1.0);
  const bool request_prior =
      s.engine_prior && s.engine_prior->spec_per_request && is_prior(cal.spec_per_request_s) && others > 0.0;
  // A synchronous cycle beside an async plain step pays the engine's sync host prior.
  const bool sync_prior = s.engine_prior && s.engine_prior->plain_step_host &&
                          async_scheduling_of(s).cycle_pays_hidden_host() && is_prior(cal.sync_step_host_s);
  const ComputePriors compute = compute_priors(s, cal);
  const double forwards = double(p.drafts.size());
  if (compute.bandwidth) band.terms.push_back("bandwidth efficiency");
  if (compute.bandwidth && !cal.plain_step_readings.empty()) band.terms.push_back("plain step read as host or GPU time");
  if (compute.kv_verify) band.terms.push_back("verify KV efficiency");
  if (compute.multi_token_step) band.terms.push_back("multi-token step");
  if (compute.eager_launch) band.terms.push_back("eager launch per kernel");
  if (compute.eager_overlap) band.terms.push_back("eager overlap exponent");
  if (compute.allreduce) band.terms.push_back("all-reduce prior");
  if (compute.piecewise_gpu) band.terms.push_back("piecewise GPU wait per attention part");
  if (compute.all_to_all) band.terms.push_back("all-to-all latency");
  if (cycle_prior) band.terms.push_back("engine overhead per cycle");
  if (step_prior) band.terms.push_back("engine overhead per draft forward");
  if (request_prior) band.terms.push_back("engine overhead per request");
  if (sync_prior) band.terms.push_back("host per synchronous step");
  if (band.terms.empty() || samples <= 0) {
    band.p10_tokens_per_s = band.p50_tokens_per_s = band.p90_tokens_per_s = p.spec_tokens_per_s;
    band.priors_p10_tokens_per_s = band.priors_p90_tokens_per_s = p.spec_tokens_per_s;
    return band;
  }
  const LogNormal c = cycle_prior ? through(s.engine_prior->cycle_overhead) : LogNormal{};
  const LogNormal d = step_prior ? through(s.engine_prior->draft_step_overhead) : LogNormal{};
  const LogNormal h = sync_prior ? through(*s.engine_prior->plain_step_host) : LogNormal{};
  const LogNormal q = request_prior ? through(*s.engine_prior->spec_per_request) : LogNormal{};
  std::mt19937_64 g(seed);
  // The cycle is linear in the engine terms: each draw of them alone costs a division. A draw of
  // the compute priors recalibrates the model (the host time is what the plain step leaves), so
  // they are drawn on kComputeBandStrata points of a Latin hypercube, each crossed with an equal
  // share of the engine terms' draws.
  const std::vector<ComputeShift> shifts = compute_shifts(model, p, compute, kComputeBandStrata, g);
  const int per_shift = (samples + int(shifts.size()) - 1) / int(shifts.size());
  samples = per_shift * int(shifts.size());
  std::vector<double> rates;
  rates.reserve(std::size_t(samples));
  const double emitted = s.batch * p.tokens_per_cycle;
  const double own_base_s = p.cycle_s - cal.spec_extra_per_cycle_s.value -
                            forwards * cal.draft_step_overhead_s.value - cal.unhidden_host_s -
                            (request_prior ? others * cal.spec_per_request_s.value : 0.0);
  for (const ComputeShift& shift : shifts) {
    for (int i = 0; i < per_shift; ++i) {
      const double extra = cycle_prior ? draw(g, c) : cal.spec_extra_per_cycle_s.value;
      const double step = step_prior ? draw(g, d) : cal.draft_step_overhead_s.value;
      // The drawn synchronous step's host time, over what the (drawn) plain step left exposed.
      const double unhidden = sync_prior ? std::max(0.0, draw(g, h) - shift.step_host_s) : cal.unhidden_host_s;
      const double requests = request_prior ? others * draw(g, q) : 0.0;
      rates.push_back(emitted / (own_base_s + shift.base_delta_s + extra + forwards * step + unhidden + requests));
    }
  }
  band.samples = samples;
  set_percentiles(band, std::move(rates));
  band.priors_p10_tokens_per_s = band.p10_tokens_per_s;
  band.priors_p90_tokens_per_s = band.p90_tokens_per_s;
  return band;
}

double ln_sigma_through(double p10, double p90) { return through(p10, p90).sigma; }

PredictionBand with_model_error(PredictionBand priors, double point_tokens_per_s, const ModelError& error,
                                std::uint64_t seed) {
  PredictionBand band = std::move(priors);
  band.model_error = error;
  if (!(error.sigma_below > 0.0) && !(error.sigma_above > 0.0)) return band;
  std::vector<double> rates = band.draws;
  if (rates.empty()) rates.assign(std::size_t(kDefaultBandSamples), point_tokens_per_s);
  std::mt19937_64 g(seed);
  // A split normal: z < 0 (the measurement below the prediction) scales by sigma_below.
  for (double& r : rates) {
    const double z = normal_quantile(uniform(g));
    r *= std::exp(z * (z < 0.0 ? error.sigma_below : error.sigma_above));
  }
  band.samples = int(rates.size());
  select_percentiles(band, std::move(rates));
  // One tail's error alone moves the draws one way and can pull the other percentile inside the
  // priors' band: the model error only ever widens it.
  band.p10_tokens_per_s = std::min(band.p10_tokens_per_s, band.priors_p10_tokens_per_s);
  band.p90_tokens_per_s = std::max(band.p90_tokens_per_s, band.priors_p90_tokens_per_s);
  return band;
}

PredictionBand prediction_band(const CycleModel& model, const Prediction& p) {
  PredictionBand band = prior_band(model, p);
  const auto& error = model.scenario().model_error;
  return error ? with_model_error(std::move(band), p.spec_tokens_per_s, *error) : band;
}

}  // namespace specsim
