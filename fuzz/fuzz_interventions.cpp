// Fuzzes the interventions catalogue reader (models/interventions, a box's `interventions:`, or the
// priorities file a user passes to `specsim rank`), then does what `rank` does with each entry on
// the default scenario: its preconditions and constraints evaluated on the loaded value (every key
// the reader accepted must be a fact the scenario answers), and its patches applied.
#include "scratch_file.hpp"
#include "specsim/error.hpp"
#include "specsim/interventions.hpp"
#include "specsim/load.hpp"
#include "specsim/preconditions.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = specsim::fuzz::scratch_path("fuzz_interventions", ".yaml");
  static const specsim::DataDir root(SPECSIM_SOURCE_DIR);
  static const specsim::Scenario base = specsim::load_scenario(specsim::kDefaultScenario, {}, root);
  specsim::fuzz::write_file(path, data, size);
  specsim::InterventionCatalogue c;
  try {
    c = specsim::load_interventions(path);
  } catch (const specsim::Error&) {
    return 0;
  }
  for (const auto& i : c.interventions) {
    // A precondition the reader accepted names a fact the scenario has: evaluating it never throws.
    (void)specsim::holds(i.when, base);
    for (const auto& any : i.when.any) {
      for (const auto& p : any) SPECSIM_FUZZ_ASSERT(specsim::find_scenario_fact(p.key) != nullptr);
    }
    try {
      const specsim::Scenario patched = specsim::load_scenario(specsim::kDefaultScenario, i.patches, root);
      for (const auto& con : i.constraints) (void)specsim::holds(con.when, patched);
    } catch (const specsim::Error&) {
    }
  }
  return 0;
}
