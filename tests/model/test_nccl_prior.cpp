// NCCL's tuning model against the worked numbers of docs/references/nccl.md#latency-vs-ranks, #worked-example, and its
// use as a what-if ratio on a calibrated curve.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "specsim/comm_curve.hpp"
#include "specsim/scenario.hpp"
#include "specsim/load.hpp"
#include "specsim/comm_model.hpp"
#include "specsim/cycle.hpp"
#include "specsim/error.hpp"
#include "specsim/nccl_prior.hpp"
#include "specsim/nccl_tests.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;
using specsim::NcclAlgo;
using specsim::NcclPriorConfig;
using specsim::NcclProto;

TEST_CASE("latency = base + 2(r-1) hops (NCCL tuning.cc, one node)", "[nccl_prior]") {
  NcclPriorConfig c;
  for (int r : {2, 4, 8}) {
    c.ranks = r;
    // PCI Ring LL: 6.6 + 2(r-1) * 1.0 us = 8.6 / 12.6 / 20.6 us.
    CHECK_THAT(specsim::nccl_prior(c, NcclAlgo::kRing, NcclProto::kLL, 0).latency_s,
               WithinRel((6.6 + 2.0 * (r - 1) * 1.0) * 1e-6, 1e-12));
    // PCI Ring Simple: 8.4 + 2(r-1) * 5.7 us = 14.1 / 42.6 / 88.2 us.
    CHECK_THAT(specsim::nccl_prior(c, NcclAlgo::kRing, NcclProto::kSimple, 0).latency_s,
               WithinRel((8.4 + 2.0 * (r - 1) * 5.7) * 1e-6, 1e-12));
    // PCI Tree Simple (>= 2.23): 8.4 + 2(r-1) * 4.0 us = 16.4 / 32.4 / 64.4 us.
    CHECK_THAT(specsim::nccl_prior(c, NcclAlgo::kTree, NcclProto::kSimple, 0).latency_s,
               WithinRel((8.4 + 2.0 * (r - 1) * 4.0) * 1e-6, 1e-12));
  }
  c.ranks = 8;
  c.link = specsim::NcclLink::kNvlink;
  // NVLink Ring LL, 8 ranks: 6.6 + 14 * 0.6 = 15.0 us; Ring Simple 8.4 + 14 * 3.4 = 56.0 us.
  CHECK_THAT(specsim::nccl_prior(c, NcclAlgo::kRing, NcclProto::kLL, 0).latency_s, WithinRel(15.0e-6, 1e-12));
  CHECK_THAT(specsim::nccl_prior(c, NcclAlgo::kRing, NcclProto::kSimple, 0).latency_s, WithinRel(56.0e-6, 1e-12));
}

TEST_CASE("the worked example of NCCL's model: 8 ranks, PCIe, 2 channels x 12 GB/s", "[nccl_prior]") {
  const NcclPriorConfig c;  // defaults are that example
  auto us = [&](NcclAlgo a, NcclProto p, double bytes) { return specsim::nccl_prior(c, a, p, bytes).time_s * 1e6; };
  // Ring LL: busBw = min(87.7, 24 * 0.5) = 12 GB/s, algBw = 12 * 8/14 = 6.857 GB/s;
  // 1 KiB: 20.6 + 1024 / 6857 = 20.75 us (table 20.7); 14 KiB token: 20.6 + 2.09 = 22.69 us (22.7).
  CHECK_THAT(us(NcclAlgo::kRing, NcclProto::kLL, 1024), WithinRel(20.6 + 1024 / 6857.142857, 1e-6));
  CHECK_THAT(us(NcclAlgo::kRing, NcclProto::kLL, 14336), WithinRel(22.69, 1e-3));
  // Ring Simple: algBw = 24 * 8/14 = 13.71 GB/s; 1 KiB: 88.2 + 0.075 = 88.27 us (88.3).
  CHECK_THAT(us(NcclAlgo::kRing, NcclProto::kSimple, 1024), WithinRel(88.2 + 1024 / 13714.285714, 1e-6));
  // Tree LL: busBw = min(24*0.92, 2*24.0) / 3.8 = 5.81 GB/s, algBw / 2 = 2.905 GB/s; 14 KiB is
  // correction index floor(log2(14336/64)) = 7 -> 0.7: 20.8 + 14336 / 2033.7 = 27.85 us (27.8).
  CHECK_THAT(us(NcclAlgo::kTree, NcclProto::kLL, 14336), WithinRel(20.8 + 14336 / (24 * 0.92 / 3.8 * 0.5 * 0.7 * 1e3), 1e-6));
  // Tree Simple, 1 KiB: 64.4 + 1024 / (22.08 * 0.5 * 0.9 GB/s) = 64.50 us (64.5).
  CHECK_THAT(us(NcclAlgo::kTree, NcclProto::kSimple, 1024), WithinRel(64.4 + 1024 / (22.08 * 0.5 * 0.9 * 1e3), 1e-6));
  // NCCL's pick: Ring LL up to 512 KiB (97.1 vs 126.4 us), Ring Simple at 1 MiB (164.7 vs 173.5).
  const auto at_512k = specsim::nccl_prior_pick(c, 524288);
  CHECK(at_512k.algo == NcclAlgo::kRing);
  CHECK(at_512k.proto == NcclProto::kLL);
  CHECK_THAT(at_512k.time_s, WithinRel(97.1e-6, 1e-3));
  const auto at_1m = specsim::nccl_prior_pick(c, 1048576);
  CHECK(at_1m.proto == NcclProto::kSimple);
  CHECK_THAT(at_1m.time_s, WithinRel(164.7e-6, 1e-3));
  CHECK_FALSE(at_1m.calibrated);
}

