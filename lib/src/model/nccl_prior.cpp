#include "specsim/nccl_prior.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>

#include "specsim/error.hpp"

namespace specsim {
namespace {

constexpr double kUs = 1e-6;
constexpr double kGBs = 1e9;

// Indexed [algo][proto] with algo Tree, Ring and proto LL, LL128, Simple. Values of NCCL >= 2.23.4
// (tuning.cc#L148-L176; docs/references/nccl.md#latency-tables), in us.
constexpr double kBaseLatencyUs[2][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
constexpr double kNvlinkHopUs[2][3] = {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}};
constexpr double kPciHopUs[2][3] = {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}};

// RCCL's tables (ROCm/rccl src/graph/tuning.cc at 0cbce2a7571c907554199fad7e905f16ec0a565c;
// docs/references/nccl.md#rccl), us, [algo][proto] as above. baseLat: 12 / 12 / 17 for both
// algorithms. Hops: tuning_model_5, the model rome_models.cc assigns its 8-GPU, 7-link fully
// connected platform (rome_model_79); its LL128 entries are 0 (LL128 off there).
constexpr double kRcclBaseLatencyUs[2][3] = {{12.0, 12.0, 17.0}, {12.0, 12.0, 17.0}};
constexpr double kRcclXgmiHopUs[2][3] = {{0.9, 0.0, 2.3}, {0.8, 0.0, 2.1}};
constexpr double kRcclPciHopUs[2][3] = {{2.2, 2.2, 5.7}, {2.2, 2.2, 5.7}};
// tuning_model_5 treeCorrectionFactor[proto][log2(bytes / 64)], 27 entries (RCCL applies it to
// every Tree call; index 26 beyond).
constexpr double kRcclTreeCorrection[3][27] = {
    {.1, .1, .1, .1, .1, .1, 1., 1., 1., 1., 1., .6, 1., .9, 1., 1., .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1},
    {0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0.},
    {.1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .7, 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., .8}};

// Bandwidth caps for one node, GB/s, by NcclArch (tuning.cc#L177-L211; docs/references/nccl.md#bandwidth-model).
constexpr std::array kLlMaxBw{39.0, 87.7, 141.0, 282.0};
constexpr std::array kPerChMaxRingLL128Bw{20.0, 20.0, 36.7, 40.0};
constexpr std::array kPerChMaxTreeLL128Bw{20.0, 20.0, 36.7, 55.6};
constexpr std::array kPerChMaxTreeBw{26.5, 24.0, 38.7, 70.0};

// treeCorrectionFactor[proto][floor(log2(bytes / 64))], applied to Tree all-reduce for indices
// 0..22 (tuning.cc#L623-L646; docs/references/nccl.md#bandwidth-model).
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

// Per-call shrink (enqueue.cc#L2070-L2116; docs/references/nccl.md#per-call-shrink): bytes per thread below which a channel is
// dropped (comm.h#L49-L51; Ring LL x ranks, tuning.cc#L587-L596) and threads per channel.
constexpr double kThreadThresholdBytes[3] = {8.0, 8.0, 64.0};
constexpr double kMaxThreads[3] = {512.0, 640.0, 512.0};
constexpr double kRingSimpleThreadsOnPcie = 256.0;  // when ring bwIntra * nChannels <= PCI_BW
constexpr double kPciBwGBs = 12.0;                  // topo.h PCI_BW

// Across nodes (tuning.cc#L384-L417, tag v2.30.7-1; docs/references/nccl.md#multi-node): the NET row
// of hwLatencies [algo][proto] in us, the per-step network overhead NCCL charges an inter-node ring
// (getNetOverhead: 1 us on Intel and other CPUs, 2 on AMD; x3 for Simple), llMaxBw for 2 and for
// more nodes (the Intel-CPU row), and the Ring/Simple plateau factor for sm80 and later.
constexpr double kNetHopUs[2][3] = {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}};
constexpr double kNetOverheadUs = 1.0;
constexpr double kLlMaxBwMultiNode[2] = {39.0, 20.4};
constexpr double kRingPlateau = 1.4;
constexpr double kRingPlateauBytesPerChannelRank = 64.0;

