// Fuzzes the interventions catalogue reader (models/interventions, or the priorities file a user
// passes to `specsim rank`), then applies each intervention's patches to the default scenario's
// text and reads the keys its constraints test, as `rank` does before it predicts.
#include "scratch_file.hpp"
#include "specsim/error.hpp"
#include "specsim/interventions.hpp"
#include "specsim/load.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = specsim::fuzz::scratch_path("fuzz_interventions", ".yaml");
  static const specsim::DataDir root(SPECSIM_SOURCE_DIR);
  specsim::fuzz::write_file(path, data, size);
  try {
    const specsim::InterventionCatalogue c = specsim::load_interventions(path);
    for (const auto& i : c.interventions) {
      std::vector<std::string> keys;
      for (const auto& con : i.constraints) {
        for (const auto& [key, value] : con.when) keys.push_back(key);
      }
      try {
        const auto fields = specsim::scenario_fields(specsim::kDefaultScenario, i.patches, keys, root);
        SPECSIM_FUZZ_ASSERT(fields.size() == keys.size());
      } catch (const specsim::Error&) {
      }
    }
  } catch (const specsim::Error&) {
  }
  return 0;
}
