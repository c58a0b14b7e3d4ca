// Rank scaling of measured all-reduce curves (comm_scaling.hpp): worked cases, errors, and the
// held-out check the multi-GPU issue asks for (fit on 2 and 4 GPUs, predict 8) on the one box with
// measured tables at three rank counts: AIC's 8x RTX PRO 6000 PCIe Gen5 per-op tables
// (docs/references/hardware.md#aic-allreduce; calibration/profiles/rtx-pro-6000-{2,4,8}x-pcie5-aic-nccl.yaml).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "specsim/comm_model.hpp"
#include "specsim/comm_scaling.hpp"
#include "specsim/error.hpp"
#include "specsim/hardware.hpp"
#include "specsim/load.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;
using specsim::CurvePoint;
using specsim::MeasuredCurve;
using specsim::RankedCurve;
using specsim::RankScaledCurve;
using specsim::RankScaling;

namespace {

RankedCurve ranked(int ranks, std::vector<CurvePoint> points) {
  specsim::CurveOptions o;
  o.ranks = ranks;
  return {ranks, std::make_shared<const MeasuredCurve>(MeasuredCurve::fit(std::move(points), o))};
}

RankedCurve aic(int ranks) {
  const auto p = specsim::load_comm_profile(std::string(SPECSIM_SOURCE_DIR) + "/calibration/profiles/rtx-pro-6000-" +
                                            std::to_string(ranks) + "x-pcie5-aic-nccl.yaml");
  std::vector<CurvePoint> pts;
  for (const auto& q : p.points) pts.push_back({q.message_bytes, q.time_s});
  return ranked(p.ranks, pts);
}

// The default box as NCCL's model sees it: PCIe with P2P, 2 channels x 12 GB/s, Blackwell.
specsim::NcclPriorConfig pcie_box() {
  specsim::NcclPriorConfig c;
  c.link = specsim::NcclLink::kPci;
  c.arch = specsim::NcclArch::kBlackwell;
  c.graph_channels = 2;
  c.channel_bandwidth_bytes_per_s = 12e9;
  return c;
}

}  // namespace

TEST_CASE("power law in ranks: worked cases", "[comm_scaling]") {
  // t = 10 us x r/2 at every size (latency-bound, one hop per rank): 2 -> 10 us, 4 -> 20 us, so
  // the exponent is 1 and 8 ranks give 20 x (20/10)^(ln 2 / ln 2) = 40 us.
  const auto two = ranked(2, {{1024, 10e-6}, {1048576, 10e-6}});
  const auto four = ranked(4, {{1024, 20e-6}, {1048576, 20e-6}});
  const RankScaledCurve eight({two, four}, 8, pcie_box());
  CHECK(eight.method() == RankScaling::kPowerLaw);
  CHECK(eight.from_ranks() == std::vector<int>{2, 4});
  CHECK_FALSE(eight.measured());
  CHECK_THAT(eight.time_s(65536), WithinRel(40e-6, 1e-12));
  // Interpolation between 2 and 8 (10 and 40 us): 4 ranks -> 10 x 4^(ln 2 / ln 4) = 20 us; 3 ranks
  // -> 10 x 4^(ln 1.5 / ln 4) = 15 us.
  const auto eight_measured = ranked(8, {{1024, 40e-6}, {1048576, 40e-6}});
  CHECK_THAT(RankScaledCurve({two, eight_measured}, 4, pcie_box()).time_s(4096), WithinRel(20e-6, 1e-12));
  CHECK_THAT(RankScaledCurve({two, eight_measured}, 3, pcie_box()).time_s(4096), WithinRel(15e-6, 1e-12));
  // Bandwidth-bound at constant bus bandwidth: t grows like 2(r-1)/r = 1, 1.5 for 2, 4 ranks; the
  // power law carries the exponent ln 1.5 / ln 2 = 0.585 on to 8 ranks: 1.5^2 = 2.25 (the ring
  // itself gives 1.75: the extrapolation overshoots by 29% here, one reason it is an estimate).
  const auto bw2 = ranked(2, {{1e6, 100e-6}, {2e6, 200e-6}});
  const auto bw4 = ranked(4, {{1e6, 150e-6}, {2e6, 300e-6}});
  CHECK_THAT(RankScaledCurve({bw2, bw4}, 8, pcie_box()).time_s(1e6), WithinRel(225e-6, 1e-12));
  // Three counts, target between two of them: the pair around it, not the two nearest.
  const RankScaledCurve five({two, four, eight_measured}, 5, pcie_box());
  CHECK(five.from_ranks() == std::vector<int>{4, 8});
  // A measured target is that curve.
  const RankScaledCurve exact({two, four}, 4, pcie_box());
  CHECK(exact.measured());
  CHECK_THAT(exact.time_s(1024), WithinRel(20e-6, 1e-12));
}