int idx(NcclAlgo a) { return a == NcclAlgo::kTree ? 0 : 1; }
int idx(NcclProto p) { return static_cast<int>(p); }
std::size_t arch(NcclArch a) { return static_cast<std::size_t>(a); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void validate(const NcclPriorConfig& c, double bytes) {
  std::string problems;
  auto add = [&](const std::string& p) { problems += (problems.empty() ? "" : "; ") + p; };
  if (c.ranks < 2) add("ranks = " + std::to_string(c.ranks) + ": must be >= 2");
  if (c.graph_channels < 1) add("graph_channels = " + std::to_string(c.graph_channels) + ": must be >= 1");
  if (!(c.channel_bandwidth_bytes_per_s > 0.0 && std::isfinite(c.channel_bandwidth_bytes_per_s))) {
    add("channel_bandwidth_bytes_per_s = " + std::to_string(c.channel_bandwidth_bytes_per_s) + ": must be > 0");
  }
  if (c.min_channels < 0) add("min_channels = " + std::to_string(c.min_channels) + ": must be >= 0");
  if (c.max_channels < 0) add("max_channels = " + std::to_string(c.max_channels) + ": must be >= 0");
  if (c.min_channels > 0 && c.max_channels > 0 && c.min_channels > c.max_channels) {
    add("min_channels = " + std::to_string(c.min_channels) + " > max_channels = " + std::to_string(c.max_channels));
  }
  if (!(bytes >= 0.0 && std::isfinite(bytes))) add("bytes = " + std::to_string(bytes) + ": must be >= 0");
  if (c.gpus_per_node < 0) add("gpus_per_node = " + std::to_string(c.gpus_per_node) + ": must be >= 0");
  if (c.gpus_per_node > 0 && c.ranks > c.gpus_per_node) {
    if (c.ranks % c.gpus_per_node != 0) {
      add("ranks = " + std::to_string(c.ranks) + ": across nodes must be a multiple of gpus_per_node = " +
          std::to_string(c.gpus_per_node));
    }
    if (!(c.net_bandwidth_bytes_per_s > 0.0 && std::isfinite(c.net_bandwidth_bytes_per_s))) {
      add("net_bandwidth_bytes_per_s = " + std::to_string(c.net_bandwidth_bytes_per_s) + ": must be > 0 across nodes");
    }
  }
  if (!problems.empty()) throw Error(SourceLocation{}, "nccl_prior", problems);
}

// Channels one call of `bytes` runs on: runtime channels (connect.cc doubles the graph's, then
// NCCL_MAX/MIN_NCHANNELS clamp), shrunk while bytes < nc * nt * threshold.
int call_channels(const NcclPriorConfig& c, NcclAlgo algo, NcclProto proto, double bytes, bool clamp) {
  int nc = 2 * c.graph_channels;
  if (clamp && c.max_channels > 0) nc = std::min(nc, c.max_channels);
  if (clamp && c.min_channels > 0) nc = std::max(nc, c.min_channels);
  double nt = kMaxThreads[idx(proto)];
  const double ring_bw_gbs = c.graph_channels * c.channel_bandwidth_bytes_per_s / kGBs;
  if (algo == NcclAlgo::kRing && proto == NcclProto::kSimple && ring_bw_gbs <= kPciBwGBs) {
    nt = kRingSimpleThreadsOnPcie;
  }
  double threshold = kThreadThresholdBytes[idx(proto)];
  if (algo == NcclAlgo::kRing && proto == NcclProto::kLL) threshold *= c.ranks;
  while (bytes < nc * nt * threshold && nc >= 2) --nc;
  return nc;
}

}  // namespace

std::string_view to_string(NcclAlgo a) { return a == NcclAlgo::kTree ? "Tree" : "Ring"; }

std::string_view to_string(CollectiveLibrary l) { return l == CollectiveLibrary::kRccl ? "RCCL" : "NCCL"; }

std::string_view to_string(NcclProto p) {
  switch (p) {
    case NcclProto::kLL: return "LL";
    case NcclProto::kLL128: return "LL128";
    case NcclProto::kSimple: return "Simple";
  }
  return "?";
}

