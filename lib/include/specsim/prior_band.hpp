// The spread of a prediction from the spread of the priors it used: every figure that is a prior
// (not measured, calibrated or set) carries its public evidence's p10-p90, and the prediction's
// p10-p90 band follows by Monte Carlo over them.
//
// Today the terms with a spread are the engine's speculative overheads (models/engines): the
// cycle overhead c and the per-draft-forward overhead d. A term the scenario sets has none. Each
// is drawn from the log-normal through its p10 and p90:
//
//   ln X ~ N(mu, sigma),  mu = (ln p10 + ln p90) / 2,  sigma = (ln p90 - ln p10) / (2 z_0.9)
//
// (z_0.9 = 1.2816, the standard normal's 90th percentile; a p10 of 0 is floored at 1 ns). The
// cycle is linear in both, T = T_0 + c + n d with n draft forwards, so each draw costs a division:
//   tok/s = B tau / (T_0 + c + n d).
// Determinism as in monte_carlo.hpp: std::mt19937_64, uniforms from its 53 high bits, normals by
// Boost.Math's inverse CDF, percentiles by nearest rank.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "specsim/cycle.hpp"

namespace specsim {

struct PredictionBand {
  double p10_tokens_per_s = 0.0;
  double p50_tokens_per_s = 0.0;
  double p90_tokens_per_s = 0.0;
  int samples = 0;
  std::vector<std::string> terms;  // the priors drawn ("engine cycle overhead", ...); empty = no spread
};

inline constexpr int kDefaultBandSamples = 4000;

// The band of `p` (a prediction of `model`'s scenario) over the priors' spreads.
[[nodiscard]] PredictionBand prior_band(const CycleModel& model, const Prediction& p,
                                        int samples = kDefaultBandSamples, std::uint64_t seed = 1);

}  // namespace specsim
