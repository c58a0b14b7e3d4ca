// What-ifs run on values: after the first load (the scenario, the catalogue, the tables its
// interventions name), neither rank nor a sweep reads a data file per intervention or per point
// (issue 33). data_files_read counts every YAML or JSON file the process reads.
#include <catch2/catch.hpp>

#include "specsim/interventions.hpp"
#include "specsim/load.hpp"
#include "specsim/whatif.hpp"

namespace {
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
}  // namespace

TEST_CASE("what-ifs: rank reads no file after the first load, tp and table interventions included", "[rank][whatif]") {
  const auto catalogue = specsim::load_interventions(kRoot.root() + "/models/interventions/any-box.yaml");
  const auto loaded = specsim::load_scenario(specsim::kDefaultScenario, {}, kRoot);
  // The home box's topology file offers tp4-pp2 (parallel.tp, parallel.pp, comm.profile and
  // comm.custom_profile): it used to load the scenario again.
  const auto first = specsim::rank(loaded, specsim::kDefaultScenario, {}, catalogue, kRoot, 4);
  const auto tp4 = std::find_if(first.ranked.begin(), first.ranked.end(),
                                [](const specsim::RankedIntervention& r) { return r.intervention.name == "tp4-pp2"; });
  REQUIRE(tp4 != first.ranked.end());
  CHECK(tp4->feasible);
  // The tables it names are read once, in the first rank (the cache keeps them); a second rank of
  // the same loaded scenario reads nothing.
  const std::size_t before = specsim::data_files_read();
  const auto again = specsim::rank(loaded, specsim::kDefaultScenario, {}, catalogue, kRoot, 4);
  CHECK(specsim::data_files_read() == before);
  CHECK(again.ranked.size() == first.ranked.size());
}

TEST_CASE("what-ifs: a sweep over tp reads the scenario once, not once per point", "[sweep][whatif]") {
  const std::string scenario = "llama-3.3-70b-eagle3-4x-h100-nvswitch";
  (void)specsim::load_scenario(scenario, {}, kRoot);  // the model, GPU and topology files, cached
  const std::size_t before = specsim::data_files_read();
  const auto r = specsim::sweep(scenario, {}, {specsim::parse_vary("parallel.tp=1,2,4")}, kRoot);
  CHECK(r.fast_path);
  CHECK(r.valid == 3);
  CHECK(specsim::data_files_read() - before == 1);  // the scenario file itself
}

TEST_CASE("what-ifs: a sweep over boxes and targets reads each file once, not once per point", "[sweep][whatif]") {
  const std::string axis = "topology=8x-rtx-pro-6000-pcie5,8x-rtx-pro-6000-pcie5-switch";
  // The files each value names, read once and cached, as the sweep's setup reads them.
  (void)specsim::load_scenario(specsim::kDefaultScenario, {"topology=8x-rtx-pro-6000-pcie5-switch"}, kRoot);
  const std::size_t before = specsim::data_files_read();
  const auto r = specsim::sweep(specsim::kDefaultScenario, {}, {specsim::parse_vary(axis)}, kRoot);
  CHECK(r.fast_path);
  CHECK(r.valid == 2);
  CHECK(specsim::data_files_read() - before == 1);  // the scenario file itself
}
