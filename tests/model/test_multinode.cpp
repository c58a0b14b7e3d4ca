// Topologies of several nodes (docs/model.md#multi-node): NCCL's latency across nodes (tuning.cc's
// NET row), the hierarchical bandwidth term, pipeline sends and all-to-alls over the network, and
// the shipped 2x8 H100 boxes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "specsim/collectives.hpp"
#include "specsim/comm_model.hpp"
#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/nccl_prior.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
const std::string kScenario = "deepseek-v3-mtp-2x8-h100-ib";

// Two nodes of 8 H100 on NVSwitch: NCCL's NVSwitch graph (16 channels x 20.6 GB/s, comm_model.cpp)
// and 8 rails of 50 GB/s between the nodes.
specsim::NcclPriorConfig two_nodes(int ranks) {
  specsim::NcclPriorConfig c;
  c.ranks = ranks;
  c.link = specsim::NcclLink::kNvlink;
  c.arch = specsim::NcclArch::kHopper;
  c.graph_channels = 16;
  c.channel_bandwidth_bytes_per_s = 20.6e9;
  c.gpus_per_node = 8;
  c.net_bandwidth_bytes_per_s = 8 * 50e9;
  return c;
}

}  // namespace

TEST_CASE("multi-node: the 2x8 H100 InfiniBand topology", "[multinode]") {
  const specsim::Topology t = specsim::load_topology(kRoot.resolve(specsim::DataKind::kTopology, "2x8-h100-ib"));
  CHECK(t.gpus == 16);
  CHECK(t.nodes == 2);
  CHECK(t.gpus_per_node == 8);
  REQUIRE(t.network);
  CHECK(t.network->kind == specsim::NetworkKind::kInfiniband);
  CHECK(t.network->rails == 8);
  // 400 Gb/s per ConnectX-7 port = 50 GB/s; eight of them per node.
  CHECK_THAT(t.network->node_bandwidth_bytes_per_s(), WithinRel(400e9, 1e-12));
  CHECK_THAT(t.network->latency_s, WithinRel(14e-6, 1e-12));
  CHECK(t.nodes_spanned(8) == 1);
  CHECK(t.nodes_spanned(16) == 2);
  CHECK(specsim::network_text(t) == "8x 50 GB/s InfiniBand");
}

TEST_CASE("multi-node: NCCL's latency across two nodes", "[multinode]") {
  const specsim::NcclPriorConfig c = two_nodes(16);
  REQUIRE(c.nodes() == 2);
  // Ring/LL, all-reduce, r = 16 on n = 2: base 6.6 + (2*15 - 2*1) steps x max(NVLink 0.6, net overhead
  // 1.0) + 2 NET hops x 2.7 = 6.6 + 28 + 5.4 = 40.0 us.
  CHECK_THAT(specsim::nccl_prior(c, specsim::NcclAlgo::kRing, specsim::NcclProto::kLL, 8.0).latency_s,
             WithinRel(40.0e-6, 1e-9));
  // Tree/LL: base 6.8 + 2 x ((8-1) x 0.6 + log2(2) x 5.0) = 6.8 + 2 x 9.2 = 25.2 us.
  CHECK_THAT(specsim::nccl_prior(c, specsim::NcclAlgo::kTree, specsim::NcclProto::kLL, 8.0).latency_s,
             WithinRel(25.2e-6, 1e-9));
  // Ring/Simple at 64 MiB (per channel and rank 64 MiB / (32 x 16) >= 64 B: the x1.4 plateau):
  // (8.4 + 28 x max(3.4, 3 x 1.0) + 2 x 14) x 1.4 = (8.4 + 95.2 + 28) x 1.4 = 184.24 us.
  const auto simple = specsim::nccl_prior(c, specsim::NcclAlgo::kRing, specsim::NcclProto::kSimple, 64.0 * (1 << 20));
  CHECK_THAT(simple.latency_s, WithinRel(184.24e-6, 1e-9));
  // Ring bandwidth: NCCL's flat ring, the slower of the node's ring (16 x 20.6 = 329.6 GB/s) and the
  // rails (8 x 50 = 400 GB/s) as busBw, x r / 2(r-1): 329.6 x 16/30 = 175.79 GB/s.
  CHECK_THAT(simple.bandwidth_bytes_per_s, WithinRel(329.6e9 * 16.0 / 30.0, 1e-9));
  // LL: the rails x0.5 capped at the 2-node llMaxBw, 39 GB/s, below the node's min(141, 164.8):
  // 39 x 16/30 = 20.8 GB/s.
  const auto ll = specsim::nccl_prior(c, specsim::NcclAlgo::kRing, specsim::NcclProto::kLL, 8.0);
  CHECK_THAT(ll.bandwidth_bytes_per_s, WithinRel(39e9 * 16.0 / 30.0, 1e-9));
  // Tree/Simple at 1 GiB (past treeCorrectionFactor's sizes): the chain inside the node moves 2 S at
  // min(329.6 x 0.92, 16 x 38.7) = 303.232 GB/s, the tree between the nodes 2 (2-1)/2 S = S at 400 GB/s;
  // pipelined, the chain's 2 / 303.232 s/GB sets 151.616 GB/s.
  const auto tree = specsim::nccl_prior(c, specsim::NcclAlgo::kTree, specsim::NcclProto::kSimple, 1073741824.0);
  CHECK_THAT(tree.bandwidth_bytes_per_s, WithinRel(303.232e9 / 2.0, 1e-9));
  // All-gather of r = 16 on 2 nodes, Ring/LL: 6.6 + (15 - 1) x 1.0 + 1 x 2.7 = 23.3 us.
  CHECK_THAT(specsim::nccl_prior_gather_pick(c, 8.0).latency_s, WithinRel(23.3e-6, 1e-9));
}

