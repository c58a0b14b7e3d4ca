// `--emit`: the launch of a scenario's setting on vLLM, SGLang and TensorRT-LLM. Every flag it
// writes is a row of the one flag table (engine_flags.hpp, each row checked against the engine's
// parser), a method the engine lacks is an error naming both, and a sweep's best draft length per
// concurrency becomes TensorRT-LLM's draft_len_schedule.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "specsim/emit.hpp"
#include "specsim/engine_flags.hpp"
#include "specsim/launch_command.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"

using Catch::Matchers::Contains;
using specsim::Engine;

namespace {

const std::vector<Engine> kEngines = {Engine::kVllm, Engine::kSglang, Engine::kTrtllm};

using specsim::test::shipped_scenarios;

// The launch, or nullopt when the engine cannot run the setting (an Error at --emit).
std::optional<specsim::EmittedLaunch> try_emit(const specsim::Scenario& s, Engine e) {
  try {
    return specsim::emit_launch(s, e);
  } catch (const specsim::Error& err) {
    CHECK(err.where().file == "--emit");  // a refusal names the option, never anything else
    return std::nullopt;
  }
}

bool has(const std::vector<std::string>& argv, const std::string& word) {
  return std::find(argv.begin(), argv.end(), word) != argv.end();
}

// The word after `flag` in `argv`.
std::string value_after(const std::vector<std::string>& argv, const std::string& flag) {
  const auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

}  // namespace

TEST_CASE("every flag --emit writes on the shipped scenarios is a row of the flag table for its engine") {
  int launches = 0;
  for (const auto& path : shipped_scenarios()) {
    const specsim::Scenario s = specsim::load_scenario(path.string());
    for (Engine e : kEngines) {
      const auto launch = try_emit(s, e);
      if (!launch) continue;
      ++launches;
      for (const auto& c : launch->commands) {
        for (const auto& w : c.argv) {
          if (!w.starts_with("--")) continue;
          INFO(path.filename().string() << " " << specsim::to_string(e) << ": " << w);
          CHECK(specsim::find_engine_flag(e, w) != nullptr);
        }
      }
      CHECK(launch->checked_against == specsim::flag_sources(e));
    }
  }
  // 17 shipped scenarios x 3 engines, less 9 refusals: EAGLE-1 on TensorRT-LLM, block drafting on
  // SGLang and TensorRT-LLM, the DeepEP all-to-all on vLLM and TensorRT-LLM (the next test), DFlash
  // on all three (no parser specsim checked names it), TensorRT-LLM on the MI355X box. The two-node
  // TP16 scenario's launches are one node's commands, with the multi-node problem noted.
  CHECK(launches == 42);
}

TEST_CASE("a setting the engine cannot run is an error naming the setting and the engine") {
  const auto refusal = [](const std::string& scenario, Engine e) {
    try {
      (void)specsim::emit_launch(specsim::load_scenario(scenario), e);
    } catch (const specsim::Error& err) {
      return std::string(err.what());
    }
    return std::string("(no error)");
  };
  // TensorRT-LLM's PyTorch decoding types (llm_args.py) have no EAGLE-1.
  const std::string eagle1 = refusal("llama-3.1-8b-eagle1-1x-h100", Engine::kTrtllm);
  CHECK_THAT(eagle1, Contains("--emit") && Contains("speculation.method") && Contains("trtllm") && Contains("eagle"));
  // Block drafting is vLLM's alone.
  CHECK_THAT(refusal("gpt-oss-20b-p-eagle-1x-b200", Engine::kSglang),
             Contains("speculation.parallel_drafting") && Contains("sglang"));
  CHECK_THAT(refusal("deepseek-v3-mtp-8x-h200-deepep", Engine::kVllm), Contains("parallel.moe_a2a") && Contains("vllm"));
}

TEST_CASE("the default scenario's launches carry its parallelism, draft shape, graph sizes and all-reduce switch") {
  specsim::Scenario s = specsim::load_scenario(specsim::kDefaultScenario);  // TP8, EAGLE-3 3/1/4, batch 1, comm nccl
  const auto sglang = specsim::emit_launch(s, Engine::kSglang).commands.at(0).argv;
  CHECK(value_after(sglang, "--tp-size") == "8");
  CHECK(value_after(sglang, "--speculative-algorithm") == "EAGLE3");
  CHECK(value_after(sglang, "--speculative-num-steps") == "3");
  CHECK(value_after(sglang, "--speculative-num-draft-tokens") == "4");  // a chain verifies k + 1
  CHECK(value_after(sglang, "--cuda-graph-max-bs") == "1");             // the batch
  CHECK(has(sglang, "--disable-custom-all-reduce"));                    // comm.implementation: nccl
  CHECK(value_after(sglang, "--model-path") == "<path-to-kimi-k2.5>");  // no checkpoint directory given

  s.batch = 16;
  const auto vllm = specsim::emit_launch(s, Engine::kVllm).commands.at(0).argv;
  // vLLM captures by tokens: 16 requests x (3 + 1) verified tokens = 64.
  CHECK(value_after(vllm, "--max-cudagraph-capture-size") == "64");
  const auto spec = nlohmann::json::parse(value_after(vllm, "--speculative-config"));
  CHECK(spec["method"] == "eagle3");
  CHECK(spec["num_speculative_tokens"] == 3);

  const auto trt = specsim::emit_launch(s, Engine::kTrtllm).commands.at(0);
  CHECK_THAT(trt.config_text, Contains("decoding_type: Eagle3") && Contains("max_draft_len: 3") &&
                                  Contains("max_batch_size: 16") && Contains("allreduce_strategy: NCCL"));
  CHECK(value_after(trt.argv, "--extra_llm_api_options") == trt.config_name);
}

TEST_CASE("NCCL what-ifs become the launch's environment") {
  specsim::Scenario s = specsim::load_scenario(specsim::kDefaultScenario, {"comm.nccl_proto=ll", "comm.max_channels=4"});
  const auto launch = specsim::emit_launch(s, Engine::kSglang);
  const std::vector<std::pair<std::string, std::string>> want = {{"NCCL_PROTO", "LL"}, {"NCCL_MAX_NCHANNELS", "4"}};
  CHECK(launch.commands.at(0).env == want);
  CHECK_THAT(launch.script, Contains("export NCCL_PROTO=LL\nexport NCCL_MAX_NCHANNELS=4\n"));
  // NCCL's P2P level, and back through init's reader.
  const specsim::Scenario sys = specsim::load_scenario(specsim::kDefaultScenario, {"comm.nccl_p2p_level=sys"});
  const auto env = specsim::emit_launch(sys, Engine::kSglang).commands.at(0).env;
  CHECK(std::find(env.begin(), env.end(), std::pair<std::string, std::string>{"NCCL_P2P_LEVEL", "SYS"}) != env.end());
  specsim::LaunchReading back;
  specsim::apply_environment(back, env, "emitted");
  CHECK(back.values.at("comm.nccl_p2p_level") == "sys");
}

TEST_CASE("the best draft length per concurrency becomes TensorRT-LLM's draft_len_schedule when it falls") {
  const auto level = [](int c, int k) {
    specsim::Scenario s = specsim::load_scenario(specsim::kDefaultScenario, {"speculation.num_steps=" + std::to_string(k)});
    return specsim::EmitLevel{c, s, true};
  };
  // K 3 at batch 1, 2 at 4, 1 at 16: keys are each range's largest batch (llm_args.py @ 00043967).
  const auto falling = specsim::emit_launch({level(1, 3), level(4, 2), level(16, 1)}, Engine::kTrtllm);
  const std::vector<std::pair<int, int>> want = {{1, 3}, {4, 2}, {16, 1}};
  CHECK(falling.schedule == want);
  REQUIRE(falling.commands.size() == 1);
  CHECK_THAT(falling.commands[0].config_text, Contains("max_draft_len: 3\n") && Contains("draft_len_schedule:\n    1: 3\n    4: 2\n    16: 1\n") &&
                                                  Contains("max_batch_size: 16"));
  // A length that rises breaks the schedule's rule (its smallest key holds the largest length):
  // a command per level, and a note that says why.
  const auto rising = specsim::emit_launch({level(1, 2), level(4, 3)}, Engine::kTrtllm);
  CHECK(rising.schedule.empty());
  CHECK(rising.commands.size() == 2);
  CHECK_THAT(rising.script, Contains("rises with concurrency"));
  // SGLang has no schedule: a command per level, each at its own length and graph size.
  const auto sglang = specsim::emit_launch({level(1, 3), level(4, 2)}, Engine::kSglang);
  REQUIRE(sglang.commands.size() == 2);
  CHECK(value_after(sglang.commands[1].argv, "--speculative-num-steps") == "2");
  CHECK(value_after(sglang.commands[1].argv, "--cuda-graph-max-bs") == "4");
}

TEST_CASE("the launch is a JSON field of the command's own JSON") {
  const auto launch = specsim::emit_launch(specsim::load_scenario(specsim::kDefaultScenario), Engine::kVllm);
  const auto doc = nlohmann::json::parse(specsim::with_launch("{\"a\": 1}", launch));
  CHECK(doc["a"] == 1);
  CHECK(doc["launch"]["engine"] == "vllm");
  CHECK(doc["launch"]["commands"][0]["argv"][0] == "vllm");
  CHECK(doc["launch"]["script"] == launch.script);
  CHECK(doc["launch"]["schedule"].is_null());
}

TEST_CASE("a launch on another engine than the scenario's carries the memory share the prediction assumed") {
  // The default scenario is SGLang's, which keeps 1 - mem_fraction_static of each GPU for itself;
  // vLLM launched with its own default (gpu_memory_utilization 0.9) would plan another layout.
  const specsim::Scenario s = specsim::load_scenario(specsim::kDefaultScenario);
  REQUIRE_FALSE(s.engine.memory_fraction);
  const auto own = specsim::emit_launch(s, Engine::kSglang).commands.at(0).argv;
  CHECK_FALSE(has(own, "--mem-fraction-static"));  // its own engine's default is what was predicted
  const auto vllm = specsim::emit_launch(s, Engine::kVllm).commands.at(0).argv;
  const double predicted = specsim::memory_fit(s).engine_fraction;
  REQUIRE(predicted > 0.5);
  CHECK_THAT(std::stod(value_after(vllm, "--gpu-memory-utilization")), Catch::Matchers::WithinAbs(predicted, 1e-6));
}