TEST_CASE("per-call channels and LL128 availability", "[nccl_prior]") {
  NcclPriorConfig c;
  // Ring LL, 8 ranks, 14,336 B: threshold 8 B x 8 ranks = 64 B/thread, 512 threads:
  // 14336 < 2 * 512 * 64 -> 1 channel (docs/references/nccl.md#per-call-shrink); at 1 MiB all 4 runtime channels (2 x 2 graph).
  CHECK(specsim::nccl_prior(c, NcclAlgo::kRing, NcclProto::kLL, 14336).channels == 1);
  CHECK(specsim::nccl_prior(c, NcclAlgo::kRing, NcclProto::kLL, 1048576).channels == 4);
  // LL128 is off on PCIe unless named (tuning.cc#L514-L536), on by default over NVLink.
  c.protos = {};
  CHECK(specsim::nccl_prior_pick(c, 4 << 20).proto != NcclProto::kLL128);
  c.link = specsim::NcclLink::kNvlink;
  c.graph_channels = 12;
  c.channel_bandwidth_bytes_per_s = 20e9;
  // NVLink A100-like, 12 x 20 GB/s: LL128 takes over only around 4 MB (docs/references/nccl.md#worked-example).
  CHECK(specsim::nccl_prior_pick(c, 256 << 10).proto == NcclProto::kLL);
  CHECK(specsim::nccl_prior_pick(c, 16 << 20).proto == NcclProto::kLL128);
}

TEST_CASE("the prior as a what-if ratio on a calibrated curve", "[nccl_prior]") {
  const NcclPriorConfig base;
  // NCCL_MAX_NCHANNELS=1 does nothing to the 14 KiB token (already one channel, docs/references/nccl.md#per-call-shrink)
  // but quarters Ring Simple's bandwidth at 64 MiB (1 channel instead of 4).
  NcclPriorConfig one_channel = base;
  one_channel.max_channels = 1;
  CHECK_THAT(specsim::nccl_prior_ratio(base, one_channel, 14336), WithinRel(1.0, 1e-12));
  const double big = 64.0 * 1048576;
  const double simple_alg_bw = 24e9 * 8 / 14;  // Ring Simple algBw
  CHECK_THAT(specsim::nccl_prior_ratio(base, one_channel, big),
             WithinRel((88.2e-6 + big / (simple_alg_bw / 4)) / (88.2e-6 + big / simple_alg_bw), 1e-9));
  // NCCL_PROTO=Simple at the token: NCCL then picks Tree Simple (66.0 us, docs/references/nccl.md#worked-example: 64.4 us +
  // 14336 B / (22.08 GB/s x 0.5 x correction 0.8)) over Ring Simple (89.2 us); against Ring LL's
  // 22.7 us that is ~2.9x.
  NcclPriorConfig simple = base;
  simple.protos = {NcclProto::kSimple};
  const double ratio = specsim::nccl_prior_ratio(base, simple, 14336);
  CHECK(specsim::nccl_prior_pick(simple, 14336).algo == NcclAlgo::kTree);
  CHECK_THAT(ratio, WithinRel((64.4 + 14336 / (22.08 * 0.5 * 0.8 * 1e3)) / (20.6 + 14336 / 6857.142857), 1e-6));
  // Applied to the measured 8x RTX 5090 curve (1 ch x ~24 GB/s graph assumed): 16 KiB measured
  // 38.06 us, so the what-if estimate is 38.06 us x ratio.
  const auto log = specsim::parse_nccl_tests_file(std::string(SPECSIM_SOURCE_DIR) + "/calibration/nccl/aikitoria-8x5090-p2p-turin.log");
  const auto curve = specsim::curve_from_table(log.tables.at(0));
  const double r16k = specsim::nccl_prior_ratio(base, simple, 16384);
  CHECK_THAT(curve.time_s(16384) * r16k, WithinRel(38.06e-6 * r16k, 1e-12));
  CHECK(r16k > 2.5);  // 16 KiB: correction index 8 -> 0.7, ~2.9x as at 14 KiB
}

