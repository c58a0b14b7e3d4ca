#include <catch2/catch.hpp>

#include "specsim/acceptance.hpp"
#include "specsim/error.hpp"
#include "specsim/monte_carlo.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;
using specsim::Acceptance;
using specsim::DraftShape;
using specsim::MonteCarloOptions;

namespace {

// An acceptance on the shape it is simulated on.
struct Case {
  Acceptance acceptance;
  DraftShape shape;
};

Case chain(double alpha, int k) { return {{specsim::ConstantChain{alpha, {}}, {}}, {k, 1, k + 1}}; }

specsim::MonteCarloResult simulate(const Case& c, const MonteCarloOptions& options,
                                   const specsim::CycleTimeFunction& cycle_time_s = {}) {
  return specsim::simulate_cycles(c.acceptance, c.shape, options, cycle_time_s);
}

double closed_form(const Case& c) { return specsim::tokens_per_cycle(c.acceptance, c.shape); }

// The closed form must lie inside the simulation's 99 % interval of the mean.
void check_agrees(const Case& model, const MonteCarloOptions& options, double closed_form) {
  const auto r = simulate(model, options);
  INFO("seed " << options.seed << ": MC mean " << r.mean_tokens_per_cycle << " in ["
               << r.mean_tokens_per_cycle_interval.low << ", " << r.mean_tokens_per_cycle_interval.high
               << "], closed form " << closed_form);
  CHECK(r.num_cycles == std::int64_t(options.num_requests) * options.cycles_per_request);
  CHECK(r.mean_tokens_per_cycle_interval.confidence == 0.99);
  CHECK_THAT(r.closed_form_tokens_per_cycle, WithinRel(closed_form, 1e-9));
  CHECK(r.mean_tokens_per_cycle_interval.low <= closed_form);
  CHECK(closed_form <= r.mean_tokens_per_cycle_interval.high);
}

}  // namespace

TEST_CASE("Monte Carlo mean agrees with the closed form in five settings", "[monte_carlo]") {
  MonteCarloOptions options;  // 1000 requests x 100 cycles = 10^5 cycles
  SECTION("Leviathan chain alpha 0.8, k 4") {
    options.seed = 11;
    check_agrees(chain(0.8, 4), options, 3.3616);  // (1 - 0.8^5) / 0.2
  }
  SECTION("vLLM EAGLE-3 unconditional profile, k 7") {
    // vLLM dynamic-SD stats: a = 0.76 .. 0.12; tau = 1 + sum a = 1 + 2.45 = 3.45
    const Case m{{specsim::UnconditionalChain{{0.76, 0.54, 0.39, 0.28, 0.21, 0.15, 0.12}}, {}}, {7, 1, 8}};
    options.seed = 22;
    check_agrees(m, options, 3.45);
  }
  SECTION("depth decay 0.8 x 0.9^(i-1), k 3") {
    const Case m{{specsim::DepthDecayChain{0.8, 0.9}, {}}, {3, 1, 4}};
    options.seed = 33;
    check_agrees(m, options, 2.749248);  // 1 + 0.8 + 0.576 + 0.373248
  }
  SECTION("SGLang tree (5, 4, 8) at accept 0.7") {
    const Case m{{specsim::ConstantChain{0.7, {}}, {}}, {5, 4, 8}};
    options.seed = 45;
    check_agrees(m, options, closed_form(m));
  }
  SECTION("tree with a Beta spread of per-request acceptance") {
    const Case m{{specsim::ConstantChain{0.7, {}}, {{0.6, 0.3}, 0.5}}, {3, 2, 6}};
    options.seed = 55;
    options.request_accept_stddev = 0.15;
    const auto setup = specsim::draft_setup(m.acceptance, m.shape);
    const double closed = specsim::expected_tokens_with_request_spread(setup.tree, setup.acceptance, 0.15);
    // Requests above p_1 = 0.667 hit the cap p_1 + p_2 <= 1 (0.9 * 0.667/0.6 = 1), so the spread
    // lowers the mean here: 2.558 against F = 2.656 without it.
    CHECK(closed < closed_form(m));
    check_agrees(m, options, closed);
  }
}

TEST_CASE("per-request spread raises a constant chain's mean (Jensen)", "[monte_carlo]") {
  // Each request's alpha ~ Beta(mean 0.7, sd 0.15); tau = sum_{i<=k} alpha^i is convex in alpha and
  // never capped (alpha <= 1), so E[tau(alpha)] > tau(0.7) = 2.533. Check against the exact Beta
  // moments: E[alpha^2] = m^2 + s^2 = 0.49 + 0.0225 = 0.5125, and with nu = m(1-m)/s^2 - 1 = 8.333,
  // E[alpha^3] = E[alpha^2] (a + 2)/(nu + 2) with a = m nu = 5.8333: 0.5125 * 7.8333 / 10.3333 = 0.38851.
  const Case c = chain(0.7, 3);
  const auto setup = specsim::draft_setup(c.acceptance, c.shape);
  const double expected = 1 + 0.7 + 0.5125 + 0.5125 * (0.7 * 25.0 / 3.0 + 2.0) / (25.0 / 3.0 + 2.0);
  CHECK_THAT(specsim::expected_tokens_with_request_spread(setup.tree, setup.acceptance, 0.15),
             WithinRel(expected, 1e-5));
  CHECK(expected > 2.533);
}

