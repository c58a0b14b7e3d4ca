// A measured all-to-all table (comm.all_to_all_profile, collective: all_to_all) prices the
// expert-parallel dispatch and combine of parallel.moe_a2a in place of the all-to-all prior
// (docs/calibration.md#all-to-all, docs/references/models.md#all-to-all-measured).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "specsim/collectives.hpp"
#include "specsim/comm_model.hpp"
#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/prior_band.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
const std::string kScenario = "deepseek-v3-mtp-8x-h200-ep8";
constexpr double kUs = 1e-6;

specsim::Scenario with_table(const std::string& profile) {
  return specsim::load_scenario(kScenario, {"parallel.moe_a2a=deepep", "comm.all_to_all_profile=" + profile}, kRoot);
}

bool has_warning(const specsim::Calibration& cal, const std::string& piece) {
  for (const auto& w : cal.warnings) {
    if (w.find(piece) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("all-to-all profile: the table where it measured, the prior joined below it, worked numbers", "[all_to_all]") {
  const specsim::Scenario s = with_table("pplx-h100-8x-ep8-a2a");
  REQUIRE(s.all_to_all_profile);
  const auto table = specsim::CommModel::build(s, 0.0, 0.0);
  const auto prior = specsim::CommModel::build(specsim::load_scenario(kScenario, {"parallel.moe_a2a=deepep"}, kRoot), 0.0, 0.0);
  const auto graph = specsim::LaunchMode::kGraph;
  // At the table's points: pplx-kernels' published means (56 KiB = 1 token x 8 experts x 7168 B FP8).
  CHECK_THAT(table.all_to_all_s(56.0 * 1024, 8, graph), WithinRel(41.6 * kUs, 1e-9));
  CHECK_THAT(table.all_to_all_s(14.0 * 1024 * 1024, 8, graph), WithinRel(102.3 * kUs, 1e-9));
  // The prior on 8x H200 (NVLink 450 GB/s per direction): 30 us + 7/8 S / B, 30.11150 us at 56 KiB
  // and 30.05575 us at 28 KiB. Below the table's first point its shape is scaled to meet it:
  // 30.05575 x 41.6 / 30.11150 = 41.52298 us.
  CHECK_THAT(prior.all_to_all_s(56.0 * 1024, 8, graph), WithinRel(30.1115022 * kUs, 1e-7));
  CHECK_THAT(table.all_to_all_s(28.0 * 1024, 8, graph), WithinRel(41.5229781 * kUs, 1e-7));
  CHECK(table.all_to_all_calibrated());
  CHECK_FALSE(prior.all_to_all_calibrated());
  CHECK_THAT(table.all_to_all_source(), Contains("measured: pplx-h100-8x-ep8-a2a"));
  CHECK_THAT(prior.all_to_all_source(), Contains("prior: 30 us (p10 18 us, p90 50 us: EP8 kernel benchmarks) + (r-1)/r S / B_p2p"));

  // DeepEP's table starts at 7 MiB (128 tokens per rank): the prior there is 30 + 14.27228 us, so a
  // decode's 56 KiB dispatch costs 30.11150 x 77 / 44.27228 = 52.37104 us.
  const auto deepep = specsim::CommModel::build(with_table("deepep-ll-h800-8x-ep8-a2a"), 0.0, 0.0);
  CHECK_THAT(deepep.all_to_all_s(56.0 * 1024, 8, graph), WithinRel(52.3710421 * kUs, 1e-7));
}

TEST_CASE("all-to-all profile: eager launches add the overhead to a graph table, not to an eager one", "[all_to_all]") {
  specsim::Scenario s = with_table("pplx-h100-8x-ep8-a2a");
  const double overhead = 5 * kUs;
  const double bytes = 56.0 * 1024;
  const auto graph_table = specsim::CommModel::build(s, overhead, 0.0);
  CHECK_THAT(graph_table.all_to_all_s(bytes, 8, specsim::LaunchMode::kEager), WithinRel(46.6 * kUs, 1e-9));
  CHECK_THAT(graph_table.all_to_all_s(bytes, 8, specsim::LaunchMode::kGraph), WithinRel(41.6 * kUs, 1e-9));
  s.all_to_all_profile->mode = specsim::LaunchMode::kEager;  // its times hold the launch and the skew already
  const auto eager_table = specsim::CommModel::build(s, overhead, 0.0);
  CHECK_THAT(eager_table.all_to_all_s(bytes, 8, specsim::LaunchMode::kEager), WithinRel(41.6 * kUs, 1e-9));
}

TEST_CASE("all-to-all profile: the verify pays the table's dispatch and combine per MoE layer", "[all_to_all]") {
  const specsim::CycleModel measured(with_table("pplx-h100-8x-ep8-a2a"));
  const specsim::CycleModel prior(specsim::load_scenario(kScenario, {"parallel.moe_a2a=deepep"}, kRoot));
  // Batch 1, a 4-token verify: each of the 58 MoE layers dispatches ceil(4 / 8) = 1 token to 8
  // experts (56 KiB, FP8) and combines 112 KiB (BF16). Table: 41.6 + 41.7 us; prior: 30.11150 +
  // 30.22300 us; 58 x 22.96550 us = 1.33200 ms more comm per verify. Nothing else moves.
  const auto a = measured.predict();
  const auto b = prior.predict();
  CHECK_THAT(a.verify.comm_s - b.verify.comm_s, WithinRel(1331.99861 * kUs, 1e-6));
  CHECK_THAT(a.verify.compute_s, WithinRel(b.verify.compute_s, 1e-12));
  CHECK(a.spec_tokens_per_s < b.spec_tokens_per_s);
  CHECK(measured.calibration().all_to_all_calibrated);
  CHECK_THAT(measured.calibration().all_to_all_source, Contains("pplx all-to-all, 8 ranks, graph, 56 KiB to 14 MiB"));
  CHECK_THAT(prior.calibration().all_to_all_source, Contains("prior"));
  // pplx's kernels stand in for the DeepEP the deployment runs, and the table is another card's: both said.
  CHECK(has_warning(measured.calibration(), "times pplx's all-to-all; the deployment runs deepep's kernels"));
  // A deployment without an all-to-all says nothing about one.
  const specsim::CycleModel none(specsim::load_scenario(kScenario, {}, kRoot));
  CHECK(none.calibration().all_to_all_source.empty());
}

TEST_CASE("all-to-all profile: messages outside the measured sizes are flagged as extrapolated", "[all_to_all]") {
  const specsim::CycleModel model(with_table("deepep-ll-h800-8x-ep8-a2a"));
  const auto& cal = model.calibration();
  // Batch 1: the dispatch (56 KiB) and the combine (112 KiB) of the decode and the verify, one
  // warning per message, both below the table's 7 MiB.
  CHECK(has_warning(cal, "the decode and the verify's all-to-all (MoE dispatch: tokens to their experts' ranks (FP8), 56 KiB) "
                         "is below the all-to-all table's smallest measured message (7 MiB)"));
  CHECK(has_warning(cal, "(MoE combine: expert outputs back (BF16), 112 KiB) is below"));
  // At batch 1024 the verify's combine (1024 x 4 / 8 = 512 tokens per rank, 56 MiB) lies above 14 MiB.
  const specsim::CycleModel big(specsim::load_scenario(
      kScenario, {"parallel.moe_a2a=deepep", "comm.all_to_all_profile=deepep-ll-h800-8x-ep8-a2a", "workload.batch=1024"},
      kRoot));
  CHECK(has_warning(big.calibration(), "56 MiB) is above the all-to-all table's largest measured message (14 MiB)"));
}

TEST_CASE("all-to-all latency: the prior's spread enters the band, a set latency or a table replaces it", "[all_to_all]") {
  const auto terms = [](const specsim::Scenario& s) {
    const specsim::CycleModel m(s);
    const auto band = specsim::prior_band(m, m.predict());
    return std::find(band.terms.begin(), band.terms.end(), "all-to-all latency") != band.terms.end();
  };
  const auto a2a = [](std::vector<std::string> patches) {
    patches.insert(patches.begin(), "parallel.moe_a2a=deepep");
    return specsim::load_scenario(kScenario, patches, kRoot);
  };
  CHECK(terms(a2a({})));
  CHECK_FALSE(terms(a2a({"comm.all_to_all_latency=20us"})));
  CHECK_FALSE(terms(with_table("pplx-h100-8x-ep8-a2a")));
  CHECK_FALSE(terms(specsim::load_scenario(kScenario, {}, kRoot)));  // no all-to-all at all
  // A set latency: 20 us + 7/8 x 56 KiB / 450 GB/s = 20.11150 us, and the report says "set".
  const specsim::Scenario set = a2a({"comm.all_to_all_latency=20us"});
  const auto comm = specsim::CommModel::build(set, 0.0, 0.0);
  CHECK_THAT(comm.all_to_all_s(56.0 * 1024, 8, specsim::LaunchMode::kGraph), WithinRel(20.1115022 * kUs, 1e-7));
  CHECK_THAT(comm.all_to_all_source(), Contains("set: 20 us + (r-1)/r S / B_p2p"));
  // Bad input names the key: no all-to-all to price, or a table beside it.
  CHECK_THROWS_WITH(specsim::load_scenario(kScenario, {"comm.all_to_all_latency=20us"}, kRoot),
                    Contains("comm.all_to_all_latency: sets the all-to-all's latency, but the scenario runs none"));
  CHECK_THROWS_WITH(a2a({"comm.all_to_all_profile=pplx-h100-8x-ep8-a2a", "comm.all_to_all_latency=20us"}),
                    Contains("comm.all_to_all_latency: comm.all_to_all_profile prices the all-to-all already"));
  CHECK_THROWS_WITH(a2a({"comm.all_to_all_latency=0us"}), Contains("all_to_all_latency: must be > 0"));
}
