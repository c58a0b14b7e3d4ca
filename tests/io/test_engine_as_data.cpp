// An engine added as data only (docs/library.md#an-engine): a models/engines/<name>.yaml in a copy of
// the shipped data directory, and a scenario naming it loads, predicts, and behaves as its file's
// `behaviour:` block says (the custom all-reduce and where it aborts in graph capture, the memory
// rule, parallel drafting, async scheduling). No code knows the new name.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_run.hpp"
#include "specsim/comm_model.hpp"
#include "specsim/cycle.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"
#include "specsim/preconditions.hpp"

using Catch::Matchers::Contains;

namespace {

namespace fs = std::filesystem;

const std::string kSource = SPECSIM_SOURCE_DIR;
// vLLM, Llama-3.3-70B + EAGLE-3 at TP4 over NVSwitch: the custom all-reduce's guards pass there.
const std::string kScenario = "llama-3.3-70b-eagle3-4x-h100-nvswitch";

// A copy of the shipped models/ and calibration/ with `engines` written under models/engines.
struct DataCopy {
  specsim::test::TempDir dir{"specsim-engine-as-data"};
  specsim::DataDir data;
  explicit DataCopy(const std::vector<std::pair<std::string, std::string>>& engines)
      : data((copy_shipped(dir.path), write(dir.path, engines), dir.path.string())) {}
  static void copy_shipped(const fs::path& to) {
    for (const char* part : {"models", "calibration"}) fs::copy(kSource + "/" + part, to / part, fs::copy_options::recursive);
  }
  static void write(const fs::path& to, const std::vector<std::pair<std::string, std::string>>& engines) {
    for (const auto& [name, text] : engines) std::ofstream(to / "models/engines" / (name + ".yaml")) << text;
  }
  [[nodiscard]] specsim::Scenario load(const std::string& engine, std::vector<std::string> sets = {}) const {
    sets.push_back("engine.name=" + engine);
    return specsim::load_scenario(kScenario, sets, data);
  }
};

// vllm.yaml under another name: a fork that keeps vLLM's priors and behaviour.
std::string renamed_vllm(const std::string& name) {
  return specsim::test::replaced_once(specsim::test::read_text(kSource + "/models/engines/vllm.yaml"), "name: vllm\n",
                                      "name: " + name + "\n");
}

// The same priors with no `behaviour:` block: an engine whose file states nothing it does.
std::string without_behaviour(const std::string& name) {
  const std::string text = renamed_vllm(name);
  return text.substr(0, text.find("# What vLLM does whatever the method"));
}

}  // namespace

TEST_CASE("an engine added as a file predicts as the engine whose behaviour it states", "[engine][how-to-add]") {
  const DataCopy copy({{"vllm-fork", renamed_vllm("vllm-fork")}, {"bare", without_behaviour("bare")}});
  const specsim::Scenario vllm = copy.load("vllm");
  const specsim::Scenario fork = copy.load("vllm-fork");
  // The same priors and the same behaviour give the same cycle: nothing in the model reads the name.
  const specsim::Prediction a = specsim::CycleModel(vllm).predict();
  const specsim::Prediction b = specsim::CycleModel(fork).predict();
  CHECK(b.spec_tokens_per_s == a.spec_tokens_per_s);
  CHECK(b.baseline_tokens_per_s == a.baseline_tokens_per_s);
  CHECK(fork.engine_prior->name == "vllm-fork");

  // behaviour.custom_allreduce: runs_by_default, so the engine's kernel runs at TP4 over NVSwitch;
  // without the block it does not (the precondition fact the intervention catalogue reads).
  CHECK(specsim::scenario_fact(fork, "engine_custom_allreduce") == "true");
  const specsim::Scenario bare = copy.load("bare");
  CHECK(specsim::scenario_fact(bare, "engine_custom_allreduce") == "false");

  // behaviour.memory_rule: profile_run is vLLM's rule; a file that names none is priced with it, and
  // the fit says that the engine has no rule of its own.
  CHECK(specsim::memory_fit(fork).engine_rule == "vLLM's gpu_memory_utilization default");
  CHECK(specsim::memory_fit(bare).engine_rule ==
        "vLLM's gpu_memory_utilization default (no memory rule for engine 'bare')");

  // behaviour.async_scheduling: the fork's plain and EAGLE-3 runs are async as vLLM's are; the bare
  // engine states no default, so its runs are synchronous.
  CHECK(specsim::async_scheduling_of(fork).plain.on);
  CHECK(specsim::async_scheduling_of(fork).speculative.on);
  CHECK_FALSE(specsim::async_scheduling_of(bare).plain.on);
}

