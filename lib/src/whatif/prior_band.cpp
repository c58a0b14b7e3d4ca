#include "specsim/prior_band.hpp"

#include <boost/math/distributions/normal.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <span>

#include "specsim/monte_carlo.hpp"

namespace specsim {

namespace {

constexpr double kFloorS = 1e-9;  // a p10 of 0 s has no logarithm

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

using HypercubePoint = std::vector<double>;

// n points of a Latin hypercube in (0, 1)^dims: in every dimension each of the n strata
// [k/n, (k+1)/n) holds exactly one point, the strata paired at random across dimensions
// (Fisher-Yates on the generator's uniforms, so the points are the same on every library).
std::vector<HypercubePoint> latin_hypercube(int n, std::size_t dims, std::mt19937_64& g) {
  const auto count = static_cast<std::size_t>(n);
  std::vector<HypercubePoint> points(count, HypercubePoint(dims));
  std::vector<int> strata(count);
  for (std::size_t dim = 0; dim < dims; ++dim) {
    for (int k = 0; k < n; ++k) strata[std::size_t(k)] = k;
    for (int k = n - 1; k > 0; --k) {
      const int j = std::min(k, int(uniform(g) * (k + 1)));
      std::swap(strata[std::size_t(k)], strata[std::size_t(j)]);
    }
    for (int k = 0; k < n; ++k) points[std::size_t(k)][dim] = (strata[std::size_t(k)] + uniform(g)) / n;
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

// A prior the band draws on this scenario: its row, its first dimension of the hypercube, and the
// calibration's second reading where the row has one and the calibration holds it.
struct OpenPrior {
  const Prior* row = nullptr;
  std::size_t dimension = 0;
  std::optional<double> reading;
};

// The rows of `rows` open on a scenario, and the hypercube's dimensions: every row the band draws
// takes one, and one more for its second reading, whether or not the scenario leaves it open.
struct OpenPriors {
  std::vector<OpenPrior> rows;
  // The calibration readings open on the scenario, each with its dimension after the priors'.
  std::vector<std::pair<const CalibrationReading*, std::size_t>> readings;
  std::size_t dimensions = 0;
  [[nodiscard]] bool empty() const { return rows.empty() && readings.empty(); }
};

OpenPriors open_priors(std::span<const Prior> rows, const Scenario& s, const Calibration& cal) {
  OpenPriors out;
  for (const Prior& row : rows) {
    if (!row.drawn()) continue;
    if (row.open(s, cal)) {
      const std::optional<double> reading = row.second_reading ? row.second_reading->reading(cal) : std::nullopt;
      out.rows.push_back({&row, out.dimensions, reading});
    }
    out.dimensions += row.second_reading ? 2 : 1;
  }
  // Only an open reading takes a dimension: a scenario without one keeps the draws it had.
  for (const CalibrationReading& reading : calibration_readings()) {
    if (reading.open(s, cal)) out.readings.emplace_back(&reading, out.dimensions++);
  }
  return out;
}

// The value of an open prior at a point of the hypercube: its log-normal's quantile within the row's
// cut, or the second reading in that share of the points.
double value_at(const OpenPrior& prior, const HypercubePoint& u) {
  const Prior& row = *prior.row;
  const double drawn = std::clamp(at(through(row.estimate), u[prior.dimension]), row.draw_min, row.draw_max);
  if (prior.reading && u[prior.dimension + 1] < row.second_reading->weight) return *prior.reading;
  return drawn;
}

// `s` with the open priors and readings at one point, in the scenario and in the one calibration
// runs on.
Scenario with_priors_at(const Scenario& s, const OpenPriors& open, const HypercubePoint& u) {
  std::vector<double> values;
  values.reserve(open.rows.size());
  for (const OpenPrior& prior : open.rows) values.push_back(value_at(prior, u));
  const auto apply = [&](Scenario& x) {
    for (std::size_t i = 0; i < open.rows.size(); ++i) open.rows[i].row->set(x, values[i]);
    for (const auto& [reading, dimension] : open.readings) {
      if (u[dimension] < reading->weight) reading->set(x);
    }
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

// What one draw of the open priors changes: the cycle without the engine terms, relative to the
// model's, and the plain step's host time the drawn model leaves.
struct ComputeShift {
  double base_delta_s = 0.0;
  double step_host_s = 0.0;
};

std::vector<ComputeShift> compute_shifts(const CycleModel& model, const Prediction& p, const OpenPriors& priors,
                                         int strata, std::mt19937_64& g) {
  if (priors.empty()) return {ComputeShift{0.0, model.step_host_s()}};
  const double own_s = model.cycle_s(p.tokens_per_cycle) - model.calibration().unhidden_host_s;
  std::vector<ComputeShift> shifts;
  shifts.reserve(std::size_t(strata));
  for (const HypercubePoint& u : latin_hypercube(strata, priors.dimensions, g)) {
    const CycleModel drawn(with_priors_at(model.scenario(), priors, u));
    shifts.push_back({drawn.cycle_s(p.tokens_per_cycle) - drawn.calibration().unhidden_host_s - own_s,
                      drawn.step_host_s()});
  }
  return shifts;
}

// The engine terms in the order a draw takes them from the generator and adds them to the cycle
// (EngineTerm::listed keeps the order reports have always listed them in).
constexpr std::array<EngineTerm, 4> kEngineTerms = {{
    {.label = "engine overhead per cycle",
     .key = "cycle_overhead",
     .charged = "once per cycle",
     .listed = 0,
     .open = [](const Scenario& s, const Calibration& cal) {
       return s.engine_prior && cal.spec_extra_per_cycle_s.is_prior();
     },
     .prior = [](const EnginePrior& e) -> const EnginePrior::Term& { return e.cycle_overhead; },
     .held_s = [](const Calibration& cal, const CycleCounts&) { return cal.spec_extra_per_cycle_s.value; },
     .charge_s = [](double drawn_s, const CycleCounts&) { return drawn_s; }},
    {.label = "engine overhead per draft forward",
     .key = "draft_step_overhead",
     .charged = "once per draft forward (the draft extend included)",
     .listed = 1,
     .open = [](const Scenario& s, const Calibration& cal) {
       // n-gram lookup runs no draft forward: the term cannot move its cycle, so it is no spread.
       return s.engine_prior && s.speculation.runs_draft_forwards() && cal.draft_step_overhead_s.is_prior();
     },
     .prior = [](const EnginePrior& e) -> const EnginePrior::Term& { return e.draft_step_overhead; },
     .held_s = [](const Calibration& cal, const CycleCounts& n) {
       return n.draft_forwards * cal.draft_step_overhead_s.value;
     },
     .charge_s = [](double drawn_s, const CycleCounts& n) { return n.draft_forwards * drawn_s; }},
    // A synchronous cycle beside an async plain step pays the engine's sync host prior: the drawn
    // synchronous step's host time, over what the (drawn) plain step left exposed.
    {.label = "host per synchronous step",
     .key = "plain_step_host",
     .charged = "per cycle, over the plain step's host time, where the plain run is async and the "
                "speculative run not",
     .listed = 3,
     .open = [](const Scenario& s, const Calibration& cal) {
       return s.engine_prior && s.engine_prior->plain_step_host && async_scheduling_of(s).cycle_pays_hidden_host() &&
              cal.sync_step_host_s.is_prior();
     },
     .prior = [](const EnginePrior& e) -> const EnginePrior::Term& { return *e.plain_step_host; },
     .held_s = [](const Calibration& cal, const CycleCounts&) { return cal.unhidden_host_s; },
     .charge_s = [](double drawn_s, const CycleCounts& n) { return std::max(0.0, drawn_s - n.step_host_s); }},
    // Drawn only where it is charged (batch > 1, a synchronous speculative run): a batch-1 band is the
    // same draws as without the term.
    {.label = "engine overhead per request",
     .key = "spec_per_request",
     .charged = "per cycle for each request beyond the first, where the speculative run is synchronous",
     .listed = 2,
     .open = [](const Scenario& s, const Calibration& cal) {
       return s.engine_prior && s.engine_prior->spec_per_request && cal.spec_per_request_s.is_prior() &&
              s.batch > 1.0;
     },
     .prior = [](const EnginePrior& e) -> const EnginePrior::Term& { return *e.spec_per_request; },
     .held_s = [](const Calibration& cal, const CycleCounts& n) {
       return n.other_requests * cal.spec_per_request_s.value;
     },
     .charge_s = [](double drawn_s, const CycleCounts& n) { return n.other_requests * drawn_s; },
     .taken_out_when_held = false},
}};

// An engine term on this scenario: drawn from its log-normal, or held at what the model charges.
struct OpenTerm {
  const EngineTerm* row = nullptr;
  bool drawn = false;
  LogNormal spread;
  double held_s = 0.0;
};

}  // namespace

std::span<const EngineTerm> engine_terms() { return kEngineTerms; }

PredictionBand prior_band(const CycleModel& model, const Prediction& p, int samples, std::uint64_t seed) {
  return prior_band(model, p, priors(), samples, seed);
}

PredictionBand prior_band(const CycleModel& model, const Prediction& p, std::span<const Prior> rows, int samples,
                          std::uint64_t seed) {
  const Scenario& s = model.scenario();
  const Calibration& cal = model.calibration();
  const CycleCounts counts{double(p.drafts.size()), std::max(0.0, s.batch - 1.0), model.step_host_s()};
  const OpenPriors open = open_priors(rows, s, cal);
  std::vector<OpenTerm> terms;
  for (const EngineTerm& row : kEngineTerms) {
    const bool drawn = row.open(s, cal);
    const LogNormal spread = drawn ? through(row.prior(*s.engine_prior)) : LogNormal{};
    terms.push_back({&row, drawn, spread, row.held_s(cal, counts)});
  }
  PredictionBand band;
  for (const OpenPrior& prior : open.rows) {
    band.terms.emplace_back(prior.row->label);
    if (prior.reading) band.terms.emplace_back(prior.row->second_reading->label);
  }
  for (const auto& [reading, dimension] : open.readings) band.terms.emplace_back(reading->label);
  std::vector<const OpenTerm*> listed;
  for (const OpenTerm& term : terms) {
    if (term.drawn) listed.push_back(&term);
  }
  std::sort(listed.begin(), listed.end(),
            [](const OpenTerm* a, const OpenTerm* b) { return a->row->listed < b->row->listed; });
  for (const OpenTerm* term : listed) band.terms.emplace_back(term->row->label);
  // A single acceptance rate read the second way: that tau, and the cycle the model prices for it.
  const std::optional<double> averaged = averaged_rate_reading(s.acceptance, s.speculation.shape);
  double averaged_delta_s = 0.0;
  if (averaged) {
    band.terms.emplace_back("acceptance read as accepted / drafted");
    band.averaged_rate_tokens_per_cycle = averaged;
    averaged_delta_s = model.cycle_s(*averaged) - model.cycle_s(p.tokens_per_cycle);
  }
  if (band.terms.empty() || samples <= 0) {
    band.p10_tokens_per_s = band.p50_tokens_per_s = band.p90_tokens_per_s = p.spec_tokens_per_s;
    band.priors_p10_tokens_per_s = band.priors_p90_tokens_per_s = p.spec_tokens_per_s;
    return band;
  }
  std::mt19937_64 g(seed);
  // The cycle is linear in the engine terms: each draw of them alone costs a division. A draw of
  // the compute priors recalibrates the model (the host time is what the plain step leaves), so
  // they are drawn on kComputeBandStrata points of a Latin hypercube, each crossed with an equal
  // share of the engine terms' draws.
  const std::vector<ComputeShift> shifts = compute_shifts(model, p, open, kComputeBandStrata, g);
  const int per_shift = (samples + int(shifts.size()) - 1) / int(shifts.size());
  samples = per_shift * int(shifts.size());
  std::vector<double> rates;
  rates.reserve(std::size_t(samples));
  const double emitted = s.batch * p.tokens_per_cycle;
  double own_base_s = p.cycle_s;
  for (const OpenTerm& term : terms) {
    if (term.drawn || term.row->taken_out_when_held) own_base_s -= term.held_s;
  }
  for (const ComputeShift& shift : shifts) {
    const CycleCounts drawn_counts{counts.draft_forwards, counts.other_requests, shift.step_host_s};
    for (int i = 0; i < per_shift; ++i) {
      double cycle_s = own_base_s + shift.base_delta_s;
      for (const OpenTerm& term : terms) {
        if (term.drawn) {
          cycle_s += term.row->charge_s(draw(g, term.spread), drawn_counts);
        } else if (term.row->taken_out_when_held) {
          cycle_s += term.held_s;
        }
      }
      // The generator is drawn for the reading only where there is one: other bands keep their draws.
      if (averaged && uniform(g) < kAveragedRateReadingWeight) {
        rates.push_back(s.batch * *averaged / (cycle_s + averaged_delta_s));
      } else {
        rates.push_back(emitted / cycle_s);
      }
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

namespace {

// What carrying a calibration from `measured_batch` to `batch` adds to each tail, in ln tok/s.
double transfer_sigma(const ModelError& error, int batch, int measured_batch) {
  if (batch <= 0 || measured_batch <= 0 || batch == measured_batch) return 0.0;
  return error.transfer_sigma_per_ln_batch * std::fabs(std::log(double(batch) / measured_batch));
}

}  // namespace

ModelError with_batch_transfer(ModelError error, int batch, int measured_batch) {
  const double t = transfer_sigma(error, batch, measured_batch);
  if (!(t > 0.0)) return error;
  error.sigma = std::hypot(error.sigma, t);
  error.sigma_below = std::hypot(error.sigma_below, t);
  error.sigma_above = std::hypot(error.sigma_above, t);
  return error;
}

PredictionBand prediction_band(const CycleModel& model, const Prediction& p) {
  PredictionBand band = prior_band(model, p);
  const Scenario& s = model.scenario();
  if (!s.model_error) return band;
  const Calibration& cal = model.calibration();
  // Where nothing was measured, or the rule is off, the prediction is taken at its own batch.
  const int measured = s.rules.batch_transfer_error && cal.batch_measured ? cal.calibrated_batch : s.batch;
  band = with_model_error(std::move(band), p.spec_tokens_per_s, with_batch_transfer(*s.model_error, s.batch, measured));
  band.transfer_sigma = transfer_sigma(*s.model_error, s.batch, measured);
  if (band.transfer_sigma > 0.0) band.transfer_from_batch = measured;
  return band;
}

SpeculationCall speculation_call(double p10_tokens_per_s, double p90_tokens_per_s, double spec_tokens_per_s,
                                 double plain_tokens_per_s) {
  const bool spread = p90_tokens_per_s > p10_tokens_per_s;
  if ((spread ? p10_tokens_per_s : spec_tokens_per_s) > plain_tokens_per_s) return SpeculationCall::kPays;
  if ((spread ? p90_tokens_per_s : spec_tokens_per_s) < plain_tokens_per_s) return SpeculationCall::kLoses;
  return SpeculationCall::kTooClose;
}

SpeculationCall speculation_call(const PredictionBand& band, double spec_tokens_per_s, double plain_tokens_per_s) {
  return speculation_call(band.p10_tokens_per_s, band.p90_tokens_per_s, spec_tokens_per_s, plain_tokens_per_s);
}

std::string_view to_string(SpeculationCall call) {
  switch (call) {
    case SpeculationCall::kPays: return "pays";
    case SpeculationCall::kLoses: return "loses";
    case SpeculationCall::kTooClose: return "too close to call";
  }
  return "too close to call";
}

}  // namespace specsim
