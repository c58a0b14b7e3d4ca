// Time of one tensor-parallel all-reduce by message size and launch mode.
//
// Where a measured table exists (calibration/profiles), the time comes from a MeasuredCurve fitted
// to it (monotone log-log interpolation that keeps NCCL's regime steps, alpha-beta per regime
// outside the measured range; comm_curve.hpp). Where none exists, NCCL's own analytic model
// (nccl_prior.hpp, tuning.cc) stands in and the result is flagged uncalibrated. What-ifs:
//   NCCL_ALGO / NCCL_PROTO / channels   measured time x prior(what-if) / prior(default)
//   custom one-shot P2P all-reduce      its measured table, else alpha + (r-1) * S / B_p2p (prior)
//   FP8 all-reduce                      time(S / 2) + quantise and dequantise kernels (docs/references/nccl.md#fp8-allreduce)
//   custom two-shot P2P all-reduce      2 alpha + 2 (r-1)/r * S / B_p2p (prior)
//   engine                              vLLM's and SGLang's rule: one-shot below 8 MiB where they allow
//                                       it (tp 2, or tp 4-8 on NVLink), NCCL otherwise
// Pipeline sends: 10 us + S / B_p2p over the box's link (NVLink or PCIe); between stages on two
// nodes, the network's latency + S / B_nic.
// Expert-parallel all-to-all (DeepEP dispatch or combine, each rank sending S): the measured table of
// comm.all_to_all_profile where one is given (below its smallest size the prior joined to its first
// point, above its largest the last regime's alpha-beta line), else L + (r-1)/r S / B_p2p with L
// comm.all_to_all_latency or its prior, 30 us (p10 18, p90 50) from published EP8 kernel
// benchmarks (NCCL's model has none; docs/references/models.md#all-to-all-measured).
// All-gather and reduce-scatter of a gathered tensor S (data-parallel attention): the box's NCCL
// all-reduce of S scaled by NCCL's own ratio of the two, t(S) = t_allreduce(S) x prior_gather(S) /
// prior_allreduce(S) (nccl_prior.hpp: r-1 ring steps against 2(r-1)), so that a measured all-reduce
// table carries over; + the eager overhead.
// A forward's collectives (collectives.hpp) are priced by operation through operations(): an
// all-reduce by the registered implementation above, a send by send_s.
// Eager mode adds a per-op overhead on top of a graph-mode table: the host launch of the
// surrounding kernels plus the rank skew a collective absorbs while it waits for the slowest rank.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "specsim/collectives.hpp"
#include "specsim/hardware.hpp"
#include "specsim/scenario.hpp"

