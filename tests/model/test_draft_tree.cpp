#include <catch2/catch.hpp>

#include "specsim/draft_tree.hpp"
#include "specsim/error.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;
using specsim::DraftTree;
using specsim::PositionalAcceptance;

TEST_CASE("F(T) of a small tree by hand (Sequoia Prop. 3.4)", "[draft_tree]") {
  // root -> A (rank 1) -> C (rank 1);  root -> B (rank 2);  p = (0.6, 0.3)
  // f(root) = 1, f(A) = p1 = 0.6, f(C) = p1 * p1 = 0.36, f(B) = p2 = 0.3
  // F = 1 + 0.6 + 0.36 + 0.3 = 2.26
  const auto tree = DraftTree::from_paths({{0}, {0, 0}, {1}});
  const auto p = PositionalAcceptance::uniform({0.6, 0.3});
  REQUIRE(tree.size() == 4);
  CHECK(tree.rank(3) == 2);
  CHECK(tree.depth(2) == 2);
  CHECK(tree.max_depth() == 2);
  CHECK(tree.to_string() == "[(0,), (0, 0), (1,)]");
  CHECK(tree.to_paths() == std::vector<std::vector<int>>{{0}, {0, 0}, {1}});
  const auto f = specsim::node_scores(tree, p);
  CHECK_THAT(f[2], WithinRel(0.36, 1e-12));
  CHECK_THAT(specsim::expected_tokens(tree, p), WithinRel(2.26, 1e-12));
  // The root alone yields the bonus token only.
  CHECK_THAT(specsim::expected_tokens(DraftTree(), p), WithinRel(1.0, 1e-12));
}

TEST_CASE("a chain tree is Leviathan's capped geometric", "[draft_tree]") {
  // alpha = 0.8, k = 4: (1 - 0.8^5) / (1 - 0.8) = (1 - 0.32768) / 0.2 = 3.3616
  const auto p = PositionalAcceptance::uniform({0.8});
  CHECK_THAT(specsim::expected_tokens(DraftTree::chain(4), p), WithinRel(3.3616, 1e-12));
  // Per-depth rows: b = (0.8, 0.5): 1 + 0.8 + 0.8 * 0.5 = 2.2
  const std::vector<double> b{0.8, 0.5};
  CHECK_THAT(specsim::expected_tokens(DraftTree::chain(2), PositionalAcceptance::chain(b)),
             WithinRel(2.2, 1e-12));
}

TEST_CASE("SGLang's EAGLE-2 tree for (num_steps, topk, num_draft_tokens), by hand", "[draft_tree]") {
  const auto p = PositionalAcceptance::uniform({0.6, 0.3});
  // steps 2, topk 2. Step 1 candidates: c0 = 0.6, c1 = 0.3 (frontier both).
  // Step 2: c0 -> c2 = 0.36, c3 = 0.18; c1 -> c4 = 0.18, c5 = 0.09.
  // num_draft_tokens 4 keeps the 3 best: c0 0.6, c2 0.36, c1 0.3 -> the hand tree above, F = 2.26
  // (nodes numbered in SGLang's candidate order, so the paths list (1,) before (0, 0)).
  const auto t4 = specsim::sglang_tree({2, 2, 4}, p);
  CHECK(t4.to_string() == "[(0,), (1,), (0, 0)]");
  CHECK_THAT(specsim::expected_tokens(t4, p), WithinRel(2.26, 1e-12));
  // num_draft_tokens 5 adds c3 = 0.18 (ties with c4; the earlier candidate wins): F = 2.44.
  const auto t5 = specsim::sglang_tree({2, 2, 5}, p);
  CHECK(t5.to_string() == "[(0,), (1,), (0, 0), (0, 1)]");
  CHECK_THAT(specsim::expected_tokens(t5, p), WithinRel(2.44, 1e-12));
  // topk 1 is a chain of num_steps whatever num_draft_tokens says (SGLang forces steps + 1).
  const auto chain = specsim::sglang_tree({3, 1, 99}, p);
  CHECK(chain.size() == 4);
  CHECK(chain.max_depth() == 3);
}

TEST_CASE("SGLang tree settings that cannot be built are errors", "[draft_tree]") {
  const auto p = PositionalAcceptance::uniform({0.6, 0.3});
  // steps 2, topk 2: 2 + 1 * 4 = 6 candidates, so at most 7 draft tokens.
  CHECK_THROWS_WITH(specsim::sglang_tree({2, 2, 8}, p),
                    Contains("num_draft_tokens = 8") && Contains("[2, 7]"));
  CHECK_THROWS_WITH(specsim::sglang_tree({0, 0, 4}, p),
                    Contains("num_steps = 0: must be >= 1") && Contains("eagle_topk = 0: must be >= 1"));
  CHECK_THROWS_WITH(specsim::sglang_tree({2, 2, 4}, PositionalAcceptance::uniform({0.3, 0.6})),
                    Contains("must not gain acceptance with rank"));
}

