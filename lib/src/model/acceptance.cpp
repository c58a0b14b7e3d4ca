#include "specsim/acceptance.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "specsim/error.hpp"

namespace specsim {

namespace {

constexpr int kBisectionSteps = 60;
constexpr double kRiseSlack = 1e-9;  // rates printed with 3 decimals may tie

std::string fmt(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

void check_rate(double r, std::size_t i) {
  if (!(r >= 0.0 && r <= 1.0)) {
    throw Error("acceptance rate at position " + std::to_string(i + 1) + " = " +
                std::to_string(r) + ": must lie in [0, 1]");
  }
}
}  // namespace

double chain_tokens_per_cycle(std::span<const double> conditional) {
  double tau = 1.0;
  double reach = 1.0;  // probability that every position up to i is accepted
  for (std::size_t i = 0; i < conditional.size(); ++i) {
    check_rate(conditional[i], i);
    reach *= conditional[i];
    tau += reach;
  }
  return tau;
}

double leviathan_tokens_per_cycle(double alpha, int num_draft_tokens) {
  check_rate(alpha, 0);
  if (num_draft_tokens < 0) throw Error("number of draft tokens must be >= 0");
  if (alpha == 1.0) return num_draft_tokens + 1.0;
  return (1.0 - std::pow(alpha, num_draft_tokens + 1)) / (1.0 - alpha);
}

std::vector<double> conditional_from_unconditional(std::span<const double> a) {
  std::vector<double> b;
  b.reserve(a.size());
  double previous = 1.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    check_rate(a[i], i);
    if (a[i] > previous + 1e-9) {
      throw Error("unconditional acceptance must not rise with position: a_" + std::to_string(i + 1) +
                  " = " + std::to_string(a[i]) + " > a_" + std::to_string(i) + " = " +
                  std::to_string(previous));
    }
    b.push_back(previous > 0.0 ? std::min(1.0, a[i] / previous) : 0.0);
    previous = a[i];
  }
  return b;
}

std::vector<double> unconditional_from_conditional(std::span<const double> b) {
  std::vector<double> a;
  a.reserve(b.size());
  double reach = 1.0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    check_rate(b[i], i);
    reach *= b[i];
    a.push_back(reach);
  }
  return a;
}

