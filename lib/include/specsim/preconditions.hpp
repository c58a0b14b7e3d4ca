// The facts of a scenario that an intervention's preconditions and constraints test
// (intervention.hpp), one registered row each: its key, what it means, the values it takes and how
// it is read off a loaded Scenario value. A catalogue names only these keys (its loader refuses any
// other, listing them), so a precondition is always checked on values, never on file text.
//
// `link` is the class of the links the tensor-parallel group's all-reduces cross: `network` when the
// group spans nodes, else the box's ring link (NCCL's NV# is nvlink, XGMI xgmi, every PCIe class
// from PIX to SYS pcie; hardware.hpp). docs/schema.md#interventions lists every key.
#pragma once

#include <string>
#include <vector>

#include "specsim/intervention.hpp"
#include "specsim/scenario.hpp"

namespace specsim {

struct ScenarioFact {
  const char* key;
  const char* meaning;
  // The values it takes; nullptr for a whole number (compute_capability, tp).
  std::vector<std::string> (*values)();
  std::string (*read)(const Scenario&);
};

[[nodiscard]] const std::vector<ScenarioFact>& scenario_facts();
// The row of `key`, or nullptr when no fact has that key.
[[nodiscard]] const ScenarioFact* find_scenario_fact(const std::string& key);
// The fact `key` of `s` as a catalogue writes it ("pcie", "true", "120"); throws specsim::Error
// for a key no row has.
[[nodiscard]] std::string scenario_fact(const Scenario& s, const std::string& key);
// Why `value` is not one `key` takes ("" when it is one), for the catalogue loader.
[[nodiscard]] std::string fact_value_problem(const std::string& key, const std::string& value);

[[nodiscard]] bool holds(const Condition& condition, const Scenario& s);
// "link: pcie, p2p: true" (one alternative), alternatives joined by " | "; "always" when it has none.
[[nodiscard]] std::string to_string(const Condition& condition);

// `text` with `{library}` written as the collective library of the scenario's GPUs (NCCL or RCCL).
[[nodiscard]] std::string for_box(const std::string& text, const Scenario& s);

}  // namespace specsim