TEST_CASE("multi-node: one node is NCCL's one-node model, across nodes it costs more", "[multinode]") {
  specsim::NcclPriorConfig one_node = two_nodes(8);
  specsim::NcclPriorConfig plain = one_node;
  plain.gpus_per_node = 0;
  plain.net_bandwidth_bytes_per_s = 0.0;
  double last = 0.0;
  for (double bytes = 8.0; bytes <= 1e9; bytes *= 4.0) {
    INFO(bytes);
    CHECK(specsim::nccl_prior_pick(one_node, bytes).time_s == specsim::nccl_prior_pick(plain, bytes).time_s);
    // Sixteen ranks over two nodes: slower than eight in one node at every size, monotone in size.
    const double across = specsim::nccl_prior_pick(two_nodes(16), bytes).time_s;
    CHECK(across > specsim::nccl_prior_pick(plain, bytes).time_s);
    CHECK(across >= last);
    last = across;
  }
  specsim::NcclPriorConfig uneven = two_nodes(12);
  CHECK_THROWS_WITH(specsim::nccl_prior_pick(uneven, 8.0), Contains("multiple of gpus_per_node = 8"));
}

TEST_CASE("multi-node: TP16 over two nodes prices its all-reduce from the network and says so", "[multinode]") {
  // The shipped box carries a measured 16-rank InfiniBand table (NVIDIA/nccl-tests issue 309); without
  // it (comm.profile = "") the network model prices the crossing and says it is a prior.
  const specsim::Scenario measured = specsim::load_scenario(kScenario, {}, kRoot);
  CHECK_THAT(specsim::CycleModel(measured).calibration().comm_source,
             Contains("measured: nccl-qoofyk-2x8xH100-xe9680-ib (NCCL 2.26.2); the tp group spans 2 nodes, "
                      "inter-node: in the measured table (8x 50 GB/s InfiniBand)"));
  const specsim::Scenario s = specsim::load_scenario(kScenario, {"comm.profile="}, kRoot);
  REQUIRE(s.parallel.tp == 16);
  const specsim::CycleModel model(s);
  const std::string& source = model.calibration().comm_source;
  CHECK_THAT(source, Contains("the tp group spans 2 nodes, inter-node: NCCL's model over 8x 50 GB/s InfiniBand (prior)"));
  const specsim::Prediction p = model.predict();
  CHECK(p.spec_tokens_per_s > 0.0);
  const auto& list = p.decode.collectives;
  REQUIRE(!list.empty());
  CHECK(list.front().collective.op == specsim::CollectiveOp::kAllReduce);
  CHECK(list.front().collective.nodes == 2);
  // The same deployment on one node's worth of ranks (TP8 on the first node) pays less per all-reduce.
  const specsim::CommModel across = specsim::CommModel::baseline(s);
  const specsim::CommModel inside =
      specsim::CommModel::baseline(specsim::load_scenario(kScenario, {"parallel.tp=8", "comm.profile="}, kRoot));
  const double bytes = 7168 * 2.0;  // one token's hidden state, BF16
  CHECK(across.allreduce_s(bytes, specsim::LaunchMode::kGraph) > inside.allreduce_s(bytes, specsim::LaunchMode::kGraph));
}

