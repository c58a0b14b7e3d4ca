#include <catch2/catch.hpp>
#include <cmath>

#include "specsim/acceptance.hpp"
#include "specsim/error.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;
using specsim::Acceptance;
using specsim::DraftShape;

namespace {
// A chain of k draft tokens: num_steps k, topk 1, k + 1 tokens verified.
DraftShape chain_of(int k) { return {k, 1, k + 1}; }
}  // namespace

TEST_CASE("Leviathan chain: Eq. 1 and the chain sum agree", "[acceptance]") {
  // docs/references/specdec.md#metrics: alpha = 0.747, K = 3: 1 + 0.747 + 0.747^2 + 0.747^3
  //   = 1 + 0.747 + 0.558009 + 0.416832723 = 2.721841723
  CHECK_THAT(specsim::leviathan_tokens_per_cycle(0.747, 3), WithinRel(2.721841723, 1e-12));
  const std::vector<double> b(3, 0.747);
  CHECK_THAT(specsim::chain_tokens_per_cycle(b), WithinRel(2.721841723, 1e-12));
  // alpha = 0.8, K = 4: (1 - 0.8^5) / 0.2 = 3.3616; alpha = 1 gives K + 1 = 5.
  CHECK_THAT(specsim::leviathan_tokens_per_cycle(0.8, 4), WithinRel(3.3616, 1e-12));
  CHECK_THAT(specsim::leviathan_tokens_per_cycle(1.0, 4), WithinRel(5.0, 1e-12));
  // Inverse: the alpha whose K = 3 chain yields 2.721841723 is 0.747.
  CHECK_THAT(specsim::constant_rate_for_tokens_per_cycle(2.721841723, 3), WithinRel(0.747, 1e-9));
  CHECK_THROWS_WITH(specsim::constant_rate_for_tokens_per_cycle(4.5, 3),
                    Contains("must lie in [1, k + 1] = [1, 4]"));
}

TEST_CASE("unconditional (vLLM) and conditional rates convert both ways", "[acceptance]") {
  // vLLM dynamic-SD EAGLE-3 stats a = 0.76, 0.54: b_2 = 0.54 / 0.76 = 0.710526...
  const std::vector<double> a{0.76, 0.54};
  const auto b = specsim::conditional_from_unconditional(a);
  CHECK_THAT(b[1], WithinRel(0.54 / 0.76, 1e-12));
  const auto back = specsim::unconditional_from_conditional(b);
  CHECK_THAT(back[1], WithinRel(0.54, 1e-12));
}

TEST_CASE("an engine's average over drafted tokens is tau at the draft shape", "[acceptance]") {
  // vLLM V1: "Mean acceptance length: 3.07, ... Accepted: 141 tokens, Drafted: 204 tokens, ...
  // Avg Draft acceptance rate: 69.1%" at K = 3; 141 / 204 = 0.6912, 1 + 3 x 141 / 204 = 3.0735.
  CHECK_THAT(specsim::tau_from_draft_acceptance_rate(141.0 / 204.0, chain_of(3)).tokens_per_cycle,
             WithinRel(3.0735294117647, 1e-12));
  // An SGLang tree (3 steps, top-k 4, 8 verified): 7 drafted tokens, accepted / drafted 0.3 -> 3.1.
  CHECK_THAT(specsim::tau_from_draft_acceptance_rate(0.3, DraftShape{3, 4, 8}).tokens_per_cycle, WithinRel(3.1, 1e-12));
  CHECK(specsim::tau_from_draft_acceptance_rate(0.0, chain_of(5)).tokens_per_cycle == 1.0);
  CHECK(specsim::tau_from_draft_acceptance_rate(1.0, chain_of(5)).tokens_per_cycle == 6.0);
  // A tree of 16 tokens three levels deep emits at most 4 a cycle: 0.9 x 15 + 1 = 14.5 cannot be.
  CHECK_THROWS_WITH(specsim::tau_from_draft_acceptance_rate(0.9, DraftShape{3, 4, 16}),
                    Contains("gives tau 14.5 at 16 draft tokens") && Contains("[1, 4]"));
  CHECK_THROWS_WITH(specsim::tau_from_draft_acceptance_rate(1.2, chain_of(3)), Contains("must lie in [0, 1]"));
  CHECK_THROWS(specsim::tau_from_draft_acceptance_rate(std::nan(""), chain_of(3)));
}

