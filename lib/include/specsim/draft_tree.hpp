// Draft trees and their expected yield under Sequoia's positional acceptance model.
//
// A draft tree is what one speculative cycle verifies: the root is the last verified token (it
// always yields the bonus token) and every other node is one draft token. Under the positional
// acceptance assumption (Sequoia, https://arxiv.org/abs/2402.12374, Def. 3.1-3.2) the probability
// that the k-th ranked child of an accepted node is the one the verifier accepts depends only on k
// (and, in Sequoia's 2-D extension for self-speculation such as EAGLE/Medusa, on the depth).
// Siblings are mutually exclusive: at most one child of a node is accepted, so each row of
// p sums to at most 1. This is what Sequoia's tests/test_accept.py measures (the histogram of the
// accepted child's rank) and what its tree_search.py consumes.
//
// Expected tokens per cycle (Sequoia Prop. 3.4): F(T) = sum over nodes v of f(v), f(v) = product of
// p(depth, rank) over the edges from the root to v, f(root) = 1. A chain with conditional rates
// b_1..b_k is the tree with one child per level and p(d, 1) = b_d.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace specsim {

// p(depth, rank): the probability that the rank-th child (1-based) of an accepted node at depth
// depth-1 is accepted. rows[d-1] holds depth d; the last row applies to every deeper level; ranks
// beyond a row's length have probability 0.
struct PositionalAcceptance {
  std::vector<std::vector<double>> rows;

  // One vector for every depth (Sequoia's 1-D acceptance vector).
  [[nodiscard]] static PositionalAcceptance uniform(std::vector<double> p);
  // A chain's conditional rates: rows = {{b_1}, {b_2}, ...}.
  [[nodiscard]] static PositionalAcceptance chain(std::span<const double> conditional);

  [[nodiscard]] double at(int depth, int rank) const;
  [[nodiscard]] int max_rank() const;  // longest row
  // Every entry in [0, 1], every row sum <= 1 (+1e-9), at least one row. Throws specsim::Error
  // listing every problem.
  void validate() const;
};

// An ordered rooted tree. Node 0 is the root; children of a node are ranked by the order in which
// they were added (rank 1 first), which is the rank used in p(depth, rank).
class DraftTree {
 public:
  DraftTree();  // the root alone: verifying it yields exactly one token
  [[nodiscard]] static DraftTree chain(int num_draft_tokens);
  // From paths of 0-based child ranks, as vLLM's speculative_token_tree writes them:
  // {{0}, {0, 0}, {1}} is a root with two children, the first of which has one child. Each
  // path's parent must come earlier and ranks must be added in order (0, 1, 2, ...).
  [[nodiscard]] static DraftTree from_paths(const std::vector<std::vector<int>>& paths);

  int add_child(int parent);  // returns the new node's index

  [[nodiscard]] int size() const { return static_cast<int>(parent_.size()); }  // nodes incl. root
  [[nodiscard]] int parent(int node) const { return parent_.at(node); }
  [[nodiscard]] int rank(int node) const { return rank_.at(node); }    // 1-based; 0 for the root
  [[nodiscard]] int depth(int node) const { return depth_.at(node); }  // 0 for the root
  [[nodiscard]] int max_depth() const;
  [[nodiscard]] const std::vector<int>& children(int node) const { return children_.at(node); }
  [[nodiscard]] std::vector<std::vector<int>> to_paths() const;  // inverse of from_paths
  // "[(0,), (0, 0), (1,)]": vLLM's speculative_token_tree notation.
  [[nodiscard]] std::string to_string() const;

 private:
  std::vector<int> parent_, rank_, depth_;
  std::vector<std::vector<int>> children_;
};

// f(v) for every node (Sequoia Prop. 3.4); f(root) = 1.
[[nodiscard]] std::vector<double> node_scores(const DraftTree& tree, const PositionalAcceptance& p);
// F(T) = sum_v f(v): expected tokens emitted per cycle, the bonus token included.
[[nodiscard]] double expected_tokens(const DraftTree& tree, const PositionalAcceptance& p);

// The draft's shape, as SGLang's EAGLE flags state it (--speculative-num-steps,
// --speculative-eagle-topk, --speculative-num-draft-tokens): the scenario's `speculation:` block
// holds it once, and the acceptance functions (acceptance.hpp) take it beside the acceptance.
struct DraftShape {
  // Autoregressive draft forwards per cycle = maximum tree depth. 3: SGLang's auto choice for most
  // architectures and vLLM/SGLang recipes (docs/references/specdec.md#sglang-flags).
  int num_steps = 3;
  int eagle_topk = 1;        // children expanded per frontier node; 1 = chain
  int num_draft_tokens = 4;  // nodes verified per request, root included; topk = 1 forces steps + 1

