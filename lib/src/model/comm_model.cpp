#include "specsim/comm_model.hpp"

#include <algorithm>
#include <cctype>
#include <deque>
#include <mutex>

#include "specsim/comm_curve.hpp"
#include "specsim/comm_scaling.hpp"
#include "specsim/error.hpp"
#include "specsim/nccl_prior.hpp"
#include "specsim/units.hpp"

namespace specsim {

namespace {

// One-shot custom all-reduce floor: 7.5 us for 256 B - 1 KB on 8x RTX PRO 6000 behind PCIe Gen5
// switches (docs/references/nccl.md#custom-vs-nccl-pcie, rtx6kpro "luke" measurements); used only when no table was measured.
constexpr double kOneShotLatencyS = 7.5e-6;
// Point-to-point latency of a pipeline send: AIC's flat 10 us p2p placeholder (an all-to-all has its own
// prior, kPriorAllToAllLatencyS; docs/references/hardware.md#aic-allreduce).
constexpr double kP2pLatencyS = 10e-6;

// RCCL prices an xGMI link of a gfx94x GPU at 48 GB/s (src/graph/topo.h GFX94X_XGMI_WIDTH at 0cbce2a),
// against the MI300X datasheet's 64 GB/s per direction per link: the share of a link RCCL's search
// counts on. Applied to every xGMI card's datasheet figure (gfx950 has no entry in that release).
constexpr double kRcclXgmiLinkShare = 48.0 / 64.0;

// NCCL's tuning tables have four rows; Ada (compute capability 8.9) takes Ampere's
// (docs/references/nccl.md#bandwidth-model).
NcclArch nccl_arch(GpuArch a) {
  switch (a) {
    case GpuArch::kVolta: return NcclArch::kVolta;
    case GpuArch::kAmpere:
    case GpuArch::kAda: return NcclArch::kAmpere;
    case GpuArch::kHopper: return NcclArch::kHopper;
    case GpuArch::kBlackwell: return NcclArch::kBlackwell;
    // RCCL keeps NCCL's three-row cap tables and buckets by the compute capability HIP reports; which
    // row gfx942/gfx950 land in was not traced, so Hopper's caps are taken (labelled prior,
    // docs/references/nccl.md#rccl).
    case GpuArch::kCdna3:
    case GpuArch::kCdna4: return NcclArch::kHopper;
  }
  return NcclArch::kAmpere;
}

// The bandwidth NCCL gives the link between two sockets, by host CPU (ncclTopoGetInterCpuBw,
// topo.cc#L60-L82, constants topo.h#L26-L34 at v2.30.7-1): AMD_BW 16, BDW_QPI_BW 6, SKL_QPI_BW 10,
// SRP_QPI_BW 22, ERP_QPI_BW 40, ARM_BW 6 GB/s.
double inter_socket_bandwidth(HostCpu cpu) {
  switch (cpu) {
    case HostCpu::kAmd: return 16e9;
    case HostCpu::kIntelBroadwell: return 6e9;
    case HostCpu::kIntelSkylake: return 10e9;
    case HostCpu::kIntelSapphireRapids: return 22e9;
    case HostCpu::kIntelEmeraldRapids: return 40e9;
    case HostCpu::kArm: return 6e9;
  }
  return 16e9;
}

// NCCL's path types (src/include/graph.h at v2.30.7-1: PATH_LOC 0, NVL 1, PIX 4, PXB 5, PHB 8, SYS 9)
// and the NCCL_P2P_LEVEL names of those a P2P level can be.
constexpr std::pair<int, const char*> kNcclPathTypes[] = {{0, "LOC"}, {1, "NVL"}, {4, "PIX"},
                                                          {5, "PXB"}, {8, "PHB"}, {9, "SYS"}};
constexpr int kPathPxb = 5, kPathSys = 9;

const char* nccl_path_name(int type) {
  for (const auto& [t, name] : kNcclPathTypes) {
    if (t == type) return name;
  }
  return "?";
}

// comm.nccl_p2p_level's name ("sys") as NCCL's path type.
int nccl_path_type(const std::string& level) {
  for (const auto& [t, name] : kNcclPathTypes) {
    std::string lower = name;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lower == level) return t;
  }
  throw Error("comm.nccl_p2p_level: '" + level + "' is not one of auto, loc, nvl, pix, pxb, phb, sys");
}

// The ring's link class as NCCL's path type: nvidia-smi's NODE is NCCL's PHB (paths.cc#L89-L90);
// NVLink and xGMI are NVL.
int nccl_path_type(LinkClass c) {
  switch (c) {
    case LinkClass::kNvlink:
    case LinkClass::kXgmi: return 1;
    case LinkClass::kPix: return 4;
    case LinkClass::kPxb: return 5;
    case LinkClass::kPhb:
    case LinkClass::kNode: return 8;
    case LinkClass::kSys: return 9;
  }
  return kPathSys;
}

// NCCL's default P2P level for this host and release, and the words that say which rule gave it.
std::pair<int, std::string> default_p2p_level(const Topology& t, int ranks, const std::string& nccl_version) {
  const HostCpu cpu = t.cpu.value_or(HostCpu::kAmd);
  const std::string host = t.cpu ? std::string("cpu: ") + to_string(cpu) : "cpu not stated: AMD assumed, prior";
  const auto version = parse_nccl_version(nccl_version);
  if (version && *version < kNcclPriorTablesSince) {
    // paths.cc at v2.22.3-1, L280-L304: "use P2P whenever we can", but not through Intel or ARM CPUs.
    const int level = cpu == HostCpu::kAmd ? kPathSys : kPathPxb;
    return {level, "NCCL " + nccl_version + "'s default P2P level " + nccl_path_name(level) + " (" + host +
                       "; before 2.23.4 SYS, PXB on Intel and ARM)"};
  }
  const int node_gpus = std::min(ranks, t.node_gpus());
  if (cpu == HostCpu::kAmd && node_gpus <= 2) {
    return {kPathSys, "NCCL 2.23.4+'s default P2P level SYS for at most two GPUs on AMD (" + host + ", " +
                          std::to_string(node_gpus) + " GPUs on the node)"};
  }
  return {kPathPxb, "NCCL 2.23.4+'s default P2P level PXB (" + host + "; SYS only for at most two GPUs on AMD)"};
}

}  // namespace

