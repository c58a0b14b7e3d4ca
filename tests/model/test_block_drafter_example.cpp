// The worked example of docs/library.md#a-speculation-method: a block drafter added by following the
// recipe alone. A method is a row of the registry (speculation_method.hpp); a planning tool adds its
// own with register_speculation_method, as this test does, and a shipped one is the same row in
// lib/src/model/speculation_method.cpp. The drafter here reads a DFlash-format model file (its
// draft source), so the loader's rules, the cycle, memory and the sweep take it with no code of
// their own; this file is the only one the example touches.
#include <catch2/catch.hpp>

#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/scenario_fields.hpp"
#include "specsim/scenario_rules.hpp"
#include "specsim/speculation_method.hpp"

using Catch::Matchers::Contains;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
const char* kDflashScenario = "qwen3-8b-dflash-1x-b200";

// One row: where its drafts come from and what its cycle looks like. No engine spelling: specsim
// has checked none, so emit says so rather than guess a flag.
const specsim::SpeculationMethod& example_row() {
  static const specsim::SpeculationMethod row = [] {
    specsim::SpeculationMethod m{};
    m.name = "block-example";
    m.source = specsim::DraftSource::kDflash;
    m.drafts_block = true;
    m.trees = false;
    m.init = {0.8, "the example's own assumption (a test fixture)"};
    specsim::register_speculation_method(m);
    return m;
  }();
  return row;
}

}  // namespace

TEST_CASE("block drafter example: one registry row, and the scenario predicts a block per cycle", "[method][dflash]") {
  (void)example_row();
  const auto names = specsim::speculation_method_names();
  CHECK(std::find(names.begin(), names.end(), "block-example") != names.end());
  const auto base = specsim::CycleModel(specsim::load_scenario(kDflashScenario, {}, kRoot)).predict();
  const auto s = specsim::load_scenario(kDflashScenario, {"speculation.method=block-example"}, kRoot);
  CHECK(s.speculation.drafts_block());
  const auto p = specsim::CycleModel(s).predict();
  // One draft forward over the block, whatever was accepted, as DFlash's row says for its own.
  REQUIRE(p.drafts.size() == 1);
  CHECK(p.drafts[0].tokens == base.drafts[0].tokens);
  // The same verify and drafter forward as dflash: the method's properties price it, not its name.
  CHECK(p.verify.total_s() == base.verify.total_s());
  CHECK(p.drafts[0].total_s() == base.drafts[0].total_s());
  CHECK(p.tokens_per_cycle == base.tokens_per_cycle);
}

TEST_CASE("block drafter example: the rules of its row, in the loader and on a what-if", "[method][dflash][invalid]") {
  (void)example_row();
  // A block drafter states its block: the loader refuses a chain's keys at the patch...
  CHECK_THROWS_WITH(specsim::load_scenario(kDflashScenario, {"speculation.method=block-example", "speculation.num_steps=4"}, kRoot),
                    Contains("speculation.num_steps: speculation.method block-example drafts one block per cycle"));
  // ...and so does a what-if on the loaded value, by the same rule.
  auto s = specsim::load_scenario(kDflashScenario, {"speculation.method=block-example"}, kRoot);
  specsim::set_field(s, specsim::parse_field_value("speculation.num_steps", "4", {"--vary", 0, 0}));
  CHECK_FALSE(specsim::what_if_problems(s).empty());
  // Its draft must be a block drafter's file: an EAGLE-3 head is refused at `draft`.
  CHECK_THROWS_WITH(specsim::load_scenario("llama-3.1-8b-eagle3-1x-h200", {"speculation.method=block-example"}, kRoot),
                    Contains("is not a DFlash drafter") && Contains("speculation.method block-example needs one"));
  // A second row of the same name, or a block drafter that claims trees, is refused.
  CHECK_THROWS_WITH(specsim::register_speculation_method(example_row()), Contains("registered already"));
  specsim::SpeculationMethod trees{};
  trees.name = "block-trees";
  trees.source = specsim::DraftSource::kDflash;
  trees.drafts_block = true;
  CHECK_THROWS_WITH(specsim::register_speculation_method(trees), Contains("drafts no trees"));
}