TEST_CASE("an engine file's capture-abort list and parallel drafting act on its scenarios", "[engine][how-to-add]") {
  // The fork aborts on sm_12x as vLLM does (aborts_in_graph_capture_on: [12]); a file that lists 9
  // instead aborts on the H100 (compute capability 9.0) and not on the RTX PRO 6000 (12.0).
  std::string on_hopper = specsim::test::replaced_once(renamed_vllm("hopper-abort"), "aborts_in_graph_capture_on: [12]",
                                                       "aborts_in_graph_capture_on: [9]");
  const DataCopy copy({{"vllm-fork", renamed_vllm("vllm-fork")},
                       {"hopper-abort", on_hopper},
                       {"bare", without_behaviour("bare")}});
  const std::vector<std::string> pro6000 = {"topology=4x-rtx-pro-6000-pcie5"};
  CHECK(specsim::vllm_custom_aborts_in_capture(copy.load("vllm-fork", pro6000)));
  CHECK_FALSE(specsim::vllm_custom_aborts_in_capture(copy.load("vllm-fork")));
  CHECK(specsim::vllm_custom_aborts_in_capture(copy.load("hopper-abort")));
  CHECK_FALSE(specsim::vllm_custom_aborts_in_capture(copy.load("hopper-abort", pro6000)));
  CHECK_FALSE(specsim::vllm_custom_aborts_in_capture(copy.load("bare", pro6000)));

  // behaviour.parallel_drafting: supported takes speculation.parallel_drafting; without it the
  // loader refuses the key and names the engine.
  const std::vector<std::string> block = {"speculation.parallel_drafting=true"};
  CHECK(copy.load("vllm-fork", block).speculation.parallel_drafting);
  try {
    (void)copy.load("bare", block);
    FAIL("parallel drafting was accepted on an engine whose file does not support it");
  } catch (const specsim::Error& e) {
    CHECK_THAT(std::string(e.what()), Contains("speculation.parallel_drafting") && Contains("engine.name is 'bare'"));
  }
}

TEST_CASE("an engine file's behaviour keys are checked where they are written", "[engine]") {
  const specsim::test::TempDir dir("specsim-engine-behaviour");
  const std::string head = "schema_version: 1\nkind: engine\nname: x\nsource: \"test\"\n"
                           "cycle_overhead: {value: 1ms, p10: 0.5ms, p90: 2ms}\n"
                           "draft_step_overhead: {value: 1ms, p10: 0.5ms, p90: 2ms}\n"
                           "behaviour:\n";
  const auto error_of = [&](const std::string& name, const std::string& behaviour) {
    const fs::path file = dir.path / (name + ".yaml");
    std::ofstream(file) << head << behaviour;
    try {
      (void)specsim::load_engine_prior(file.string());
    } catch (const specsim::Error& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  // behaviour.expert_kernel (the expert-kernel prior's scope, tests/model/test_expert_kernel_prior.cpp).
  CHECK(error_of("good", "  expert_kernel: {compute_capability_majors: [12], experts: [nvfp4], backends: [flashinfer_cutlass], "
                         "source: \"x\"}\n") == "loaded");
  CHECK_THAT(error_of("dtype", "  expert_kernel: {compute_capability_majors: [12], experts: [nvfp5], backends: [x], source: \"x\"}\n"),
             Contains("dtype.yaml:8:") && Contains("experts") && Contains("nvfp5") && Contains("nvfp4"));
  CHECK_THAT(error_of("major", "  expert_kernel: {compute_capability_majors: [], experts: [nvfp4], backends: [x], source: \"x\"}\n"),
             Contains("major.yaml:8:") && Contains("compute_capability_majors"));
  CHECK_THAT(error_of("source", "  expert_kernel: {compute_capability_majors: [12], experts: [nvfp4], backends: [x]}\n"),
             Contains("source.yaml:8:") && Contains("source"));
  CHECK_THAT(error_of("backends", "  expert_kernel: {compute_capability_majors: [12], experts: [nvfp4], source: \"x\"}\n"),
             Contains("backends.yaml:8:") && Contains("backends") && Contains("flashinfer_cutlass"));
  CHECK_THAT(error_of("spelling", "  expert_kernel: {compute_capability_majors: [12], experts: [nvfp4], "
                                  "backends: [FlashInfer-Cutlass], source: \"x\"}\n"),
             Contains("spelling.yaml:8:") && Contains("'flashinfer_cutlass'"));
  CHECK_THAT(error_of("kind", "  memory_rule: {kind: fraction, source: \"x\"}\n"),
             Contains("kind.yaml:8:") && Contains("static_fraction") && Contains("profile_run"));
  CHECK_THAT(error_of("abort", "  custom_allreduce: {runs_by_default: false, aborts_in_graph_capture_on: [12], source: \"x\"}\n"),
             Contains("abort.yaml:8:") && Contains("needs runs_by_default: true"));
  CHECK_THAT(error_of("unsourced", "  parallel_drafting: {supported: true}\n"),
             Contains("unsourced.yaml:8:") && Contains("source"));
  CHECK_THAT(error_of("typo", "  custom_allreduc: {runs_by_default: true, source: \"x\"}\n"),
             Contains("typo.yaml:8:") && Contains("custom_allreduc"));
}