TEST_CASE("multi-node: a pipeline send between nodes crosses the network", "[multinode]") {
  // TP8 per stage runs inside one node: the box's 16-rank table does not describe it.
  const specsim::Scenario s = specsim::load_scenario(kScenario, {"parallel.tp=8", "parallel.pp=2", "comm.profile="}, kRoot);
  const auto list = specsim::forward_collectives(s.model, specsim::ForwardOf::kTarget, s.parallel, std::nullopt, 1.0,
                                                 s.topology.link, 1, s.topology.gpus_per_node);
  int crossing = 0, inside = 0;
  for (const auto& c : list) {
    if (c.op == specsim::CollectiveOp::kSend) (c.nodes > 1 ? crossing : inside) += c.count;
    if (c.op == specsim::CollectiveOp::kAllReduce) CHECK(c.nodes == 1);  // each stage's TP8 in one node
  }
  CHECK(crossing == 1);  // stage 0 on node 0, stage 1 on node 1
  CHECK(inside == 0);
  // network latency + S / one NIC: 14 us + 14,336 B / 50 GB/s = 14.287 us; inside a node 10 us +
  // S / 450 GB/s (H100 NVLink per direction).
  const specsim::CommModel comm = specsim::CommModel::baseline(s);
  const double bytes = 7168 * 2.0;
  CHECK_THAT(comm.send_s(bytes, true), WithinRel(14e-6 + bytes / 50e9, 1e-12));
  CHECK_THAT(comm.send_s(bytes), WithinRel(10e-6 + bytes / 450e9, 1e-12));
  // TP4 x PP4: stages 0-1 on node 0, 2-3 on node 1: one send of three crosses.
  const auto pp4 = specsim::forward_collectives(s.model, specsim::ForwardOf::kTarget,
                                                specsim::load_scenario(kScenario, {"parallel.tp=4", "parallel.pp=4", "comm.profile="}, kRoot).parallel,
                                                std::nullopt, 1.0, s.topology.link, 1, 8);
  int sends_across = 0, sends_inside = 0;
  for (const auto& c : pp4) {
    if (c.op == specsim::CollectiveOp::kSend) (c.nodes > 1 ? sends_across : sends_inside) += c.count;
  }
  CHECK(sends_across == 1);
  CHECK(sends_inside == 2);
}

TEST_CASE("multi-node: an EP16 all-to-all sends its off-node share over the rails", "[multinode]") {
  const specsim::Scenario s = specsim::load_scenario(kScenario, {"parallel.ep=16", "parallel.moe_a2a=deepep"}, kRoot);
  const specsim::CycleModel model(s);
  CHECK_THAT(model.calibration().all_to_all_source, Contains("across 2 nodes the off-node share over 8x 50 GB/s InfiniBand (prior)"));
  const specsim::CommModel comm = specsim::CommModel::baseline(s);
  // r = 16, g = 8: 7/16 of S over NVLink (450 GB/s) beside 8/16 of S over the rank's rail share,
  // 8 x 50 / 8 = 50 GB/s; the slower counts, after 30 us (kernel prior) + 14 us (network).
  const double bytes = 1 << 20;
  const double expected = 30e-6 + 14e-6 + std::max(7.0 / 16 * bytes / 450e9, 8.0 / 16 * bytes / 50e9);
  CHECK_THAT(comm.all_to_all_s(bytes, 16, specsim::LaunchMode::kGraph), WithinRel(expected, 1e-12));
}

TEST_CASE("multi-node: a tp group must fit a node or fill whole nodes", "[multinode]") {
  CHECK_THROWS_WITH(specsim::load_scenario(kScenario, {"parallel.tp=12"}, kRoot),
                    Contains("a tp group must fit in one node or fill whole nodes"));
}
