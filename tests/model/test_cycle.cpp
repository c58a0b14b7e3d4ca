#include <catch2/catch.hpp>

#include <algorithm>

#include "cli_run.hpp"
#include "specsim/acceptance.hpp"
#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"

using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

specsim::CycleModel default_model(const std::vector<std::string>& patches = {}) {
  return specsim::CycleModel(specsim::load_scenario(specsim::kDefaultScenario, patches, kRoot));
}

specsim::Acceptance constant(double a, std::vector<double> profile = {}) {
  return {specsim::ConstantChain{a, std::move(profile)}, {}};
}
}  // namespace

TEST_CASE("cycle: the default scenario reproduces its measured parts", "[cycle][default]") {
  const auto model = default_model();
  const auto p = model.predict();
  // Measured plain decoding: ~82 tok/s (within 3%). The host time is calibrated from it, so this
  // checks the calibration closes.
  CHECK_THAT(p.baseline_tokens_per_s, WithinRel(82.0, 0.03));
  // Measured verify: ~30 ms (within 5%), 122 all-reduces (2 x 61 layers) carrying ~25 ms (5%).
  CHECK_THAT(p.verify.total_s(), WithinRel(0.030, 0.05));
  CHECK(p.verify.allreduce_count == 122);
  CHECK_THAT(p.verify.comm_s, WithinRel(0.025, 0.05));
  CHECK_THAT(p.verify.compute_s, WithinRel(0.005, 0.05));
}

TEST_CASE("cycle: the held-out speculative throughput is predicted within 15%", "[cycle][default]") {
  const auto model = default_model();
  const auto& measured = model.scenario().measurements.speculative_tokens_per_s;
  REQUIRE(measured);
  // The measured ~60 tok/s is never an input; the model must land within 15% of it.
  const auto p = model.predict(specsim::with_accept_rate(model.scenario().acceptance, 0.747));
  CHECK_THAT(p.spec_tokens_per_s, WithinRel(*measured, 0.15));
  CHECK(p.dominant == "verify all-reduce");
}

TEST_CASE("cycle: tokens/s rises with acceptance, acceptance 0 is slower than plain", "[cycle]") {
  const auto model = default_model();
  double previous = 0.0;
  for (int i = 0; i <= 20; ++i) {
    const double a = i / 20.0;
    const double tps = model.predict(constant(a)).spec_tokens_per_s;
    INFO("accept " << a);
    CHECK(tps > previous);
    previous = tps;
  }
  const auto zero = model.predict(constant(0.0));
  CHECK(zero.tokens_per_cycle == 1.0);  // only the bonus token
  CHECK(zero.spec_tokens_per_s < zero.baseline_tokens_per_s);
}

TEST_CASE("cycle: tau follows Leviathan et al. 2023 Eq. 1 for a constant chain", "[cycle][acceptance]") {
  // tau = (1 - a^(k+1)) / (1 - a): a = 0.747, k = 3 gives 1 + 0.747 + 0.558 + 0.417 = 2.722.
  CHECK_THAT(specsim::leviathan_tokens_per_cycle(0.747, 3), WithinRel(2.7219, 1e-4));
  const double rates[] = {0.747, 0.747, 0.747};
  CHECK_THAT(specsim::chain_tokens_per_cycle(rates), WithinRel(2.7219, 1e-4));
  // alpha = 1 gives k + 1.
  CHECK(specsim::leviathan_tokens_per_cycle(1.0, 3) == 4.0);
  // The cycle model with no depth profile uses the same formula.
  const auto model = default_model();
  CHECK_THAT(model.tokens_per_cycle(constant(0.747)), WithinRel(specsim::leviathan_tokens_per_cycle(0.747, 3), 1e-12));
  // With Leviathan's assumptions (verify = one step, draft cost c, no host or extend) speedup is
  // (1 - a^(k+1)) / ((1 - a)(k c + 1)): a = 0.8, k = 4, c = 0.05 gives 3.3616 / 1.2 = 2.801.
  const double tau = specsim::leviathan_tokens_per_cycle(0.8, 4);
  CHECK_THAT(tau / (4 * 0.05 + 1), WithinRel(2.8013, 1e-4));
}

// docs/library.md#how-to-add, "An acceptance kind", done for UnconditionalChain: the file's form
// (read_scenario.cpp, read_acceptance), the kind's rates (acceptance.cpp, chain_rates and the tree's b_1),
// and the cycle model pricing it on any draft shape with no code of its own.
TEST_CASE("how to add an acceptance kind: vLLM's unconditional rates, from the file to tau", "[cycle][acceptance]") {
  // The default scenario's depth profile scales `accept` only: beside unconditional rates it is
  // an error (it used to be dropped silently), so it goes too.
  const std::string text = specsim::test::replaced_once(
      specsim::test::replaced_once(
          specsim::test::read_text(std::filesystem::path(kRoot.root()) / "models/scenarios" /
                                    (std::string(specsim::kDefaultScenario) + ".yaml")),
          "  accept: 0.747\n", "  unconditional: [0.983, 0.949, 0.915, 0.881, 0.712]\n"),
      "  depth_profile: [1.0, 0.529, 0.300]\n", "");
  const specsim::CycleModel model(specsim::load_scenario_text(text, "unconditional.yaml", kRoot));
  REQUIRE(std::holds_alternative<specsim::UnconditionalChain>(model.scenario().acceptance.kind));
  // vLLM PR 24127's line: tau = 1 + sum a_i. The scenario drafts 3: 1 + 0.983 + 0.949 + 0.915 = 3.847;
  // on a draft of 5 (the same calibrated box, another shape) all five: 5.44, as the line prints.
  CHECK_THAT(model.predict().tokens_per_cycle, WithinRel(3.847, 1e-12));
  CHECK_THAT(model.predict(specsim::DraftShape{5, 1, 6}, model.scenario().acceptance).tokens_per_cycle,
             WithinRel(5.44, 1e-12));
  // On an SGLang tree the top-ranked child is accepted with b_1 = a_1 = 0.983 and its siblings by
  // the power law: two children at depth 1 beat the chain's one, so tau rises.
  CHECK(model.predict(specsim::DraftShape{3, 2, 6}, model.scenario().acceptance).tokens_per_cycle > 3.847);
}

