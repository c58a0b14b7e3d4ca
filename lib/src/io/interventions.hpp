// Reading interventions: the entries of a catalogue (models/interventions/*.yaml) and of a box's
// topology file (`interventions:`) have one form, read here once.
#pragma once

#include <string>
#include <vector>

#include "specsim/intervention.hpp"
#include "util/yaml_reader.hpp"

namespace specsim::detail {

// The list under `key` of `r`; names must be unique within it.
[[nodiscard]] std::vector<Intervention> read_interventions(YamlReader& r, const std::string& key);

}  // namespace specsim::detail
