// GPUs, boxes and measured collective tables: what the hardware offers, from datasheets
// (models/gpu), topology files (models/topology) and calibration profiles (calibration/profiles).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "specsim/intervention.hpp"

namespace specsim {

// The GPU generation, as NCCL's tuning tables bucket it (Ada takes Ampere's row) and as a GPU file
// states it: never guessed from the name. kCdna3 (MI300X, MI325X: gfx942) and kCdna4 (MI350X,
// MI355X: gfx950) are AMD Instinct generations; their collectives run RCCL, NCCL's fork
// (docs/references/hardware.md#amd-instinct, docs/references/nccl.md#rccl).
enum class GpuArch { kVolta, kAmpere, kAda, kHopper, kBlackwell, kCdna3, kCdna4 };
[[nodiscard]] const char* to_string(GpuArch a);
[[nodiscard]] std::optional<GpuArch> parse_gpu_arch(const std::string& text);
[[nodiscard]] std::vector<std::string> gpu_arch_names();  // "volta", ..., "cdna4"
// True for AMD's generations (CDNA): ROCm, HIP graphs and RCCL instead of CUDA and NCCL.
[[nodiscard]] bool is_amd(GpuArch a);
// The collective library a box of these GPUs runs: "RCCL" on AMD, "NCCL" otherwise. Reports name it.
[[nodiscard]] const char* collective_library(GpuArch a);

struct GpuSpec {
  std::string name;
  std::string description;
  GpuArch architecture = GpuArch::kAmpere;
  double memory_bytes = 0.0;
  double memory_bandwidth_bytes_per_s = 0.0;
  double bf16_flop_per_s = 0.0;             // dense tensor rate
  std::optional<double> fp8_flop_per_s;     // dense; absent without FP8 tensor cores
  int pcie_generation = 4;
  std::optional<double> nvlink_bandwidth_bytes_per_s;  // per direction
  // AMD Infinity Fabric (xGMI): bandwidth of one GPU-to-GPU link, per direction, and the links each
  // GPU has to its peers (7 on an 8-GPU MI300X / MI355X platform: one to every other GPU). Absent
  // on cards without xGMI.
  std::optional<double> xgmi_link_bandwidth_bytes_per_s;
  int xgmi_links = 0;
  bool p2p_supported = true;
  // CUDA compute capability as major * 10 + minor (sm_120 = 120), from the file's
  // `compute_capability: "12.0"`; 0 when the file does not say. Engines gate kernels on it.
  int compute_capability = 0;
};

// NCCL's link classes as `nvidia-smi topo -m` prints them (NCCL_P2P_LEVEL names), fastest first:
// NV# (a bonded set of # NVLinks), PIX (at most one PCIe bridge), PXB (several PCIe bridges, no host
// bridge), PHB (through a PCIe host bridge, i.e. the CPU), NODE (between host bridges of one NUMA
// node), SYS (across the SMP interconnect between NUMA nodes). docs/references/hardware.md#p2p-levels.
// XGMI: a direct AMD Infinity Fabric link between the two GPUs (rocm-smi --showtopo "XGMI", one
// hop); on an 8-GPU MI300X / MI355X platform every pair has one, a point-to-point mesh with no switch
// (docs/references/hardware.md#xgmi-mesh). It sorts after NVLink and before every PCIe class.
enum class LinkClass { kNvlink, kXgmi, kPix, kPxb, kPhb, kNode, kSys };
[[nodiscard]] const char* to_string(LinkClass c);
// "NV18", "XGMI", "PIX", ...; NV# needs a count of 1..999 links.
[[nodiscard]] std::optional<LinkClass> parse_link_class(const std::string& text);
// The # of "NV#", 0 for any other text.
[[nodiscard]] int parse_nvlink_count(const std::string& text);
// The class as topo -m prints it: "NV18" for kNvlink with 18 links, else to_string(c).
[[nodiscard]] std::string link_name(LinkClass c, int nvlinks);
// True when (a, a_nvlinks) is slower than (b, b_nvlinks) in the order above; between two NVLink
// classes the one with fewer links is slower.
[[nodiscard]] bool slower_link(LinkClass a, int a_nvlinks, LinkClass b, int b_nvlinks);

// The host CPU as NCCL classifies it (src/graph/topo.cc at v2.30.7-1: the vendor from cpuid, an Intel
// model from family 6 model id: >= 0xCF Emerald Rapids, >= 0x8F Sapphire Rapids, >= 0x55 Skylake,
// older Broadwell; L744-L751). It sets NCCL's default P2P level (paths.cc ncclTopoCheckP2p) and the
// bandwidth NCCL gives the link between two sockets (ncclTopoGetInterCpuBw, topo.cc#L60-L82).
// A topology file's `cpu:`; docs/references/nccl.md#link-class-prior.
enum class HostCpu { kAmd, kIntelBroadwell, kIntelSkylake, kIntelSapphireRapids, kIntelEmeraldRapids, kArm };
// "amd", "intel-broadwell", "intel-skylake", "intel-sapphire-rapids", "intel-emerald-rapids", "arm"
[[nodiscard]] const char* to_string(HostCpu c);
[[nodiscard]] std::optional<HostCpu> parse_host_cpu(const std::string& text);
// Every name parse_host_cpu takes, comma-separated, for messages.
[[nodiscard]] std::string host_cpu_names();

// The network between the nodes of a multi-node topology (`network:` in the file): one NIC per rail,
// each on its own switch plane, as in NVIDIA's DGX H100 layout of eight 400 Gb/s ConnectX-7 ports
// per node (docs/references/hardware.md#dgx-h100-network).
// kEthernet: GPU traffic over plain Ethernet without RDMA, as GCP's GPUDirect-TCPX/TCPXO.
enum class NetworkKind { kInfiniband, kRoce, kEthernet };
[[nodiscard]] const char* to_string(NetworkKind k);
[[nodiscard]] std::optional<NetworkKind> parse_network_kind(const std::string& text);

struct Network {
  NetworkKind kind = NetworkKind::kInfiniband;
  // One NIC's bandwidth per direction (a 400 Gb/s ConnectX-7 port is 50 GB/s).
  double nic_bandwidth_bytes_per_s = 0.0;
  // One-way latency of a small point-to-point message between nodes: what a pipeline send across
  // the network pays before its bytes (NCCL's collective prior keeps its own per-hop tables).
  double latency_s = 0.0;
  int rails = 1;  // NICs per node, each serving gpus_per_node / rails GPUs
  // What one node can send at once: rails x NIC bandwidth.
  [[nodiscard]] double node_bandwidth_bytes_per_s() const { return rails * nic_bandwidth_bytes_per_s; }
};

// A launch check (launch_checks.hpp) seen failing on one box: `what` says what was seen and where
// it is recorded. The check itself holds on every box; this fact is said on this box only.
struct FailureSeen {
  std::string check;  // a launch_check_names() entry
  std::string what;
};

struct Topology {
  std::string name;
  std::string description;
  std::string gpu;  // models/gpu name
  int gpus = 0;
  bool p2p = true;
  int pcie_generation = 5;
  LinkClass link = LinkClass::kPxb;  // the class that governs a ring over all GPUs (its slowest hop);
                                     // with a pair matrix and no `link` key, the slowest pair
  int nvlinks = 0;                   // NV# count when link is NVLink
  // The class between every GPU pair (`links:` in the file, or `nvidia-smi topo -m`), gpus x gpus
  // and symmetric; empty when the file gives only `link`. The diagonal (a GPU with itself, 'X' in
  // the file) holds kNvlink with 0 links and is never meaningful: skip it.
  std::vector<std::vector<LinkClass>> pair_links;
  std::vector<std::vector<int>> pair_nvlinks;  // NV# count per pair, 0 where the pair is not NVLink
  std::vector<int> numa_nodes;       // NUMA node nearest each GPU (topo -m "NUMA Affinity"); empty
                                     // when unknown
  std::string comm_profile;          // calibration/profiles name; empty when none
  // Several identical nodes: gpus = nodes x gpus_per_node; GPU g sits on node g / gpus_per_node.
  // `link`, `links` and `numa` describe one node (every node alike); `network` joins the nodes.
  int nodes = 1;
  int gpus_per_node = 0;             // = gpus on one node
  std::optional<Network> network;    // set exactly when nodes > 1
  // What was measured on this box and holds for it alone (`failures_seen:`, `interventions:` in the
  // file): rank adds these interventions to the catalogue for any box, and a launch check that
  // fails here says so. Empty for a box without such measurements (and an imported one).
  std::vector<FailureSeen> failures_seen;
  std::vector<Intervention> interventions;
  // The host CPU (`cpu:`); empty when the file does not say. NCCL's P2P level and its socket-link
  // bandwidth depend on it; the all-reduce prior then assumes AMD and says so (comm_model.hpp).
  std::optional<HostCpu> cpu;

