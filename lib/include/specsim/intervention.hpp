// Interventions are data (values of the model layer; interventions.hpp reads them from files): a named list of scenario patches (`key=value` with units, or
// `key*=factor`) with its effort and risk, the preconditions under which it applies at all, and
// the constraints that make it infeasible where it applies. A catalogue for any box lives in
// models/interventions/any-box.yaml; what holds for one box alone (a figure measured there, a
// comm profile of that box) lives in that box's topology file (`interventions:`), and rank adds it
// on that box only. A user's own catalogue (`rank --priorities FILE`) replaces any-box.yaml.
//
// Preconditions and constraints name facts of a scenario (preconditions.hpp: the link the TP group
// crosses, the GPU's architecture, the engine, P2P, ...), read on the loaded Scenario value.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace specsim {

// One precondition: the scenario fact `key` (preconditions.hpp) takes one of `values`.
struct Precondition {
  std::string key;
  std::vector<std::string> values;
};

// Holds when every precondition of one of its alternatives holds (a disjunction of conjunctions,
// written in a file as one map or a list of maps); a condition with no alternative always holds.
struct Condition {
  std::vector<std::vector<Precondition>> any;
  [[nodiscard]] bool always() const { return any.empty(); }
};

struct Constraint {
  // Infeasible when `when` holds on the scenario with the intervention applied.
  Condition when;
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
  // Where it applies: rank offers it only on a scenario where this holds. Texts may say
  // `{library}`, which rank writes as the box's collective library (NCCL, or RCCL on AMD).
  Condition when;
  std::vector<Constraint> constraints;
};

struct InterventionCatalogue {
  std::string name;
  std::string description;
  std::string file;
  std::vector<Intervention> interventions;
};

}  // namespace specsim