TEST_CASE("Monte Carlo is deterministic for a seed", "[monte_carlo]") {
  MonteCarloOptions options;
  options.num_requests = 50;
  options.seed = 7;
  options.request_accept_stddev = 0.1;
  const auto a = simulate(chain(0.7, 3), options);
  const auto b = simulate(chain(0.7, 3), options);
  CHECK(a.mean_tokens_per_cycle == b.mean_tokens_per_cycle);
  CHECK(a.request_tokens_per_cycle.p90 == b.request_tokens_per_cycle.p90);
  options.seed = 8;
  const auto c = simulate(chain(0.7, 3), options);
  CHECK(a.mean_tokens_per_cycle != c.mean_tokens_per_cycle);
}

TEST_CASE("Monte Carlo percentiles and tokens per second", "[monte_carlo]") {
  MonteCarloOptions options;
  options.num_requests = 100;
  // alpha 0: every cycle emits the bonus token only; alpha 1: every cycle emits k + 1 = 4.
  const auto none = simulate(chain(0.0, 3), options);
  CHECK(none.tokens_per_cycle.p10 == 1.0);
  CHECK(none.tokens_per_cycle.p90 == 1.0);
  const auto all = simulate(chain(1.0, 3), options);
  CHECK(all.tokens_per_cycle.p10 == 4.0);
  CHECK(all.mean_tokens_per_cycle == 4.0);

  // alpha 0.5, k 1: one or two tokens with equal odds, so p10 = 1 and p90 = 2.
  const auto half = simulate(chain(0.5, 1), options);
  CHECK(half.tokens_per_cycle.p10 == 1.0);
  CHECK(half.tokens_per_cycle.p90 == 2.0);

  // A fixed 30 ms cycle: tokens/s = total tokens / (cycles * 0.030 s) = mean tau / 0.030.
  const auto timed = simulate(chain(0.8, 4), options, [](int) { return 0.030; });
  CHECK_THAT(timed.tokens_per_s, WithinRel(timed.mean_tokens_per_cycle / 0.030, 1e-12));
  CHECK(timed.request_tokens_per_s.p10 <= timed.request_tokens_per_s.p50);
  CHECK(timed.request_tokens_per_s.p50 <= timed.request_tokens_per_s.p90);
  // A cycle time that grows with emitted tokens (draft extend over tau tokens):
  // 30 ms + 1 ms per token; tokens/s then lies below tau / 31 ms.
  const auto extend = simulate(chain(0.8, 4), options,
                                               [](int t) { return 0.030 + 0.001 * t; });
  CHECK(extend.tokens_per_s < extend.mean_tokens_per_cycle / 0.031);
}

TEST_CASE("Monte Carlo options are validated", "[monte_carlo]") {
  MonteCarloOptions options;
  options.num_requests = 1;
  options.cycles_per_request = 0;
  CHECK_THROWS_WITH(simulate(chain(0.7, 3), options),
                    Contains("num_requests = 1: must be >= 2") &&
                        Contains("cycles_per_request = 0: must be >= 1"));
  MonteCarloOptions spread;
  spread.request_accept_stddev = 0.5;  // sqrt(0.7 * 0.3) = 0.458 is the most a Beta can spread
  CHECK_THROWS_WITH(simulate(chain(0.7, 3), spread),
                    Contains("request_accept_stddev = 0.5: must be < sqrt(mean * (1 - mean)) = 0.458"));
  CHECK_THROWS_WITH(simulate(chain(0.7, 3), MonteCarloOptions{},
                                             [](int) { return 0.0; }),
                    Contains("must be a positive finite number of seconds"));
}

TEST_CASE("Monte Carlo: an SGLang (5,4,8) tree with a cycle time, with and without a request spread",
          "[monte_carlo]") {
  // Speed is bench/bench_predict.cpp's BM_MonteCarloTree (CI builds Debug; no timing here).
  const Case m{{specsim::ConstantChain{0.7, {}}, {}}, {5, 4, 8}};
  MonteCarloOptions options;  // 1000 x 100 = 10^5 cycles
  options.seed = 5;
  const auto cycle_time = [](int t) { return 0.030 + 0.0005 * t; };
  for (const double spread : {0.0, 0.1}) {
    INFO("request_accept_stddev " << spread);
    options.request_accept_stddev = spread;
    const auto r = simulate(m, options, cycle_time);
    CHECK(r.num_cycles == 100000);
    CHECK(r.mean_tokens_per_cycle_interval.low <= r.closed_form_tokens_per_cycle);
    CHECK(r.closed_form_tokens_per_cycle <= r.mean_tokens_per_cycle_interval.high);
    // Total time is cycles x 30 ms + 0.5 ms per token, so tokens/s = tau / (0.030 + 0.0005 tau)
    // exactly, with tau the simulated mean.
    const double tau = r.mean_tokens_per_cycle;
    CHECK_THAT(r.tokens_per_s, WithinRel(tau / (0.030 + 0.0005 * tau), 1e-9));
  }
}
