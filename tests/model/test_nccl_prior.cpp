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

TEST_CASE("the all-reduce prior depends on the ring's link class and P2P as NCCL's graph and the logs do", "[nccl_prior][link]") {
  // docs/references/nccl.md#link-class-prior: 8 ranks, Blackwell caps, 8 KiB.
  specsim::GpuSpec gpu;
  gpu.architecture = specsim::GpuArch::kBlackwell;
  specsim::Topology box;
  box.gpus = 8;
  const auto prior_us = [&](specsim::LinkClass link, bool p2p, double bytes) {
    box.link = link;
    box.p2p = p2p;
    return specsim::nccl_prior_pick(specsim::nccl_prior_config(box, gpu, 8), bytes).time_s * 1e6;
  };
  constexpr double kB = 8192;
  // P2P through the PCIe tree: Ring LL, 6.6 + 14 x 1.0 = 20.6 us; bus 2 x 12 GB/s, LL half of it,
  // algBw 12 x 8/14 = 6.857 GB/s: + 8192 B / 6.857 GB/s = 1.195 us -> 21.79 us.
  for (const auto link : {specsim::LinkClass::kPix, specsim::LinkClass::kPxb, specsim::LinkClass::kPhb,
                          specsim::LinkClass::kNode}) {
    CHECK_THAT(prior_us(link, true, kB), WithinRel(20.6 + 8192.0 / (12.0 * 8 / 14 * 1e3), 1e-9));
  }
  // P2P over SYS: the socket link NCCL assumes (AMD_BW 16 GB/s) caps the bus: 20.6 + 8192 / (8 x 8/14 x 1e3) = 22.39 us.
  const double sys_p2p = prior_us(specsim::LinkClass::kSys, true, kB);
  CHECK_THAT(sys_p2p, WithinRel(20.6 + 8192.0 / (8.0 * 8 / 14 * 1e3), 1e-9));
  // No P2P (SHM): each of the 14 steps 1.28 us dearer, 1 channel x 5 GB/s:
  // 6.6 + 14 x 2.28 + 8192 / (2.5 x 8/14 x 1e3) = 38.52 + 5.73 = 44.25 us, for every class.
  const double sys_shm = prior_us(specsim::LinkClass::kSys, false, kB);
  CHECK_THAT(sys_shm, WithinRel(6.6 + 14 * 2.28 + 8192.0 / (2.5 * 8 / 14 * 1e3), 1e-9));
  CHECK_THAT(prior_us(specsim::LinkClass::kPix, false, kB), WithinRel(sys_shm, 1e-12));
  // The direction of the logs (calibration/nccl/): 8x SYS without P2P 44.02 us at 8 KiB
  // (chlc-8x4090-nop2p-sys.log) is slower than 8x SYS with P2P, 37.00 us (aikitoria-8x5090-p2p-turin.log);
  // saturated, 15.0 GB/s of bus bandwidth against 45.7: the prior is slower without P2P at both ends.
  CHECK(sys_shm > sys_p2p);
  CHECK(prior_us(specsim::LinkClass::kSys, false, 128 << 20) > 2 * prior_us(specsim::LinkClass::kSys, true, 128 << 20));
  CHECK(sys_p2p > prior_us(specsim::LinkClass::kPix, true, kB));  // the socket link caps SYS below PCI_BW x 2
  // NVLink is untouched by the PCIe rules: 16 channels x 40.1 GB/s, NVLink latencies.
  CHECK(prior_us(specsim::LinkClass::kNvlink, true, kB) < 20.6);
}
