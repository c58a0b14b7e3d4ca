#include "specsim/comm_table.hpp"

#include <memory>

#include "specsim/comm_curve.hpp"
#include "specsim/comm_model.hpp"
#include "specsim/error.hpp"
#include "specsim/nccl_prior.hpp"

namespace specsim {

namespace {

// The profiles of one table: one collective, one launch mode (the one asked for, if any), one
// profile per rank count; a profile of another GPU or more ranks than the box is a warning.
void check_profile(const CommTableRequest& o, const CommProfile& p, const std::vector<CommProfile>& profiles,
                   const std::optional<Topology>& topology) {
    // A profile is one launch mode; converting between modes needs a scenario's eager overhead.
    if (o.mode && *o.mode != to_string(p.mode)) {
      throw Error({"--mode", 0, 0}, "",
                  *o.mode + " does not match profile '" + p.name + "', measured in " + to_string(p.mode) + " mode");
    }
    if (!profiles.empty() && p.collective != profiles.front().collective) {
      throw Error({"--profile", 0, 0}, "",
                  "'" + p.name + "' times " + p.collective + ", '" + profiles.front().name + "' " +
                      profiles.front().collective + " (one collective per table)");
    }
    if (!profiles.empty() && p.mode != profiles.front().mode) {
      throw Error({"--profile", 0, 0}, "",
                  "'" + p.name + "' was measured in " + to_string(p.mode) + " mode, '" + profiles.front().name +
                      "' in " + to_string(profiles.front().mode) + " (one launch mode per estimate)");
    }
    for (const auto& q : profiles) {
      if (q.ranks == p.ranks) {
        throw Error({"--profile", 0, 0}, "",
                    "'" + q.name + "' and '" + p.name + "' are both " + std::to_string(p.ranks) +
                        " ranks: one profile per rank count");
      }
    }
    // A table from another box is a what-if worth seeing, not an error: say so on stderr.
    if (topology && !p.gpu.empty() && p.gpu != topology->gpu) {
      if (o.warn) {
        o.warn("profile '" + p.name + "' was measured on " + p.gpu + " GPUs; topology '" + topology->name + "' has " +
               topology->gpu);
      }
    }
    if (topology && p.ranks > topology->gpus) {
      if (o.warn) {
        o.warn("profile '" + p.name + "' was measured at " + std::to_string(p.ranks) + " ranks, more than the " +
               std::to_string(topology->gpus) + " GPUs of topology '" + topology->name + "'");
      }
    }
}

}  // namespace

CommTable comm_table(const CommTableRequest& o, const DataDir& data) {
  const std::vector<double>& sizes = o.sizes_bytes;
  std::optional<Topology> topology;
  std::optional<GpuSpec> gpu;
  if (o.topology) {
    topology = load_topology(data.resolve(DataKind::kTopology, *o.topology));
    gpu = load_gpu(data.resolve(DataKind::kGpu, topology->gpu));
  }
  // Without a topology the points are taken as measured over PCIe, as `calibrate nccl` does.
  const LinkClass link = topology ? topology->link : LinkClass::kPix;
  std::vector<CommProfile> profiles;
  std::vector<RankedCurve> curves;
  for (const auto& name : o.profiles) {
    CommProfile p = load_comm_profile(data.resolve(DataKind::kCommProfile, name));
    check_profile(o, p, profiles, topology);
    curves.push_back({p.ranks, measured_curve(p, link)});
    profiles.push_back(std::move(p));
  }
  const CommProfile* exact = nullptr;
  for (const auto& p : profiles) {
    if (p.ranks == o.ranks) exact = &p;
  }
  // NCCL's model and the rank scaling built on it are the all-reduce's: an all-to-all table is read
  // at its own rank count only.
  const bool all_to_all = profiles.front().collective == "all_to_all";
  if (all_to_all && !exact) {
    throw Error({"--ranks", 0, 0}, "",
                std::to_string(o.ranks) + " was not measured ('" + profiles.front().name + "' has " +
                    std::to_string(profiles.front().ranks) + " ranks): an all-to-all table is not scaled to other rank counts");
  }
  std::optional<RankScaling> method;
  if (o.rank_scaling) method = *o.rank_scaling == "power" ? RankScaling::kPowerLaw : RankScaling::kPriorRatio;
  if (!exact) {
    std::string have;
    for (const auto& p : profiles) have += (have.empty() ? "" : ", ") + p.name + " has " + std::to_string(p.ranks) + " ranks";
    const bool ratio = method ? *method == RankScaling::kPriorRatio : profiles.size() < 2;
    if (o.ranks < 2 || (ratio && !topology)) {
      throw Error({"--ranks", 0, 0}, "",
                  std::to_string(o.ranks) + " was not measured (" + have +
                      "); to estimate it, give profiles of the box at two rank counts (power law in ranks) or "
                      "--topology for NCCL's model ratio");
    }
  }
  const NcclPriorConfig prior = topology ? nccl_prior_config(*topology, *gpu, o.ranks) : NcclPriorConfig{};
  const RankScaledCurve curve(curves, o.ranks, prior, method);
  std::vector<const CommProfile*> sources;
  for (const auto& p : profiles) sources.push_back(&p);
  auto in_range = [&](double b) {
    for (int r : curve.from_ranks()) {
      for (const auto& c : curves) {
        if (c.ranks == r && !c.curve->in_measured_range(b)) return false;
      }
    }
    return true;
  };

  CommTable table;
  table.ranks = o.ranks;
  table.collective = profiles.front().collective;
  table.mode = to_string(profiles.front().mode);
  if (gpu) table.library = collective_library(gpu->architecture);
  if (exact) {
    table.profile = exact->name;
    table.nccl_version = exact->nccl_version;
  } else {
    table.from_ranks = curve.from_ranks();
    table.rank_scaling = curve.method();
    table.estimated_from = rank_sources(curve, sources);
  }
  for (double b : sizes) {
    CommTable::Point point{b, curve.time_s(b), in_range(b), std::nullopt};
    if (topology && !all_to_all) point.prior_s = nccl_prior_pick(prior, b).time_s;
    table.points.push_back(point);
  }
  return table;
}


}  // namespace specsim
