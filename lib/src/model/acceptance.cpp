#include "specsim/acceptance.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>

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

// One callable per alternative of a std::visit.
template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;  // clang 14 deduces no aggregate template arguments without it

// Indexed like the alternatives of AcceptanceKind.
constexpr std::string_view kKindNames[] = {"constant", "depth_decay", "conditional", "unconditional", "measured"};
static_assert(std::size(kKindNames) == std::variant_size_v<AcceptanceKind>);

std::string field(std::string_view name, const std::string& value, std::string_view rule) {
  return "acceptance." + std::string(name) + " = " + value + ": " + std::string(rule);
}

// A list shorter than the draft repeats its last entry (a flat tail), a longer one is cut. `v`
// is not empty and k >= 1 (acceptance_problems says so first).
std::vector<double> stretched(std::vector<double> v, int k) {
  while (static_cast<int>(v.size()) < k) v.push_back(v.back());
  v.resize(static_cast<std::size_t>(k));
  return v;
}

// The listed rates of a per-position kind, or null for the others.
const std::vector<double>* listed_rates(const AcceptanceKind& kind) {
  if (const auto* c = std::get_if<ConditionalChain>(&kind)) return &c->rates;
  if (const auto* u = std::get_if<UnconditionalChain>(&kind)) return &u->rates;
  return nullptr;
}

// The scenario key a kind's rates are read from, for messages.
std::string rates_key(const AcceptanceKind& kind) {
  if (std::holds_alternative<UnconditionalChain>(kind)) return "unconditional";
  if (std::holds_alternative<ConditionalChain>(kind)) return "per_position";
  return "depth_profile";
}

// The first k listed unconditional rates as conditional ones: positions past the draft are cut
// before they are checked, so a rise there is no problem (it is never used).
std::vector<double> used_conditional(const UnconditionalChain& u, int k) {
  const std::size_t used = std::min(u.rates.size(), static_cast<std::size_t>(std::max(k, 1)));
  return conditional_from_unconditional(std::span<const double>(u.rates).first(used));
}

// b_1..b_k of the chain kinds, unchecked.
std::vector<double> chain_rates(const AcceptanceKind& kind, int k) {
  return std::visit(
      Overloaded{
          [k](const ConstantChain& c) {
            if (c.depth_profile.empty()) return std::vector<double>(static_cast<std::size_t>(k), c.accept);
            std::vector<double> b;
            for (double f : stretched(c.depth_profile, k)) b.push_back(std::clamp(c.accept * f, 0.0, 1.0));
            return b;
          },
          [k](const DepthDecayChain& c) {
            std::vector<double> b;
            for (std::size_t i = 0; i < static_cast<std::size_t>(k); ++i) {
              b.push_back(c.accept * std::pow(c.depth_decay, i));
            }
            return b;
          },
          [k](const ConditionalChain& c) { return stretched(c.rates, k); },
          [k](const UnconditionalChain& u) { return stretched(used_conditional(u, k), k); },
          [k](const MeasuredTau& m) {
            return std::vector<double>(static_cast<std::size_t>(k),
                                       constant_rate_for_tokens_per_cycle(m.tokens_per_cycle, k));
          },
      },
      kind);
}

// The top-ranked child's acceptance at depth 1 of a tree: the chain's b_1 (accept x
// depth_profile[0] for a constant chain with a profile, as on the chain).
double tree_first_rate(const AcceptanceKind& kind) {
  if (std::holds_alternative<MeasuredTau>(kind)) return 0.0;
  return chain_rates(kind, 1).front();
}

// A tree scales each depth geometrically: the decay, or a depth profile's mean decay per level.
double tree_depth_decay(const AcceptanceKind& kind) {
  if (const auto* d = std::get_if<DepthDecayChain>(&kind)) return d->depth_decay;
  const auto* c = std::get_if<ConstantChain>(&kind);
  if (!c || c->depth_profile.size() < 2 || !(c->depth_profile.front() > 0)) return 1.0;
  const double ratio = c->depth_profile.back() / c->depth_profile.front();
  return std::clamp(std::pow(ratio, 1.0 / double(c->depth_profile.size() - 1)), 1e-6, 1.0);
}