NcclTransport nccl_transport(const Topology& t, const GpuSpec& gpu, int ranks, const NcclP2pSettings& settings) {
  const std::string ring = link_name(t.link, t.nvlinks) + " ring" + (t.link == LinkClass::kNode ? " (NCCL's PHB)" : "");
  if (!t.p2p) return {false, ring + ": SHM through host memory (the topology has p2p off)"};
  if (!gpu.p2p_supported) return {false, ring + ": SHM through host memory (the card has no P2P: p2p_supported false)"};
  if (is_amd(gpu.architecture)) return {true, ring + ": P2P (the topology's p2p; RCCL's P2P level is not modelled)"};
  const int path = nccl_path_type(t.link);
  std::pair<int, std::string> level;
  if (settings.p2p_level != "auto") {
    const int type = nccl_path_type(settings.p2p_level);
    level = {type, std::string("NCCL_P2P_LEVEL=") + nccl_path_name(type) + " (comm.nccl_p2p_level)"};
  } else {
    level = default_p2p_level(t, ranks, settings.nccl_version);
  }
  if (path <= level.first) return {true, ring + ": P2P, within " + level.second};
  std::string lower = nccl_path_name(path);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return {false, ring + ": SHM through host memory, beyond " + level.second + "; comm.nccl_p2p_level: " + lower +
                     " (NCCL_P2P_LEVEL=" + nccl_path_name(path) + ") gives P2P"};
}