TEST_CASE("NCCL model ratio from one measured rank count", "[comm_scaling]") {
  const auto four = aic(4);
  const RankScaledCurve eight({four}, 8, pcie_box());
  CHECK(eight.method() == RankScaling::kPriorRatio);
  CHECK(eight.from_ranks() == std::vector<int>{4});
  auto at = [](int ranks) {
    auto c = pcie_box();
    c.ranks = ranks;
    return c;
  };
  // 14,336 B (one decode token of Kimi): measured curve at 4 ranks x NCCL's pick at 8 / at 4.
  const double n = 14336;
  const double expected = four.curve->time_s(n) * specsim::nccl_prior_pick(at(8), n).time_s /
                          specsim::nccl_prior_pick(at(4), n).time_s;
  CHECK_THAT(eight.time_s(n), WithinRel(expected, 1e-12));
  CHECK(eight.time_s(n) > four.curve->time_s(n));  // more hops: slower
}

TEST_CASE("rank scaling rejects what it cannot use", "[comm_scaling][invalid]") {
  const auto two = ranked(2, {{1024, 10e-6}, {2048, 11e-6}});
  CHECK_THROWS_WITH(RankScaledCurve({}, 8, pcie_box()), Contains("at least one measured curve"));
  CHECK_THROWS_WITH(RankScaledCurve({two}, 1, pcie_box()), Contains("1: the target rank count must be >= 2"));
  CHECK_THROWS_WITH(RankScaledCurve({two, two}, 8, pcie_box()), Contains("2 ranks measured twice"));
  CHECK_THROWS_WITH(RankScaledCurve({two}, 8, pcie_box(), RankScaling::kPowerLaw),
                    Contains("needs curves at two rank counts; only 2 was measured"));
  CHECK_THROWS_WITH(RankScaledCurve({{1, two.curve}}, 8, pcie_box()), Contains("1: a measured rank count must be >= 2"));
  CHECK_THROWS_WITH(RankScaledCurve({{4, nullptr}}, 8, pcie_box()), Contains("curve at 4 ranks is missing"));
}

TEST_CASE("AIC 8x RTX PRO 6000: fit on 2 and 4 GPUs, predict 8", "[comm_scaling][holdout]") {
  const auto two = aic(2), four = aic(4), eight = aic(8);
  const double sizes[] = {8192, 16384, 32768, 65536, 131072, 262144, 2097152};
  struct Method {
    const char* name;
    RankScaledCurve curve;
  };
  const Method methods[] = {
      {"power law (2, 4)", RankScaledCurve({two, four}, 8, pcie_box())},
      {"NCCL ratio (4)", RankScaledCurve({four}, 8, pcie_box())},
      {"NCCL ratio (2)", RankScaledCurve({two}, 8, pcie_box())},
      {"power law (2, 8) -> 4", RankScaledCurve({two, eight}, 4, pcie_box())},
  };
  std::printf("\nrank scaling on AIC's RTX PRO 6000 PCIe Gen5 tables (graph mode), relative error\n%-22s", "method");
  for (double n : sizes) std::printf(" %8.0fK", n / 1024);
  std::printf("   median    worst\n");
  std::vector<double> medians, worsts;
  for (const auto& m : methods) {
    const bool to_four = std::string(m.name).find("-> 4") != std::string::npos;
    const RankedCurve& truth = to_four ? four : eight;
    std::vector<double> errors;
    std::printf("%-22s", m.name);
    for (double n : sizes) {
      const double e = m.curve.time_s(n) / truth.curve->time_s(n) - 1.0;
      errors.push_back(std::abs(e));
      std::printf(" %+8.1f%%", 100 * e);
    }
    std::sort(errors.begin(), errors.end());
    medians.push_back(errors[errors.size() / 2]);
    worsts.push_back(errors.back());
    std::printf("  %6.1f%%  %6.1f%%\n", 100 * medians.back(), 100 * worsts.back());
  }
  // Regression guards at today's figures (not accuracy claims): the power law from 2 and 4 GPUs
  // is within 7.2% at the median; its worst is 2 MiB (+26%: 8 GPUs reach 221 us where 2 -> 4 GPUs
  // doubled, 72 -> 142 us). NCCL's model ratio misses the small sizes, whose measured time
  // doubles with the rank count while NCCL's Ring/LL latency, 6.6 us + 2(r-1) x 1.0 us on PCI,
  // grows 8.6 -> 12.6 -> 20.6 us (x1.46, x1.63).
  CHECK(medians[0] <= 0.08);
  CHECK(worsts[0] <= 0.27);
  CHECK(medians[0] < medians[1]);  // two measured counts beat NCCL's model from one
  CHECK(medians[3] <= 0.08);
}

