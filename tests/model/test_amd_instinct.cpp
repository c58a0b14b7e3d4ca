// AMD Instinct: the MI300X / MI325X / MI355X GPU files, the xGMI mesh topologies, RCCL's prior
// (docs/references/nccl.md#rccl) and the shipped MI355X scenario.
#include <catch2/catch.hpp>

#include "cli_run.hpp"
#include "specsim/comm_model.hpp"
#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/nccl_prior.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
constexpr double kKiB = 1024.0;
constexpr const char* kMi355xScenario = "kimi-k2.5-eagle3-8x-mi355x";

specsim::GpuSpec gpu(const std::string& name) { return specsim::load_gpu(kRoot.resolve(specsim::DataKind::kGpu, name)); }

specsim::Topology topology(const std::string& name) {
  return specsim::load_topology(kRoot.resolve(specsim::DataKind::kTopology, name));
}

}  // namespace

TEST_CASE("amd gpus: the files state CDNA, HBM, dense rates and Infinity Fabric", "[amd][hardware]") {
  const auto mi300x = gpu("mi300x");
  CHECK(mi300x.architecture == specsim::GpuArch::kCdna3);
  CHECK_THAT(mi300x.memory_bytes, WithinRel(192.0 * 1024 * 1024 * 1024, 1e-12));
  CHECK_THAT(mi300x.memory_bandwidth_bytes_per_s, WithinRel(5.3e12, 1e-12));
  CHECK_THAT(mi300x.bf16_flop_per_s, WithinRel(1307.4e12, 1e-12));
  CHECK_THAT(*mi300x.fp8_flop_per_s, WithinRel(2614.9e12, 1e-12));
  // 128 GB/s per link counting both directions: 64 each way, one link to each of 7 peers.
  CHECK_THAT(*mi300x.xgmi_link_bandwidth_bytes_per_s, WithinRel(64e9, 1e-12));
  CHECK(mi300x.xgmi_links == 7);
  CHECK_FALSE(mi300x.nvlink_bandwidth_bytes_per_s);
  CHECK(gpu("mi325x").architecture == specsim::GpuArch::kCdna3);
  CHECK_THAT(gpu("mi325x").memory_bandwidth_bytes_per_s, WithinRel(6e12, 1e-12));
  const auto mi355x = gpu("mi355x");
  CHECK(mi355x.architecture == specsim::GpuArch::kCdna4);
  CHECK_THAT(mi355x.memory_bandwidth_bytes_per_s, WithinRel(8e12, 1e-12));
  CHECK_THAT(*mi355x.xgmi_link_bandwidth_bytes_per_s, WithinRel(153.6e9 / 2, 1e-12));
  CHECK(specsim::parse_gpu_arch("cdna4") == specsim::GpuArch::kCdna4);
  CHECK(std::string(specsim::collective_library(specsim::GpuArch::kCdna3)) == "RCCL");
  CHECK(std::string(specsim::collective_library(specsim::GpuArch::kHopper)) == "NCCL");
}

TEST_CASE("amd topologies: every pair of the 8-GPU mesh is a direct xGMI link", "[amd][topology]") {
  for (const char* name : {"8x-mi355x-xgmi", "8x-mi300x-xgmi"}) {
    INFO(name);
    const auto t = topology(name);
    CHECK(t.gpus == 8);
    CHECK(t.link == specsim::LinkClass::kXgmi);
    CHECK(specsim::ring_link(t).first == specsim::LinkClass::kXgmi);
    for (int i = 0; i < 8; ++i) {
      for (int j = 0; j < 8; ++j) {
        if (i != j) CHECK(t.pair_links[i][j] == specsim::LinkClass::kXgmi);
      }
    }
  }
  // XGMI sorts after NVLink and before every PCIe class.
  CHECK(specsim::slower_link(specsim::LinkClass::kXgmi, 0, specsim::LinkClass::kNvlink, 18));
  CHECK(specsim::slower_link(specsim::LinkClass::kPix, 0, specsim::LinkClass::kXgmi, 0));
  CHECK(specsim::parse_link_class("XGMI") == specsim::LinkClass::kXgmi);
}

