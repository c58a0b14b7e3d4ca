// NCCL's own analytic cost model for all-reduce on one node (src/graph/tuning.cc, tag v2.30.7-1;
// docs/references/nccl.md#tuning-model), used where nothing was measured - every estimate it gives is
// uncalibrated - and as a ratio on a calibrated curve for NCCL_ALGO / NCCL_PROTO / channel what-ifs:
//
//   time = lat[algo][proto] + bytes / algBw[algo][proto]                          (tuning.cc#L630-L655)
//   lat  = base[algo][proto] + 2(r-1) * hw[link][algo][proto]                      (one node, 1.2)
//   busBw = graph channels * per-channel bw, then per algo/proto caps (LL: x0.5, min llMaxBw; ...)
//   algBw = busBw * r / (2(r-1)) for Ring, busBw / 2 for Tree; Tree x treeCorrectionFactor(bytes)
//
// NCCL picks the (algo, proto) with the least time among the enabled ones; so does nccl_prior_pick.
//
// RCCL (AMD's fork, src/graph/tuning.cc at ROCm/rccl 0cbce2a; docs/references/nccl.md#rccl) keeps the
// same equations with its own tables: base latency 12 / 12 / 17 us (LL / LL128 / Simple), the
// per-hop latencies of the tuning model its 8-GPU fully connected xGMI platform selects (model 5:
// xGMI links are NCCL's NVLink class there), LL128 off, Tree/Simple skipped inside one gfx94x node,
// and its own 27-entry Tree correction. NcclPriorConfig::library picks the tables.
//
// All-gather and reduce-scatter (tuning.cc, ncclTopoTuneModel): bytes = the gathered tensor
// (enqueue.cc multiplies a per-rank count by the ranks), nsteps = r-1 instead of 2(r-1), Ring only
// inside a node (no Tree), and algBw = busBw * r / (r-1):
//   time = base[Ring][proto] + (r-1) * hw[link][Ring][proto] + bytes (r-1) / (r busBw)
//
// Across nodes (nodes n, ranks per node g = r / n; docs/model.md#multi-node), NCCL's latency for
// the NET path (tuning.cc#L384-L417, hwLatencies NET row) and a bandwidth term that names the network:
//   Ring: lat = base + (2(r-1) - 2(n-1)) * max(hw[intra], netOverhead) + 2(n-1) * hw[NET][Ring]
//               (x1.4 plateau for Ring/Simple once bytes / (channels * r) >= 64 B)
//         algBw = min(busBw_intra, busBw_net) * r / (2(r-1))     NCCL's flat ring over both nodes
//   Tree: lat = base + 2((g-1) * hw[intra][Tree] + log2(n) * hw[NET][Tree])
//         time_bw = max(2 S / busBw_intra, 2(n-1)/n * S / busBw_net)   chain in the node, tree between
// busBw_net = rails x NIC bandwidth with NCCL's protocol factors (LL x0.5 capped at llMaxBw for
// 2 or more nodes, LL128 x0.92). An all-gather runs the ring's r-1 steps, n-1 of them on the network.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specsim {

enum class NcclAlgo { kTree, kRing };
enum class NcclProto { kLL, kLL128, kSimple };
// Which hwLatencies column applies inside the node: NVLink when the graph runs over NVLink, PCI
// for every PCIe box, SHM (no P2P) included (tuning.cc#L283-L286).
enum class NcclLink { kNvlink, kPci };
// Bandwidth-cap bucket of the oldest GPU; Ada (sm89) is in the Ampere bucket (tuning.cc#L177-L211).
enum class NcclArch { kVolta, kAmpere, kHopper, kBlackwell };
// Which library's tables price the call: NCCL's, or RCCL's on AMD GPUs.
enum class CollectiveLibrary { kNccl, kRccl };
[[nodiscard]] std::string_view to_string(CollectiveLibrary l);

[[nodiscard]] std::string_view to_string(NcclAlgo a);
[[nodiscard]] std::string_view to_string(NcclProto p);
// Case-insensitive "ring" / "tree", "ll" / "ll128" / "simple"; throws specsim::Error listing the
// valid names otherwise.
[[nodiscard]] NcclAlgo parse_nccl_algo(std::string_view text);
[[nodiscard]] NcclProto parse_nccl_proto(std::string_view text);

// An NCCL release, as nccl-tests prints it ("2.29.7"). NCCL's choices of algorithm, protocol,
// channels and transport change between minor releases (docs/references/nccl.md#versions), so a
// measured table holds for the release it was measured under.
struct NcclVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;  // 0 when the text gives none ("2.29")

  auto operator<=>(const NcclVersion&) const = default;
  // Same major and minor release: the measured table carries over.
  [[nodiscard]] bool same_minor(const NcclVersion& o) const { return major == o.major && minor == o.minor; }
};
// "2.29.7" or "2.29"; nullopt for anything else (a version is digits and dots only).
[[nodiscard]] std::optional<NcclVersion> parse_nccl_version(std::string_view text);
[[nodiscard]] std::string to_string(const NcclVersion& v);
// The release from which the prior's latency tables are NCCL's own (tuning.cc; earlier releases had
// other values, e.g. 28 us per Tree/Simple step in 2.18-2.22: docs/references/nccl.md#latency-tables).
inline constexpr NcclVersion kNcclPriorTablesSince{2, 23, 4};
// NCCL_ALGO takes per-collective lists ("allreduce:tree") from 2.24; before, one list applies to every
// collective (docs/references/nccl.md#versions).
inline constexpr NcclVersion kNcclAlgoPerCollectiveSince{2, 24, 0};