std::optional<NcclVersion> parse_nccl_version(std::string_view text) {
  int parts[3] = {0, 0, 0};
  int count = 0;
  std::size_t at = 0;
  while (count < 3) {
    const auto [end, ec] = std::from_chars(text.data() + at, text.data() + text.size(), parts[count]);
    if (ec != std::errc{} || parts[count] < 0) return std::nullopt;
    ++count;
    at = static_cast<std::size_t>(end - text.data());
    if (at == text.size()) break;
    if (text[at] != '.') return std::nullopt;
    ++at;
  }
  if (count < 2 || at != text.size()) return std::nullopt;
  return NcclVersion{parts[0], parts[1], parts[2]};
}

std::string to_string(const NcclVersion& v) {
  return std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
}

NcclAlgo parse_nccl_algo(std::string_view text) {
  const std::string t = lower(text);
  if (t == "ring") return NcclAlgo::kRing;
  if (t == "tree") return NcclAlgo::kTree;
  throw Error(SourceLocation{}, "NCCL_ALGO", "unknown algorithm '" + std::string(text) + "'; valid: Ring, Tree");
}

NcclProto parse_nccl_proto(std::string_view text) {
  const std::string t = lower(text);
  if (t == "ll") return NcclProto::kLL;
  if (t == "ll128") return NcclProto::kLL128;
  if (t == "simple") return NcclProto::kSimple;
  throw Error(SourceLocation{}, "NCCL_PROTO",
              "unknown protocol '" + std::string(text) + "'; valid: LL, LL128, Simple");
}