double constant_rate_for_tokens_per_cycle(double tokens_per_cycle, int num_draft_tokens) {
  if (num_draft_tokens < 1) {
    throw Error("number of draft tokens = " + std::to_string(num_draft_tokens) + ": must be >= 1");
  }
  if (!(tokens_per_cycle >= 1.0 && tokens_per_cycle <= num_draft_tokens + 1.0)) {
    throw Error("tokens per cycle = " + fmt(tokens_per_cycle) + ": must lie in [1, k + 1] = [1, " +
                std::to_string(num_draft_tokens + 1) + "] for k = " +
                std::to_string(num_draft_tokens) + " draft tokens");
  }
  // Eq. 1 rises strictly with alpha on [0, 1]; 60 halvings reach double precision.
  double lo = 0.0, hi = 1.0;
  for (int i = 0; i < kBisectionSteps; ++i) {
    const double mid = 0.5 * (lo + hi);
    (leviathan_tokens_per_cycle(mid, num_draft_tokens) < tokens_per_cycle ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

namespace {

struct KindName {
  AcceptanceKind kind;
  std::string_view name;
};
constexpr KindName kKindNames[] = {
    {AcceptanceKind::kConstant, "constant"},       {AcceptanceKind::kDepthDecay, "depth_decay"},
    {AcceptanceKind::kConditional, "conditional"}, {AcceptanceKind::kUnconditional, "unconditional"},
    {AcceptanceKind::kMeasured, "measured"},       {AcceptanceKind::kTree, "tree"},
};

bool is_chain(AcceptanceKind kind) {
  return kind == AcceptanceKind::kConstant || kind == AcceptanceKind::kDepthDecay ||
         kind == AcceptanceKind::kConditional || kind == AcceptanceKind::kUnconditional;
}

std::string field(std::string_view name, const std::string& value, std::string_view rule) {
  return "acceptance." + std::string(name) + " = " + value + ": " + std::string(rule);
}

// The tree kind's p_1..p_R before the depth decay is applied.
std::vector<double> tree_base_vector(const AcceptanceModel& m) {
  if (!m.position_rates.empty()) return m.position_rates;
  return positional_vector_from_accept(m.accept_rate, std::max(1, m.eagle_topk), m.sibling_exponent);
}

}  // namespace

std::string_view to_string(AcceptanceKind kind) {
  for (const auto& k : kKindNames) {
    if (k.kind == kind) return k.name;
  }
  return "?";
}

AcceptanceKind parse_acceptance_kind(std::string_view text) {
  std::string valid;
  for (const auto& k : kKindNames) {
    if (k.name == text) return k.kind;
    valid += (valid.empty() ? "" : ", ") + std::string(k.name);
  }
  throw Error("acceptance kind '" + std::string(text) + "' is unknown; valid kinds: " + valid);
}

std::vector<std::string> acceptance_problems(const AcceptanceModel& m) {
  std::vector<std::string> out;
  const bool uses_accept_rate = m.kind == AcceptanceKind::kConstant ||
                                m.kind == AcceptanceKind::kDepthDecay ||
                                (m.kind == AcceptanceKind::kTree && m.position_rates.empty());
  if (uses_accept_rate && !(m.accept_rate >= 0.0 && m.accept_rate <= 1.0)) {
    out.push_back(field("accept_rate", fmt(m.accept_rate), "must lie in [0, 1]"));
  }
  if ((m.kind == AcceptanceKind::kDepthDecay || m.kind == AcceptanceKind::kTree) &&
      !(m.depth_decay > 0.0 && m.depth_decay <= 1.0)) {
    out.push_back(field("depth_decay", fmt(m.depth_decay), "must lie in (0, 1]"));
  }
  if (m.num_draft_steps < 1) {
    out.push_back(field("num_draft_steps", std::to_string(m.num_draft_steps), "must be >= 1"));
  }
  const bool per_position =
      m.kind == AcceptanceKind::kConditional || m.kind == AcceptanceKind::kUnconditional;
  if (per_position && m.num_draft_steps >= 1 &&
      m.position_rates.size() < static_cast<std::size_t>(m.num_draft_steps)) {
    out.push_back(field("position_rates", std::to_string(m.position_rates.size()) + " entries",
                        "must have at least num_draft_steps = " + std::to_string(m.num_draft_steps)));
  }
  if (per_position || m.kind == AcceptanceKind::kTree) {
    for (std::size_t i = 0; i < m.position_rates.size(); ++i) {
      const double r = m.position_rates[i];
      if (!(r >= 0.0 && r <= 1.0)) {
        out.push_back(field("position_rates[" + std::to_string(i) + "]", fmt(r), "must lie in [0, 1]"));
      }
    }
  }
  if (m.kind == AcceptanceKind::kUnconditional) {
    for (std::size_t i = 1; i < m.position_rates.size(); ++i) {
      if (m.position_rates[i] > m.position_rates[i - 1] + kRiseSlack) {
        out.push_back(field("position_rates[" + std::to_string(i) + "]", fmt(m.position_rates[i]),
                            "unconditional rates a_i = b_1*...*b_i cannot rise with position (a_" +
                                std::to_string(i) + " = " + fmt(m.position_rates[i - 1]) +
                                "); were conditional rates meant?"));
      }
    }
  }
  if (m.kind == AcceptanceKind::kTree) {
    if (m.eagle_topk < 1) {
      out.push_back(field("eagle_topk", std::to_string(m.eagle_topk), "must be >= 1"));
    }
    if (!m.position_rates.empty()) {
      double sum = 0.0;
      for (double r : m.position_rates) sum += r;
      if (sum > 1.0 + kRiseSlack) {
        out.push_back(field("position_rates", "sum " + fmt(sum),
                            "tree rates p_k are exclusive among siblings, so they must sum to <= 1"));
      }
      for (std::size_t i = 1; i < m.position_rates.size(); ++i) {
        if (m.position_rates[i] > m.position_rates[i - 1] + kRiseSlack) {
          out.push_back(field("position_rates[" + std::to_string(i) + "]",
                              fmt(m.position_rates[i]),
                              "tree rates are by draft rank and must not rise with rank"));
        }
      }
    } else if (!(m.sibling_exponent > 0.0)) {
      out.push_back(field("sibling_exponent", fmt(m.sibling_exponent), "must be > 0"));
    }
    if (m.eagle_topk > 1 && m.num_draft_steps >= 1) {
      const long long candidates =
          m.eagle_topk + static_cast<long long>(m.num_draft_steps - 1) * m.eagle_topk * m.eagle_topk;
      if (m.num_draft_tokens < 2 || m.num_draft_tokens - 1 > candidates) {
        out.push_back(field("num_draft_tokens", std::to_string(m.num_draft_tokens),
                            "must lie in [2, 1 + topk + (num_steps - 1) * topk^2] = [2, " +
                                std::to_string(1 + candidates) + "]"));
      }
    }
  }
  if (m.kind == AcceptanceKind::kMeasured && m.num_draft_steps >= 1 &&
      !(m.measured_tokens_per_cycle >= 1.0 && m.measured_tokens_per_cycle <= m.num_draft_steps + 1.0)) {
    out.push_back(field("measured_tokens_per_cycle", fmt(m.measured_tokens_per_cycle),
                        "must lie in [1, num_draft_steps + 1] = [1, " +
                            std::to_string(m.num_draft_steps + 1) + "] (tau counts the bonus token)"));
  }
  return out;
}

void validate(const AcceptanceModel& model) {
  const auto problems = acceptance_problems(model);
  if (problems.empty()) return;
  std::string message;
  for (const auto& p : problems) message += (message.empty() ? "" : "; ") + p;
  throw Error(message);
}

std::vector<double> positional_vector_from_accept(double accept_rate, int ranks,
                                                  double sibling_exponent) {
  check_rate(accept_rate, 0);
  if (ranks < 1) throw Error("ranks = " + std::to_string(ranks) + ": must be >= 1");
  if (!(sibling_exponent > 0.0)) {
    throw Error("sibling exponent = " + fmt(sibling_exponent) + ": must be > 0");
  }
  // r_k = (1 - p_1) k^-b, the probability that the first k ranked children are all rejected.
  std::vector<double> p{accept_rate};
  double rejected_before = 1.0 - accept_rate;
  for (int k = 2; k <= ranks; ++k) {
    const double rejected = (1.0 - accept_rate) * std::pow(k, -sibling_exponent);
    p.push_back(rejected_before - rejected);
    rejected_before = rejected;
  }
  return p;
}

std::vector<double> chain_conditional_rates(const AcceptanceModel& m) {
  validate(m);
  const auto k = static_cast<std::size_t>(m.num_draft_steps);
  switch (m.kind) {
    case AcceptanceKind::kConstant:
      return std::vector<double>(k, m.accept_rate);
    case AcceptanceKind::kDepthDecay: {
      std::vector<double> b;
      for (std::size_t i = 0; i < k; ++i) b.push_back(m.accept_rate * std::pow(m.depth_decay, i));
      return b;
    }
    case AcceptanceKind::kConditional:
      return {m.position_rates.begin(), m.position_rates.begin() + k};
    case AcceptanceKind::kUnconditional: {
      auto b = conditional_from_unconditional(m.position_rates);
      b.resize(k);
      return b;
    }
    case AcceptanceKind::kMeasured:
      return std::vector<double>(
          k, constant_rate_for_tokens_per_cycle(m.measured_tokens_per_cycle, m.num_draft_steps));
    case AcceptanceKind::kTree:
      break;
  }
  throw Error("acceptance kind 'tree' has no chain rates; use draft_setup()");
}

DraftSetup draft_setup(const AcceptanceModel& m) {
  validate(m);
  if (m.kind != AcceptanceKind::kTree) {
    const auto b = chain_conditional_rates(m);
    return {DraftTree::chain(m.num_draft_steps), PositionalAcceptance::chain(b)};
  }
  // One row per depth: p scaled by depth_decay^(d-1), the tree analogue of the chain decay.
  const auto base = tree_base_vector(m);
  PositionalAcceptance p;
  for (int d = 1; d <= m.num_draft_steps; ++d) {
    std::vector<double> row = base;
    for (double& v : row) v *= std::pow(m.depth_decay, d - 1);
    p.rows.push_back(std::move(row));
    if (m.depth_decay == 1.0) break;  // one row serves every depth
  }
  const SglangTreeParams params{m.num_draft_steps, m.eagle_topk, m.num_draft_tokens};
  return {sglang_tree(params, p), std::move(p)};
}

double tokens_per_cycle(const AcceptanceModel& m) {
  validate(m);
  if (m.kind == AcceptanceKind::kMeasured) return m.measured_tokens_per_cycle;
  if (is_chain(m.kind)) return chain_tokens_per_cycle(chain_conditional_rates(m));
  const auto setup = draft_setup(m);
  return expected_tokens(setup.tree, setup.acceptance);
}

int draft_steps(const AcceptanceModel& m) {
  validate(m);
  return m.num_draft_steps;
}

int verified_tokens_per_request(const AcceptanceModel& m) {
  validate(m);
  if (m.kind == AcceptanceKind::kTree && m.eagle_topk > 1) return m.num_draft_tokens;
  return m.num_draft_steps + 1;
}

bool accept_rate_applies(AcceptanceKind kind) { return kind != AcceptanceKind::kMeasured; }

AcceptanceModel with_accept_rate(AcceptanceModel m, double accept_rate) {
  if (!(accept_rate >= 0.0 && accept_rate <= 1.0)) {
    throw Error(field("accept_rate", fmt(accept_rate), "must lie in [0, 1]"));
  }
  switch (m.kind) {
    case AcceptanceKind::kConstant:
    case AcceptanceKind::kDepthDecay:
      m.accept_rate = accept_rate;
      break;
    case AcceptanceKind::kConditional:
    case AcceptanceKind::kUnconditional: {
      validate(m);
      auto b = m.kind == AcceptanceKind::kConditional
                   ? m.position_rates
                   : conditional_from_unconditional(m.position_rates);
      if (b.front() <= 0.0) {
        throw Error(field("position_rates[0]", fmt(b.front()),
                          "a profile with b_1 = 0 cannot be scaled to an acceptance rate"));
      }
      const double scale = accept_rate / b.front();
      for (double& v : b) v = std::min(1.0, v * scale);
      m.position_rates =
          m.kind == AcceptanceKind::kConditional ? b : unconditional_from_conditional(b);
      break;
    }
    case AcceptanceKind::kTree:
      if (m.position_rates.empty()) {
        m.accept_rate = accept_rate;
      } else {
        validate(m);
        const double p1 = m.position_rates.front();
        const double scale = p1 < 1.0 ? (1.0 - accept_rate) / (1.0 - p1) : 0.0;
        m.position_rates.front() = accept_rate;
        for (std::size_t k = 1; k < m.position_rates.size(); ++k) m.position_rates[k] *= scale;
      }
      break;
    case AcceptanceKind::kMeasured:
      break;
  }
  return m;
}

}  // namespace specsim