TEST_CASE("prior inputs are validated and names parse", "[nccl_prior][invalid]") {
  NcclPriorConfig c;
  c.ranks = 1;
  c.min_channels = 4;
  c.max_channels = 2;
  try {
    (void)specsim::nccl_prior_pick(c, 1024);
    FAIL("no error");
  } catch (const specsim::Error& e) {
    // All problems at once.
    CHECK_THAT(e.what(), Contains("ranks = 1: must be >= 2"));
    CHECK_THAT(e.what(), Contains("min_channels = 4 > max_channels = 2"));
  }
  CHECK(specsim::parse_nccl_algo("RING") == NcclAlgo::kRing);
  CHECK(specsim::parse_nccl_proto("ll128") == NcclProto::kLL128);
  CHECK_THROWS_WITH(specsim::parse_nccl_algo("nvls"), Contains("unknown algorithm 'nvls'; valid: Ring, Tree"));
  CHECK_THROWS_WITH(specsim::parse_nccl_proto("fast"), Contains("valid: LL, LL128, Simple"));
}

TEST_CASE("the all-reduce prior's spread is the pooled ratio of the shipped graph-mode NCCL tables", "[nccl_prior]") {
  // kPriorAllReduceRatio: measured / NCCL's model over 4 KiB - 1 MiB (the sizes a decode or verify
  // all-reduce has), at the sizes each table measured, on the four boxes whose topology names a
  // graph-mode NCCL table. Pooled, nearest rank: p10 0.66, median 0.99, p90 1.23 over 32 points
  // (scripts/allreduce_prior_spread.py prints the same per box).
  const specsim::DataDir data(SPECSIM_SOURCE_DIR);
  std::vector<double> ratios;
  for (const char* name : {"2x-rtx-pro-6000-pcie5", "4x-rtx-pro-6000-pcie5", "8x-rtx-pro-6000-pcie5", "8x-h200-nvswitch"}) {
    INFO(name);
    const auto topology = specsim::load_topology(data.resolve(specsim::DataKind::kTopology, name));
    const auto gpu = specsim::load_gpu(data.resolve(specsim::DataKind::kGpu, topology.gpu));
    const auto profile = specsim::load_comm_profile(data.resolve(specsim::DataKind::kCommProfile, topology.comm_profile));
    REQUIRE(profile.mode == specsim::LaunchMode::kGraph);
    const auto curve = specsim::measured_curve(profile, topology.link);
    const auto config = specsim::nccl_prior_config(topology, gpu, profile.ranks);
    for (double bytes = 4096; bytes <= 1048576; bytes *= 2) {
      if (curve->in_measured_range(bytes)) ratios.push_back(curve->time_s(bytes) / specsim::nccl_prior_pick(config, bytes).time_s);
    }
  }
  REQUIRE(ratios.size() == 32);
  std::sort(ratios.begin(), ratios.end());
  const auto rank = [&](double q) { return ratios[std::size_t(std::ceil(q * double(ratios.size()))) - 1]; };
  CHECK_THAT(rank(0.1), WithinAbs(specsim::kPriorAllReduceRatio.p10, 0.005));
  CHECK_THAT(rank(0.9), WithinAbs(specsim::kPriorAllReduceRatio.p90, 0.005));
  CHECK_THAT(0.5 * (ratios[15] + ratios[16]), WithinAbs(0.99, 0.005));  // the prior is unbiased: value 1
}