// The search graph NCCL would build for the ring's link class and transport (docs/references/nccl.md#link-class-prior):
//   NVLink:            min(16, NVLinks per GPU) channels x the per-link bandwidth, 20.6 GB/s (SM90)
//                      or 40.1 (SM100)
//   PIX, PXB, PHB, NODE with P2P: 2 channels x PCI_BW 12 GB/s (docs/references/nccl.md#worked-example;
//                      graph-mode tables of Gen5 boxes agree with it, #prior-spread)
//   SYS with P2P:      the same, capped by the socket link NCCL assumes for the host CPU
//   SHM (no P2P):      1 channel x 5 GB/s, as an 8x RTX 4090 host logged (nccl-tests issue 307), each
//                      step kShmStepExtraLatencyS dearer (through_host)
// Which transport: nccl_transport. NCCL's tuning model itself tells the PCIe classes apart only
// through these graphs and its one PCI latency column (tuning.cc#L283-L286).
NcclPriorConfig nccl_prior_config(const Topology& topology, const GpuSpec& gpu, int ranks, const NcclP2pSettings& settings) {
  NcclPriorConfig c;
  c.ranks = std::max(2, ranks);
  c.arch = nccl_arch(gpu.architecture);
  c.library = is_amd(gpu.architecture) ? CollectiveLibrary::kRccl : CollectiveLibrary::kNccl;
  const bool p2p = nccl_transport(topology, gpu, c.ranks, settings).p2p;
  if (p2p && topology.link == LinkClass::kXgmi && gpu.xgmi_link_bandwidth_bytes_per_s) {
    // RCCL's xGMI mesh: one ring per link a GPU has to its peers, as the 8-GPU platform's 7 links
    // carry its ring set (rome_model_79); each at RCCL's own per-link speed, kRcclXgmiLinkShare of
    // the datasheet's (docs/references/nccl.md#rccl).
    c.link = NcclLink::kNvlink;
    c.graph_channels = std::max(1, std::min(gpu.xgmi_links, c.ranks - 1));
    c.channel_bandwidth_bytes_per_s = kRcclXgmiLinkShare * *gpu.xgmi_link_bandwidth_bytes_per_s;
    return c;
  }
  if (p2p && topology.link == LinkClass::kNvlink) {
    // One channel per NVLink at most: a GPU with fewer than 16 links (H800's 8) has fewer channels
    // to spread its ring over (docs/references/nccl.md#search-graph); 16 where the count is unknown.
    c.link = NcclLink::kNvlink;
    c.graph_channels = topology.nvlinks > 0 ? std::min(16, topology.nvlinks) : 16;
    c.channel_bandwidth_bytes_per_s = c.arch == NcclArch::kBlackwell ? 40.1e9 : 20.6e9;
    return c;
  }
  c.link = NcclLink::kPci;
  if (!p2p) {
    c.graph_channels = 1;
    c.channel_bandwidth_bytes_per_s = 5e9;
    c.through_host = true;
    return c;
  }
  // NcclPriorConfig's graph is the PCIe P2P one: 2 channels x 12 GB/s.
  if (topology.link == LinkClass::kSys) {
    const double socket = inter_socket_bandwidth(topology.cpu.value_or(HostCpu::kAmd));
    c.channel_bandwidth_bytes_per_s = std::min(c.channel_bandwidth_bytes_per_s, socket / c.graph_channels);
  }
  if (topology.nodes > 1 && topology.network) {
    c.gpus_per_node = topology.gpus_per_node;
    c.net_bandwidth_bytes_per_s = topology.network->node_bandwidth_bytes_per_s();
  }
  return c;
}

std::string network_text(const Topology& t) {
  if (!t.network) return "";
  const Network& n = *t.network;
  return std::to_string(n.rails) + "x " + units::format_bandwidth(n.nic_bandwidth_bytes_per_s) + " " +
         (n.kind == NetworkKind::kRoce ? "RoCE" : n.kind == NetworkKind::kEthernet ? "Ethernet" : "InfiniBand");
}

// The scenario's topology says what the profile's points were measured over: NCCL's LL -> Simple
// switch is located with its PCI latencies, so it is looked for on PCIe boxes only (on NVLink,
// LL128 sits between the two).
//
// A fit depends only on the points, the rank count and the link, and what-ifs (sweeps, rank) build
// a model per point from the same few tables: the last fits are kept and shared, keyed by exactly
// those inputs.
std::shared_ptr<const MeasuredCurve> measured_curve(const CommProfile& p, LinkClass link) {
  struct Fitted {
    std::vector<CommProfile::Point> points;
    int ranks = 0;
    bool locate_protocol_switch = false;
    std::shared_ptr<const MeasuredCurve> curve;
  };
  static std::mutex mutex;
  static std::deque<Fitted> fitted;  // most recent first
  constexpr std::size_t kKept = 16;
  // NCCL's LL -> Simple switch is the all-reduce's, at NCCL's PCI latencies: an all-to-all table
  // (grouped sends, or a backend's own kernels) is interpolated as measured.
  const bool locate = link != LinkClass::kNvlink && link != LinkClass::kXgmi && p.collective == "all_reduce";
  const auto same = [&](const Fitted& f) {
    return f.ranks == p.ranks && f.locate_protocol_switch == locate &&
           std::equal(f.points.begin(), f.points.end(), p.points.begin(), p.points.end(),
                      [](const auto& a, const auto& b) { return a.message_bytes == b.message_bytes && a.time_s == b.time_s; });
  };
  {
    const std::lock_guard lock(mutex);
    if (const auto it = std::find_if(fitted.begin(), fitted.end(), same); it != fitted.end()) return it->curve;
  }
  std::vector<CurvePoint> pts;
  for (const auto& pt : p.points) pts.push_back({pt.message_bytes, pt.time_s});
  CurveOptions o;
  o.ranks = p.ranks;
  o.locate_protocol_switch = locate;
  auto curve = std::make_shared<const MeasuredCurve>(MeasuredCurve::fit(std::move(pts), o));
  const std::lock_guard lock(mutex);
  fitted.push_front({p.points, p.ranks, locate, curve});
  if (fitted.size() > kKept) fitted.pop_back();
  return curve;
}