// One rate and no profile: its second public reading is that average (1 + rate x K on a chain of K).
TEST_CASE("a single rate's second reading is the average over drafted tokens", "[acceptance]") {
  using specsim::Acceptance;
  const Acceptance single{specsim::ConstantChain{0.691, {}}, {}};
  // vLLM's line above read the second way: 1 + 0.691 x 3 = 3.073, against the chain's
  // 1 + 0.691 + 0.691^2 + 0.691^3 = 2.498 of the first reading.
  REQUIRE(specsim::averaged_rate_reading(single, chain_of(3)));
  CHECK_THAT(*specsim::averaged_rate_reading(single, chain_of(3)), WithinRel(3.073, 1e-12));
  CHECK_THAT(specsim::chain_tokens_per_cycle(std::vector<double>{0.691, 0.691, 0.691}), WithinRel(2.4984, 1e-4));
  // K = 1: both readings are 1 + rate, so there is one.
  CHECK_FALSE(specsim::averaged_rate_reading(single, chain_of(1)));
  // A profile says the rate is the first position's; a tree's averages differ by engine.
  CHECK_FALSE(specsim::averaged_rate_reading(Acceptance{specsim::ConstantChain{0.691, {1.0, 0.5}}, {}}, chain_of(3)));
  CHECK_FALSE(specsim::averaged_rate_reading(single, DraftShape{3, 4, 8}));
  CHECK_FALSE(specsim::averaged_rate_reading(Acceptance{specsim::MeasuredTau{3.07}, {}}, chain_of(3)));
  CHECK_FALSE(specsim::averaged_rate_reading(Acceptance{specsim::ConditionalChain{{0.9, 0.8}}, {}}, chain_of(3)));
}