namespace {

// The prior on an 8-GPU Blackwell box whose driver grants P2P, 8 KiB (docs/references/nccl.md#link-class-prior).
struct LinkBox {
  specsim::GpuSpec gpu;
  specsim::Topology box;
  LinkBox() {
    gpu.architecture = specsim::GpuArch::kBlackwell;
    box.gpus = 8;
  }
  double us(specsim::LinkClass link, const specsim::NcclP2pSettings& nccl = {}, int ranks = 8, double bytes = 8192) {
    box.link = link;
    return specsim::nccl_prior_pick(specsim::nccl_prior_config(box, gpu, ranks, nccl), bytes).time_s * 1e6;
  }
  std::string rule(specsim::LinkClass link, const specsim::NcclP2pSettings& nccl = {}, int ranks = 8) {
    box.link = link;
    return specsim::nccl_transport(box, gpu, ranks, nccl).rule;
  }
};

// NCCL's tuning model at 8 ranks, Blackwell caps, 8 KiB, Ring LL (NCCL's pick in every case below):
// latency 6.6 + 14 steps x 1.0 us (PCI column) = 20.6 us; bus bandwidth channels x per-channel, LL
// half of it; algBw = bus x 8/14.
// P2P through the PCIe tree, 2 x 12 GB/s: + 8192 B / (12 x 8/14 GB/s) = 1.195 us -> 21.79 us.
const double kP2pUs = 20.6 + 8192.0 / (12.0 * 8 / 14 * 1e3);
// SHM through host memory: each step 1.28 us dearer, 1 channel x 5 GB/s:
// 6.6 + 14 x 2.28 + 8192 / (2.5 x 8/14 x 1e3) = 38.52 + 5.73 = 44.25 us.
const double kShmUs = 6.6 + 14 * 2.28 + 8192.0 / (2.5 * 8 / 14 * 1e3);
// P2P over SYS, the socket link NCCL gives an AMD host (AMD_BW 16 GB/s) caps the 2 channels at 8 GB/s:
// 20.6 + 8192 / (8 x 8/14 x 1e3) = 22.39 us.
const double kSysAmdUs = 20.6 + 8192.0 / (8.0 * 8 / 14 * 1e3);

specsim::NcclP2pSettings level(const std::string& l) { return {l, ""}; }

}  // namespace

TEST_CASE("the all-reduce prior follows NCCL's P2P level by link class (2.23.4+, default)", "[nccl_prior][link]") {
  LinkBox b;
  using specsim::LinkClass;
  // paths.cc#L355-L368 at v2.30.7-1: P2P up to PXB; 8 GPUs on the node, so AMD's SYS exception is off.
  CHECK_THAT(b.us(LinkClass::kPix), WithinRel(kP2pUs, 1e-9));  // PATH_PIX 4 <= PXB 5
  CHECK_THAT(b.us(LinkClass::kPxb), WithinRel(kP2pUs, 1e-9));  // PATH_PXB 5 <= PXB 5
  CHECK_THAT(b.us(LinkClass::kPhb), WithinRel(kShmUs, 1e-9));  // PATH_PHB 8 > 5: through the CPU, SHM
  CHECK_THAT(b.us(LinkClass::kNode), WithinRel(kShmUs, 1e-9)); // nvidia-smi NODE is NCCL's PATH_PHB
  CHECK_THAT(b.us(LinkClass::kSys), WithinRel(kShmUs, 1e-9));  // PATH_SYS 9 > 5
  // The report says which rule each class fell under.
  CHECK_THAT(b.rule(LinkClass::kPix), Contains("PIX ring: P2P, within NCCL 2.23.4+'s default P2P level PXB"));
  CHECK_THAT(b.rule(LinkClass::kPxb), Contains("PXB ring: P2P, within NCCL 2.23.4+'s default P2P level PXB"));
  CHECK_THAT(b.rule(LinkClass::kPhb), Contains("PHB ring: SHM through host memory, beyond NCCL 2.23.4+'s default P2P level PXB") &&
                                          Contains("cpu not stated: AMD assumed, prior") &&
                                          Contains("comm.nccl_p2p_level: phb (NCCL_P2P_LEVEL=PHB) gives P2P"));
  CHECK_THAT(b.rule(LinkClass::kNode), Contains("NODE ring (NCCL's PHB): SHM through host memory") &&
                                           Contains("comm.nccl_p2p_level: phb"));
  CHECK_THAT(b.rule(LinkClass::kSys), Contains("SYS ring: SHM through host memory") && Contains("nccl_p2p_level: sys"));
  // The direction of the logs (calibration/nccl/): 8x SYS without P2P 44.02 us at 8 KiB
  // (chlc-8x4090-nop2p-sys.log) is slower than 8x SYS with NCCL_P2P_LEVEL=SYS, 37.00 us
  // (aikitoria-8x5090-p2p-turin.log); saturated, 15.0 GB/s of bus bandwidth against 45.7.
  const double sys_p2p = b.us(LinkClass::kSys, level("sys"));
  CHECK(kShmUs > sys_p2p);
  CHECK(b.us(LinkClass::kSys, {}, 8, 128 << 20) > 2 * b.us(LinkClass::kSys, level("sys"), 8, 128 << 20));
}

