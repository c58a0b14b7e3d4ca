// Intervention catalogues read from files (models/interventions/*.yaml, a topology's
// `interventions:`): intervention.hpp holds what they read into. Errors name file, line and key; an
// unknown precondition key or value lists the valid ones (preconditions.hpp).
#pragma once

#include <string>

#include "specsim/intervention.hpp"

namespace specsim {

// The catalogue rank reads when neither the scenario (`interventions:`) nor the user
// (`--priorities`) names one: models/interventions/any-box.yaml.
inline constexpr const char* kDefaultCatalogue = "any-box";

[[nodiscard]] InterventionCatalogue load_interventions(const std::string& path);

}  // namespace specsim