TEST_CASE("tokens per cycle for every acceptance kind", "[acceptance]") {
  SECTION("constant") {
    const Acceptance m{specsim::ConstantChain{0.8, {}}, {}};
    CHECK_THAT(specsim::tokens_per_cycle(m, chain_of(4)), WithinRel(3.3616, 1e-12));  // Eq. 1 above
    CHECK(chain_of(4).verified_tokens() == 5);
  }
  SECTION("depth decay") {
    const Acceptance m{specsim::DepthDecayChain{0.8, 0.9}, {}};
    // b = 0.8, 0.72, 0.648: 1 + 0.8 + 0.8*0.72 + 0.8*0.72*0.648 = 1 + 0.8 + 0.576 + 0.373248
    CHECK_THAT(specsim::tokens_per_cycle(m, chain_of(3)), WithinRel(2.749248, 1e-12));
  }
  SECTION("a depth profile scales b_1 per position") {
    // b = 0.747 x (1, 0.529, 0.300) = 0.747, 0.395163, 0.2241 (docs/acceptance.md).
    const Acceptance m{specsim::ConstantChain{0.747, {1.0, 0.529, 0.300}}, {}};
    const auto b = specsim::chain_conditional_rates(m, chain_of(3));
    CHECK_THAT(b[2], WithinRel(0.747 * 0.300, 1e-12));
    // A fourth position repeats the profile's last factor (a flat tail).
    CHECK_THAT(specsim::chain_conditional_rates(m, chain_of(4))[3], WithinRel(0.747 * 0.300, 1e-12));
  }
  SECTION("unconditional, as vLLM logs them") {
    // vLLM PR 24127 line: a = 0.983, 0.949, 0.915, 0.881, 0.712; tau = 1 + sum a = 5.44, which is
    // the Mean acceptance length the same line prints.
    const std::vector<double> logged{0.983, 0.949, 0.915, 0.881, 0.712};
    CHECK_THAT(specsim::tokens_per_cycle({specsim::UnconditionalChain{logged}, {}}, chain_of(5)),
               WithinRel(5.44, 1e-12));
    // Read as conditional by mistake, the same numbers multiply up instead:
    // 1 + 0.983 + 0.983*0.949 + 0.983*0.949*0.915 + ... = 5.0569, 0.38 tokens short.
    const double c2 = 0.983 * 0.949, c3 = c2 * 0.915, c4 = c3 * 0.881, c5 = c4 * 0.712;
    CHECK_THAT(specsim::tokens_per_cycle({specsim::ConditionalChain{logged}, {}}, chain_of(5)),
               WithinRel(1 + 0.983 + c2 + c3 + c4 + c5, 1e-12));
  }
  SECTION("conditional, fewer positions than given") {
    const Acceptance m{specsim::ConditionalChain{{0.8, 0.5, 0.1}}, {}};
    CHECK_THAT(specsim::tokens_per_cycle(m, chain_of(2)), WithinRel(2.2, 1e-12));  // 1 + 0.8 + 0.4
  }
  SECTION("measured") {
    const Acceptance m{specsim::MeasuredTau{2.39}, {}};  // vLLM V0 issue 9539: 0.598 * 4
    CHECK_THAT(specsim::tokens_per_cycle(m, chain_of(3)), WithinRel(2.39, 1e-12));
    // Its chain is the constant alpha with the same tau.
    CHECK_THAT(specsim::chain_tokens_per_cycle(specsim::chain_conditional_rates(m, chain_of(3))),
               WithinRel(2.39, 1e-9));
    // A tau is what a cycle emits whatever was drafted: a tree shape leaves it alone.
    CHECK_THAT(specsim::tokens_per_cycle(m, DraftShape{3, 2, 6}), WithinRel(2.39, 1e-12));
  }
  SECTION("a tree shape with topk 1 is the chain") {
    const Acceptance m{specsim::ConstantChain{0.7, {}}, {}};
    CHECK_THAT(specsim::tokens_per_cycle(m, chain_of(3)), WithinRel(1 + 0.7 + 0.49 + 0.343, 1e-12));
    CHECK(chain_of(3).verified_tokens() == 4);
  }
  SECTION("tree from a measured positional vector") {
    // Same as the hand tree of test_draft_tree.cpp: (2, 2, 4) over p = (0.6, 0.3) -> 2.26.
    const DraftShape tree{2, 2, 4};
    Acceptance m{specsim::DepthDecayChain{0.7, 1.0}, {{0.6, 0.3}, 0.5}};
    CHECK_THAT(specsim::tokens_per_cycle(m, tree), WithinRel(2.26, 1e-12));
    CHECK(tree.verified_tokens() == 4);
    // Depth decay 0.5 halves the depth-2 row to (0.3, 0.15): c2 = 0.6 * 0.3 = 0.18 is still the
    // third best after 0.6 and 0.3, so F = 1 + 0.6 + 0.3 + 0.18 = 2.08.
    m.kind = specsim::DepthDecayChain{0.7, 0.5};
    CHECK_THAT(specsim::tokens_per_cycle(m, tree), WithinRel(2.08, 1e-12));
    CHECK_THROWS_WITH(specsim::chain_conditional_rates(m, tree), Contains("use draft_setup()"));
  }
}

TEST_CASE("the default positional vector follows Sequoia's power-law rejection", "[acceptance]") {
  // r_k = (1 - 0.7) k^-0.5; p_2 = r_1 - r_2 = 0.3 (1 - 1/sqrt 2) = 0.0878680,
  // p_3 = 0.3 (1/sqrt 2 - 1/sqrt 3) = 0.0389270.
  const auto p = specsim::positional_vector_from_accept(0.7, 3, 0.5);
  CHECK_THAT(p[0], WithinRel(0.7, 1e-12));
  CHECK_THAT(p[1], WithinRel(0.3 * (1 - 1 / std::sqrt(2.0)), 1e-12));
  CHECK_THAT(p[2], WithinRel(0.3 * (1 / std::sqrt(2.0) - 1 / std::sqrt(3.0)), 1e-12));
}

