#include "specsim/comm_model.hpp"

#include <algorithm>
#include <cctype>
#include <deque>
#include <mutex>

#include "specsim/comm_curve.hpp"
#include "specsim/comm_scaling.hpp"
#include "specsim/error.hpp"
#include "specsim/nccl_prior.hpp"

namespace specsim {

namespace {

// One-shot custom all-reduce floor: 7.5 us for 256 B - 1 KB on 8x RTX PRO 6000 behind PCIe Gen5
// switches (docs/references/nccl.md#custom-vs-nccl-pcie, rtx6kpro "luke" measurements); used only when no table was measured.
constexpr double kOneShotLatencyS = 7.5e-6;

NcclArch arch_of(const std::string& gpu) {
  auto has = [&](const char* s) { return gpu.find(s) != std::string::npos; };
  if (has("h100") || has("h200") || has("h20")) return NcclArch::kHopper;
  if (has("b200") || has("b300") || has("rtx-pro-6000") || has("5090")) return NcclArch::kBlackwell;
  if (has("v100")) return NcclArch::kVolta;
  return NcclArch::kAmpere;  // A100, L40S, RTX 4090 (Ada sits in the Ampere bucket, tuning.cc)
}

// The search graph NCCL would build (docs/references/nccl.md#search-graph): PCIe P2P boxes 2 channels x PCI_BW 12 GB/s (the
// worked example of docs/references/nccl.md#worked-example); without P2P, traffic is staged through the host: 1 channel x
// 5 GB/s as an 8x 4090 host logged (nccl-tests issue 307); NVSwitch: per-link 20.6 GB/s (SM90) or
// 40.1 (SM100) over 16 channels (estimate: NCCL's ring over NVSwitch uses most of the 18 links).
}  // namespace

NcclPriorConfig nccl_prior_config(const Topology& topology, const GpuSpec& gpu, int ranks) {
  NcclPriorConfig c;
  c.ranks = std::max(2, ranks);
  c.arch = arch_of(gpu.name);
  if (topology.link == LinkClass::kNvlink) {
    c.link = NcclLink::kNvlink;
    c.graph_channels = 16;
    c.channel_bandwidth_bytes_per_s = c.arch == NcclArch::kBlackwell ? 40.1e9 : 20.6e9;
  } else if (topology.p2p && gpu.p2p_supported) {
    c.link = NcclLink::kPci;
    c.graph_channels = 2;
    c.channel_bandwidth_bytes_per_s = 12e9;
  } else {
    c.link = NcclLink::kPci;
    c.graph_channels = 1;
    c.channel_bandwidth_bytes_per_s = 5e9;
  }
  return c;
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
  const bool locate = link != LinkClass::kNvlink;
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
  const double gen5 = 56e9;
  return gen5 / double(1 << std::max(0, 5 - s.topology.pcie_generation));
}

}  // namespace

struct CommModel::Prior {
  NcclPriorConfig measured;  // NCCL as it ran when the table was measured (defaults)
  NcclPriorConfig what_if;   // NCCL_ALGO / NCCL_PROTO / channels as the scenario sets them
  bool what_if_differs = false;
};

CommModel CommModel::baseline(const Scenario& s) {
  CommSettings plain;
  plain.profile = s.comm.profile;
  return build(s, plain, nullptr, 0.0, 0.0);
}

CommModel CommModel::build(const Scenario& s, double eager_overhead_per_op_s, double quantise_kernels_s) {
  return build(s, s.comm, s.custom_profile ? &*s.custom_profile : nullptr, eager_overhead_per_op_s, quantise_kernels_s);
}

CommModel CommModel::build(const Scenario& s, const CommSettings& c, const CommProfile* custom_profile,
                           double eager_overhead_per_op_s, double quantise_kernels_s) {
  CommModel m;
  if (s.tp <= 1) return m;
  m.ranks_ = s.tp;
  m.eager_overhead_s_ = eager_overhead_per_op_s;
  m.quantise_s_ = quantise_kernels_s;
  m.scale_ = c.scale;
  m.implementation_ = c.implementation;
  m.p2p_bytes_per_s_ = p2p_bandwidth(s);
  auto prior = std::make_shared<Prior>();
  prior->measured = nccl_prior_config(s.topology, s.gpu, s.tp);
  prior->what_if = prior->measured;
  if (c.nccl_algo != "auto") prior->what_if.algos = {parse_nccl_algo(c.nccl_algo)};
  if (c.nccl_proto != "auto") prior->what_if.protos = {parse_nccl_proto(c.nccl_proto)};
  prior->what_if.min_channels = c.min_channels;
  prior->what_if.max_channels = c.max_channels;
  prior->what_if_differs = c.nccl_algo != "auto" || c.nccl_proto != "auto" || c.min_channels || c.max_channels;
  m.prior_ = prior;
  if (s.comm_profile) {
    if (s.comm_profile->ranks != s.tp && c.rank_scaling == "off") {
      throw Error("comm.profile: '" + s.comm_profile->name + "' was measured at " + std::to_string(s.comm_profile->ranks) +
                  " ranks, the scenario runs tp = " + std::to_string(s.tp) + " (comm.rank_scaling: nccl or power estimates it)");
    }
    std::vector<RankedCurve> curves{{s.comm_profile->ranks, measured_curve(*s.comm_profile, s.topology.link)}};
    for (const auto& p : s.comm_rank_profiles) curves.push_back({p.ranks, measured_curve(p, s.topology.link)});
    std::optional<RankScaling> method;
    if (c.rank_scaling == "nccl") method = RankScaling::kPriorRatio;
    if (c.rank_scaling == "power") method = RankScaling::kPowerLaw;
    m.nccl_curve_ = std::make_shared<const RankScaledCurve>(std::move(curves), s.tp, prior->measured, method);
    m.calibrated_ = m.nccl_curve_->measured();
    if (m.calibrated_) {
      m.source_ = "measured: " + s.comm_profile->name;
      if (!s.comm_profile->points.empty()) m.measured_min_bytes_ = s.comm_profile->points.front().message_bytes;
    } else {
      std::vector<const CommProfile*> profiles{&*s.comm_profile};
      for (const auto& p : s.comm_rank_profiles) profiles.push_back(&p);
      m.source_ = "rank-scaled to " + std::to_string(s.tp) + " ranks from " + rank_sources(*m.nccl_curve_, profiles) +
                  " by " + to_string(m.nccl_curve_->method());
    }
  } else {
    m.source_ = "uncalibrated: NCCL's analytic model (tuning.cc) for this topology";
  }
  if (c.implementation == "custom_oneshot") {
    if (!(s.topology.p2p && s.gpu.p2p_supported)) {
      throw Error("comm.implementation = custom_oneshot: needs peer-to-peer access, and topology '" +
                  s.topology.name + "' has p2p off");
    }
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
  if (prior->what_if_differs) m.source_ += " x NCCL what-if ratio (prior)";
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
  double t = 0.0;
  if (implementation_ == "custom_oneshot") {
    t = custom_curve_ ? custom_curve_->time_s(bytes)
                      : kOneShotLatencyS + (ranks_ - 1) * bytes / p2p_bytes_per_s_;
  } else if (implementation_ == "fp8") {
    t = nccl_s(0.5 * bytes) + quantise_s_;
  } else {
    t = nccl_s(bytes);
  }
  t *= scale_;
  // Eager overhead applies on top of graph-mode tables and priors alike.
  if (mode == LaunchMode::kEager) t += eager_overhead_s_;
  return t;
}

}  // namespace specsim
