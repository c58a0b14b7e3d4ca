// Acceptance: how many tokens one draft-and-verify cycle emits on average (tau, the bonus token
// included), from the rates engines and papers report. Conditional rates b_i (position i accepted
// given 1..i-1 were) and unconditional rates a_i = b_1 * ... * b_i (vLLM's "per-position acceptance
// rate") are different things; every function here says which it takes.
//
// Acceptance gathers the ways a user can state acceptance, one struct per kind (docs/acceptance.md
// has the formulas, the mapping of `--accept A` onto each kind, and the sources). It is built once,
// when a scenario is loaded, and every function below takes it with the draft's shape (DraftShape,
// draft_tree.hpp), which it never copies: the same acceptance is priced on a chain or on a tree as
// the shape says. Every kind reduces to a draft tree plus a positional acceptance: chains are trees
// with one child per level, so the closed form, the Monte Carlo and the cycle model share one
// description.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "specsim/draft_tree.hpp"

namespace specsim {

// tau of a chain from conditional rates: 1 + sum_i prod_{j<=i} b_j (Sequoia Prop. 3.4 for a chain).
// Each rate must lie in [0, 1]; throws specsim::Error otherwise.
[[nodiscard]] double chain_tokens_per_cycle(std::span<const double> conditional);

// Leviathan et al. 2023, Eq. 1: tau = (1 - alpha^(k+1)) / (1 - alpha); k + 1 when alpha = 1.
[[nodiscard]] double leviathan_tokens_per_cycle(double alpha, int num_draft_tokens);

// Unconditional per-position rates a_i (as vLLM logs them) to conditional b_i = a_i / a_{i-1}.
// A zero a_{i-1} makes every later b_i zero.
[[nodiscard]] std::vector<double> conditional_from_unconditional(std::span<const double> a);

// Conditional b_i to unconditional a_i = b_1 * ... * b_i.
[[nodiscard]] std::vector<double> unconditional_from_conditional(std::span<const double> b);

// The constant alpha whose Leviathan chain of k draft tokens yields tau (inverse of Eq. 1, by
// bisection; tau must lie in [1, k + 1]).
[[nodiscard]] double constant_rate_for_tokens_per_cycle(double tokens_per_cycle, int num_draft_tokens);

// A two-sided interval, for measured (engine_log.hpp) and simulated (monte_carlo.hpp) rates.
struct ConfidenceInterval {
  double low = 0.0;
  double high = 0.0;
  double confidence = 0.95;  // two-sided coverage
};

// Chain kinds give the conditional rate b_i of the top-ranked draft token at each depth i. A list
// shorter than the draft repeats its last entry (a flat tail); a longer one is cut, so one measured
// profile serves several k.

// b_i = accept * depth_profile[i-1], clamped to [0, 1]; an empty profile is Leviathan's i.i.d.
// alpha. The scenario's `acceptance: {accept, depth_profile}`.
struct ConstantChain {
  // 0.7: EAGLE-3's conditional rate is roughly flat at 0.7-0.8 (vLLM dynamic-SD stats, InferenceX
  // #1737; docs/references/specdec.md#depth-decay); the Kimi EAGLE-3-MLA draft on chat traffic sits
  // lower (45-55 % per position, rtx6kpro).
  double accept = 0.7;
  std::vector<double> depth_profile;  // b_i / b_1 by depth (the shape of a measured profile)
};

// b_i = accept * depth_decay^(i-1). 1 = EAGLE-3's flat profile; vLLM's MRV2 synthetic acceptance
// uses >= 0.85 "for well-tuned draft models" (vLLM PR 38045/41035).
struct DepthDecayChain {
  double accept = 0.7;
  double depth_decay = 1.0;
};

// b_1..b_m given directly. The scenario's `acceptance: {per_position}`, predict's
// --accept-per-position.
struct ConditionalChain {
  std::vector<double> rates;
};

// a_1..a_m as vLLM and llama.cpp log them; b_i = a_i / a_{i-1}. The scenario's
// `acceptance: {unconditional}`, rates pooled from engine logs.
struct UnconditionalChain {
  std::vector<double> rates;
};

// tau given directly, the bonus token included (SGLang accept len, vLLM Mean acceptance length):
// the same on a chain and on a tree. The scenario's `acceptance: {tokens_per_cycle}`.
struct MeasuredTau {
  double tokens_per_cycle = 0.0;
};

using AcceptanceKind =
    std::variant<ConstantChain, DepthDecayChain, ConditionalChain, UnconditionalChain, MeasuredTau>;

// On a tree (eagle_topk > 1), how a node's ranked children share acceptance: Sequoia's p_k, the
// probability that the rank-k child is the accepted one (siblings exclusive, sum <= 1). Row d of
// the tree's acceptance is p scaled by the chain's decay per depth (depth_decay, or the mean decay
// of a depth profile); p_1 comes from the chain's b_1 unless `positional` is measured.
struct SiblingAcceptance {
  // p_1..p_R measured (Sequoia tests/test_accept.py): the scenario's `tree_positional`. Empty =
  // p_1 from the chain's b_1 and p_k (k >= 2) from the power law below.
  std::vector<double> positional;
  // Sequoia's "b power-law" rejection (Theorem 3.6): the probability that the first k children are
  // all rejected is r_k = (1 - p_1) * k^(-b), so p_k = r_{k-1} - r_k. 0.5 is an assumption, not a
  // measurement: with it 29 % of the top-1 misses are caught by the second-ranked token.
  double exponent = 0.5;
};

struct Acceptance {
  AcceptanceKind kind;  // ConstantChain{0.7} by default
  SiblingAcceptance siblings;  // trees only; a chain or a measured tau ignores it
};

// The kind's name in files, CLI messages and docs: "constant", "depth_decay", "conditional",
// "unconditional", "measured".
[[nodiscard]] std::string_view to_string(const AcceptanceKind& kind);
// The kind `text` names, default-constructed; throws specsim::Error listing the valid names.
[[nodiscard]] AcceptanceKind parse_acceptance_kind(std::string_view text);

// How many positions a per-position kind lists (ConditionalChain, UnconditionalChain); 0 for the
// others. A list longer than the draft is cut, a shorter one repeats its last rate
// (position_mismatch_warning in engine_log.hpp says so).
[[nodiscard]] std::size_t listed_positions(const AcceptanceKind& kind);

// Every problem of `acceptance` on `shape` at once ("acceptance.depth_decay = 1.5: must lie in
// (0, 1]"), empty when valid.
[[nodiscard]] std::vector<std::string> acceptance_problems(const Acceptance& acceptance, const DraftShape& shape);
// Throws specsim::Error joining acceptance_problems with "; " when there are any.
void validate(const Acceptance& acceptance, const DraftShape& shape);

// tau from an engine's average acceptance over the drafted tokens at `shape` (vLLM V1's "Avg Draft
// acceptance rate", accepted / drafted; not SGLang's accept rate, tau / num_draft_tokens):
// 1 + rate x (num_draft_tokens - 1), docs/acceptance.md#rates. Throws specsim::Error, naming the tau
// and why, where the rate is outside [0, 1] or the shape cannot emit that tau.
[[nodiscard]] MeasuredTau tau_from_draft_acceptance_rate(double rate, const DraftShape& shape);

// A single rate given with no depth profile (`acceptance.accept` alone, `--accept A`) is read as
// every position's conditional rate (Leviathan's alpha). A published "acceptance rate" is as often
// vLLM's average over the drafted tokens (accepted / drafted), which on a chain of K steps is tau =
// 1 + rate x K (docs/acceptance.md#rates). The weight a prediction's band gives that second reading:
// no public figure says which a user's number is, so the two weigh the same.
inline constexpr double kAveragedRateReadingWeight = 0.5;
// The second reading's tau on `shape`: a chain of 2 or more steps given one rate and no profile;
// nullopt elsewhere (K = 1, where the two coincide; a profile, which says what the rate is; a tree,
// whose averages the engines define apart; a per-position list or a measured tau).
[[nodiscard]] std::optional<double> averaged_rate_reading(const Acceptance& acceptance, const DraftShape& shape);

// Whether `acceptance` is priced as SGLang's tree on `shape`: every kind but a measured tau, once
// the shape branches (eagle_topk > 1). A measured tau already says what a cycle emits.
[[nodiscard]] bool prices_a_tree(const Acceptance& acceptance, const DraftShape& shape);

// The positional vector p_1..p_ranks without measured rates (the power law above).
[[nodiscard]] std::vector<double> positional_vector_from_accept(double accept_rate, int ranks,
                                                                double sibling_exponent);

// The chain's conditional rates b_1..b_k, k = shape.num_steps (MeasuredTau: the constant alpha
// of constant_rate_for_tokens_per_cycle). Throws on a tree shape, where a measured tau is the
// only kind that stays a chain.
[[nodiscard]] std::vector<double> chain_conditional_rates(const Acceptance& acceptance, const DraftShape& shape);

// The tree verified each cycle and its positional acceptance: the shared description behind
// tokens_per_cycle and the Monte Carlo. A chain shape (or a measured tau) gives a chain of k; a
// tree shape gives SGLang's tree over the siblings' p. Validates first.
struct DraftSetup {
  DraftTree tree;
  PositionalAcceptance acceptance;
};
[[nodiscard]] DraftSetup draft_setup(const Acceptance& acceptance, const DraftShape& shape);

// tau: chain_tokens_per_cycle, the measured value, or F(SGLang tree).
[[nodiscard]] double tokens_per_cycle(const Acceptance& acceptance, const DraftShape& shape);

// What `--accept A` does to each kind (docs/acceptance.md): predict's --accept, the sweep key
// `acceptance.accept` and the break-even search all call it. ConstantChain and DepthDecayChain set
// accept (a depth profile kept); ConditionalChain and UnconditionalChain scale the profile so that
// b_1 = A (b_i' = min(1, b_i * A / b_1), the shape of the profile kept; unconditional positions
// from a rise on, which no valid draft reaches, are kept as listed); a MeasuredTau, which has no
// rate to scale, gives way to ConstantChain{A}; measured siblings get p_1 = A and p_2.. rescaled by
// (1 - A) / (1 - p_1) (the distribution of the caught rank after a top-1 miss kept).
[[nodiscard]] Acceptance with_accept_rate(Acceptance acceptance, double accept_rate);
// Whether with_accept_rate replaces the kind rather than scaling it (a measured tau), so that the
// CLI can say the measurement is not used.
[[nodiscard]] bool accept_rate_replaces(const AcceptanceKind& kind);

}  // namespace specsim