std::string rank_sources(const RankScaledCurve& curve, const std::vector<const CommProfile*>& profiles) {
  std::string from;
  for (int r : curve.from_ranks()) {
    for (const CommProfile* p : profiles) {
      if (p->ranks == r) from += (from.empty() ? "" : ", ") + p->name + " (" + std::to_string(r) + " ranks)";
    }
  }
  return from;
}

namespace {

// PCIe peer-to-peer bandwidth per direction: ~56 GB/s measured on Gen5 x16 (89% of 63 GB/s,
// docs/references/hardware.md#pcie5-p2p-measured); other generations scaled by the spec; NVLink per direction from the GPU file.
double p2p_bandwidth(const Scenario& s) {
  if (s.topology.link == LinkClass::kNvlink && s.gpu.nvlink_bandwidth_bytes_per_s) {
    return *s.gpu.nvlink_bandwidth_bytes_per_s;
  }
  // A direct xGMI link per pair: a one-shot kernel reads each peer over its own link, so the (r-1)
  // peers' reads run in parallel at one link each (docs/references/hardware.md#xgmi-mesh).
  if (s.topology.link == LinkClass::kXgmi && s.gpu.xgmi_link_bandwidth_bytes_per_s) {
    return *s.gpu.xgmi_link_bandwidth_bytes_per_s * std::max(1, std::min(s.gpu.xgmi_links, s.parallel.tp - 1));
  }
  const double gen5 = 56e9;
  return gen5 / double(1 << std::max(0, 5 - s.topology.pcie_generation));
}

// What a TP group spanning nodes pays between them, for the all-reduce's source; empty inside a node.
std::string inter_node_text(const Scenario& s, bool calibrated) {
  const int nodes = s.topology.nodes_spanned(s.parallel.tp);
  if (nodes <= 1) return "";
  return "; the tp group spans " + std::to_string(nodes) + " nodes, inter-node: " +
         (calibrated ? "in the measured table (" + network_text(s.topology) + ")"
                     : "NCCL's model over " + network_text(s.topology) + " (prior)");
}

// One GPU to one peer: one xGMI link on an AMD mesh, else the box's peer bandwidth.
double send_bandwidth(const Scenario& s) {
  const auto& link = s.gpu.xgmi_link_bandwidth_bytes_per_s;
  return s.topology.link == LinkClass::kXgmi && link ? *link : p2p_bandwidth(s);
}

// An all-reduce priced by NCCL's model alone. On PCIe the ring's class decides NCCL's transport: the
// report says which of NCCL's rules it fell under (nccl_transport).
std::string prior_source(const Scenario& s, const NcclP2pSettings& nccl) {
  std::string out = std::string("uncalibrated: ") + collective_library(s.gpu.architecture) +
                    "'s analytic model (tuning.cc) for this topology";
  if (s.topology.link == LinkClass::kNvlink || s.topology.link == LinkClass::kXgmi) return out;
  return out + "; " + nccl_transport(s.topology, s.gpu, s.parallel.tp, nccl).rule;
}

// " (NCCL 2.29.2)" after a measured table's name; empty when the table does not say its release.
std::string release_text(const CommProfile& p) { return p.nccl_version.empty() ? "" : " (NCCL " + p.nccl_version + ")"; }

}  // namespace

struct CommModel::Prior {
  NcclPriorConfig measured;  // NCCL as it ran when the table was measured (defaults)
  NcclPriorConfig what_if;   // NCCL_ALGO / NCCL_PROTO / channels as the scenario sets them
  bool what_if_differs = false;
};

bool vllm_custom_aborts_in_capture(const Scenario& s) {
  const bool graphs = s.engine.decode_mode == LaunchMode::kGraph || s.engine.verify_mode == LaunchMode::kGraph ||
                      s.engine.draft_mode == LaunchMode::kGraph;
  const std::vector<int>& majors = s.engine.behaviour.custom_allreduce_aborts_in_capture;
  return graphs && std::find(majors.begin(), majors.end(), s.gpu.compute_capability / 10) != majors.end();
}

// ---- all-reduce implementations ------------------------------------------------------------------
// Each is a way an engine runs one all-reduce, priced from what the box offers. `comm.implementation`
// names one; the loader's choices follow this list. To add one: a row here, its equation in
// docs/model.md#allreduce-implementations, and a test (docs/library.md#how-to-add).

namespace {

// vLLM's and SGLang's custom all-reduce: world sizes 2, 4, 6 and 8; beyond 2 GPUs only on a fully
// NVLink-connected set; messages below 8 MiB (docs/references/nccl.md#engine-custom-allreduce).
constexpr int kCustomWorldSizes[] = {2, 4, 6, 8};
constexpr double kEngineCustomMaxBytes = 8.0 * 1024 * 1024;

}  // namespace

