// Monte Carlo of speculative cycles: the spread around tau that the closed forms do not show.
//
// Each simulated cycle walks the draft tree from the root: at an accepted node one uniform draw
// picks which ranked child (if any) the verifier accepts, with the exclusive probabilities
// p(depth, rank) of draft_tree.hpp; the cycle emits 1 + the accepted depth tokens. A chain is
// the tree with one child per level, so this is Leviathan's capped geometric for constant b.
// Requests may differ in acceptance (easy vs hard prompts): each request draws its first-position
// rate from a Beta distribution and scales every p of its own by (draw / mean).
//
// Determinism: std::mt19937_64 (its output sequence is fixed by the C++ standard), uniforms built
// from its 53 high bits, Beta draws by inverse CDF (a 257-point table of Boost.Math quantiles,
// linear in between), percentiles by nearest rank. No std:: distribution is used, so results are
// the same with every standard library.
#pragma once

#include <cstdint>
#include <functional>

#include "specsim/acceptance.hpp"
#include "specsim/draft_tree.hpp"

namespace specsim {

struct MonteCarloOptions {
  std::uint64_t seed = 1;     // any fixed value; reports print it so runs can be repeated
  int num_requests = 1000;    // independent requests
  // Cycles per request. 100: a few hundred output tokens at tau ~ 2-3, a typical chat answer.
  int cycles_per_request = 100;
  // Standard deviation of the per-request first-position acceptance (Beta with mean p(1, 1));
  // 0 = every request alike. Must be < sqrt(mean * (1 - mean)).
  double request_accept_stddev = 0.0;
  double confidence = 0.99;   // for the interval of the mean
};

// Nearest-rank percentile of sorted, non-empty values: the smallest value with at least q of the
// sample at or below it. Every percentile specsim reports (here, prior_band.hpp, validate) is this.
[[nodiscard]] double nearest_rank(const std::vector<double>& sorted, double q);
// The median of `values` (the mean of the middle two for an even count); 0 for none.
[[nodiscard]] double median(std::vector<double> values);

struct Percentiles {
  double p10 = 0.0;
  double p50 = 0.0;
  double p90 = 0.0;
};

// Cycle wall time in seconds for a cycle that emitted `emitted_tokens` (1..depth+1) per request;
// cycle time may depend on it through the draft-extend step.
using CycleTimeFunction = std::function<double(int emitted_tokens)>;

struct MonteCarloResult {
  std::int64_t num_cycles = 0;
  double mean_tokens_per_cycle = 0.0;
  double stddev_tokens_per_cycle = 0.0;          // over cycles
  ConfidenceInterval mean_tokens_per_cycle_interval;  // from the spread of request means
  Percentiles tokens_per_cycle;                  // over single cycles (whole tokens)
  Percentiles request_tokens_per_cycle;          // over per-request means
  // The closed form the mean must agree with: F(T), averaged over the Beta spread when present.
  double closed_form_tokens_per_cycle = 0.0;
  // With a cycle-time function only (else 0): total tokens / total time, and per-request tokens/s.
  double tokens_per_s = 0.0;
  Percentiles request_tokens_per_s;
};

// Throws specsim::Error naming the option and rule when options are invalid.
[[nodiscard]] MonteCarloResult simulate_cycles(const DraftTree& tree, const PositionalAcceptance& p,
                                               const MonteCarloOptions& options,
                                               const CycleTimeFunction& cycle_time_s = {});
// Any acceptance on any shape through draft_setup(); a measured tau runs the constant-rate chain
// with its tau.
[[nodiscard]] MonteCarloResult simulate_cycles(const Acceptance& acceptance, const DraftShape& shape,
                                               const MonteCarloOptions& options,
                                               const CycleTimeFunction& cycle_time_s = {});

// E[F(T)] when each request's p is scaled by (Beta draw / mean): M equal bins of [0, 1], each
// weighted by its Beta probability and valued at its midpoint, sum_i P(bin_i) F(T; p * x_i / mean).
// Midpoint error ~ h^2/24 * F'' with h = 1/M: below 1e-5 relative at M = 256, far inside any Monte
// Carlo interval. Equals expected_tokens for stddev 0.
[[nodiscard]] double expected_tokens_with_request_spread(const DraftTree& tree,
                                                         const PositionalAcceptance& p,
                                                         double request_accept_stddev,
                                                         int quadrature_points = 256);

}  // namespace specsim
