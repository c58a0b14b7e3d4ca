// Interventions are data: a named list of scenario patches (`key=value` with units, or
// `key*=factor`) with its effort, risk and the constraints that make it infeasible somewhere.
// Catalogues live in models/interventions/*.yaml (or a priorities file the user passes).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace specsim {

struct Constraint {
  // Infeasible when every `key=value` condition holds in the patched scenario.
  std::vector<std::pair<std::string, std::string>> when;
  std::string reason;
};

struct Intervention {
  std::string name;
  std::string description;
  std::vector<std::string> patches;
  double effort_launches = 1.0;  // server launches to try it
  double effort_hours = 0.0;     // engineering time before the first launch
  std::string group;             // at most one intervention of a group in a plan (e.g. draft shape)
  std::string risk;
  std::string source;
  std::vector<Constraint> constraints;
};

struct InterventionCatalogue {
  std::string name;
  std::string description;
  std::string file;
  std::vector<Intervention> interventions;
};

[[nodiscard]] InterventionCatalogue load_interventions(const std::string& path);

}  // namespace specsim