std::string engine_custom_guard_refusal(const Scenario& s) {
  if (std::find(std::begin(kCustomWorldSizes), std::end(kCustomWorldSizes), s.parallel.tp) == std::end(kCustomWorldSizes)) {
    return "tp " + std::to_string(s.parallel.tp) + " is not a world size the engines' custom all-reduce supports (2, 4, 6, 8)";
  }
  // vLLM and SGLang run their custom all-reduce on ROCm over a fully connected xGMI set
  // (docs/references/nccl.md#rocm-custom-allreduce), as on an NVLink one.
  if (s.parallel.tp > 2 && s.topology.link != LinkClass::kNvlink && s.topology.link != LinkClass::kXgmi) {
    return "the engines disable their custom all-reduce on more than two PCIe-only GPUs";
  }
  if (s.topology.nodes_spanned(s.parallel.tp) > 1) return "the tp group spans nodes: the custom kernels need peer access within one node";
  if (!(s.topology.p2p && s.gpu.p2p_supported)) return "no peer-to-peer access";
  return "";
}

namespace {

// Why the engines would not run their custom kernel on this box; empty when they would.
std::string engine_custom_refusal(const Scenario& s) {
  if (std::string guard = engine_custom_guard_refusal(s); !guard.empty()) return guard;
  if (vllm_custom_aborts_in_capture(s)) {
    return "vLLM's custom all-reduce aborts during CUDA graph capture on sm_12x GPUs (vllm#47266 item 9a; vLLM PR "
           "#47751 turns it off there), so a deployment that runs passes --disable-custom-all-reduce";
  }
  return "";
}

}  // namespace

double CommModel::one_shot_s(double bytes) const {
  return custom_curve_ ? custom_curve_->time_s(bytes) : kOneShotLatencyS + (ranks_ - 1) * bytes / p2p_bytes_per_s_;
}

double CommModel::two_shot_s(double bytes) const {
  // Reduce-scatter then all-gather, each rank moving (r-1)/r of the message per phase over its link:
  // two synchronisations and 2 (r-1)/r S / B_p2p (docs/references/nccl.md#one-vs-two-shot).
  return 2.0 * kOneShotLatencyS + 2.0 * (ranks_ - 1) / ranks_ * bytes / p2p_bytes_per_s_;
}

const std::vector<CommModel::Implementation>& CommModel::implementations() {
  static const std::vector<Implementation> table = {
      {"nccl", "NCCL: the measured table, else NCCL's model (tuning.cc), x the NCCL_ALGO/PROTO/channel what-if ratio",
       [](const CommModel& m, double bytes) { return m.nccl_s(bytes); }},
      {"custom_oneshot", "one-shot P2P kernel: its measured table, else 7.5 us + (r-1) S / B_p2p",
       [](const CommModel& m, double bytes) { return m.one_shot_s(bytes); }},
      {"custom_twoshot", "two-shot P2P kernel (reduce-scatter + all-gather): 15 us + 2 (r-1)/r S / B_p2p",
       [](const CommModel& m, double bytes) { return m.two_shot_s(bytes); }},
      {"fp8", "NCCL on half the bytes + a quantise and a dequantise kernel",
       [](const CommModel& m, double bytes) { return m.nccl_s(0.5 * bytes) + m.quantise_s_; }},
      {"engine", "the engines' rule: one-shot below comm.custom_max_bytes where they allow it, NCCL otherwise",
       [](const CommModel& m, double bytes) {
         return m.custom_allowed_ && bytes < m.custom_max_bytes_ ? m.one_shot_s(bytes) : m.nccl_s(bytes);
       }},
  };
  return table;
}

std::vector<std::string> allreduce_implementation_names() {
  std::vector<std::string> names;
  for (const auto& i : CommModel::implementations()) names.emplace_back(i.name);
  return names;
}

CommModel CommModel::baseline(const Scenario& s) {
  CommSettings plain;
  plain.profile = s.comm.profile;
  // The deployment's NCCL (release, P2P level) is a fact of the box measured, not a what-if.
  plain.nccl_version = s.comm.nccl_version;
  plain.nccl_p2p_level = s.comm.nccl_p2p_level;
  return build(s, plain, nullptr, 0.0, 0.0);
}

CommModel CommModel::build(const Scenario& s, double eager_overhead_per_op_s, double quantise_kernels_s) {
  return build(s, s.comm, s.custom_profile ? &*s.custom_profile : nullptr, eager_overhead_per_op_s, quantise_kernels_s);
}

