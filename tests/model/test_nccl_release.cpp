// comm.nccl_version: the NCCL release a deployment runs, checked against the release each measured
// NCCL table states (a profile's nccl_version) and against the release range of the prior's tables
// (docs/references/nccl.md#versions). Mismatches are notes, shown as predict's warnings.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "specsim/comm_model.hpp"
#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/nccl_prior.hpp"

using Catch::Matchers::Contains;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
// The home box: comm.profile rtx-pro-6000-8x-pcie5-aic-nccl, from AIC's nccl/2.29.2 folder.
const std::string kHome = "kimi-k2.5-eagle3-8x-rtx-pro-6000";
// No measured table at 4 ranks on H100: the NCCL prior prices the all-reduces.
const std::string kPrior = "llama-3.3-70b-eagle3-4x-h100-nvswitch";

// The notes that mention NCCL releases (the loader adds others, e.g. a profile from another card).
std::vector<std::string> release_notes(const specsim::Scenario& s) {
  std::vector<std::string> out;
  for (const auto& n : s.notes) {
    if (n.find("NCCL ") != std::string::npos) out.push_back(n);
  }
  return out;
}

}  // namespace

TEST_CASE("nccl release: versions parse as MAJOR.MINOR[.PATCH] and order by number", "[nccl_release]") {
  const auto v = specsim::parse_nccl_version("2.29.7");
  REQUIRE(v);
  CHECK((v->major == 2 && v->minor == 29 && v->patch == 7));
  CHECK(specsim::to_string(*v) == "2.29.7");
  REQUIRE(specsim::parse_nccl_version("2.29"));
  CHECK(specsim::parse_nccl_version("2.29")->patch == 0);
  for (const char* bad : {"", "2", "2.", "2.29.", "v2.29", "2.29.7.1", "2.-1", "2.29-rc1", " 2.29", "2.29 "}) {
    INFO(bad);
    CHECK_FALSE(specsim::parse_nccl_version(bad));
  }
  // By number, not by text: 2.9 < 2.23.4 < 2.24 < 2.100.
  CHECK(*specsim::parse_nccl_version("2.9.9") < specsim::kNcclPriorTablesSince);
  CHECK(specsim::kNcclPriorTablesSince < specsim::kNcclAlgoPerCollectiveSince);
  CHECK(specsim::kNcclAlgoPerCollectiveSince < *specsim::parse_nccl_version("2.100.0"));
  CHECK(v->same_minor(*specsim::parse_nccl_version("2.29.2")));
  CHECK_FALSE(v->same_minor(*specsim::parse_nccl_version("2.28.7")));
}

TEST_CASE("nccl release: a shipped table states its release and predict's source names it", "[nccl_release]") {
  const specsim::Scenario s = specsim::load_scenario(kHome, {}, kRoot);
  REQUIRE(s.comm_profile);
  CHECK(s.comm_profile->nccl_version == "2.29.2");
  const auto comm = specsim::CommModel::build(s, 0.0, 0.0);
  CHECK_THAT(comm.source(), Contains("measured: rtx-pro-6000-8x-pcie5-aic-nccl (NCCL 2.29.2)"));
  // Without comm.nccl_version nothing is compared.
  CHECK(release_notes(s).empty());
}

TEST_CASE("nccl release: a table measured under another minor release is flagged, a patch release is not",
          "[nccl_release]") {
  CHECK(release_notes(specsim::load_scenario(kHome, {"comm.nccl_version=2.29.7"}, kRoot)).empty());
  CHECK(release_notes(specsim::load_scenario(kHome, {"comm.nccl_version=2.29"}, kRoot)).empty());

  const specsim::Scenario older = specsim::load_scenario(kHome, {"comm.nccl_version=2.28.9"}, kRoot);
  const auto notes = release_notes(older);
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Contains("comm.profile 'rtx-pro-6000-8x-pcie5-aic-nccl' was measured under NCCL 2.29.2 and "
                                "the scenario runs NCCL 2.28.9") &&
                           Contains("NVIDIA/nccl#2094") && Contains("measure it again under 2.28.9"));
  // The note reaches predict's warnings (text and JSON print Calibration::warnings).
  const specsim::CycleModel model(older);
  bool warned = false;
  for (const auto& w : model.calibration().warnings) warned = warned || w == notes[0];
  CHECK(warned);
}

TEST_CASE("nccl release: a table that does not state its release is said to be unknown", "[nccl_release]") {
  // chlc's 8x 4090 log prints no NCCL version (calibration/profiles/nccl-chlc-8x4090-nop2p-sys.yaml).
  const auto s = specsim::load_scenario(
      kHome, {"comm.profile=nccl-chlc-8x4090-nop2p-sys", "comm.nccl_version=2.29.2"}, kRoot);
  const auto notes = release_notes(s);
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Contains("comm.profile 'nccl-chlc-8x4090-nop2p-sys' does not say which NCCL release it was "
                                "measured under and the scenario runs NCCL 2.29.2"));
}

TEST_CASE("nccl release: the prior's tables are those of 2.23.4 and later", "[nccl_release]") {
  REQUIRE_FALSE(specsim::load_scenario(kPrior, {}, kRoot).comm_profile);
  CHECK(release_notes(specsim::load_scenario(kPrior, {"comm.nccl_version=2.23.4"}, kRoot)).empty());
  const auto notes = release_notes(specsim::load_scenario(kPrior, {"comm.nccl_version=2.21.5"}, kRoot));
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Contains("the NCCL all-reduce prior holds the latency tables of NCCL 2.23.4 and later, and the "
                                "scenario runs NCCL 2.21.5"));
  // A measured table replaces the prior: no such note on the home box.
  CHECK(release_notes(specsim::load_scenario(kHome, {"comm.nccl_version=2.29.2", "comm.nccl_algo=ring"}, kRoot)).empty());
}

TEST_CASE("nccl release: NCCL_ALGO=Tree before 2.24 applies to every collective", "[nccl_release]") {
  CHECK(release_notes(specsim::load_scenario(kPrior, {"comm.nccl_version=2.24.3", "comm.nccl_algo=tree"}, kRoot)).empty());
  const auto notes =
      release_notes(specsim::load_scenario(kPrior, {"comm.nccl_version=2.23.4", "comm.nccl_algo=tree"}, kRoot));
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Contains("comm.nccl_algo = tree under NCCL 2.23.4: before 2.24.0 NCCL_ALGO has no "
                                "per-collective form ('allreduce:tree')") &&
                           Contains("ncclInvalidUsage"));
  // Ring exists for every collective: no note.
  CHECK(release_notes(specsim::load_scenario(kPrior, {"comm.nccl_version=2.23.4", "comm.nccl_algo=ring"}, kRoot)).empty());
}