TEST_CASE("rccl prior: RCCL's latencies, no LL128, one ring per xGMI link", "[amd][comm]") {
  const auto t = topology("8x-mi355x-xgmi");
  const auto c = specsim::nccl_prior_config(t, gpu("mi300x"), 8);
  CHECK(c.library == specsim::CollectiveLibrary::kRccl);
  CHECK(c.link == specsim::NcclLink::kNvlink);  // RCCL joins xGMI peers with NCCL's NVLink class
  CHECK(c.graph_channels == 7);                 // min(7 links, 8 - 1 ranks)
  // RCCL counts a gfx94x link at 48 GB/s: 48/64 of the MI300X's 64 GB/s per direction.
  CHECK_THAT(c.channel_bandwidth_bytes_per_s, WithinRel(48e9, 1e-12));
  const double bytes = 16 * kKiB;
  // Ring LL: 12 us base + 2(8-1) = 14 hops x 0.8 us = 23.2 us; bus = min(LL cap 141 GB/s (Hopper
  // row), 0.5 x 7 x 48 = 168) = 141 GB/s, algorithm bandwidth 141 x 8 / 14.
  const auto ring_ll = specsim::nccl_prior(c, specsim::NcclAlgo::kRing, specsim::NcclProto::kLL, bytes);
  CHECK_THAT(ring_ll.latency_s, WithinRel(23.2e-6, 1e-9));
  CHECK_THAT(ring_ll.time_s, WithinRel(23.2e-6 + bytes / (141e9 * 8.0 / 14.0), 1e-9));
  // Tree LL: 12 + 14 x 0.9 = 24.6 us, slower; Ring Simple 17 + 14 x 2.1 = 46.4 us.
  CHECK_THAT(specsim::nccl_prior(c, specsim::NcclAlgo::kTree, specsim::NcclProto::kLL, bytes).latency_s,
             WithinRel(24.6e-6, 1e-9));
  CHECK_THAT(specsim::nccl_prior(c, specsim::NcclAlgo::kRing, specsim::NcclProto::kSimple, bytes).latency_s,
             WithinRel(46.4e-6, 1e-9));
  const auto pick = specsim::nccl_prior_pick(c, bytes);
  CHECK(pick.algo == specsim::NcclAlgo::kRing);
  CHECK(pick.proto == specsim::NcclProto::kLL);
  // NCCL's tables on the same graph: 6.6 + 14 x 0.6 = 15.0 us for Ring LL.
  auto nccl = c;
  nccl.library = specsim::CollectiveLibrary::kNccl;
  CHECK_THAT(specsim::nccl_prior(nccl, specsim::NcclAlgo::kRing, specsim::NcclProto::kLL, bytes).latency_s,
             WithinRel(15.0e-6, 1e-9));
}

TEST_CASE("rccl prior: LL128 and Tree/Simple stay out of RCCL's pick unless forced", "[amd][comm]") {
  const auto c = specsim::nccl_prior_config(topology("8x-mi355x-xgmi"), gpu("mi355x"), 8);
  for (const double bytes : {1.0 * kKiB, 64 * kKiB, 4096 * kKiB, 256.0 * 1024 * kKiB}) {
    INFO(bytes);
    const auto e = specsim::nccl_prior_pick(c, bytes);
    CHECK(e.proto != specsim::NcclProto::kLL128);
    CHECK_FALSE((e.algo == specsim::NcclAlgo::kTree && e.proto == specsim::NcclProto::kSimple));
  }
  auto forced = c;
  forced.algos = {specsim::NcclAlgo::kTree};
  forced.protos = {specsim::NcclProto::kSimple};
  const auto e = specsim::nccl_prior_pick(forced, 4096 * kKiB);
  CHECK(e.algo == specsim::NcclAlgo::kTree);
  CHECK(e.proto == specsim::NcclProto::kSimple);
}