CommModel CommModel::build(const Scenario& s, const CommSettings& c, const CommProfile* custom_profile,
                           double eager_overhead_per_op_s, double quantise_kernels_s) {
  CommModel m;
  m.p2p_bytes_per_s_ = p2p_bandwidth(s);  // pipeline sends need it at any tp
  m.send_bytes_per_s_ = send_bandwidth(s);
  m.price_all_to_all(s);
  if (s.parallel.tp <= 1) return m;
  m.ranks_ = s.parallel.tp;
  m.eager_overhead_s_ = eager_overhead_per_op_s;
  m.quantise_s_ = quantise_kernels_s;
  m.scale_ = c.scale;
  const auto& table = implementations();
  const auto impl = std::find_if(table.begin(), table.end(), [&](const Implementation& i) { return c.implementation == i.name; });
  if (impl == table.end()) throw Error("comm.implementation: '" + c.implementation + "' is not registered");
  m.implementation_ = &*impl;
  m.custom_max_bytes_ = c.custom_max_bytes.value_or(kEngineCustomMaxBytes);
  auto prior = std::make_shared<Prior>();
  const NcclP2pSettings nccl{c.nccl_p2p_level, c.nccl_version};
  prior->measured = nccl_prior_config(s.topology, s.gpu, s.parallel.tp, nccl);
  prior->what_if = prior->measured;
  if (c.nccl_algo != "auto") prior->what_if.algos = {parse_nccl_algo(c.nccl_algo)};
  if (c.nccl_proto != "auto") prior->what_if.protos = {parse_nccl_proto(c.nccl_proto)};
  prior->what_if.min_channels = c.min_channels;
  prior->what_if.max_channels = c.max_channels;
  prior->what_if_differs = c.nccl_algo != "auto" || c.nccl_proto != "auto" || c.min_channels || c.max_channels;
  m.prior_ = prior;
  if (s.comm_profile) {
    if (s.comm_profile->ranks != s.parallel.tp && c.rank_scaling == "off") {
      throw Error("comm.profile: '" + s.comm_profile->name + "' was measured at " + std::to_string(s.comm_profile->ranks) +
                  " ranks, the scenario runs tp = " + std::to_string(s.parallel.tp) + " (comm.rank_scaling: nccl or power estimates it)");
    }
    std::vector<RankedCurve> curves{{s.comm_profile->ranks, measured_curve(*s.comm_profile, s.topology.link)}};
    for (const auto& p : s.comm_rank_profiles) curves.push_back({p.ranks, measured_curve(p, s.topology.link)});
    const std::optional<RankScaling> method = c.rank_scaling == "nccl"    ? std::optional(RankScaling::kPriorRatio)
                                              : c.rank_scaling == "power" ? std::optional(RankScaling::kPowerLaw) : std::nullopt;
    m.nccl_curve_ = std::make_shared<const RankScaledCurve>(std::move(curves), s.parallel.tp, prior->measured, method);
    m.calibrated_ = m.nccl_curve_->measured();
    if (m.calibrated_) {
      m.source_ = "measured: " + s.comm_profile->name + release_text(*s.comm_profile);
      if (!s.comm_profile->points.empty()) m.measured_min_bytes_ = s.comm_profile->points.front().message_bytes;
    } else {
      std::vector<const CommProfile*> profiles{&*s.comm_profile};
      for (const auto& p : s.comm_rank_profiles) profiles.push_back(&p);
      m.source_ = "rank-scaled to " + std::to_string(s.parallel.tp) + " ranks from " + rank_sources(*m.nccl_curve_, profiles) +
                  " by " + to_string(m.nccl_curve_->method());
    }
  } else {
    m.source_ = prior_source(s, nccl);
  }
  const bool custom = c.implementation == "custom_oneshot" || c.implementation == "custom_twoshot";
  if (custom && !(s.topology.p2p && s.gpu.p2p_supported)) {
    throw Error("comm.implementation = " + c.implementation + ": needs peer-to-peer access, and topology '" +
                s.topology.name + "' has p2p off");
  }
  if (c.implementation == "engine") {
    const std::string refusal = engine_custom_refusal(s);
    m.custom_allowed_ = refusal.empty();
    if (custom_profile) m.custom_curve_ = measured_curve(*custom_profile, s.topology.link);
    m.source_ += m.custom_allowed_
                     ? "; below " + units::format_bytes(m.custom_max_bytes_) + " the engine's one-shot kernel (" +
                           (custom_profile ? "measured: " + custom_profile->name : std::string("prior")) + ")"
                     : "; " + std::string(collective_library(s.gpu.architecture)) + " at every size: " + refusal;
  } else if (c.implementation == "custom_twoshot") {
    m.calibrated_ = false;
    m.source_ = "uncalibrated: two-shot prior 15 us + 2 (r-1)/r S / B_p2p";
  } else if (c.implementation == "custom_oneshot") {
    if (custom_profile) {
      m.custom_curve_ = measured_curve(*custom_profile, s.topology.link);
      m.source_ = "measured: " + custom_profile->name;
    } else {
      m.calibrated_ = false;
      m.source_ = "uncalibrated: one-shot prior 7.5 us + (r-1) S / B_p2p";
    }
  } else if (c.implementation == "fp8") {
    m.source_ += " (FP8: half the bytes + quantise/dequantise kernels, prior)";
  }
  const std::string what_if = " x " + std::string(collective_library(s.gpu.architecture)) + " what-if ratio (prior)";
  m.source_ += (prior->what_if_differs ? what_if : "") + inter_node_text(s, m.calibrated_);
  return m;
}