TEST_CASE("scenarios: comm.rank_scaling estimates a tp no profile was measured at", "[comm_scaling][scenario]") {
  using specsim::CommModel;
  using specsim::LaunchMode;
  const std::vector<std::string> tp4 = {"parallel.tp=4", "comm.custom_profile="};
  // Off (the default): the 8-rank profile at tp 4 is an error that names the way out.
  CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, tp4),
                    Contains("measured at 8 ranks, the scenario runs tp = 4") && Contains("comm.rank_scaling"));
  // NCCL's ratio from the 8-rank table: 14 KiB is 26.9 us at 8 ranks; the model ratio brings it
  // to 17.1 us at 4 (the measured 4-rank table says 14.5 us). Flagged, not calibrated.
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> patches = tp4;
    patches.insert(patches.end(), extra.begin(), extra.end());
    return CommModel::build(specsim::load_scenario(specsim::kDefaultScenario, patches), 0.0, 0.0);
  };
  const CommModel ratio = with({"comm.rank_scaling=nccl"});
  CHECK_FALSE(ratio.calibrated());
  CHECK_THAT(ratio.source(), Contains("rank-scaled to 4 ranks from rtx-pro-6000-8x-pcie5-aic-nccl (8 ranks)"));
  const CommModel measured = with({"comm.profile=rtx-pro-6000-4x-pcie5-aic-nccl"});
  CHECK(measured.calibrated());
  const auto eight = aic(8);
  specsim::NcclPriorConfig box = pcie_box();
  box.ranks = 8;
  specsim::NcclPriorConfig four = box;
  four.ranks = 4;
  CHECK_THAT(ratio.allreduce_s(14336, LaunchMode::kGraph),
             WithinRel(eight.curve->time_s(14336) * specsim::nccl_prior_ratio(box, four, 14336), 1e-12));
  // The power law between the 2- and 8-rank tables lands nearer the measured 4-rank time.
  const CommModel power = with({"comm.rank_scaling=power", "comm.rank_profiles=rtx-pro-6000-2x-pcie5-aic-nccl"});
  CHECK_THAT(power.source(), Contains("(2 ranks), rtx-pro-6000-8x-pcie5-aic-nccl (8 ranks) by power law in ranks"));
  // The same list written as YAML gives the same model.
  const CommModel power_list = with({"comm.rank_scaling=power", "comm.rank_profiles=[rtx-pro-6000-2x-pcie5-aic-nccl]"});
  CHECK(power_list.allreduce_s(14336, LaunchMode::kGraph) == power.allreduce_s(14336, LaunchMode::kGraph));
  const double truth = measured.allreduce_s(14336, LaunchMode::kGraph);
  CHECK(std::abs(power.allreduce_s(14336, LaunchMode::kGraph) / truth - 1) <
        std::abs(ratio.allreduce_s(14336, LaunchMode::kGraph) / truth - 1));
  // Bad lists: rank_profiles without scaling, two profiles at one rank count.
  CHECK_THROWS_WITH(with({"comm.rank_profiles=rtx-pro-6000-2x-pcie5-aic-nccl"}),
                    Contains("comm.rank_profiles") && Contains("needs comm.rank_scaling"));
  CHECK_THROWS_WITH(with({"comm.rank_scaling=power", "comm.rank_profiles=rtx-pro-6000-8x-pcie5-aic-nccl"}),
                    Contains("a second profile at 8 ranks"));
  CHECK_THROWS_WITH(with({"comm.rank_scaling=power", "comm.rank_profiles=rtx-pro-6000-2x-pcie5-aic-nccl,,x"}),
                    Contains("comm.rank_profiles") && Contains("item 2: empty name"));
}