TEST_CASE("amd scenario: Kimi-K2.5 + EAGLE-3 on 8x MI355X predicts and names RCCL", "[amd][scenario]") {
  const specsim::Scenario s = specsim::load_scenario(kMi355xScenario, {}, kRoot);
  CHECK(s.gpu.architecture == specsim::GpuArch::kCdna4);
  CHECK(s.topology.link == specsim::LinkClass::kXgmi);
  const auto comm = specsim::CommModel::build(s, 0.0, 0.0);
  CHECK_THAT(comm.source(), Contains("RCCL's analytic model"));
  CHECK_THAT(comm.source(), !Contains("NCCL's"));
  // A pipeline send crosses one xGMI link: 10 us + bytes / 76.8 GB/s.
  CHECK_THAT(comm.send_s(14 * kKiB), WithinRel(10e-6 + 14 * kKiB / 76.8e9, 1e-12));
  const specsim::CycleModel model(s);
  const auto p = model.predict();
  CHECK(p.spec_tokens_per_s > 0.0);
  CHECK(p.spec_tokens_per_s > p.baseline_tokens_per_s);
}

TEST_CASE("amd scenario: a box of NVIDIA cards keeps naming NCCL", "[amd][scenario]") {
  const specsim::Scenario s = specsim::load_scenario("kimi-k2.5-eagle3-8x-h200-nvswitch", {"topology=8x-b200-nvswitch"}, kRoot);
  CHECK_THAT(specsim::CommModel::build(s, 0.0, 0.0).source(), Contains("NCCL's analytic model"));
}

TEST_CASE("amd scenario: an xGMI box needs a card with Infinity Fabric, an NVLink box one with NVLink", "[amd][scenario]") {
  CHECK_THROWS_WITH(specsim::load_scenario(kMi355xScenario, {"gpu=h200"}, kRoot),
                    Contains("'h200' has no Infinity Fabric (its GPU file gives no xgmi_link_bandwidth)"));
  CHECK_THROWS_WITH(specsim::load_scenario(kMi355xScenario, {"topology=8x-h200-nvswitch", "gpu=mi355x"}, kRoot),
                    Contains("'mi355x' has no NVLink"));
}

TEST_CASE("amd comm: the engines' custom kernel runs on the xGMI mesh, each peer over its own link", "[amd][comm]") {
  const auto s = specsim::load_scenario(kMi355xScenario, {"comm.implementation=engine"}, kRoot);
  const auto comm = specsim::CommModel::build(s, 0.0, 0.0);
  CHECK_THAT(comm.source(), Contains("the engine's one-shot kernel (prior)"));
  // One-shot prior: 7.5 us + (r-1) S / B_p2p with B_p2p = 76.8 GB/s x 7 links read at once, so
  // 7.5 us + S / 76.8 GB/s at 8 ranks.
  const double bytes = 56 * kKiB;
  CHECK_THAT(comm.allreduce_s(bytes, specsim::LaunchMode::kGraph), WithinRel(7.5e-6 + 7.0 * bytes / (76.8e9 * 7.0), 1e-12));
}

TEST_CASE("amd comm: specsim comm names RCCL's prior on an AMD box", "[amd][comm]") {
  // The measured table is an H200's; --topology an MI355X mesh: the prior column is RCCL's model.
  const auto r = specsim::test::run({"comm", "--profile", "h200-8x-nvswitch-aic-nccl", "--ranks", "8", "--topology",
                                     "8x-mi355x-xgmi", "--size", "14KiB"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("RCCL prior") && !Contains("NCCL prior"));
  const auto j = specsim::test::run({"comm", "--profile", "h200-8x-nvswitch-aic-nccl", "--ranks", "8", "--topology",
                                     "8x-mi355x-xgmi", "--size", "14KiB", "--json"});
  CHECK_THAT(j.out, Contains("\"library\": \"RCCL\""));
  const auto nvidia = specsim::test::run({"comm", "--profile", "h200-8x-nvswitch-aic-nccl", "--ranks", "8", "--topology",
                                          "8x-h200-nvswitch", "--size", "14KiB"});
  CHECK_THAT(nvidia.out, Contains("NCCL prior"));
}
