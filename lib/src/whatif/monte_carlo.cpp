#include "specsim/monte_carlo.hpp"

#include <algorithm>
#include <boost/math/distributions/beta.hpp>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "specsim/error.hpp"

namespace specsim {

namespace {

constexpr double kTwoToMinus53 = 0x1.0p-53;
constexpr int kBetaTableSize = 256;

std::string fmt(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

// Uniform in [0, 1) from the generator's top 53 bits: fixed by the standard's mt19937_64 sequence.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * kTwoToMinus53; }

Percentiles percentiles(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return {nearest_rank(values, 0.10), nearest_rank(values, 0.50), nearest_rank(values, 0.90)};
}

// p scaled by `scale`; a row whose sum would pass 1 is renormalised to 1 (siblings stay exclusive).
PositionalAcceptance scaled(const PositionalAcceptance& p, double scale) {
  PositionalAcceptance out = p;
  for (auto& row : out.rows) {
    double sum = 0.0;
    for (double& v : row) sum += (v *= scale);
    if (sum > 1.0) {
      for (double& v : row) v /= sum;
    }
  }
  return out;
}

// The Beta of per-request first-position acceptance, by mean and standard deviation:
// nu = mu(1 - mu)/sigma^2 - 1, alpha = mu nu, beta = (1 - mu) nu.
boost::math::beta_distribution<> request_beta(double mean, double stddev) {
  const double nu = mean * (1.0 - mean) / (stddev * stddev) - 1.0;
  return boost::math::beta_distribution<>(mean * nu, (1.0 - mean) * nu);
}

void check_spread(const PositionalAcceptance& p, double stddev) {
  if (!(stddev >= 0.0)) {
    throw Error("request_accept_stddev = " + fmt(stddev) + ": must be >= 0");
  }
  if (stddev == 0.0) return;
  const double mean = p.at(1, 1);
  const double limit = std::sqrt(mean * (1.0 - mean));
  if (!(stddev < limit)) {
    throw Error("request_accept_stddev = " + fmt(stddev) + ": must be < sqrt(mean * (1 - mean)) = " +
                fmt(limit) + " for the mean first-position acceptance " + fmt(mean) +
                " (a Beta distribution cannot spread further)");
  }
}

// Per node: children and the cumulative exclusive probabilities that select them.
struct Walker {
  std::vector<std::vector<int>> children;
  std::vector<std::vector<double>> cumulative;

  Walker(const DraftTree& tree, const PositionalAcceptance& p)
      : children(tree.size()), cumulative(tree.size()) {
    for (int v = 0; v < tree.size(); ++v) {
      double cum = 0.0;
      for (int c : tree.children(v)) {
        cum += p.at(tree.depth(c), tree.rank(c));
        children[v].push_back(c);
        cumulative[v].push_back(cum);
      }
    }
  }

  int cycle(std::mt19937_64& rng) const {
    int node = 0, tokens = 1;
    for (;;) {
      const auto& cum = cumulative[node];
      if (cum.empty()) return tokens;
      const double u = uniform01(rng);
      std::size_t k = 0;
      while (k < cum.size() && u >= cum[k]) ++k;
      if (k == cum.size()) return tokens;  // every drafted child rejected
      node = children[node][k];
      ++tokens;
    }
  }
};

void check_options(const MonteCarloOptions& options) {
  std::vector<std::string> problems;
  if (options.num_requests < 2) {
    problems.push_back("num_requests = " + std::to_string(options.num_requests) +
                       ": must be >= 2 (the interval needs a spread)");
  }
  if (options.cycles_per_request < 1) {
    problems.push_back("cycles_per_request = " + std::to_string(options.cycles_per_request) +
                       ": must be >= 1");
  }
  if (!(options.confidence > 0.0 && options.confidence < 1.0)) {
    problems.push_back("confidence = " + fmt(options.confidence) + ": must lie in (0, 1)");
  }
  if (!problems.empty()) {
    std::string message = "Monte Carlo options: ";
    for (std::size_t i = 0; i < problems.size(); ++i) message += (i ? "; " : "") + problems[i];
    throw Error(message);
  }
}

// Inverse CDF of a Beta by table: quantiles at kBetaTableSize + 1 equally spaced probabilities,
// linear in between. One Boost quantile costs ~25 us; a table keeps 1000 requests well inside the
// budget.
class BetaQuantiles {
 public:
  explicit BetaQuantiles(const boost::math::beta_distribution<>& beta) : table_(kBetaTableSize + 1) {
    table_.front() = 0.0;
    table_.back() = 1.0;
    for (int i = 1; i < kBetaTableSize; ++i) table_[i] = boost::math::quantile(beta, double(i) / kBetaTableSize);
  }

  [[nodiscard]] double at(double u) const {
    const double x = u * kBetaTableSize;
    const auto i = std::min(static_cast<int>(x), kBetaTableSize - 1);
    return table_[i] + (x - i) * (table_[i + 1] - table_[i]);
  }

 private:
  std::vector<double> table_;
};

// Cycle time per emitted count (index 1..max_tokens), computed once: the function is a pure
// input. All 0 without a function.
std::vector<double> cycle_times(int max_tokens, const CycleTimeFunction& cycle_time_s) {
  std::vector<double> time_for(max_tokens + 1, 0.0);
  if (!cycle_time_s) return time_for;
  for (int t = 1; t <= max_tokens; ++t) {
    time_for[t] = cycle_time_s(t);
    if (!(time_for[t] > 0.0) || !std::isfinite(time_for[t])) {
      throw Error("cycle time for " + std::to_string(t) + " emitted tokens = " + fmt(time_for[t]) +
                  " s: must be a positive finite number of seconds");
    }
  }
  return time_for;
}

// What the simulated requests emitted: a histogram of tokens per cycle, each request's mean and
// rate, and the totals.
struct Tally {
  std::vector<std::int64_t> histogram;  // cycles by tokens emitted
  std::vector<double> request_mean, request_rate;
  double total_tokens = 0.0, total_time_s = 0.0, sum_sq = 0.0;
};

// Each request draws its own first-position acceptance from the Beta (when requests differ),
// then walks the tree cycles_per_request times.
Tally simulate_requests(const DraftTree& tree, const PositionalAcceptance& p, const MonteCarloOptions& options,
                        const std::vector<double>& time_for) {
  std::mt19937_64 rng(options.seed);
  const bool spread = options.request_accept_stddev > 0.0;
  const double mean_first = p.at(1, 1);
  std::optional<BetaQuantiles> quantiles;
  if (spread) quantiles.emplace(request_beta(mean_first, options.request_accept_stddev));
  const Walker shared(tree, p);
  Tally out;
  out.histogram.assign(time_for.size(), 0);
  out.request_mean.resize(options.num_requests);
  out.request_rate.resize(options.num_requests);
  for (int r = 0; r < options.num_requests; ++r) {
    std::optional<Walker> own;  // this request's own p when requests differ
    if (spread) own.emplace(tree, scaled(p, quantiles->at(uniform01(rng)) / mean_first));
    const Walker& walker = own ? *own : shared;
    std::int64_t tokens = 0;
    double time_s = 0.0;
    for (int c = 0; c < options.cycles_per_request; ++c) {
      const int t = walker.cycle(rng);
      ++out.histogram[t];
      tokens += t;
      out.sum_sq += double(t) * t;
      time_s += time_for[t];
    }
    out.request_mean[r] = double(tokens) / options.cycles_per_request;
    out.request_rate[r] = time_s > 0.0 ? double(tokens) / time_s : 0.0;
    out.total_tokens += double(tokens);
    out.total_time_s += time_s;
  }
  return out;
}

// Requests are independent (cycles within one share its Beta draw), so the interval of the mean
// comes from the spread of request means: mean +- z * s_r / sqrt(R).
ConfidenceInterval mean_interval(const std::vector<double>& request_mean, double mean, double confidence) {
  const auto requests = static_cast<double>(request_mean.size());
  double var_r = 0.0;
  for (double m : request_mean) var_r += (m - mean) * (m - mean);
  var_r /= (requests - 1);
  const double z = boost::math::quantile(boost::math::normal_distribution<>(0.0, 1.0), 0.5 + confidence / 2.0);
  const double half = z * std::sqrt(var_r / requests);
  return {mean - half, mean + half, confidence};
}

// Per-cycle percentiles straight from the histogram (nearest rank).
Percentiles histogram_percentiles(const std::vector<std::int64_t>& histogram, double num_cycles) {
  const int max_tokens = static_cast<int>(histogram.size()) - 1;
  const auto from_histogram = [&](double q) {
    const auto need = static_cast<std::int64_t>(std::ceil(q * num_cycles));
    std::int64_t seen = 0;
    for (int t = 1; t <= max_tokens; ++t) {
      seen += histogram[t];
      if (seen >= std::max<std::int64_t>(need, 1)) return double(t);
    }
    return double(max_tokens);
  };
  return {from_histogram(0.10), from_histogram(0.50), from_histogram(0.90)};
}

}  // namespace

double expected_tokens_with_request_spread(const DraftTree& tree, const PositionalAcceptance& p,
                                           double request_accept_stddev, int quadrature_points) {
  p.validate();
  check_spread(p, request_accept_stddev);
  if (request_accept_stddev == 0.0) return expected_tokens(tree, p);
  if (quadrature_points < 1) {
    throw Error("quadrature points = " + std::to_string(quadrature_points) + ": must be >= 1");
  }
  // Equal-width bins of the Beta's support, each weighted by its exact probability
  // CDF(x_{i+1}) - CDF(x_i) and valued at its midpoint: robust to the endpoint singularities of a
  // Beta with a shape parameter below 1, and ~100x cheaper than inverting the CDF per point.
  const double mean = p.at(1, 1);
  const auto beta = request_beta(mean, request_accept_stddev);
  double sum = 0.0, previous_cdf = 0.0;
  for (int i = 0; i < quadrature_points; ++i) {
    const double x_high = double(i + 1) / quadrature_points;
    const double cdf = i + 1 == quadrature_points ? 1.0 : boost::math::cdf(beta, x_high);
    const double x_mid = (i + 0.5) / quadrature_points;
    if (cdf > previous_cdf) sum += (cdf - previous_cdf) * expected_tokens(tree, scaled(p, x_mid / mean));
    previous_cdf = cdf;
  }
  return sum;
}

MonteCarloResult simulate_cycles(const DraftTree& tree, const PositionalAcceptance& p,
                                 const MonteCarloOptions& options,
                                 const CycleTimeFunction& cycle_time_s) {
  p.validate();
  check_options(options);
  check_spread(p, options.request_accept_stddev);
  const std::vector<double> time_for = cycle_times(tree.max_depth() + 1, cycle_time_s);
  const Tally tally = simulate_requests(tree, p, options, time_for);

  MonteCarloResult out;
  out.num_cycles = std::int64_t(options.num_requests) * options.cycles_per_request;
  const double n = double(out.num_cycles);
  out.mean_tokens_per_cycle = tally.total_tokens / n;
  out.stddev_tokens_per_cycle =
      std::sqrt(std::max(0.0, (tally.sum_sq - n * out.mean_tokens_per_cycle * out.mean_tokens_per_cycle) /
                                  (n - 1.0)));
  out.mean_tokens_per_cycle_interval = mean_interval(tally.request_mean, out.mean_tokens_per_cycle, options.confidence);
  out.tokens_per_cycle = histogram_percentiles(tally.histogram, n);
  out.request_tokens_per_cycle = percentiles(tally.request_mean);
  out.closed_form_tokens_per_cycle =
      expected_tokens_with_request_spread(tree, p, options.request_accept_stddev);
  if (cycle_time_s) {
    out.tokens_per_s = tally.total_tokens / tally.total_time_s;
    out.request_tokens_per_s = percentiles(tally.request_rate);
  }
  return out;
}

MonteCarloResult simulate_cycles(const Acceptance& acceptance, const DraftShape& shape,
                                 const MonteCarloOptions& options, const CycleTimeFunction& cycle_time_s) {
  const auto setup = draft_setup(acceptance, shape);
  return simulate_cycles(setup.tree, setup.acceptance, options, cycle_time_s);
}

double nearest_rank(const std::vector<double>& sorted, double q) {
  const auto n = sorted.size();
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
  return sorted[std::min(n - 1, rank == 0 ? 0 : rank - 1)];
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace specsim