struct NcclPriorConfig {
  CollectiveLibrary library = CollectiveLibrary::kNccl;
  int ranks = 8;
  NcclLink link = NcclLink::kPci;
  NcclArch arch = NcclArch::kAmpere;
  // The topology search graph (nChannels, bwIntra), before connect-time channel doubling; NCCL's
  // model uses these. Default 2 channels x 12 GB/s = PCI_BW, the PCIe example of docs/references/nccl.md#worked-example; a
  // no-P2P SYS box typically logs 1 channel x 5 GB/s (nccl-tests issue 307).
  int graph_channels = 2;
  double channel_bandwidth_bytes_per_s = 12e9;
  // No P2P between the GPUs: NCCL's SHM transport stages every step through host memory (paths.cc
  // routes the pair through the CPU). NCCL's tuning model prices such a step like a P2P PCI step;
  // measured logs put it kShmStepExtraLatencyS higher (docs/references/nccl.md#link-class-prior).
  bool through_host = false;
  // NCCL_ALGO / NCCL_PROTO as lists; empty = NCCL's default: Ring and Tree; LL and Simple, plus
  // LL128 on NVLink only (tuning.cc#L514-L536: LL128 is off on PCIe unless named explicitly).
  std::vector<NcclAlgo> algos;
  std::vector<NcclProto> protos;
  // NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS; 0 = unset. They change the channels a call runs on
  // (runtime = 2 x graph channels, clamped; connect.cc#L460-L506) but not NCCL's choice of
  // algo/proto (docs/references/nccl.md#search-graph); specsim scales the bandwidth term by the channels the call really
  // uses (enqueue.cc per-call shrink, docs/references/nccl.md#per-call-shrink) relative to the unset case.
  int min_channels = 0;
  int max_channels = 0;
  // Ranks per node when the ranks span several nodes (placed node by node); 0 = all on one node.
  // Ranks above it must be a whole number of nodes. Between nodes: the network, whose bandwidth
  // per node and direction is rails x NIC bandwidth.
  int gpus_per_node = 0;
  double net_bandwidth_bytes_per_s = 0.0;

  // The nodes the ranks span: ranks / gpus_per_node above one node, else 1.
  [[nodiscard]] int nodes() const { return gpus_per_node > 0 && ranks > gpus_per_node ? ranks / gpus_per_node : 1; }
};

// The extra latency of one all-reduce step staged through host memory (SHM) over NCCL's PCI step,
// from two public 8-rank nccl-tests logs, both eager, single process, small messages on Ring LL:
// 8x RTX 4090 without P2P (SYS pairs, SHM) median 42.57 us over 8 B-16 KiB against 8x RTX 5090
// with P2P (SYS pairs) median 24.66 us over 8 B-2 KiB: (42.57 - 24.66) / 14 steps = 1.28 us
// (calibration/nccl/, docs/references/nccl.md#link-class-prior).
inline constexpr double kShmStepExtraLatencyS = 1.28e-6;

struct NcclPriorEstimate {
  NcclAlgo algo = NcclAlgo::kRing;
  NcclProto proto = NcclProto::kLL;
  double latency_s = 0.0;                 // base + hops
  double bandwidth_bytes_per_s = 0.0;     // algorithm bandwidth, Tree correction and channels in
  int channels = 1;                       // channels this call runs on after the per-call shrink
  double time_s = 0.0;
  bool calibrated = false;                // always false: NCCL's prior, not a measurement
};

// The model for one (algo, proto) pair, whether or not it is enabled. Throws specsim::Error on an
// invalid config (ranks < 2, channels < 1, bandwidth <= 0, min > max) or bytes < 0.
[[nodiscard]] NcclPriorEstimate nccl_prior(const NcclPriorConfig& config, NcclAlgo algo,
                                           NcclProto proto, double bytes);
// NCCL's choice: the least time over the enabled pairs.
[[nodiscard]] NcclPriorEstimate nccl_prior_pick(const NcclPriorConfig& config, double bytes);
// One all-gather (or reduce-scatter: the same steps and bytes) of a `bytes` gathered tensor, Ring
// over the enabled protocols, the least time (header equation). NCCL_ALGO=Tree alone leaves Ring in:
// NCCL has no Tree all-gather and falls back to Ring.
[[nodiscard]] NcclPriorEstimate nccl_prior_gather_pick(const NcclPriorConfig& config, double bytes);
// prior(what_if) / prior(measured) at `bytes`: multiply a calibrated time measured under
// `measured` by this to estimate it under `what_if`.
[[nodiscard]] double nccl_prior_ratio(const NcclPriorConfig& measured, const NcclPriorConfig& what_if,
                                      double bytes);

}  // namespace specsim
