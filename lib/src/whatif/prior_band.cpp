#include "specsim/prior_band.hpp"

#include <boost/math/distributions/normal.hpp>

#include <algorithm>
#include <cmath>
#include <random>

namespace specsim {

namespace {

constexpr double kFloorS = 1e-9;  // a p10 of 0 s has no logarithm

struct LogNormal {
  double mu = 0.0;
  double sigma = 0.0;
};

LogNormal through(const EnginePrior::Term& t) {
  const double z90 = boost::math::quantile(boost::math::normal(), 0.9);
  const double lo = std::log(std::max(t.p10_s, kFloorS));
  const double hi = std::log(std::max(t.p90_s, kFloorS));
  return {0.5 * (lo + hi), (hi - lo) / (2.0 * z90)};
}

// A uniform in (0, 1) from the generator's 53 high bits, never 0 or 1.
double uniform(std::mt19937_64& g) { return ((g() >> 11) + 0.5) * 0x1.0p-53; }

double draw(std::mt19937_64& g, const LogNormal& d) {
  if (d.sigma <= 0.0) return std::exp(d.mu);
  return std::exp(d.mu + d.sigma * boost::math::quantile(boost::math::normal(), uniform(g)));
}

double nearest_rank(const std::vector<double>& sorted, double q) {
  const auto n = sorted.size();
  const auto rank = static_cast<std::size_t>(std::ceil(q * double(n)));
  return sorted[std::clamp<std::size_t>(rank, 1, n) - 1];
}

}  // namespace

PredictionBand prior_band(const CycleModel& model, const Prediction& p, int samples, std::uint64_t seed) {
  const Scenario& s = model.scenario();
  const Calibration& cal = model.calibration();
  PredictionBand band;
  const bool cycle_prior = s.engine_prior && cal.spec_extra_per_cycle_s.origin.rfind("prior", 0) == 0;
  const bool step_prior = s.engine_prior && cal.draft_step_overhead_s.origin.rfind("prior", 0) == 0;
  const double forwards = double(p.drafts.size());
  const double base_s = p.cycle_s - cal.spec_extra_per_cycle_s.value - forwards * cal.draft_step_overhead_s.value;
  if (cycle_prior) band.terms.push_back("engine overhead per cycle");
  if (step_prior) band.terms.push_back("engine overhead per draft forward");
  if (band.terms.empty() || samples <= 0) {
    band.p10_tokens_per_s = band.p50_tokens_per_s = band.p90_tokens_per_s = p.spec_tokens_per_s;
    return band;
  }
  const LogNormal c = cycle_prior ? through(s.engine_prior->cycle_overhead) : LogNormal{};
  const LogNormal d = step_prior ? through(s.engine_prior->draft_step_overhead) : LogNormal{};
  std::mt19937_64 g(seed);
  std::vector<double> rates;
  rates.reserve(std::size_t(samples));
  const double emitted = s.batch * p.tokens_per_cycle;
  for (int i = 0; i < samples; ++i) {
    const double extra = cycle_prior ? draw(g, c) : cal.spec_extra_per_cycle_s.value;
    const double step = step_prior ? draw(g, d) : cal.draft_step_overhead_s.value;
    rates.push_back(emitted / (base_s + extra + forwards * step));
  }
  std::sort(rates.begin(), rates.end());
  band.samples = samples;
  band.p10_tokens_per_s = nearest_rank(rates, 0.1);
  band.p50_tokens_per_s = nearest_rank(rates, 0.5);
  band.p90_tokens_per_s = nearest_rank(rates, 0.9);
  return band;
}

}  // namespace specsim
