// A comm profile's collective time per message size (what `specsim comm` prints): through the
// measured curve (MeasuredCurve: piecewise regimes, exact at measured sizes) at the profile's rank
// count, or estimated from profiles of the same box at other rank counts (comm_scaling.hpp), beside
// the collective library's analytic model of the box where a topology is given.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "specsim/comm_scaling.hpp"
#include "specsim/load.hpp"

namespace specsim {

// All-reduce times per message size from a comm profile (specsim comm), measured at the rank count
// or estimated from others (comm_scaling.hpp).
struct CommTable {
  struct Point {
    double bytes = 0.0;
    double time_s = 0.0;
    bool in_measured_range = true;  // false: the curve extrapolates past the measured sizes
    // The library's analytic model of the box (--topology) at this size, graph mode: what specsim uses
    // where no table is measured. Absent without a topology.
    std::optional<double> prior_s;
  };
  int ranks = 0;
  std::string collective = "all_reduce";  // what the profiles time: all_reduce or all_to_all
  std::string mode;     // the profiles' launch mode, "graph" or "eager"
  std::string profile;  // the profile measured at `ranks`; "" for an estimate
  std::string nccl_version;  // that profile's NCCL release; "" when it does not say
  // The collective library whose model gives prior_s: "RCCL" on a box of AMD GPUs, else "NCCL"
  // (collective_library in hardware.hpp).
  std::string library = "NCCL";
  // For an estimate only: the measured rank counts it rests on, how it scales from them, and the
  // profiles named with their counts (rank_sources()).
  std::vector<int> from_ranks;
  RankScaling rank_scaling = RankScaling::kPowerLaw;
  std::string estimated_from;
  std::vector<Point> points;
  [[nodiscard]] bool measured_at_ranks() const { return !profile.empty(); }
};

struct CommTableRequest {
  std::vector<std::string> profiles;  // comm profile names or files, one per rank count
  std::optional<std::string> topology;  // the box: NCCL's (RCCL's) model beside the table, and its ratio
  std::optional<std::string> rank_scaling;  // "nccl" or "power"; empty: power law from two profiles, else the ratio
  std::optional<std::string> mode;  // the launch mode the profiles must have been measured in
  int ranks = 0;
  std::vector<double> sizes_bytes;
  // Called with each warning (a profile of another GPU or more ranks than the box).
  std::function<void(const std::string&)> warn;
};

// Errors name the option they concern (--profile, --ranks, --mode), as the CLI takes them.
[[nodiscard]] CommTable comm_table(const CommTableRequest& request, const DataDir& data = DataDir());

}  // namespace specsim
