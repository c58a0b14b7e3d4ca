// The speculation methods as one registry (speculation_method.hpp): every row consistent, names
// unique and the loader's choices, and the properties code reads (a block drafter's one forward, a
// draft file or none, the engines' spellings) coming from the row, not from the name. This is the
// example of docs/library.md#a-speculation-method-or-a-kind-of-draft.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "specsim/engine_flags.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/scenario.hpp"
#include "specsim/speculation_method.hpp"

using Catch::Matchers::Contains;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

}  // namespace

TEST_CASE("every speculation method row is consistent", "[speculation-method][how-to-add]") {
  std::set<std::string> names;
  for (const specsim::SpeculationMethod& m : specsim::speculation_methods()) {
    INFO(m.name);
    CHECK(names.insert(m.name).second);  // unique
    // A draft file exactly where the drafts come from one (not the target's MTP, not lookup), and
    // init can say what it is.
    CHECK(m.needs_draft_file() == (std::string(specsim::draft_file_kind(m.source)) != ""));
    // Prompt lookup runs no draft forward, so it cannot draft a block or a tree in one.
    if (!m.runs_draft_forwards()) CHECK_FALSE((m.drafts_block || m.trees || m.parallel_drafting));
    // A block drafter verifies a chain of its block, drafted in one forward already.
    if (m.drafts_block) CHECK_FALSE((m.trees || m.parallel_drafting));
    // init's assumed acceptance is a rate with a source.
    CHECK((m.init.accept > 0.0 && m.init.accept < 1.0));
    CHECK(std::string(m.init.accept_source) != "");
    // Each spelling is of an engine that has launch flags, and reads back as this method.
    for (const specsim::EngineSpelling& s : m.spellings) {
      const auto engine = specsim::parse_engine(s.engine);
      REQUIRE(engine);
      CHECK(specsim::method_value(*engine, m.name) == std::string(s.value));
      CHECK(specsim::method_of_value(*engine, s.value) == std::string(m.name));
    }
  }
  // The loader's choices for speculation.method are the rows, in order.
  REQUIRE(specsim::speculation_method_names().size() == specsim::speculation_methods().size());
  CHECK(specsim::speculation_method_names().front() == "eagle3");
}

TEST_CASE("a block drafter's row drives the cycle's shape", "[speculation-method][how-to-add]") {
  // dflash is the block drafter: its row, not its name, makes SpeculationSettings::drafts_block().
  const specsim::SpeculationMethod& dflash = specsim::speculation_method("dflash");
  CHECK(dflash.drafts_block);
  CHECK(dflash.source == specsim::DraftSource::kDflash);
  CHECK(&specsim::method_for_draft(specsim::DraftSource::kDflash) == &dflash);  // init picks it for a DFlash file
  specsim::SpeculationSettings sp;
  sp.method = "dflash";
  CHECK(sp.drafts_block());
  CHECK(sp.runs_draft_forwards());
  sp.method = "eagle3";
  CHECK_FALSE(sp.drafts_block());

  // A shipped DFlash scenario: block_size 16 states a chain of 16 verified tokens, 15 drafted
  // (num_steps = block_size - 1), drafted by one forward (docs/model.md#block-drafters).
  const specsim::Scenario s = specsim::load_scenario("qwen3-8b-dflash-1x-b200", {}, kRoot);
  CHECK(s.speculation.kind().drafts_block);
  CHECK(s.speculation.shape.is_chain());
  CHECK(s.speculation.shape.num_steps + 1 == s.speculation.shape.verified_tokens());

  // No engine spelling was checked for DFlash, so no launch flag is written for it.
  CHECK_FALSE(specsim::method_value(specsim::Engine::kSglang, "dflash"));
  // ngram: proposals on the host, no forward and no draft file.
  const specsim::SpeculationMethod& ngram = specsim::speculation_method("ngram");
  CHECK_FALSE(ngram.runs_draft_forwards());
  CHECK_FALSE(ngram.needs_draft_file());
  // mtp: forwards of the target's own layers, no draft file.
  CHECK(specsim::speculation_method("mtp").runs_draft_forwards());
  CHECK_FALSE(specsim::speculation_method("mtp").needs_draft_file());
}

// The shipped names first; a row registered in the same process (tests/model/test_block_drafter_example.cpp)
// follows them.
TEST_CASE("an unknown method is refused with the valid names", "[speculation-method]") {
  CHECK(specsim::find_speculation_method("medusa") == nullptr);
  try {
    (void)specsim::speculation_method("medusa");
    FAIL("medusa was taken for a method");
  } catch (const specsim::Error& e) {
    CHECK_THAT(std::string(e.what()), Contains("'medusa' is not a speculation method (eagle3, eagle, mtp, draft_model, ngram, dflash"));
  }
}