TEST_CASE("positional acceptance is validated", "[draft_tree]") {
  CHECK_THROWS_WITH(PositionalAcceptance::uniform({0.7, 0.4}).validate(),
                    Contains("sums to 1.1") && Contains("at most one sibling"));
  CHECK_THROWS_WITH(PositionalAcceptance::uniform({1.2}).validate(), Contains("must lie in [0, 1]"));
  CHECK_THROWS_WITH(DraftTree::from_paths({{1}}), Contains("child index 1, expected 0"));
  CHECK_THROWS_WITH(DraftTree::from_paths({{0, 0}}), Contains("parent path must come earlier"));
}

TEST_CASE("the brute force visits every ordered tree", "[draft_tree]") {
  // Ordered trees with n nodes: Catalan(n - 1). Up to 8 nodes: 1+1+2+5+14+42+132+429 = 626.
  CHECK(specsim::count_trees(8, 7, 8) == 626);
  // Depth <= 1: only stars, one per size.
  CHECK(specsim::count_trees(8, 1, 8) == 8);
}

TEST_CASE("Sequoia DP equals brute force over all trees of up to 8 nodes", "[draft_tree]") {
  const std::vector<PositionalAcceptance> vectors{
      PositionalAcceptance::uniform({0.6, 0.3}),
      PositionalAcceptance::uniform({0.8, 0.1, 0.05}),
      PositionalAcceptance::uniform({0.5, 0.25, 0.125, 0.0625}),
      PositionalAcceptance::uniform({0.9}),
      PositionalAcceptance::uniform({0.35, 0.3, 0.2, 0.1}),
      // Sequoia's 2-D extension: acceptance falling with depth (EAGLE/Medusa-style drafts).
      PositionalAcceptance{{{0.8, 0.15}, {0.6, 0.2}, {0.4, 0.3}}},
  };
  for (std::size_t i = 0; i < vectors.size(); ++i) {
    const auto& p = vectors[i];
    for (int budget = 1; budget <= 8; ++budget) {
      for (int depth = 0; depth <= 7; ++depth) {
        INFO("vector " << i << ", budget " << budget << ", depth " << depth);
        const auto dp = specsim::sequoia_optimal_tree(p, budget, depth);
        const auto brute = specsim::brute_force_optimal_tree(p, budget, depth);
        CHECK_THAT(dp.expected_tokens, WithinRel(brute.expected_tokens, 1e-12));
        // The DP's tree is real: within the limits and worth what the DP says.
        CHECK(dp.tree.size() <= budget);
        CHECK(dp.tree.max_depth() <= depth);
        CHECK_THAT(specsim::expected_tokens(dp.tree, p), WithinRel(dp.expected_tokens, 1e-12));
      }
    }
  }
}

TEST_CASE("Sequoia DP worked numbers", "[draft_tree]") {
  const auto p = PositionalAcceptance::uniform({0.6, 0.3});
  // Budget 3, depth 2: chain 1 + 0.6 + 0.36 = 1.96 beats the star 1 + 0.6 + 0.3 = 1.9.
  CHECK_THAT(specsim::sequoia_optimal_tree(p, 3, 2).expected_tokens, WithinRel(1.96, 1e-12));
  // Budget 4, depth 2: the hand tree, 2.26 (vs 1 + 0.6 + 0.36 + 0.18 = 2.14 with both under A).
  const auto best4 = specsim::sequoia_optimal_tree(p, 4, 2);
  CHECK_THAT(best4.expected_tokens, WithinRel(2.26, 1e-12));
  CHECK(best4.tree.to_string() == "[(0,), (1,), (0, 0)]");
  // Depth 0: the root alone.
  CHECK_THAT(specsim::sequoia_optimal_tree(p, 8, 0).expected_tokens, WithinRel(1.0, 1e-12));
}

TEST_CASE("Sequoia value table grows with budget and depth and bounds the SGLang tree",
          "[draft_tree]") {
  const auto p = PositionalAcceptance::uniform({0.7, 0.0879, 0.0389, 0.0227});
  const auto table = specsim::sequoia_value_table(p, 16, 6);
  for (int n = 1; n <= 16; ++n) {
    for (int d = 0; d <= 6; ++d) {
      if (n > 1) CHECK(table[n][d] >= table[n - 1][d]);
      if (d > 0) CHECK(table[n][d] >= table[n][d - 1]);
      CHECK_THAT(table[n][d], WithinRel(specsim::sequoia_optimal_tree(p, n, d).expected_tokens, 1e-12));
    }
  }
  // SGLang's Llama default (5, 4, 8) is one tree of 8 nodes and depth <= 5: the optimum is at least it.
  const auto sglang = specsim::sglang_tree({5, 4, 8}, p);
  CHECK(sglang.size() == 8);
  CHECK(specsim::expected_tokens(sglang, p) <= table[8][5] + 1e-12);
}