double CommModel::nccl_s(double bytes) const {
  double t = 0.0;
  if (nccl_curve_ && bytes < measured_min_bytes_) {
    const double join = measured_min_bytes_;
    t = nccl_prior_pick(prior_->measured, bytes).time_s * nccl_curve_->time_s(join) /
        nccl_prior_pick(prior_->measured, join).time_s;
  } else {
    t = nccl_curve_ ? nccl_curve_->time_s(bytes) : nccl_prior_pick(prior_->measured, bytes).time_s;
  }
  if (prior_->what_if_differs) t *= nccl_prior_ratio(prior_->measured, prior_->what_if, bytes);
  return t;
}

double CommModel::allreduce_s(double bytes, LaunchMode mode) const {
  if (!prior_) return 0.0;  // single rank
  bytes = std::max(0.0, bytes);
  double t = implementation_->time_s(*this, bytes) * scale_;
  // Eager overhead applies on top of graph-mode tables and priors alike.
  if (mode == LaunchMode::kEager) t += eager_overhead_s_;
  return t;
}

const std::vector<CommModel::Operation>& CommModel::operations() {
  // Indexed by CollectiveOp: time_s looks a row up by the op's value.
  static const std::vector<Operation> table = {
      {CollectiveOp::kAllReduce, "the registered all-reduce implementation (comm.implementation) + the eager overhead",
       [](const CommModel& m, const Collective& c, LaunchMode mode) { return m.allreduce_s(c.bytes, mode); }},
      {CollectiveOp::kSend, "point-to-point send: 10 us + S / B_p2p; between nodes L_net + S / B_nic",
       [](const CommModel& m, const Collective& c, LaunchMode) { return m.send_s(c.bytes, c.nodes > 1); }},
      {CollectiveOp::kAllToAll, "all-to-all, each rank sending S: comm.all_to_all_profile's table, else L + (r-1)/r S / B_p2p (L prior 30 us); + the eager overhead",
       [](const CommModel& m, const Collective& c, LaunchMode mode) { return m.all_to_all_s(c.bytes, c.ranks, mode); }},
      {CollectiveOp::kAllGather, "NCCL all-gather of S: t_allreduce(S) x prior_gather(S) / prior_allreduce(S) + the eager overhead",
       [](const CommModel& m, const Collective& c, LaunchMode mode) { return m.gather_s(c.bytes, mode); }},
      {CollectiveOp::kReduceScatter, "NCCL reduce-scatter of S: priced as the all-gather of S (same ring steps and bytes)",
       [](const CommModel& m, const Collective& c, LaunchMode mode) { return m.gather_s(c.bytes, mode); }},
  };
  return table;
}

double CommModel::time_s(const Collective& c, LaunchMode mode) const {
  const Operation& row = operations().at(static_cast<std::size_t>(c.op));
  if (row.op != c.op) throw Error(std::string("CommModel::operations(): no row for ") + to_string(c.op));
  return row.time_s(*this, c, mode);
}

double CommModel::send_s(double bytes, bool across_nodes) const {
  // Between nodes: the network's one-way latency and the bytes over the sending GPU's NIC
  // (topology network.latency and nic_bandwidth; docs/model.md#multi-node).
  if (across_nodes && network_) return network_->latency_s + std::max(0.0, bytes) / network_->nic_bandwidth_bytes_per_s;
  // A point-to-point send between two pipeline stages: AIC's flat 10 us p2p latency placeholder
  // (docs/references/hardware.md#aic-allreduce) plus the bytes at the box's peer bandwidth (NVLink per
  // direction from the GPU file, else PCIe, docs/references/hardware.md#pcie5-p2p-measured).
  return kP2pLatencyS + std::max(0.0, bytes) / send_bytes_per_s_;
}