namespace specsim {

class MeasuredCurve;
class RankScaledCurve;
struct NcclPriorConfig;

// What NCCL's choice of transport depends on beyond the box: NCCL_P2P_LEVEL and the release.
struct NcclP2pSettings {
  std::string p2p_level = "auto";  // comm.nccl_p2p_level: auto | loc | nvl | pix | pxb | phb | sys
  std::string nccl_version;        // comm.nccl_version; "" = not stated: the rule of 2.23.4 and later
};

// Whether NCCL moves the ring's data GPU to GPU (P2P) or through host memory (the SHM transport),
// and the rule of NCCL's that decided it, for reports. NCCL's ncclTopoCheckP2p (src/graph/paths.cc at
// v2.30.7-1, L355-L368) uses P2P on a pair when its path type is at most the P2P level:
//   NCCL_P2P_LEVEL when set (comm.nccl_p2p_level); else PXB from 2.23.4, raised to SYS on an AMD x86
//   host whose communicator has at most two GPUs on the node; before 2.23.4 SYS, PXB on Intel and ARM.
// Path types in order: NVL < PIX < PXB < PHB < SYS. nvidia-smi's NODE is NCCL's PHB: NCCL's CPU node
// is a NUMA domain and any path through it is PATH_PHB (paths.cc#L89-L90). Beyond the level NCCL routes
// the pair through the CPU (addInterStep, paths.cc#L762-L773) and SHM carries it. The driver must grant
// P2P too (the topology's `p2p`, the card's `p2p_supported`). RCCL (AMD GPUs) keeps the topology's
// `p2p` as it is: its own P2P level is not modelled. An unstated CPU is taken as AMD (the host of the
// public PCIe logs) and the rule says so.
struct NcclTransport {
  bool p2p = true;
  std::string rule;  // "PHB ring: SHM through host memory: beyond NCCL's default P2P level PXB (2.23.4+)"
};
[[nodiscard]] NcclTransport nccl_transport(const Topology& topology, const GpuSpec& gpu, int ranks,
                                           const NcclP2pSettings& settings = {});

// NCCL's model of a box (nccl_prior.hpp): link, architecture, and the search graph NCCL would
// build for it by the ring's link class and transport (nccl_transport; docs/references/nccl.md#link-class-prior):
// PCIe P2P 2 channels x 12 GB/s, capped over SYS at NCCL's socket link for the host CPU (AMD 16 GB/s);
// SHM 1 x 5 GB/s with dearer steps; NVSwitch 16 x per-link bw. Across nodes it also carries the ranks
// per node and the network's bandwidth per node.
[[nodiscard]] NcclPriorConfig nccl_prior_config(const Topology& topology, const GpuSpec& gpu, int ranks,
                                                const NcclP2pSettings& settings = {});
// "8x 50 GB/s InfiniBand": the network of a multi-node topology, for reports; empty without one.
[[nodiscard]] std::string network_text(const Topology& topology);
// A profile's measured curve, fitted with its rank count; NCCL's LL -> Simple switch is looked for
// on PCIe boxes only (`link`: what the points were measured over).
[[nodiscard]] std::shared_ptr<const MeasuredCurve> measured_curve(const CommProfile& profile, LinkClass link);
// The names comm.implementation accepts, as CommModel::implementations() registers them.
[[nodiscard]] std::vector<std::string> allreduce_implementation_names();
// "p2 (2 ranks), p4 (4 ranks)": the profiles among `profiles` that `curve` draws on.
[[nodiscard]] std::string rank_sources(const RankScaledCurve& curve, const std::vector<const CommProfile*>& profiles);
// vLLM's custom all-reduce is built for sm_90 and sm_100 only; on consumer Blackwell (sm_12x: RTX
// PRO 6000, RTX 50-series) its peer mapping fails with 'invalid argument' while a CUDA graph is
// captured, so a vLLM deployment with any graph-mode forward on such GPUs runs NCCL
// (--disable-custom-all-reduce). vllm#47266 item 9a, PR #47751; docs/references/nccl.md#engine-custom-allreduce.
// True where the engine file lists the GPU's compute-capability major under
// behaviour.custom_allreduce.aborts_in_graph_capture_on (vllm.yaml: 12) and a forward runs in graphs.
[[nodiscard]] bool vllm_custom_aborts_in_capture(const Scenario& s);
// Why the engines' own guards keep their custom all-reduce off on this box (a world size they do
// not take, more than two PCIe-only GPUs, no peer-to-peer access); "" when they start it.
// docs/references/nccl.md#engine-custom-allreduce.
[[nodiscard]] std::string engine_custom_guard_refusal(const Scenario& s);

class CommModel {
 public:
  CommModel() = default;  // a single rank: every all-reduce is free

  // `settings` carries the what-ifs; `quantise_kernels_s` is the cost of the FP8 path's extra kernels.
  static CommModel build(const Scenario& scenario, double eager_overhead_per_op_s, double quantise_kernels_s);
  // The plain NCCL curve of a scenario with no what-ifs and no eager overhead (for calibration).
  static CommModel baseline(const Scenario& scenario);

  [[nodiscard]] double allreduce_s(double message_bytes, LaunchMode mode) const;
  // One point-to-point send of `message_bytes` between pipeline stages, over the box's link.
  // Between nodes (`across_nodes`): the network's latency + S / one NIC's bandwidth.
  [[nodiscard]] double send_s(double message_bytes, bool across_nodes = false) const;
  // One all-to-all among `ranks` expert-parallel ranks, each sending `message_bytes`.
  [[nodiscard]] double all_to_all_s(double message_bytes, int ranks, LaunchMode mode) const;
  // One NCCL all-gather (or reduce-scatter) over the TP ranks of a `gathered_bytes` tensor.
  [[nodiscard]] double gather_s(double gathered_bytes, LaunchMode mode) const;

