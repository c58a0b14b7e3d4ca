// Acceptance: how many tokens one draft-and-verify cycle emits on average (tau, the bonus token
// included), from the rates engines and papers report. Conditional rates b_i (position i accepted
// given 1..i-1 were) and unconditional rates a_i = b_1 * ... * b_i (vLLM's "per-position acceptance
// rate") are different things; every function here says which it takes.
//
// AcceptanceModel gathers the ways a user can state acceptance (docs/acceptance.md has the
// formulas, the mapping of `--accept A` onto each kind, and the sources). Every kind reduces to a
// draft tree plus a positional acceptance (draft_tree.hpp): chains are trees with one child per
// level, so the closed form, the Monte Carlo and the cycle model share one description.
#pragma once

#include <span>
#include <string>
#include <string_view>
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

enum class AcceptanceKind {
  kConstant,       // chain, b_i = accept_rate (Leviathan's i.i.d. alpha)
  kDepthDecay,     // chain, b_i = accept_rate * depth_decay^(i-1)
  kConditional,    // chain, b_i = position_rates[i-1]
  kUnconditional,  // chain, a_i = position_rates[i-1] as vLLM/llama.cpp log them; b_i = a_i/a_{i-1}
  kMeasured,       // tau given directly (SGLang accept len, vLLM Mean acceptance length)
  kTree,           // SGLang EAGLE tree (num_steps, eagle_topk, num_draft_tokens) over Sequoia's p
};

[[nodiscard]] std::string_view to_string(AcceptanceKind kind);  // "constant", "depth_decay", ...
// Throws specsim::Error listing the valid names when text names no kind.
[[nodiscard]] AcceptanceKind parse_acceptance_kind(std::string_view text);

struct AcceptanceModel {
  AcceptanceKind kind = AcceptanceKind::kConstant;

  // Probability that the first draft token is accepted: alpha for kConstant, b_1 for
  // kDepthDecay, p_1 for kTree when position_rates is empty. 0.7: EAGLE-3's conditional rate is
  // roughly flat at 0.7-0.8 (vLLM dynamic-SD stats, InferenceX #1737; docs/references/specdec.md#depth-decay); the Kimi
  // EAGLE-3-MLA draft on chat traffic sits lower (45-55 % per position, rtx6kpro).
  double accept_rate = 0.7;

  // Multiplier per extra depth: b_i = accept_rate * depth_decay^(i-1) (kDepthDecay); for kTree
  // every row of p at depth d is scaled by depth_decay^(d-1). 1 = EAGLE-3's flat profile; vLLM's
  // MRV2 synthetic acceptance uses >= 0.85 "for well-tuned draft models" (vLLM PR 38045/41035).
  double depth_decay = 1.0;

  // Chain length k for the chain kinds and kMeasured; SGLang --speculative-num-steps (tree depth)
  // for kTree. 3: SGLang's auto choice for most architectures and vLLM/SGLang recipes (spec. 5.1).
  int num_draft_steps = 3;

  // kTree only: SGLang --speculative-eagle-topk and --speculative-num-draft-tokens (root
  // included; forced to num_draft_steps + 1 when topk = 1, as SGLang does).
  int eagle_topk = 1;
  int num_draft_tokens = 4;

  // kConditional: b_1..b_m; kUnconditional: a_1..a_m (m >= num_draft_steps; extra entries are
  // ignored so one measured profile serves several k); kTree: Sequoia's p_1..p_R, the probability
  // that the rank-k child is the accepted one (siblings exclusive, sum <= 1). Empty for kTree means
  // p_1 = accept_rate and p_k (k >= 2) from the power law below.
  std::vector<double> position_rates;

  // kTree without position_rates: Sequoia's "b power-law" rejection (Theorem 3.6), probability that
  // all of the first k children are rejected r_k = (1 - p_1) * k^(-b), so p_k = r_{k-1} - r_k.
  // 0.5 is an assumption, not a measurement: with it 29 % of the top-1 misses are caught by the
  // second-ranked token. Measure p (Sequoia tests/test_accept.py) when trees matter.
  double sibling_exponent = 0.5;

  // kMeasured: tau, the bonus token included. 0 = unset.
  double measured_tokens_per_cycle = 0.0;
};

// Every problem at once ("acceptance.depth_decay = 1.5: must lie in (0, 1]"), empty when valid.
[[nodiscard]] std::vector<std::string> acceptance_problems(const AcceptanceModel& model);
// Throws specsim::Error joining acceptance_problems with "; " when there are any.
void validate(const AcceptanceModel& model);

// The positional vector p_1..p_ranks for kTree without measured rates (power law above).
[[nodiscard]] std::vector<double> positional_vector_from_accept(double accept_rate, int ranks,
                                                                double sibling_exponent);

// The chain's conditional rates b_1..b_k (chain kinds; kMeasured: the constant alpha of
// constant_rate_for_tokens_per_cycle). Throws for kTree.
[[nodiscard]] std::vector<double> chain_conditional_rates(const AcceptanceModel& model);

// The tree verified each cycle and its positional acceptance: the shared description behind
// tokens_per_cycle and the Monte Carlo. Validates first.
struct DraftSetup {
  DraftTree tree;
  PositionalAcceptance acceptance;
};
[[nodiscard]] DraftSetup draft_setup(const AcceptanceModel& model);

// tau for any kind: chain_tokens_per_cycle, the measured value, or F(SGLang tree).
[[nodiscard]] double tokens_per_cycle(const AcceptanceModel& model);
// Autoregressive draft forwards per cycle (k, or SGLang num_steps).
[[nodiscard]] int draft_steps(const AcceptanceModel& model);
// Tokens each request puts through the verify forward: k + 1 for a chain, num_draft_tokens for a
// tree (SGLang's rule for topk = 1 applied).
[[nodiscard]] int verified_tokens_per_request(const AcceptanceModel& model);

// What `--accept A` does to each kind (docs/acceptance.md): kConstant/kDepthDecay set
// accept_rate; kConditional/kUnconditional scale the profile so that b_1 = A (b_i' = min(1,
// b_i * A / b_1), the shape of the profile kept); kTree sets p_1 = A and rescales p_2.. by
// (1 - A) / (1 - p_1) (the distribution of the caught rank after a top-1 miss kept); kMeasured is
// returned unchanged (accept_rate_applies says so, so the CLI can warn).
[[nodiscard]] AcceptanceModel with_accept_rate(AcceptanceModel model, double accept_rate);
[[nodiscard]] bool accept_rate_applies(AcceptanceKind kind);

}  // namespace specsim