namespace {

// The bus bandwidth of one node's graph, GB/s, after NCCL's per-algo/proto caps (tuning.cc#L306-L336).
double intra_bus_gbs(const NcclPriorConfig& c, NcclAlgo algo, NcclProto proto) {
  const std::size_t g = arch(c.arch);
  const double nch = c.graph_channels;
  double bus_gbs = nch * c.channel_bandwidth_bytes_per_s / kGBs;  // tuning.cc#L306, #L324
  if (algo == NcclAlgo::kRing) {
    if (proto == NcclProto::kLL) bus_gbs = std::min(kLlMaxBw[g], bus_gbs * 0.5);
    if (proto == NcclProto::kLL128) bus_gbs = std::min(bus_gbs * 0.92, nch * kPerChMaxRingLL128Bw[g]);
  } else {
    bus_gbs = std::min(bus_gbs * 0.92, nch * kPerChMaxTreeBw[g]);
    if (proto == NcclProto::kLL) bus_gbs = std::min(bus_gbs / 3.8, kLlMaxBw[g]);
    if (proto == NcclProto::kLL128) bus_gbs = std::min(bus_gbs * 7.0 / 9.0, nch * kPerChMaxTreeLL128Bw[g]);
  }
  return bus_gbs;
}

// The network's bus bandwidth per node, GB/s: rails x NIC bandwidth with NCCL's protocol factors
// (LL x0.5 capped at the multi-node llMaxBw; LL128 x0.92 Ring, x120/128 Tree; tuning.cc#L327-L336).
double net_bus_gbs(const NcclPriorConfig& c, NcclAlgo algo, NcclProto proto) {
  double bw = c.net_bandwidth_bytes_per_s / kGBs;
  if (proto == NcclProto::kLL) bw = std::min(bw * 0.5, kLlMaxBwMultiNode[c.nodes() > 2 ? 1 : 0]);
  if (proto == NcclProto::kLL128) bw *= algo == NcclAlgo::kRing ? 0.92 : 120.0 / 128.0;
  return bw;
}

// NCCL's latency across nodes, us (header; tuning.cc#L384-L417). With one rank per node the
// network hops take the Tree column.
double multinode_latency_us(const NcclPriorConfig& c, NcclAlgo algo, NcclProto proto, double bytes, bool all_reduce) {
  const int a = idx(algo), p = idx(proto);
  const int n = c.nodes(), g = c.ranks / n;
  const double intra_hop = c.link == NcclLink::kNvlink ? kNvlinkHopUs[a][p] : kPciHopUs[a][p];
  const double inter_hop = kNetHopUs[g == 1 ? 0 : a][p];
  if (algo == NcclAlgo::kTree) {
    return kBaseLatencyUs[a][p] + 2.0 * ((g - 1) * intra_hop + std::floor(std::log2(n)) * inter_hop);
  }
  const int phases = all_reduce ? 2 : 1;
  const int steps = phases * (c.ranks - 1), inter_steps = phases * (n - 1);
  const double overhead_us = kNetOverheadUs * (proto == NcclProto::kSimple ? 3.0 : 1.0);
  double latency_us = kBaseLatencyUs[a][p] + (steps - inter_steps) * std::max(intra_hop, overhead_us) + inter_steps * inter_hop;
  const double per_channel_rank = bytes / (2.0 * c.graph_channels * c.ranks);  // runtime channels: 2 x graph's
  if (all_reduce && proto == NcclProto::kSimple && per_channel_rank >= kRingPlateauBytesPerChannelRank) {
    latency_us *= kRingPlateau;
  }
  return latency_us;
}

// Algorithm bandwidth across nodes, GB/s (header). Ring: NCCL's flat ring, whose every hop carries
// the same bytes, the network's two per channel included, so the slower of the node's ring and the
// rails sets busBw (NCCL prices a call with one bottleneck bus bandwidth, tuning.cc#L306-L324).
// Tree: a chain inside each node (2 S, reduce then broadcast) and a tree between nodes over the rails
// (2(n-1)/n S), pipelined over chunks: the slower phase sets the rate.
double multinode_alg_gbs(const NcclPriorConfig& c, NcclAlgo algo, NcclProto proto, bool all_reduce) {
  const int n = c.nodes(), g = c.ranks / n;
  const double intra = intra_bus_gbs(c, algo, proto), net = net_bus_gbs(c, algo, proto);
  if (algo == NcclAlgo::kRing) {
    const double steps = all_reduce ? 2.0 * (c.ranks - 1) : c.ranks - 1.0;
    return std::min(intra, net) * c.ranks / steps;
  }
  const double intra_s_per_gb = g == 1 ? 0.0 : 2.0 / intra;
  const double net_s_per_gb = 2.0 * (n - 1.0) / n / net;
  return 1.0 / std::max(intra_s_per_gb, net_s_per_gb);
}

// One (algo, proto) estimate of an all-reduce (2(r-1) ring steps) or of an all-gather /
// reduce-scatter (r-1 steps, Ring's algBw = busBw * r / steps; tuning.cc, ncclTopoTuneModel).
NcclPriorEstimate estimate(const NcclPriorConfig& c, NcclAlgo algo, NcclProto proto, double bytes, bool all_reduce) {
  validate(c, bytes);
  const int a = idx(algo), p = idx(proto);
  const int steps = all_reduce ? 2 * (c.ranks - 1) : c.ranks - 1;
  const bool rccl = c.library == CollectiveLibrary::kRccl;
  const double hop_us = (rccl ? (c.link == NcclLink::kNvlink ? kRcclXgmiHopUs[a][p] : kRcclPciHopUs[a][p])
                              : (c.link == NcclLink::kNvlink ? kNvlinkHopUs[a][p] : kPciHopUs[a][p])) +
                        (c.through_host ? kShmStepExtraLatencyS / kUs : 0.0);
  // One node: nsteps intra-node hops for Ring and for the intra-node Tree chain
  // (tuning.cc#L289-L291, #L393-L417). Across nodes NCCL's NET path (RCCL's is not modelled).
  const bool across = c.nodes() > 1;
  const double latency_us = across ? multinode_latency_us(c, algo, proto, bytes, all_reduce)
                                   : (rccl ? kRcclBaseLatencyUs[a][p] : kBaseLatencyUs[a][p]) + steps * hop_us;
  const double bus_gbs = intra_bus_gbs(c, algo, proto);
  // Bus to algorithm bandwidth (tuning.cc#L376-L382): Ring r / nsteps, Tree 1/2.
  double alg_gbs = across ? multinode_alg_gbs(c, algo, proto, all_reduce)
                   : algo == NcclAlgo::kRing ? bus_gbs * c.ranks / steps : bus_gbs * 0.5;
  if (algo == NcclAlgo::kTree && bytes >= 64.0) {
    const int log_size = static_cast<int>(std::floor(std::log2(std::floor(bytes / 64.0))));
    if (rccl) alg_gbs *= kRcclTreeCorrection[p][std::clamp(log_size, 0, 26)];
    else if (log_size >= 0 && log_size < 23) alg_gbs *= kTreeCorrection[p][log_size];
  }
  NcclPriorEstimate e;
  e.algo = algo;
  e.proto = proto;
  e.channels = call_channels(c, algo, proto, bytes, true);
  // specsim extension (not in tuning.cc): channel limits scale bandwidth by the channels the call
  // runs on relative to the unclamped case; 1 when NCCL_MIN/MAX_NCHANNELS are unset.
  alg_gbs *= static_cast<double>(e.channels) / call_channels(c, algo, proto, bytes, false);
  e.latency_s = latency_us * kUs;
  e.bandwidth_bytes_per_s = alg_gbs * kGBs;
  e.time_s = e.latency_s + bytes / e.bandwidth_bytes_per_s;
  return e;
}

std::vector<NcclProto> enabled_protos(const NcclPriorConfig& c) {
  if (!c.protos.empty()) return c.protos;
  std::vector<NcclProto> protos = {NcclProto::kLL, NcclProto::kSimple};
  // RCCL's xGMI platform models leave LL128 off (tuning_model_5 has no LL128 latency).
  if (c.link == NcclLink::kNvlink && c.library == CollectiveLibrary::kNccl) protos.push_back(NcclProto::kLL128);
  return protos;
}

// RCCL skips Tree/Simple when every rank is a gfx94x GPU of one node (tuning.cc: "continue" on
// Tree + Simple when the arch matches gfx94 and the GPU count equals the ranks).
// A what-if that names only Tree and Simple keeps them (nothing else would be left to price).
bool skipped(const NcclPriorConfig& c, NcclAlgo a, NcclProto p) {
  const bool forced = c.algos == std::vector{NcclAlgo::kTree} && c.protos == std::vector{NcclProto::kSimple};
  return c.library == CollectiveLibrary::kRccl && a == NcclAlgo::kTree && p == NcclProto::kSimple && !forced;
}

}  // namespace