TEST_CASE("the all-reduce prior under NCCL_P2P_LEVEL, the host CPU, two GPUs on AMD and older releases",
          "[nccl_prior][link]") {
  LinkBox b;
  using specsim::LinkClass;
  // NCCL_P2P_LEVEL (comm.nccl_p2p_level) replaces the default: PHB reaches PHB and NODE, not SYS.
  CHECK_THAT(b.us(LinkClass::kPhb, level("phb")), WithinRel(kP2pUs, 1e-9));
  CHECK_THAT(b.us(LinkClass::kNode, level("phb")), WithinRel(kP2pUs, 1e-9));
  CHECK_THAT(b.us(LinkClass::kSys, level("phb")), WithinRel(kShmUs, 1e-9));
  CHECK_THAT(b.rule(LinkClass::kNode, level("phb")), Contains("P2P, within NCCL_P2P_LEVEL=PHB (comm.nccl_p2p_level)"));
  // SYS: the socket link by host CPU (topo.h): AMD 16 GB/s -> 22.39 us (the CPU not stated is AMD);
  // Skylake-class Intel 10 GB/s caps each of 2 channels at 5: 20.6 + 8192 / (5 x 8/14 x 1e3) = 23.47 us;
  // Emerald Rapids 40 GB/s leaves PCI_BW's 12: 21.79 us.
  CHECK_THAT(b.us(LinkClass::kSys, level("sys")), WithinRel(kSysAmdUs, 1e-9));
  b.box.cpu = specsim::HostCpu::kIntelSkylake;
  CHECK_THAT(b.us(LinkClass::kSys, level("sys")), WithinRel(20.6 + 8192.0 / (5.0 * 8 / 14 * 1e3), 1e-9));
  b.box.cpu = specsim::HostCpu::kIntelEmeraldRapids;
  CHECK_THAT(b.us(LinkClass::kSys, level("sys")), WithinRel(kP2pUs, 1e-9));
  // NCCL_P2P_DISABLE=1 (loc) sends even PIX, and NVLink, through host memory.
  CHECK_THAT(b.us(LinkClass::kPix, level("loc")), WithinRel(kShmUs, 1e-9));
  CHECK_THAT(b.us(LinkClass::kNvlink, level("loc")), WithinRel(kShmUs, 1e-9));
  // Two GPUs of an AMD host: SYS is within the default level. 2 ranks, Ring LL: 6.6 + 2 x 1.0 = 8.6 us;
  // 2 x 8 GB/s, LL half, algBw 8 x 2/2: + 8192 / 8e3 = 1.024 us -> 9.624 us. On Intel the same pair
  // goes through host memory: 6.6 + 2 x 2.28 + 8192 / (2.5 x 2/2 x 1e3) = 11.16 + 3.277 = 14.44 us.
  b.box.cpu = specsim::HostCpu::kAmd;
  CHECK_THAT(b.us(LinkClass::kSys, {}, 2), WithinRel(8.6 + 8192.0 / 8e3, 1e-9));
  CHECK_THAT(b.rule(LinkClass::kSys, {}, 2), Contains("P2P, within NCCL 2.23.4+'s default P2P level SYS for at most two GPUs on AMD (cpu: amd, 2 GPUs"));
  b.box.cpu = specsim::HostCpu::kIntelSapphireRapids;
  CHECK_THAT(b.us(LinkClass::kSys, {}, 2), WithinRel(6.6 + 2 * 2.28 + 8192.0 / 2.5e3, 1e-9));
  // Before 2.23.4 (paths.cc at v2.22.3-1): SYS, but PXB on Intel and ARM.
  const specsim::NcclP2pSettings v222{"auto", "2.22.3"};
  b.box.cpu.reset();
  CHECK_THAT(b.us(LinkClass::kPhb, v222), WithinRel(kP2pUs, 1e-9));
  CHECK_THAT(b.us(LinkClass::kSys, v222), WithinRel(kSysAmdUs, 1e-9));
  CHECK_THAT(b.rule(LinkClass::kSys, v222), Contains("NCCL 2.22.3's default P2P level SYS (cpu not stated: AMD assumed, prior"));
  b.box.cpu = specsim::HostCpu::kArm;
  CHECK_THAT(b.us(LinkClass::kPhb, v222), WithinRel(kShmUs, 1e-9));
  CHECK_THAT(b.us(LinkClass::kPxb, v222), WithinRel(kP2pUs, 1e-9));
  // A driver without P2P (the topology's p2p off, or a card without it) is SHM whatever the level.
  b.box.p2p = false;
  CHECK_THAT(b.us(LinkClass::kPix, level("sys")), WithinRel(kShmUs, 1e-9));
  CHECK_THAT(b.rule(LinkClass::kPix, level("sys")), Contains("the topology has p2p off"));
  // NVLink keeps its graph under the default level: 16 channels x 40.1 GB/s, NVLink latencies.
  b.box.p2p = true;
  CHECK(b.us(LinkClass::kNvlink) < 20.6);
}