  // GPUs of one node (gpus when the file gives no nodes).
  [[nodiscard]] int node_gpus() const { return gpus_per_node > 0 ? gpus_per_node : gpus; }
  // Nodes that `ranks` consecutive GPUs from GPU 0 span (ranks are placed node by node).
  [[nodiscard]] int nodes_spanned(int ranks) const { return ranks <= node_gpus() ? 1 : (ranks + node_gpus() - 1) / node_gpus(); }
};

// The largest NUMA node number a topology file or `nvidia-smi topo -m` may name (Linux's
// CONFIG_NODES_SHIFT is at most 10 on x86-64, so 1,024 nodes; 4095 leaves room for other kernels).
inline constexpr int kMaxNumaNode = 4095;

// `text` as a NUMA node number: one to four decimal digits, at most kMaxNumaNode; nullopt
// otherwise (no sign, no spaces, no ranges). The topology loader and the topo -m importer both use it,
// so what one writes the other reads back.
[[nodiscard]] std::optional<int> parse_numa_node(std::string_view text);

// The slowest class over the GPU pairs of t.pair_links (diagonal skipped), with its NVLink count;
// t.link and t.nvlinks when the topology has no pair matrix or a single GPU.
[[nodiscard]] std::pair<LinkClass, int> slowest_pair_link(const Topology& t);

// The class of the slowest hop of the ring NCCL builds over all GPUs of t.pair_links. NCCL's graph
// search (src/graph/search.cc, ncclTopoCompute) starts with GPU-to-GPU paths limited to NVLink and
// widens the limit one path type at a time (NVL, then PIX, PXB, PHB, NODE, SYS) only while no ring is
// found; it also tries the highest bandwidth first (docs/references/nccl.md#ring-search). So the
// ring's link is the fastest class c such that a ring through every GPU exists using only pairs at
// least as fast as c (a Hamiltonian cycle; for two GPUs, their one pair). On a DGX-1V hybrid cube
// mesh that is NV2 (0-3-2-1-5-6-7-4-0), where the slowest pair is SYS. Only direct pairs count: a
// path through a third GPU's NVLink (NCCL's PATH_NVB) is not modelled. Above kMaxRingSearchGpus
// GPUs the search is skipped and the slowest pair is returned. t.link/t.nvlinks with fewer than two
// GPUs or no matrix.
inline constexpr int kMaxRingSearchGpus = 20;  // 2^20 subsets x 20 end GPUs: a few MB, well under a second
[[nodiscard]] std::pair<LinkClass, int> ring_link(const Topology& t);

// kPiecewise: CUDA graphs around the layers, attention launched eagerly between them (vLLM's
// cudagraph_mode PIECEWISE, TensorRT-LLM's piecewise CUDA graph; docs/references/specdec.md#piecewise-graphs).
enum class LaunchMode { kGraph, kEager, kPiecewise };
[[nodiscard]] const char* to_string(LaunchMode m);

// One measured collective latency table: time per op by message size, at one rank count,
// implementation and launch mode. An all-reduce table's size is the tensor each rank reduces; an
// all-to-all table's is what each rank sends in all, its own share included (nccl-tests'
// alltoall_perf `size`, docs/calibration.md#all-to-all).
struct CommProfile {
  struct Point {
    double message_bytes = 0.0;
    double time_s = 0.0;
  };
  std::string name;
  std::string description;
  std::string source;
  std::string collective = "all_reduce";  // all_reduce | all_to_all: what the table times
  std::string implementation = "nccl";     // all_reduce: nccl | custom_oneshot | fp8; all_to_all: nccl | deepep | pplx
  int ranks = 0;
  // Hosts the ranks ran on: above 1 the table was measured across nodes, over their network
  // (nccl-tests' device lines name each rank's host); 1 when the file does not say.
  int nodes = 1;
  std::string gpu;  // models/gpu name of the card it was measured on; empty when the file does not say
  LaunchMode mode = LaunchMode::kGraph;
  // The NCCL release the table was measured under, as written ("2.29.7"); empty when the file does
  // not say. Only an nccl table has one.
  std::string nccl_version;
  std::vector<Point> points;  // sorted by size, sizes distinct
};

}  // namespace specsim