// The tree's p_1..p_R before the depth decay is applied.
std::vector<double> tree_base_vector(const Acceptance& a, const DraftShape& shape) {
  if (!a.siblings.positional.empty()) return a.siblings.positional;
  return positional_vector_from_accept(tree_first_rate(a.kind), std::max(1, shape.eagle_topk), a.siblings.exponent);
}

// "tree_positional[2]": 1-based, as a reader counts the items of a list.
std::string item(const std::string& key, std::size_t i) { return key + "[" + std::to_string(i + 1) + "]"; }

// Measured p: each in [0, 1], exclusive among siblings (sum <= 1), not rising with rank.
void sibling_problems(const std::vector<double>& p, std::vector<std::string>& out) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (!(p[i] >= 0.0 && p[i] <= 1.0)) out.push_back(field(item("tree_positional", i), fmt(p[i]), "must lie in [0, 1]"));
  }
  if (p.empty()) return;
  double sum = 0.0;
  for (double r : p) sum += r;
  if (sum > 1.0 + kRiseSlack) {
    out.push_back(field("tree_positional", "sum " + fmt(sum),
                        "tree rates p_k are exclusive among siblings, so they must sum to <= 1"));
  }
  for (std::size_t i = 1; i < p.size(); ++i) {
    if (p[i] > p[i - 1] + kRiseSlack) {
      out.push_back(field(item("tree_positional", i), fmt(p[i]), "tree rates are by draft rank and must not rise with rank"));
    }
  }
}

// The rates the draft reaches, named by their scenario key: `accept` (and the library's
// depth_decay), or each listed b_i up to k. A depth profile is clamped into [0, 1] as it is used.
void rate_problems(const AcceptanceKind& kind, int k, std::vector<std::string>& out) {
  const auto accept_problem = [&out](double accept) {
    if (!(accept >= 0.0 && accept <= 1.0)) out.push_back(field("accept", fmt(accept), "must lie in [0, 1]"));
  };
  if (const auto* c = std::get_if<ConstantChain>(&kind)) accept_problem(c->accept);
  if (const auto* d = std::get_if<DepthDecayChain>(&kind)) {
    accept_problem(d->accept);
    if (!(d->depth_decay > 0.0 && d->depth_decay <= 1.0)) {
      out.push_back(field("depth_decay", fmt(d->depth_decay), "must lie in (0, 1]"));
    }
  }
  if (listed_rates(kind) == nullptr || k < 1) return;
  const auto b = chain_rates(kind, k);
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (!(b[i] >= 0.0 && b[i] <= 1.0)) out.push_back(field(item(rates_key(kind), i), fmt(b[i]), "must lie in [0, 1]"));
  }
}

void chain_problems(const Acceptance& a, const DraftShape& shape, std::vector<std::string>& out) {
  const int k = shape.num_steps;
  if (const auto* m = std::get_if<MeasuredTau>(&a.kind)) {
    if (k >= 1 && !(m->tokens_per_cycle >= 1.0 && m->tokens_per_cycle <= k + 1.0)) {
      out.push_back(field("tokens_per_cycle", fmt(m->tokens_per_cycle),
                          "must lie in [1, speculation.num_steps + 1] = [1, " + std::to_string(k + 1) +
                              "] (tau counts the bonus token)"));
    }
    return;
  }
  rate_problems(a.kind, k, out);
}

void tree_problems(const Acceptance& a, const DraftShape& shape, std::vector<std::string>& out) {
  rate_problems(a.kind, shape.num_steps, out);
  const auto& p = a.siblings.positional;
  sibling_problems(p, out);
  if (p.empty() && !(a.siblings.exponent > 0.0)) {
    out.push_back(field("sibling_exponent", fmt(a.siblings.exponent), "must be > 0"));
  }
}

// What makes the rates unusable before any other rule is checked, alone: a listed profile with no
// entry, or unconditional rates the draft reaches out of [0, 1] or rising (conditional_from_
// unconditional's rule).
std::optional<std::string> unusable(const Acceptance& a, const DraftShape& shape) {
  if (const auto* rates = listed_rates(a.kind); rates && rates->empty()) {
    return field(rates_key(a.kind), "0 entries", "must have at least one");
  }
  if (const auto* u = std::get_if<UnconditionalChain>(&a.kind)) {
    try {
      (void)used_conditional(*u, shape.num_steps);
    } catch (const Error& e) {
      return "acceptance.unconditional: " + std::string(e.what());
    }
  }
  return std::nullopt;
}

}  // namespace