TEST_CASE("predict names NCCL's P2P rule the ring's class fell under", "[nccl_prior][link][report]") {
  // 8x RTX PRO 6000 on two sockets (NODE inside, SYS across; no comm_profile): the prior prices it.
  const specsim::DataDir data(SPECSIM_SOURCE_DIR);
  auto source = [&](std::vector<std::string> patches) {
    patches.push_back("topology=8x-rtx-pro-6000-pcie5-2socket");
    patches.push_back("comm.custom_profile=");
    patches.push_back("comm.implementation=nccl");
    const specsim::Scenario s = specsim::load_scenario(specsim::kDefaultScenario, patches, data);
    return specsim::CycleModel(s).calibration().comm_source;
  };
  CHECK_THAT(source({}), Contains("uncalibrated") && Contains("SYS ring: SHM through host memory, beyond NCCL 2.23.4+'s "
                                                               "default P2P level PXB (cpu not stated: AMD assumed, prior"));
  CHECK_THAT(source({"comm.nccl_p2p_level=sys"}), Contains("SYS ring: P2P, within NCCL_P2P_LEVEL=SYS (comm.nccl_p2p_level)"));
  CHECK_THAT(source({"comm.nccl_version=2.22.3"}), Contains("SYS ring: P2P, within NCCL 2.22.3's default P2P level SYS"));
  // A misspelt level is refused with the valid names.
  CHECK_THROWS_WITH(source({"comm.nccl_p2p_level=node"}), Contains("nccl_p2p_level") && Contains("counts that path as PHB"));
}

TEST_CASE("the H800's cut NVLink prices a large all-reduce slower than the H20's, a small one alike",
          "[nccl_prior][link]") {
  // models/gpu/h800-sxm.yaml: NVLink 200 GB/s per direction (AIC h800_sxm.yaml); models/gpu/h20.yaml:
  // 450 GB/s, as H100 (AIC h20_sxm.yaml). Both Hopper on an 8-GPU NVSwitch board, no measured table.
  const specsim::DataDir data(SPECSIM_SOURCE_DIR);
  const auto prior_s = [&](const char* topology_name, double bytes) {
    const auto topology = specsim::load_topology(data.resolve(specsim::DataKind::kTopology, topology_name));
    CHECK(topology.comm_profile.empty());  // priced by NCCL's model, labelled uncalibrated
    const auto gpu = specsim::load_gpu(data.resolve(specsim::DataKind::kGpu, topology.gpu));
    return specsim::nccl_prior_pick(specsim::nccl_prior_config(topology, gpu, 8), bytes).time_s;
  };
  const double mib64 = 64.0 * 1024 * 1024;
  // 8 channels against 16 of 20.6 GB/s: the bandwidth term doubles.
  CHECK(prior_s("8x-h800-nvswitch", mib64) > 1.8 * prior_s("8x-h20-nvswitch", mib64));
  // A decode all-reduce (16 KiB) is latency-bound: within 5%.
  CHECK_THAT(prior_s("8x-h800-nvswitch", 16384), WithinRel(prior_s("8x-h20-nvswitch", 16384), 0.05));
}