TEST_CASE("acceptance: --accept A maps onto each kind", "[acceptance]") {
  // Scale by A / b_1 = 0.4 / 0.8 = 0.5: (0.4, 0.3, 0.2).
  const Acceptance conditional{specsim::ConditionalChain{{0.8, 0.6, 0.4}}, {}};
  const auto scaled = std::get<specsim::ConditionalChain>(specsim::with_accept_rate(conditional, 0.4).kind);
  CHECK_THAT(scaled.rates[2], WithinRel(0.2, 1e-12));
  // A = 1 scales by 1.25 and clamps nothing here: (1, 0.75, 0.5).
  CHECK_THAT(std::get<specsim::ConditionalChain>(specsim::with_accept_rate(conditional, 1.0).kind).rates[1],
             WithinRel(0.75, 1e-12));

  // b = (0.76, 0.7105), halved: a' = (0.38, 0.38 * 0.35526) = (0.38, 0.135) = a_2 / 4.
  const Acceptance unconditional{specsim::UnconditionalChain{{0.76, 0.54}}, {}};
  CHECK_THAT(std::get<specsim::UnconditionalChain>(specsim::with_accept_rate(unconditional, 0.38).kind).rates[1],
             WithinRel(0.135, 1e-12));

  // Measured siblings: p_1 = 0.8, the rest times (1 - 0.8) / (1 - 0.6) = 0.5: (0.8, 0.1, 0.05).
  const Acceptance tree{specsim::ConstantChain{0.6, {}}, {{0.6, 0.2, 0.1}, 0.5}};
  const auto moved = specsim::with_accept_rate(tree, 0.8);
  CHECK_THAT(moved.siblings.positional[0], WithinRel(0.8, 1e-12));
  CHECK_THAT(moved.siblings.positional[2], WithinRel(0.05, 1e-12));
  CHECK(std::get<specsim::ConstantChain>(moved.kind).accept == 0.8);

  // A measured tau has no rate to scale: A puts Leviathan's constant chain at A in its place.
  const Acceptance measured{specsim::MeasuredTau{2.5}, {}};
  CHECK(specsim::accept_rate_replaces(measured.kind));
  CHECK(std::get<specsim::ConstantChain>(specsim::with_accept_rate(measured, 0.1).kind).accept == 0.1);

  const Acceptance decay{specsim::DepthDecayChain{0.7, 0.9}, {}};
  CHECK(std::get<specsim::DepthDecayChain>(specsim::with_accept_rate(decay, 0.55).kind).accept == 0.55);
  CHECK_THROWS_WITH(specsim::with_accept_rate(decay, 1.5), Contains("acceptance.accept = 1.5: must lie in [0, 1]"));

  // A constant chain keeps its depth profile: b = 0.4 x (1, 0.5) = (0.4, 0.2).
  const Acceptance profiled{specsim::ConstantChain{0.7, {1.0, 0.5}}, {}};
  const auto constant = specsim::with_accept_rate(profiled, 0.4);
  CHECK_THAT(specsim::chain_conditional_rates(constant, chain_of(2))[1], WithinRel(0.2, 1e-12));
}

TEST_CASE("acceptance: --accept keeps a per-position profile's shape (issue 14)", "[acceptance]") {
  // The rule of docs/acceptance.md that predict --accept, the sweep key and break-even now share:
  // b = (0.747, 0.395, 0.224) at A = 0.6 scales by 0.6 / 0.747 = 0.803213:
  // b' = (0.6, 0.317269, 0.179920), tau = 1 + 0.6 + 0.6 x 0.317269 + 0.6 x 0.317269 x 0.179920
  //    = 1 + 0.6 + 0.190361 + 0.034250 = 1.824611. The old flattening gave 1 + 0.6 + 0.36 + 0.216 = 2.176.
  const Acceptance per{specsim::ConditionalChain{{0.747, 0.395, 0.224}}, {}};
  const auto scaled = specsim::with_accept_rate(per, 0.6);
  CHECK(std::holds_alternative<specsim::ConditionalChain>(scaled.kind));
  const double s = 0.6 / 0.747;
  CHECK_THAT(specsim::tokens_per_cycle(scaled, chain_of(3)),
             WithinRel(1 + 0.6 + 0.6 * (0.395 * s) + 0.6 * (0.395 * s) * (0.224 * s), 1e-12));
  CHECK_THAT(specsim::tokens_per_cycle(scaled, chain_of(3)), WithinRel(1.824611, 1e-6));
}

