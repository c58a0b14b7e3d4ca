// What-ifs run on values: after the first load (the scenario, the catalogue, the tables its
// interventions name), neither rank nor a sweep reads a data file per intervention or per point
// (issue 33). data_files_read counts every YAML or JSON file the process reads.
#include <catch2/catch.hpp>

#include <algorithm>

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
  const auto first = specsim::rank(loaded, {}, catalogue, kRoot, 4);
  const auto tp4 = std::find_if(first.ranked.begin(), first.ranked.end(),
                                [](const specsim::RankedIntervention& r) { return r.intervention.name == "tp4-pp2"; });
  REQUIRE(tp4 != first.ranked.end());
  CHECK(tp4->feasible);
  // The tables it names are read once, in the first rank (the cache keeps them); a second rank of
  // the same loaded scenario reads nothing.
  const std::size_t before = specsim::data_files_read();
  const auto again = specsim::rank(loaded, {}, catalogue, kRoot, 4);
  CHECK(specsim::data_files_read() == before);
  CHECK(again.ranked.size() == first.ranked.size());
}

namespace {
// The data files a sweep over `axis` reads once the files its values name are cached (`warm`
// loads the scenario with one of them, as the sweep's setup reads them), and its valid points.
std::size_t files_read_by_sweep(const std::string& scenario, const std::string& warm, const std::string& axis,
                                std::size_t valid) {
  (void)specsim::load_scenario(scenario, warm.empty() ? std::vector<std::string>{} : std::vector<std::string>{warm}, kRoot);
  const std::size_t before = specsim::data_files_read();
  const auto r = specsim::sweep(scenario, {}, {specsim::parse_vary(axis)}, kRoot);
  CHECK(r.fast_path);
  CHECK(r.valid == valid);
  return specsim::data_files_read() - before;
}
}  // namespace

TEST_CASE("what-ifs: a sweep over tp reads the scenario once, not once per point", "[sweep][whatif]") {
  // The scenario file itself; the model, GPU and topology files are cached.
  CHECK(files_read_by_sweep("llama-3.3-70b-eagle3-4x-h100-nvswitch", "", "parallel.tp=1,2,4", 3) == 1);
}

TEST_CASE("what-ifs: a sweep over boxes and targets reads each file once, not once per point", "[sweep][whatif]") {
  CHECK(files_read_by_sweep(specsim::kDefaultScenario, "topology=8x-rtx-pro-6000-pcie5-switch",
                            "topology=8x-rtx-pro-6000-pcie5,8x-rtx-pro-6000-pcie5-switch", 2) == 1);
}

TEST_CASE("what-ifs: a sweep over drafts reads each draft file once, not the scenario per point", "[sweep][whatif]") {
  CHECK(files_read_by_sweep(specsim::kDefaultScenario, "draft=kimi-k2.5-eagle3-lightseekorg",
                            "draft=kimi-k2.5-eagle3,kimi-k2.5-eagle3-lightseekorg", 2) == 1);
}

TEST_CASE("what-ifs: an intervention's key*=factor scales the value rank holds, on the value", "[rank][whatif]") {
  const auto loaded = specsim::load_scenario(specsim::kDefaultScenario, {}, kRoot);
  const auto gain_of = [&](const std::string& patch) {
    specsim::InterventionCatalogue c;
    c.name = "one";
    specsim::Intervention iv;
    iv.name = "halve-allreduce";
    iv.patches = {patch};
    c.interventions.push_back(iv);
    const auto r = specsim::rank(loaded, {}, c, kRoot, 1);
    const auto it = std::find_if(r.ranked.begin(), r.ranked.end(),
                                 [](const specsim::RankedIntervention& x) { return x.intervention.name == "halve-allreduce"; });
    REQUIRE(it != r.ranked.end());
    return *it;
  };
  // comm.scale is 1 on the default scenario: *=0.5 is =0.5, to the last bit.
  const auto scaled = gain_of("comm.scale*=0.5");
  const auto set = gain_of("comm.scale=0.5");
  REQUIRE(scaled.feasible);
  CHECK(scaled.tokens_per_s == set.tokens_per_s);
  CHECK(scaled.gain > 0.0);
  // A count scaled past its range is refused with the key; a choice cannot be scaled.
  const auto too_many = gain_of("workload.batch*=10000000");
  CHECK_FALSE(too_many.feasible);
  CHECK_THAT(too_many.reason, Catch::Matchers::Contains("--set workload.batch*=10000000: workload.batch: = 10000000 after scaling: must be in [1, 1000000]"));
  const auto choice = gain_of("comm.nccl_proto*=2");
  CHECK_FALSE(choice.feasible);
  CHECK_THAT(choice.reason, Catch::Matchers::Contains("only a number, a duration or a count can be scaled"));
}
