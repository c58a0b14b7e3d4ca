// specsim comm: predicted all-reduce (or all-to-all) time per message size from a comm profile, through the
// measured curve (MeasuredCurve: piecewise regimes, exact at measured sizes), as text, JSON or CSV.
// Profiles of the same box at other rank counts estimate an unmeasured one (comm_scaling.hpp).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <optional>
#include <ostream>

#include "cli.hpp"
#include "format_option.hpp"
#include "specsim/comm_curve.hpp"
#include "specsim/comm_model.hpp"
#include "specsim/comm_scaling.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/nccl_prior.hpp"
#include "specsim/report.hpp"
#include "specsim/units.hpp"

namespace specsim::cli {

namespace {

struct CommOptions {
  std::vector<std::string> profiles;
  std::optional<std::string> topology;
  std::optional<std::string> rank_scaling;
  int ranks = 0;
  std::vector<std::string> sizes;
  std::optional<std::string> mode;
  Format format = Format::kText;
};

// "14KiB", "2MB", or a plain byte count "4096".
double parse_size_bytes(const std::string& text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
  try {
    // A plain count is bytes: read through units so the plausibility bound applies to it too.
    return units::parse_bytes(plain ? text + "B" : text);
  } catch (const Error& e) {
    throw Error({"--size", 0, 0}, "", "'" + text + "': " + e.message());
  }
}

void run_comm(const CommOptions& o, Io& io) {
  std::vector<double> sizes;
  for (const auto& s : o.sizes) sizes.push_back(parse_size_bytes(s));
  const DataDir data;
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
      io.err << "warning: profile '" << p.name << "' was measured on " << p.gpu << " GPUs; topology '" << topology->name
             << "' has " << topology->gpu << "\n";
    }
    if (topology && p.ranks > topology->gpus) {
      io.err << "warning: profile '" << p.name << "' was measured at " << p.ranks << " ranks, more than the "
             << topology->gpus << " GPUs of topology '" << topology->name << "'\n";
    }
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
  io.out << render_comm(table, o.format);
}

}  // namespace

void setup_comm(CLI::App& app, Io& io) {
  auto opts = std::make_shared<CommOptions>();
  CLI::App* sub = app.add_subcommand("comm", "Predicted all-reduce (or all-to-all) time per message size from a comm profile");
  sub->add_option("--profile", opts->profiles,
                  "Comm profile name (calibration/profiles) or file; several (P1,P2 or repeated) at other rank "
                  "counts of one box estimate an unmeasured --ranks")
      ->required()
      ->delimiter(',');
  sub->add_option("--ranks", opts->ranks, "Rank count: a profile's, or one to estimate")->required()->check(CLI::Range(1, 4096));
  sub->add_option("--rank-scaling", opts->rank_scaling,
                  "How to estimate an unmeasured rank count: power (per size, through two measured counts; the "
                  "default with two or more) or nccl (NCCL's model ratio from the nearest; needs --topology)")
      ->check(CLI::IsMember({"power", "nccl"}));
  sub->add_option("--topology", opts->topology, "Topology the profiles were measured on (models/topology)");
  sub->add_option("--size", opts->sizes, "Message sizes, S1,S2,... (14KiB, 2MB, or a byte count)")
      ->required()
      ->delimiter(',');
  sub->add_option("--mode", opts->mode, "Launch mode; must match the profile's")
      ->check(CLI::IsMember({"graph", "eager"}));
  add_format_option(*sub, opts->format, {.json_help = "Print {\"points\":[{\"bytes\":...,\"time_s\":...}]} (--format json)"});
  sub->callback([opts, &io]() { run_comm(*opts, io); });
}

}  // namespace specsim::cli