void CommModel::price_all_to_all(const Scenario& s) {
  // The network between nodes, which all-to-alls and pipeline sends across nodes cross.
  gpus_per_node_ = s.topology.nodes > 1 ? s.topology.gpus_per_node : 0;
  network_ = s.topology.nodes > 1 ? s.topology.network : std::nullopt;
  a2a_latency_s_ = s.comm.all_to_all_latency_s.value_or(kPriorAllToAllLatencyS.value);
  a2a_source_ = (s.comm.all_to_all_latency_s ? "set: " + units::format_duration(a2a_latency_s_)
                                             : "prior: " + units::format_duration(a2a_latency_s_) + " (p10 " +
                                                   units::format_duration(kPriorAllToAllLatencyS.p10) + ", p90 " +
                                                   units::format_duration(kPriorAllToAllLatencyS.p90) +
                                                   ": EP8 kernel benchmarks)") +
                " + (r-1)/r S / B_p2p, no measured table";
  if (s.topology.nodes_spanned(s.parallel.ep) > 1) {
    a2a_source_ += "; across " + std::to_string(s.topology.nodes_spanned(s.parallel.ep)) +
                   " nodes the off-node share over " + network_text(s.topology) + " (prior)";
  }
  if (!s.all_to_all_profile) return;
  const CommProfile& p = *s.all_to_all_profile;
  a2a_curve_ = measured_curve(p, s.topology.link);
  a2a_ranks_ = p.ranks;
  a2a_min_bytes_ = p.points.front().message_bytes;
  a2a_max_bytes_ = p.points.back().message_bytes;
  a2a_eager_table_ = p.mode == LaunchMode::kEager;
  a2a_source_ = "measured: " + p.name + " (" + p.implementation + (p.nccl_version.empty() ? "" : " " + p.nccl_version) + " all-to-all, " +
                std::to_string(p.ranks) + " ranks, " +
                to_string(p.mode) + ", " + units::format_bytes(a2a_min_bytes_) + " to " +
                units::format_bytes(a2a_max_bytes_) + "; the prior joined to the table below it)";
}

double CommModel::all_to_all_prior_s(double bytes, int ranks) const {
  // NCCL's tuning model has no all-to-all (NCCL runs one as grouped sends and receives): the
  // kernel's latency (kPriorAllToAllLatencyS, from EP8 kernel benchmarks), then the (r-1)/r of a
  // rank's bytes bound for experts on other ranks (uniform routing) at the box's peer bandwidth,
  // undiscounted: DeepEP's intranode kernels reach ~96% of NVLink (docs/references/models.md#expert-parallel).
  const double r = std::max(1, ranks);
  if (network_ && gpus_per_node_ > 0 && ranks > gpus_per_node_) {
    // Across nodes (docs/model.md#multi-node): of a rank's S, (g-1)/r stays on its node over the
    // peer link and (r-g)/r leaves through its share of the rails, rails x B_nic / g, after the
    // network's latency; DeepEP's internode kernels overlap the two paths, so the slower one counts.
    const double g = gpus_per_node_;
    const double nic_share = network_->node_bandwidth_bytes_per_s() / g;
    return a2a_latency_s_ + network_->latency_s +
           std::max((g - 1.0) / r * bytes / p2p_bytes_per_s_, (r - g) / r * bytes / nic_share);
  }
  return a2a_latency_s_ + (r - 1.0) / r * bytes / p2p_bytes_per_s_;
}

double CommModel::all_to_all_s(double bytes, int ranks, LaunchMode mode) const {
  bytes = std::max(0.0, bytes);
  double t = all_to_all_prior_s(bytes, ranks);
  const bool measured = a2a_curve_ && ranks == a2a_ranks_;
  if (measured) {
    // The table where it measured (its last regime's line above); below its smallest size the
    // prior's shape, scaled to meet the table's first point, as for the NCCL all-reduce.
    t = bytes < a2a_min_bytes_ ? t * a2a_curve_->time_s(a2a_min_bytes_) / all_to_all_prior_s(a2a_min_bytes_, ranks)
                               : a2a_curve_->time_s(bytes);
  }
  // Like an all-reduce, an eager one waits for the host launch and the slowest rank; a table
  // measured with eager launches holds that already.
  if (mode == LaunchMode::kEager && !(measured && a2a_eager_table_)) t += eager_overhead_s_;
  return t;
}

double CommModel::gather_s(double bytes, LaunchMode mode) const {
  if (!prior_) return 0.0;  // single rank
  bytes = std::max(0.0, bytes);
  // NCCL's ratio of the two collectives on this box, applied to the box's NCCL all-reduce (measured
  // where a table exists): an all-gather runs r-1 of an all-reduce's 2(r-1) ring steps
  // (nccl_prior.hpp). Not the engine's custom all-reduce: SGLang gathers through NCCL.
  const double ratio = nccl_prior_gather_pick(prior_->what_if, bytes).time_s / nccl_prior_pick(prior_->what_if, bytes).time_s;
  double t = nccl_s(bytes) * ratio * scale_;
  if (mode == LaunchMode::kEager) t += eager_overhead_s_;
  return t;
}

}  // namespace specsim