std::size_t listed_positions(const AcceptanceKind& kind) {
  const auto* rates = listed_rates(kind);
  return rates ? rates->size() : 0;
}

bool prices_a_tree(const Acceptance& a, const DraftShape& shape) {
  return shape.eagle_topk > 1 && !std::holds_alternative<MeasuredTau>(a.kind);
}

std::string_view to_string(const AcceptanceKind& kind) { return kKindNames[kind.index()]; }

AcceptanceKind parse_acceptance_kind(std::string_view text) {
  const AcceptanceKind kinds[] = {ConstantChain{}, DepthDecayChain{}, ConditionalChain{}, UnconditionalChain{},
                                  MeasuredTau{}};
  std::string valid;
  for (const auto& kind : kinds) {
    if (to_string(kind) == text) return kind;
    valid += (valid.empty() ? "" : ", ") + std::string(to_string(kind));
  }
  throw Error("acceptance kind '" + std::string(text) + "' is unknown; valid kinds: " + valid);
}

std::vector<std::string> acceptance_problems(const Acceptance& a, const DraftShape& shape) {
  std::vector<std::string> out = draft_shape_problems(shape);
  if (auto problem = unusable(a, shape)) {
    out.push_back(*problem);
    return out;
  }
  if (prices_a_tree(a, shape)) {
    tree_problems(a, shape, out);
  } else {
    chain_problems(a, shape, out);
  }
  return out;
}

void validate(const Acceptance& a, const DraftShape& shape) {
  const auto problems = acceptance_problems(a, shape);
  if (problems.empty()) return;
  std::string message;
  for (const auto& p : problems) message += (message.empty() ? "" : "; ") + p;
  throw Error(message);
}

MeasuredTau tau_from_draft_acceptance_rate(double rate, const DraftShape& shape) {
  if (!(rate >= 0.0 && rate <= 1.0)) throw Error("draft acceptance rate = " + fmt(rate) + ": must lie in [0, 1]");
  const MeasuredTau tau{1.0 + rate * (shape.num_draft_tokens - 1)};
  std::string message;
  for (auto p : acceptance_problems(Acceptance{tau, {}}, shape)) {
    // The tau a rule names is this rate's, not a key the user wrote.
    if (const std::string key = "acceptance.tokens_per_cycle "; p.rfind(key, 0) == 0) p = "tau " + p.substr(key.size());
    message += (message.empty() ? "" : "; ") + p;
  }
  if (!message.empty()) {
    throw Error("= " + fmt(rate) + " gives tau " + fmt(tau.tokens_per_cycle) + " at " +
                std::to_string(shape.num_draft_tokens) + " draft tokens, which the draft cannot emit: " + message);
  }
  return tau;
}