NcclPriorEstimate nccl_prior(const NcclPriorConfig& c, NcclAlgo algo, NcclProto proto, double bytes) {
  return estimate(c, algo, proto, bytes, true);
}

NcclPriorEstimate nccl_prior_pick(const NcclPriorConfig& c, double bytes) {
  std::vector<NcclAlgo> algos = c.algos;
  if (algos.empty()) algos = {NcclAlgo::kRing, NcclAlgo::kTree};
  const std::vector<NcclProto> protos = enabled_protos(c);
  NcclPriorEstimate best;
  best.time_s = std::numeric_limits<double>::infinity();
  for (NcclAlgo a : algos) {
    for (NcclProto p : protos) {
      if (skipped(c, a, p)) continue;
      const NcclPriorEstimate e = nccl_prior(c, a, p, bytes);
      if (e.time_s < best.time_s) best = e;
    }
  }
  return best;
}

NcclPriorEstimate nccl_prior_gather_pick(const NcclPriorConfig& c, double bytes) {
  NcclPriorEstimate best;
  best.time_s = std::numeric_limits<double>::infinity();
  for (NcclProto p : enabled_protos(c)) {
    const NcclPriorEstimate e = estimate(c, NcclAlgo::kRing, p, bytes, false);
    if (e.time_s < best.time_s) best = e;
  }
  return best;
}

double nccl_prior_ratio(const NcclPriorConfig& measured, const NcclPriorConfig& what_if, double bytes) {
  return nccl_prior_pick(what_if, bytes).time_s / nccl_prior_pick(measured, bytes).time_s;
}

}  // namespace specsim
