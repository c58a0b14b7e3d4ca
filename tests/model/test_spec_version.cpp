// engine.spec_version: SGLang's spec v1 and v2 workers priced by their own per-cycle priors
// (models/engines/sglang.yaml, from sglang PR #11398; docs/schema.md#engine).
#include <catch2/catch.hpp>

#include <fstream>

#include "cli_run.hpp"
#include "specsim/cycle.hpp"
#include "specsim/load.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
constexpr const char* kSglang = "kimi-k2.5-eagle3-8x-h200-nvswitch";  // engine: sglang
constexpr const char* kVllm = "llama-3.1-8b-eagle1-1x-h100";          // engine: vllm

}  // namespace

TEST_CASE("spec version: SGLang's file default is v1, v2 takes the overlap worker's cycle prior", "[engine][spec_version]") {
  const auto unset = specsim::load_scenario(kSglang, {}, kRoot);
  const auto v1 = specsim::load_scenario(kSglang, {"engine.spec_version=v1"}, kRoot);
  const auto v2 = specsim::load_scenario(kSglang, {"engine.spec_version=v2"}, kRoot);
  // v1: sglang.yaml's cycle_overhead, 2.0 ms (12.11 ms per cycle in PR #11398 less the priced 10.1 ms).
  CHECK_THAT(unset.host.spec_extra_per_cycle_s, WithinRel(2.0e-3, 1e-12));
  CHECK_THAT(v1.host.spec_extra_per_cycle_s, WithinRel(2.0e-3, 1e-12));
  // v2: 11.01 ms per cycle with the overlap, less the same 10.1 ms: ~0.9 ms.
  CHECK_THAT(v2.host.spec_extra_per_cycle_s, WithinRel(0.9e-3, 1e-12));
  CHECK_THAT(v2.engine_prior->cycle_overhead.p10_s, WithinRel(0.4e-3, 1e-12));
  CHECK_THAT(v2.engine_prior->cycle_overhead.p90_s, WithinRel(2.0e-3, 1e-12));
  CHECK_THAT(v2.engine_prior->source, Contains("spec v2 cycle prior"));
  // The draft-step prior is one for both workers.
  CHECK(v2.host.draft_step_overhead_s == v1.host.draft_step_overhead_s);
  // Less host time per cycle, the same forwards: v2 predicts more tokens per second.
  const double t1 = specsim::CycleModel(v1).predict().spec_tokens_per_s;
  const double t2 = specsim::CycleModel(v2).predict().spec_tokens_per_s;
  CHECK(t2 > t1);
}

TEST_CASE("spec version: a value the scenario sets for the host still wins", "[engine][spec_version]") {
  const auto s = specsim::load_scenario(kSglang, {"engine.spec_version=v2", "host.spec_extra_per_cycle=1.5ms"}, kRoot);
  CHECK_THAT(s.host.spec_extra_per_cycle_s, WithinRel(1.5e-3, 1e-12));
}

TEST_CASE("spec version: an engine without versions, or an unknown version, is an error at the key", "[engine][spec_version]") {
  CHECK_THROWS_WITH(specsim::load_scenario(kVllm, {"engine.spec_version=v2"}, kRoot),
                    Contains("engine: spec_version = v2: models/engines/vllm.yaml prices no worker versions apart"));
  CHECK_THROWS_WITH(specsim::load_scenario(kSglang, {"engine.spec_version=v3"}, kRoot),
                    Contains("engine.spec_version") && Contains("'v3' is not one of: v1, v2"));
}

TEST_CASE("spec version: an engine file's versions are checked where they are written", "[engine][spec_version]") {
  specsim::test::TempDir dir("specsim_test_spec_version_engine_file");
  const std::string head =
      "schema_version: 1\nkind: engine\nname: e\nsource: test\n"
      "cycle_overhead: {value: 2ms, p10: 1ms, p90: 4ms}\ndraft_step_overhead: {value: 0.1ms, p10: 0.05ms, p90: 0.3ms}\n";
  const auto write = [&](const std::string& name, const std::string& tail) {
    const std::string path = (dir.path / name).string();
    std::ofstream(path) << head << tail;
    return path;
  };
  // Versions without saying which one cycle_overhead holds.
  CHECK_THROWS_WITH(specsim::load_engine_prior(write("no-default.yaml",
                                                     "spec_versions:\n  - {version: v2, cycle_overhead: {value: 1ms, p10: 0.5ms, p90: 2ms}}\n")),
                    Contains("no-default.yaml:8:3:") && Contains("spec_versions: needs default_spec_version"));
  // The default listed again.
  CHECK_THROWS_WITH(specsim::load_engine_prior(write("default-listed.yaml",
                                                     "default_spec_version: v1\nspec_versions:\n"
                                                     "  - {version: v1, cycle_overhead: {value: 1ms, p10: 0.5ms, p90: 2ms}}\n")),
                    Contains("'v1' is default_spec_version: its prior is cycle_overhead"));
  const auto ok = specsim::load_engine_prior(write("ok.yaml", "default_spec_version: v1\nspec_versions:\n"
                                                              "  - {version: v2, cycle_overhead: {value: 1ms, p10: 0.5ms, p90: 2ms}}\n"));
  REQUIRE(ok.cycle_overhead_by_version.size() == 1);
  CHECK(ok.cycle_overhead_by_version[0].first == "v2");
  CHECK_THAT(ok.cycle_overhead_by_version[0].second.value_s, WithinRel(1e-3, 1e-12));
}