std::optional<double> averaged_rate_reading(const Acceptance& acceptance, const DraftShape& shape) {
  const auto* single = std::get_if<ConstantChain>(&acceptance.kind);
  if (!single || !single->depth_profile.empty() || shape.eagle_topk != 1 || shape.num_steps < 2) return std::nullopt;
  // On a chain the rate's tau is always one the draft can emit.
  return tau_from_draft_acceptance_rate(single->accept, shape).tokens_per_cycle;
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

std::vector<double> chain_conditional_rates(const Acceptance& a, const DraftShape& shape) {
  validate(a, shape);
  if (prices_a_tree(a, shape)) {
    throw Error("acceptance on a tree (eagle_topk = " + std::to_string(shape.eagle_topk) +
                ") has no chain rates; use draft_setup()");
  }
  return chain_rates(a.kind, shape.num_steps);
}

DraftSetup draft_setup(const Acceptance& a, const DraftShape& shape) {
  validate(a, shape);
  if (!prices_a_tree(a, shape)) {
    const auto b = chain_conditional_rates(a, shape);
    return {DraftTree::chain(shape.num_steps), PositionalAcceptance::chain(b)};
  }
  // One row per depth: p scaled by depth_decay^(d-1), the tree analogue of the chain decay.
  const auto base = tree_base_vector(a, shape);
  const double decay = tree_depth_decay(a.kind);
  PositionalAcceptance p;
  for (int d = 1; d <= shape.num_steps; ++d) {
    std::vector<double> row = base;
    for (double& v : row) v *= std::pow(decay, d - 1);
    p.rows.push_back(std::move(row));
    if (decay == 1.0) break;  // one row serves every depth
  }
  return {sglang_tree(shape, p), std::move(p)};
}

double tokens_per_cycle(const Acceptance& a, const DraftShape& shape) {
  validate(a, shape);
  if (const auto* m = std::get_if<MeasuredTau>(&a.kind)) return m->tokens_per_cycle;
  if (!prices_a_tree(a, shape)) return chain_tokens_per_cycle(chain_conditional_rates(a, shape));
  const auto setup = draft_setup(a, shape);
  return expected_tokens(setup.tree, setup.acceptance);
}

bool accept_rate_replaces(const AcceptanceKind& kind) { return std::holds_alternative<MeasuredTau>(kind); }

namespace {

// b_i' = min(1, b_i * A / b_1): the profile's shape kept, its level moved. `key` names the list.
std::vector<double> scaled_profile(std::vector<double> b, double accept_rate, const std::string& key) {
  if (b.empty()) throw Error(field(key, "0 entries", "must have at least one"));
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (!(b[i] >= 0.0 && b[i] <= 1.0)) throw Error(field(item(key, i), fmt(b[i]), "must lie in [0, 1]"));
  }
  if (b.front() <= 0.0) {
    throw Error(field(item(key, 0), fmt(b.front()), "a profile with b_1 = 0 cannot be scaled to an acceptance rate"));
  }
  const double scale = accept_rate / b.front();
  for (double& v : b) v = std::min(1.0, v * scale);
  return b;
}

// Unconditional rates scaled through their conditional ones. Only the positions before the first
// rise can be converted; a rise is refused where a draft reaches it (acceptance_problems), so the
// positions from it on are kept as listed.
std::vector<double> scaled_unconditional(const std::vector<double>& a, double accept_rate) {
  std::size_t usable = 0;
  for (double previous = 1.0; usable < a.size() && a[usable] <= previous + kRiseSlack; ++usable) previous = a[usable];
  auto out = unconditional_from_conditional(scaled_profile(
      conditional_from_unconditional(std::span<const double>(a).first(usable)), accept_rate, "unconditional"));
  out.insert(out.end(), a.begin() + static_cast<std::ptrdiff_t>(usable), a.end());
  return out;
}

}  // namespace

Acceptance with_accept_rate(Acceptance a, double accept_rate) {
  if (!(accept_rate >= 0.0 && accept_rate <= 1.0)) {
    throw Error(field("accept", fmt(accept_rate), "must lie in [0, 1]"));
  }
  // A measured tau has no first-position rate to scale: A states one, so Leviathan's constant chain
  // at A takes its place (accept_rate_replaces lets the CLI say so).
  if (accept_rate_replaces(a.kind)) a.kind = ConstantChain{accept_rate, {}};
  std::visit(Overloaded{
                 [&](ConstantChain& c) { c.accept = accept_rate; },
                 [&](DepthDecayChain& c) { c.accept = accept_rate; },
                 [&](ConditionalChain& c) { c.rates = scaled_profile(c.rates, accept_rate, "per_position"); },
                 [&](UnconditionalChain& u) { u.rates = scaled_unconditional(u.rates, accept_rate); },
                 [](MeasuredTau&) {},
             },
             a.kind);
  auto& p = a.siblings.positional;
  if (!p.empty()) {
    std::vector<std::string> problems;
    sibling_problems(p, problems);
    if (!problems.empty()) throw Error(problems.front());
    const double p1 = p.front();
    const double scale = p1 < 1.0 ? (1.0 - accept_rate) / (1.0 - p1) : 0.0;
    p.front() = accept_rate;
    for (std::size_t k = 1; k < p.size(); ++k) p[k] *= scale;
  }
  return a;
}

}  // namespace specsim