TEST_CASE("cycle: the depth profile scales deeper positions", "[cycle][acceptance]") {
  const auto model = default_model();
  std::vector<double> rates;
  // b = 0.747 x (1, 0.529, 0.300): tau = 1 + 0.747 + 0.747 * 0.3952 + 0.747 * 0.3952 * 0.2241 = 2.1084.
  const double tau = model.tokens_per_cycle(constant(0.747, {1.0, 0.529, 0.300}), &rates);
  REQUIRE(rates.size() == 3);
  CHECK_THAT(rates[1], WithinRel(0.747 * 0.529, 1e-12));
  CHECK_THAT(tau, WithinRel(2.1084, 1e-4));
}

TEST_CASE("cycle: patches change the cycle the way the equations say", "[cycle]") {
  const auto k3 = default_model().predict();
  const auto k2 = default_model({"speculation.num_steps=2"}).predict();
  CHECK(k2.verify.tokens == 3);
  CHECK(k2.drafts.size() == 2);  // SGLang: the extend yields the first draft token
  CHECK(k2.verify.message_bytes == 3 * 7168 * 2);
  CHECK(k2.cycle_s < k3.cycle_s);
  // Capturing the verify in a CUDA graph removes the calibrated eager overhead per all-reduce.
  const auto graph = default_model({"engine.verify_mode=graph", "engine.draft_mode=graph"}).predict();
  CHECK(graph.verify.comm_s < 0.25 * k3.verify.comm_s);
  CHECK(graph.spec_tokens_per_s > graph.baseline_tokens_per_s);
}

TEST_CASE("cycle: a what-if box keeps the calibration of the measured box", "[cycle][topology]") {
  const auto here = default_model();
  const auto there = default_model({"topology=8x-h200-nvswitch"});
  // Calibrated once, on the RTX PRO box the measurements come from, and carried over.
  CHECK(there.calibration().host_decode_s.value == here.calibration().host_decode_s.value);
  CHECK(there.calibration().routing_skew.value == here.calibration().routing_skew.value);
  CHECK(there.calibration().eager_overhead_per_op_s.value == here.calibration().eager_overhead_per_op_s.value);
  // The H200 box streams weights 2.7x faster (4.8 vs 1.792 TB/s) over NVSwitch: plain decoding
  // is no longer pinned at the measured 82 tok/s.
  CHECK(there.predict().baseline_tokens_per_s > 1.2 * here.predict().baseline_tokens_per_s);
  CHECK(there.calibration().comm_source.find("h200-8x-nvswitch") != std::string::npos);
  // A box without a measured table falls back to NCCL's prior and says so.
  const auto prior = default_model({"topology=8x-rtx-pro-6000-pcie5-2socket"});
  CHECK_FALSE(prior.calibration().comm_calibrated);
}

TEST_CASE("cycle: parallel.draft_tp 1 replicates the draft: whole weights per GPU, no draft all-reduce",
          "[cycle][draft_tp]") {
  const auto sharded = default_model();
  const auto replicated = default_model({"parallel.draft_tp=1"});
  const auto ps = sharded.predict();
  const auto pr = replicated.predict();
  REQUIRE(ps.drafts.size() == pr.drafts.size());
  for (std::size_t i = 0; i < pr.drafts.size(); ++i) {
    INFO(i);
    CHECK(ps.drafts[i].allreduce_count == 2);  // 2 per layer x 1 layer (engine.embedding_allreduce: false)
    CHECK(pr.drafts[i].allreduce_count == 0);
    CHECK(pr.drafts[i].comm_s == 0.0);
    // The Kimi head's 2.4 GB read whole instead of an eighth: at 1.79 TB/s x 84% about 1.6 ms
    // against 0.2 ms per draft forward, the same kernel count on both.
    CHECK(pr.drafts[i].compute_s > ps.drafts[i].compute_s + 1e-3);
  }
  // Nothing else moves: the target's forwards are the same.
  CHECK(pr.verify.total_s() == ps.verify.total_s());
  CHECK(pr.baseline_tokens_per_s == ps.baseline_tokens_per_s);
  // Memory: every GPU holds the whole draft.
  const auto fit = specsim::memory_fit(replicated.scenario());
  const auto part = std::find_if(fit.parts.begin(), fit.parts.end(), [](const auto& p) { return p.name == "draft weights"; });
  REQUIRE(part != fit.parts.end());
  CHECK(part->bytes == replicated.scenario().draft.weight_bytes());
  // Stating the target's TP is the default, bit for bit.
  CHECK(default_model({"parallel.draft_tp=8"}).predict().spec_tokens_per_s == ps.spec_tokens_per_s);
  // Any other count is refused at the key: vLLM takes 1 or the target's TP.
  CHECK_THROWS_WITH(default_model({"parallel.draft_tp=4"}),
                    Catch::Matchers::Contains("parallel.draft_tp: = 4: the draft runs at TP 1"));
}