TEST_CASE("acceptance: unconditional rates past the draft are not checked (issue 14)", "[acceptance]") {
  // a = (0.8, 0.6, 0.7) rises at position 3; a 2-step draft never reaches it: tau = 1 + 0.8 + 0.6.
  const Acceptance u{specsim::UnconditionalChain{{0.8, 0.6, 0.7}}, {}};
  CHECK(specsim::acceptance_problems(u, chain_of(2)).empty());
  CHECK_THAT(specsim::tokens_per_cycle(u, chain_of(2)), WithinRel(2.4, 1e-12));
  CHECK_THAT(specsim::tokens_per_cycle(u, DraftShape{2, 2, 4}), WithinRel(specsim::tokens_per_cycle(
      Acceptance{specsim::ConstantChain{0.8, {}}, {}}, DraftShape{2, 2, 4}), 1e-12));  // p_1 = a_1 = b_1
  // A 3-step draft uses it: refused, naming the key.
  CHECK_THROWS_WITH(specsim::validate(u, chain_of(3)),
                    Contains("acceptance.unconditional") && Contains("a_3 = 0.700000 > a_2 = 0.600000"));
  // --accept 0.4 scales the positions it can convert, b = (0.8, 0.75) x 0.5 = (0.4, 0.375), so
  // a' = (0.4, 0.15); the third, from the rise on, is kept as listed.
  const auto scaled = std::get<specsim::UnconditionalChain>(specsim::with_accept_rate(u, 0.4).kind).rates;
  REQUIRE(scaled.size() == 3);
  CHECK_THAT(scaled[1], WithinRel(0.15, 1e-12));
  CHECK(scaled[2] == 0.7);
}

TEST_CASE("acceptance: on a tree a depth profile's first entry scales p_1 as it scales b_1 (issue 14)", "[acceptance]") {
  // accept 0.8, profile (0.5, 0.25): the chain's b_1 = 0.8 x 0.5 = 0.4, so the tree's p_1 = 0.4 too.
  // One step, top-2, 3 tokens: F = 1 + p_1 + p_2, p_2 = (1 - 0.4)(1 - 2^-0.5) = 0.175736 (the power
  // law): F = 1.575736. Taking p_1 = accept = 0.8 gave 1 + 0.8 + 0.2 x 0.292893 = 1.858579.
  const Acceptance profiled{specsim::ConstantChain{0.8, {0.5, 0.25}}, {}};
  const DraftShape tree{1, 2, 3};
  CHECK_THAT(specsim::tokens_per_cycle(profiled, tree), WithinRel(1 + 0.4 + 0.6 * (1 - 1 / std::sqrt(2.0)), 1e-12));
  CHECK_THAT(specsim::tokens_per_cycle(profiled, chain_of(1)), WithinRel(1.4, 1e-12));
  // The same chain written with accept = b_1 and the profile normalised prices the same tree.
  const Acceptance normalised{specsim::ConstantChain{0.4, {1.0, 0.5}}, {}};
  CHECK_THAT(specsim::tokens_per_cycle(profiled, DraftShape{2, 2, 5}),
             WithinRel(specsim::tokens_per_cycle(normalised, DraftShape{2, 2, 5}), 1e-12));
}