  [[nodiscard]] bool is_chain() const { return eagle_topk == 1; }
  // Tokens each request puts through the verify forward: k + 1 for a chain, num_draft_tokens for a
  // tree (SGLang's rule for topk = 1 applied).
  [[nodiscard]] int verified_tokens() const { return is_chain() ? num_steps + 1 : num_draft_tokens; }
};

// The most tokens SGLang verifies per request for (num_steps, eagle_topk): the root plus every
// candidate it scores, 1 + topk + (num_steps - 1) * topk^2. organize_draft_results keeps the best
// num_draft_tokens - 1 candidates with torch.topk, which refuses more than there are
// (https://github.com/sgl-project/sglang, python/sglang/srt/speculative/eagle_utils.py). A chain
// (topk 1) gives num_steps + 1, what SGLang forces there.
[[nodiscard]] long long max_draft_tokens(int num_steps, int eagle_topk);

// Every problem of the shape, each naming its scenario key and rule
// ("speculation.num_draft_tokens = 12: must lie in [2, 11] ..."); empty when valid. The loader,
// `--set`, sweep, rank and the acceptance functions all check the shape with this one rule.
[[nodiscard]] std::vector<std::string> draft_shape_problems(const DraftShape& shape);
// The num_draft_tokens part alone, without the key ("= 12: must lie in [2, 11] ..."), for a reader
// that names the key with its file:line or `--set` option; empty when valid or when num_steps or
// eagle_topk is below 1 (their own problems).
[[nodiscard]] std::string num_draft_tokens_problem(const DraftShape& shape);

// The tree SGLang verifies, built as EAGLE-2 does (https://arxiv.org/abs/2406.16858; SGLang
// eagle_utils.py select_top_k_tokens / organize_draft_results), with the draft's confidences taken
// equal to p (EAGLE-2's calibration finding: draft confidence approximates acceptance):
//   step 1: the root's topk children; step i > 1: each of the topk frontier nodes gets topk
//   children (topk^2 candidates), the topk highest-scoring become the next frontier; finally the
//   num_draft_tokens - 1 highest-scoring candidates of all steps (topk + (steps-1)*topk^2) are kept.
// A node's score is f(v). Ties go to the earlier candidate (torch.topk leaves ties unspecified).
// Throws specsim::Error naming the parameter and rule when the settings are impossible.
[[nodiscard]] DraftTree sglang_tree(const DraftShape& shape, const PositionalAcceptance& p);

struct OptimalTree {
  DraftTree tree;
  double expected_tokens = 1.0;  // F(tree)
};

// Sequoia's dynamic program (Sec. 3.2 / Algorithm 4; tree_search.py) for the tree of at most
// node_budget nodes (root included) and depth at most max_depth (draft levels, root excluded) that
// maximises F. With depth-dependent rows the recursion carries the depth from the root:
//   T[n][d][b] = max_{1<=m<n} T[n-m][d][b-1] + p(d+1, b) * G[m][d+1],  T[1][d][0] = 1,
//   G[n][d] = max_b T[n][d][b]   (b children, n nodes, subtree root at depth d).
// Width per node is bounded by p.max_rank(). O(node_budget^2 * max_depth * max_rank).
[[nodiscard]] OptimalTree sequoia_optimal_tree(const PositionalAcceptance& p, int node_budget,
                                               int max_depth);

// G(n, D) = the DP optimum for every budget n in 1..max_budget and depth bound D in 0..max_depth:
// result[n][D] (row 0 unused, 0.0). Feeds Sequoia's hardware-aware sizing (Sec. 3.3):
// pick (n, D) maximising G(n, D) / (T_verify(n) + D * T_draft).
[[nodiscard]] std::vector<std::vector<double>> sequoia_value_table(const PositionalAcceptance& p,
                                                                   int max_budget, int max_depth);

// Exhaustive search over every ordered tree of at most node_budget nodes (<= 12) and depth at
// most max_depth (sum_n Catalan(n-1) trees: 626 for 8 nodes). For tests of the DP.
[[nodiscard]] OptimalTree brute_force_optimal_tree(const PositionalAcceptance& p, int node_budget,
                                                   int max_depth);
// Number of ordered trees brute_force_optimal_tree visited for these limits (for tests).
[[nodiscard]] std::int64_t count_trees(int node_budget, int max_depth, int max_width);

}  // namespace specsim