  // A registered all-reduce implementation (comm.implementation): its name, how it prices a
  // message, and the pricing itself.
  struct Implementation {
    const char* name;
    const char* equation;
    double (*time_s)(const CommModel& model, double bytes);
  };
  [[nodiscard]] static const std::vector<Implementation>& implementations();

  // How each collective operation is priced: one row per CollectiveOp, with its equation.
  struct Operation {
    CollectiveOp op;
    const char* equation;
    double (*time_s)(const CommModel& model, const Collective& c, LaunchMode mode);
  };
  [[nodiscard]] static const std::vector<Operation>& operations();
  // One operation of `c` (multiply by c.count for the forward's share).
  [[nodiscard]] double time_s(const Collective& c, LaunchMode mode) const;
  [[nodiscard]] double eager_overhead_per_op_s() const { return eager_overhead_s_; }
  [[nodiscard]] bool calibrated() const { return calibrated_; }
  [[nodiscard]] const std::string& source() const { return source_; }  // what the time comes from
  // The smallest message the NCCL table measured (0 = no table). Below it the time is NCCL's prior
  // joined to the table's first point, t(S) = prior(S) * curve(S_min) / prior(S_min): the table's
  // own alpha-beta fit would extrapolate a latency intercept from large messages alone.
  [[nodiscard]] double measured_min_bytes() const { return measured_min_bytes_; }
  // The all-to-all's pricing: "measured: NAME (...)" or the prior's equation.
  [[nodiscard]] const std::string& all_to_all_source() const { return a2a_source_; }
  [[nodiscard]] bool all_to_all_calibrated() const { return a2a_curve_ != nullptr; }
  // The sizes the all-to-all table measured, {0, 0} without one.
  [[nodiscard]] std::pair<double, double> all_to_all_measured_bytes() const { return {a2a_min_bytes_, a2a_max_bytes_}; }

 private:
  [[nodiscard]] double nccl_s(double bytes) const;
  [[nodiscard]] double one_shot_s(double bytes) const;
  [[nodiscard]] double two_shot_s(double bytes) const;
  [[nodiscard]] double all_to_all_prior_s(double bytes, int ranks) const;
  // The all-to-all's pricing from the scenario: its table, else the prior with its latency; and the
  // network between nodes, for all-to-alls and sends across them.
  void price_all_to_all(const Scenario& s);
  // build with `settings` and `custom_profile` in place of the scenario's own.
  static CommModel build(const Scenario& scenario, const CommSettings& settings, const CommProfile* custom_profile,
                         double eager_overhead_per_op_s, double quantise_kernels_s);

  int ranks_ = 1;
  std::shared_ptr<const RankScaledCurve> nccl_curve_;  // the profile's curve, or scaled to tp ranks
  std::shared_ptr<const MeasuredCurve> custom_curve_;
  struct Prior;
  std::shared_ptr<const Prior> prior_;
  const Implementation* implementation_ = nullptr;
  bool custom_allowed_ = false;      // "engine": the box meets the engines' custom all-reduce rule
  double custom_max_bytes_ = 0.0;    // "engine": the one-shot kernel below this size
  double eager_overhead_s_ = 0.0;
  double quantise_s_ = 0.0;
  double scale_ = 1.0;
  double p2p_bytes_per_s_ = 0.0;   // what one GPU moves to all its peers at once
  double send_bytes_per_s_ = 0.0;  // one GPU to one peer (a pipeline send): one link on an xGMI mesh
  int gpus_per_node_ = 0;              // multi-node topologies only
  std::optional<Network> network_;     // the network between nodes, multi-node topologies only
  bool calibrated_ = false;
  double measured_min_bytes_ = 0.0;
  std::string source_ = "single rank";
  std::shared_ptr<const MeasuredCurve> a2a_curve_;  // comm.all_to_all_profile's, fitted
  int a2a_ranks_ = 0;
  double a2a_min_bytes_ = 0.0;
  double a2a_max_bytes_ = 0.0;
  bool a2a_eager_table_ = false;  // measured with eager launches: its times already hold the launch and skew
  double a2a_latency_s_ = kPriorAllToAllLatencyS.value;
  std::string a2a_source_;
};

}  // namespace specsim