TEST_CASE("acceptance models report every problem at once", "[acceptance]") {
  const Acceptance m{specsim::DepthDecayChain{1.2, 0.0}, {}};
  const DraftShape none{0, 1, 1};
  const auto problems = specsim::acceptance_problems(m, none);
  CHECK(problems.size() == 3);
  CHECK_THROWS_WITH(specsim::validate(m, none),
                    Contains("acceptance.accept = 1.2: must lie in [0, 1]") &&
                        Contains("acceptance.depth_decay = 0: must lie in (0, 1]") &&
                        Contains("speculation.num_steps = 0: must be >= 1"));

  // Rising unconditional rates are refused before anything else, as the cycle model always did.
  const Acceptance u{specsim::UnconditionalChain{{0.5, 0.7, 0.2}}, {}};
  CHECK_THROWS_WITH(specsim::validate(u, chain_of(3)), Contains("must not rise with position") &&
                                                           Contains("a_2 = 0.700000 > a_1 = 0.500000"));

  // SGLang scores topk + (num_steps - 1) topk^2 = 2 + 1 x 4 = 6 candidates for (2, 2): 7 tokens at most.
  const Acceptance t{specsim::ConstantChain{0.7, {}}, {}};
  CHECK_THROWS_WITH(specsim::validate(t, DraftShape{2, 2, 9}), Contains("speculation.num_draft_tokens = 9") &&
                                                                   Contains("[2, 7]"));
  CHECK(specsim::to_string(specsim::parse_acceptance_kind("depth_decay")) == "depth_decay");
  CHECK(std::holds_alternative<specsim::DepthDecayChain>(specsim::parse_acceptance_kind("depth_decay")));
  CHECK(specsim::to_string(specsim::AcceptanceKind{specsim::UnconditionalChain{}}) == "unconditional");
  CHECK_THROWS_WITH(specsim::parse_acceptance_kind("geometric"),
                    Contains("'geometric' is unknown") &&
                        Contains("constant, depth_decay, conditional, unconditional, measured"));
}

TEST_CASE("acceptance: problems name the scenario's keys (issue 14)", "[acceptance]") {
  // docs/schema.md's keys: acceptance.accept, per_position, unconditional, tokens_per_cycle,
  // tree_positional; speculation.num_steps, num_draft_tokens.
  std::vector<std::string> all;
  const auto add = [&all](const Acceptance& a, const DraftShape& shape) {
    for (auto& p : specsim::acceptance_problems(a, shape)) all.push_back(std::move(p));
  };
  add({specsim::ConditionalChain{{0.8, 1.5}}, {}}, chain_of(2));
  add({specsim::ConditionalChain{}, {}}, chain_of(2));
  add({specsim::MeasuredTau{5.0}, {}}, chain_of(3));
  add({specsim::ConstantChain{0.7, {}}, {{0.7, 0.5}, 0.5}}, DraftShape{2, 2, 4});
  add({specsim::ConstantChain{-0.1, {}}, {}}, DraftShape{0, 2, 12});
  std::string text;
  for (const auto& p : all) text += p + "\n";
  CHECK_THAT(text, Contains("acceptance.per_position[2] = 1.5: must lie in [0, 1]") &&
                       Contains("acceptance.per_position = 0 entries") &&
                       Contains("acceptance.tokens_per_cycle = 5: must lie in [1, speculation.num_steps + 1] = [1, 4]") &&
                       Contains("acceptance.tree_positional = sum 1.2") &&
                       Contains("acceptance.accept = -0.1") && Contains("speculation.num_steps = 0: must be >= 1"));
  for (const char* gone : {"accept_rate", "num_draft_steps", "position_rates", "measured_tokens_per_cycle"}) {
    CHECK_THAT(text, !Contains(gone));
  }
}

TEST_CASE("draft shape: one tree-size limit, SGLang's (issue 14)", "[acceptance][draft_tree]") {
  // organize_draft_results keeps num_draft_tokens - 1 of topk + (num_steps - 1) topk^2 candidates:
  // (3, 2): 1 + 2 + 2 x 4 = 11 tokens at most, not 1 + num_steps topk^2 = 13.
  CHECK(specsim::max_draft_tokens(3, 2) == 11);
  CHECK(specsim::max_draft_tokens(3, 1) == 4);  // a chain verifies num_steps + 1
  CHECK(specsim::draft_shape_problems(DraftShape{3, 2, 11}).empty());
  const auto twelve = specsim::draft_shape_problems(DraftShape{3, 2, 12});
  REQUIRE(twelve.size() == 1);
  CHECK_THAT(twelve[0], Contains("speculation.num_draft_tokens = 12: must lie in [2, 1 + topk + (num_steps - 1) * topk^2] = [2, 11]"));
  const Acceptance a{specsim::ConstantChain{0.7, {}}, {}};
  CHECK_THROWS_WITH(specsim::tokens_per_cycle(a, DraftShape{3, 2, 12}), Contains("[2, 11]"));
}
