// `init --from-command` and `--env`: a launch line and its environment read back into a scenario.
// What `--emit` writes for a shipped scenario reads back as the same draft shape and parallelism;
// an environment file reads the same in its three forms; the home case's sitecustomize.py
// (NCCL_ALGO=Tree under CUDA graphs) comes out flagged; bad input is an error that says where.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "specsim/cycle.hpp"
#include "specsim/emit.hpp"
#include "specsim/error.hpp"
#include "specsim/launch_checks.hpp"
#include "specsim/launch_command.hpp"
#include "specsim/load.hpp"
#include "specsim/scenario_writer.hpp"

using Catch::Matchers::Contains;
using specsim::Engine;

namespace {

using specsim::test::shipped_scenarios;

// The scenario `init --from-command` writes for `text` on `topology`, loaded.
specsim::Scenario scenario_from(const std::string& text, const std::string& topology, int batch = 1) {
  specsim::ScenarioInit init;
  init.topology = topology;
  init.tp = 0;
  init.batch = batch;
  init = specsim::init_from_launch(init, specsim::read_launch_command(text));
  return specsim::load_scenario_text(specsim::render_scenario_init(init), "<round trip>");
}

std::string error_of(const std::string& text) {
  try {
    (void)specsim::read_launch_command(text);
  } catch (const specsim::Error& e) {
    return e.what();
  }
  return "(no error)";
}

void write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }

}  // namespace

TEST_CASE("what --emit writes for every shipped scenario reads back as the same speculation and parallelism") {
  int round_trips = 0;
  for (const auto& path : shipped_scenarios()) {
    const specsim::Scenario s = specsim::load_scenario(path.string());
    for (Engine e : {Engine::kVllm, Engine::kSglang, Engine::kTrtllm}) {
      std::optional<specsim::EmittedLaunch> launch;
      try {
        launch = specsim::emit_launch(s, e);
      } catch (const specsim::Error&) {
        continue;  // refused at --emit (test_emit.cpp lists them)
      }
      INFO(path.filename().string() << " on " << specsim::to_string(e) << ":\n" << launch->script);
      const specsim::Scenario back = scenario_from(launch->script, s.topology.name, s.batch);
      ++round_trips;
      CHECK(back.engine.name == specsim::to_string(e));
      CHECK(back.model.name == s.model.name);
      CHECK(back.draft.name == s.draft.name);
      CHECK(back.speculation.method == s.speculation.method);
      CHECK(back.speculation.shape.num_steps == s.speculation.shape.num_steps);
      CHECK(back.speculation.shape.eagle_topk == s.speculation.shape.eagle_topk);
      CHECK(back.speculation.shape.num_draft_tokens == s.speculation.shape.num_draft_tokens);
      CHECK(back.speculation.parallel_drafting == s.speculation.parallel_drafting);
      CHECK(back.parallel.tp == s.parallel.tp);
      CHECK(back.parallel.ep == s.parallel.ep);
      CHECK(back.parallel.attention_dp == s.parallel.attention_dp);
      CHECK(back.parallel.moe_a2a == s.parallel.moe_a2a);
      CHECK(back.parallel.draft_ranks() == s.parallel.draft_ranks());
      if (s.engine.decode_mode == specsim::LaunchMode::kGraph) {
        CHECK(back.engine.cuda_graph_max_batch == std::optional<int>(s.batch));  // graphs cover the batch
      } else {
        CHECK(back.engine.decode_mode == specsim::LaunchMode::kEager);
      }
      if (s.parallel.tp > 1 && s.comm.implementation == "nccl") CHECK(back.comm.implementation == "nccl");
    }
  }
  CHECK(round_trips == 42);  // as test_emit.cpp's count of launches
}

TEST_CASE("an environment file reads the same as KEY=VALUE lines, an export list and a sitecustomize.py") {
  const specsim::test::TempDir dir("specsim_env_formats");
  write(dir.path / "nccl.env", "# tuning\nNCCL_ALGO=Ring\nNCCL_PROTO=\"LL\"\n\nNCCL_BUFFSIZE=4194304\n");
  write(dir.path / "exports.sh", "export NCCL_ALGO=Ring\nexport NCCL_PROTO='LL'  # low latency\nexport NCCL_BUFFSIZE=4194304\n");
  write(dir.path / "sitecustomize.py",
        "import os\nos.environ[\"NCCL_ALGO\"] = \"Ring\"\nos.environ['NCCL_PROTO'] = 'LL'\n"
        "os.environ.setdefault(\"NCCL_BUFFSIZE\", \"4194304\")\n");
  const std::vector<std::pair<std::string, std::string>> want = {
      {"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "LL"}, {"NCCL_BUFFSIZE", "4194304"}};
  for (const char* f : {"nccl.env", "exports.sh", "sitecustomize.py"}) {
    INFO(f);
    CHECK(specsim::read_env_file((dir.path / f).string()) == want);
  }
  write(dir.path / "bad.env", "NCCL_ALGO=Ring\nthis is not an assignment\n");
  try {
    (void)specsim::read_env_file((dir.path / "bad.env").string());
    FAIL("a line that is no assignment was read");
  } catch (const specsim::Error& e) {
    CHECK(e.where().line == 2);
    CHECK_THAT(e.what(), Contains("not a KEY=VALUE"));
  }
}

TEST_CASE("NCCL variables map to comm keys and every other setting is listed as not modelled") {
  specsim::LaunchReading r = specsim::read_launch_command(
      "NCCL_MAX_NCHANNELS=4 python3 -m sglang.launch_server --model-path <path-to-kimi-k2.5> --tp 8 "
      "--speculative-algorithm EAGLE3 --speculative-draft-model-path <path-to-kimi-k2.5-eagle3> "
      "--speculative-num-steps 2 --port 30000 --trust-remote-code");
  specsim::apply_environment(r, {{"NCCL_ALGO", "Tree"}, {"NCCL_NTHREADS", "512"}, {"NCCL_P2P_LEVEL", "SYS"}}, "nccl.env");
  CHECK(r.engine == Engine::kSglang);
  CHECK(r.values.at("parallel.tp") == "8");  // --tp, the alias the SGLang docs' examples use
  CHECK(r.values.at("comm.max_channels") == "4");
  CHECK(r.values.at("comm.nccl_algo") == "tree");
  CHECK(r.origins.at("comm.nccl_algo") == "NCCL_ALGO=Tree (nccl.env)");
  const auto listed = [&](const std::string& what) {
    return std::any_of(r.unmodelled.begin(), r.unmodelled.end(), [&](const std::string& u) { return u.starts_with(what); });
  };
  CHECK(listed("--port 30000"));
  CHECK(listed("--trust-remote-code"));
  CHECK(listed("NCCL_NTHREADS=512"));
  CHECK(r.values.at("comm.nccl_p2p_level") == "sys");  // NCCL_P2P_LEVEL=SYS
  CHECK(r.unmodelled.size() == 3);
  // A level NCCL does not name is listed, not guessed.
  specsim::apply_environment(r, {{"NCCL_P2P_LEVEL", "NODE"}}, "nccl.env");
  CHECK(listed("NCCL_P2P_LEVEL=NODE"));
}

TEST_CASE("the home case's sitecustomize.py with NCCL_ALGO=Tree under CUDA graphs is flagged before launch") {
  const specsim::test::TempDir dir("specsim_home_case_env");
  // The home case ran its NCCL experiments from a sitecustomize.py; SGLang captures CUDA graphs by default.
  write(dir.path / "sitecustomize.py", "import os\nos.environ[\"NCCL_ALGO\"] = \"Tree\"\n");
  const std::string command =
      "python -m sglang.launch_server --model-path <path-to-kimi-k2.5> --tp-size 8 --speculative-algorithm EAGLE3 "
      "--speculative-draft-model-path <path-to-kimi-k2.5-eagle3> --speculative-num-steps 3 --speculative-eagle-topk 1 "
      "--speculative-num-draft-tokens 4";
  const auto out = dir.path / "home.yaml";
  const auto init = specsim::test::run({"init", "--from-command", command, "--env", (dir.path / "sitecustomize.py").string(),
                                        "--topology", "8x-rtx-pro-6000-pcie5", "-o", out.string()});
  REQUIRE(init.code == 0);
  const specsim::Scenario s = specsim::load_scenario(out.string());
  CHECK(s.comm.nccl_algo == "tree");
  const auto problems = specsim::launch_problems(s);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].fails);
  CHECK_THAT(problems[0].setting, Contains("NCCL_ALGO=Tree"));
  const auto predict = specsim::test::run({"predict", "--scenario", out.string()});
  CHECK(predict.code == 0);
  CHECK_THAT(predict.out, Contains("known to fail at launch: comm.nccl_algo = tree"));
  const auto rank = specsim::test::run({"rank", "--scenario", out.string(), "--path-steps", "0"});
  CHECK_THAT(rank.out, Contains("known to fail at launch"));
  // Without graphs (--disable-cuda-graph) the same variable is no failure.
  const auto eager = dir.path / "eager.yaml";
  REQUIRE(specsim::test::run({"init", "--from-command", command + " --disable-cuda-graph", "--env",
                              (dir.path / "sitecustomize.py").string(), "--topology", "8x-rtx-pro-6000-pcie5", "-o",
                              eager.string()}).code == 0);
  CHECK(specsim::launch_problems(specsim::load_scenario(eager.string())).empty());
}

TEST_CASE("a CUDA graph size below the batch and vLLM's custom all-reduce on sm_12x are flagged") {
  const std::string sglang =
      "python -m sglang.launch_server --model-path <path-to-kimi-k2.5> --tp-size 8 --speculative-algorithm EAGLE3 "
      "--speculative-draft-model-path <path-to-kimi-k2.5-eagle3> --speculative-num-steps 3 --cuda-graph-max-bs 4";
  const auto small_graphs = specsim::launch_problems(scenario_from(sglang, "8x-rtx-pro-6000-pcie5", 8));
  REQUIRE(small_graphs.size() == 1);
  CHECK_FALSE(small_graphs[0].fails);  // it runs, eagerly above 4 requests
  CHECK_THAT(specsim::describe(small_graphs[0]), Contains("runs slower than priced") && Contains("below the batch 8"));
  // Two RTX PRO 6000 (sm_120) over PCIe: vLLM's guards let its custom all-reduce start at TP2, and
  // it aborts in graph capture unless --disable-custom-all-reduce is passed.
  const std::string vllm = "vllm serve --model <path-to-qwen3-30b-a3b> -tp 2 --speculative-config "
                           "'{\"method\": \"eagle3\", \"model\": \"<path-to-qwen3-30b-a3b-eagle3>\", \"num_speculative_tokens\": 3}'";
  const auto custom = specsim::launch_problems(scenario_from(vllm, "2x-rtx-pro-6000-pcie5"));
  REQUIRE(custom.size() == 1);
  CHECK(custom[0].fails);
  CHECK_THAT(custom[0].fix, Contains("--disable-custom-all-reduce"));
  CHECK(specsim::launch_problems(scenario_from(vllm + " --disable-custom-all-reduce", "2x-rtx-pro-6000-pcie5")).empty());
}

TEST_CASE("vLLM's graph sizes are tokens: the largest over the k + 1 tokens a request verifies is the batch covered") {
  // 32 tokens / (3 + 1) per request = 8 requests, from either flag (the list takes its largest).
  for (const std::string sizes : {"--max-cudagraph-capture-size 32", "--cudagraph-capture-sizes 1 2 4 8 16 32"}) {
    const auto r = specsim::read_launch_command("vllm serve --model m " + sizes +
                                                " --speculative-config '{\"method\":\"eagle3\",\"num_speculative_tokens\":3}'");
    INFO(sizes);
    CHECK(r.values.at("engine.cuda_graph_max_batch") == "8");
    CHECK(r.unmodelled.empty());
  }
}

TEST_CASE("unbalanced quoting, an unknown engine and a flag without its value are errors at --from-command") {
  CHECK_THAT(error_of("vllm serve --model m --speculative-config '{\"method\": \"eagle3\"}"),
             Contains("--from-command:1:") && Contains("unterminated single quote"));
  CHECK_THAT(error_of("llama-server -m model.gguf --draft-max 8"),
             Contains("unknown engine") && Contains("llama-server") && Contains("trtllm-serve"));
  CHECK_THAT(error_of("python -m sglang.launch_server --model-path m --tp-size"),
             Contains("--tp-size: missing its value"));
  CHECK_THAT(error_of("python -m sglang.launch_server --model-path m --tp-size --speculative-num-steps 3"),
             Contains("--tp-size: missing its value") && Contains("--speculative-num-steps"));
  CHECK_THAT(error_of("python -m sglang.launch_server --model-path m --speculative-algorithm MEDUSA"),
             Contains("MEDUSA") && Contains("not a speculative method"));
  CHECK_THAT(error_of("vllm serve --model m --speculative-config '{method: eagle3}'"), Contains("not JSON"));
  // The same through the command line: exit 1, nothing written.
  const auto quoting = specsim::test::run({"init", "--from-command", "vllm serve --model 'm", "--topology", "8x-h100-nvswitch"});
  CHECK(quoting.code == 1);
  CHECK_THAT(quoting.err, Contains("unterminated single quote"));
  const auto engine = specsim::test::run({"init", "--from-command", "ollama serve", "--topology", "8x-h100-nvswitch"});
  CHECK(engine.code == 1);
  CHECK_THAT(engine.err, Contains("unknown engine"));
  const auto value = specsim::test::run({"init", "--from-command", "trtllm-serve m --tp_size", "--topology", "8x-h100-nvswitch"});
  CHECK(value.code == 1);
  CHECK_THAT(value.err, Contains("--tp_size: missing its value"));
}

TEST_CASE("a launch's weights that name no known model ask for --model") {
  const std::string command = "python -m sglang.launch_server --model-path /models/some-finetune --tp-size 1 "
                              "--speculative-algorithm EAGLE3 --speculative-draft-model-path <path-to-llama-3.1-8b-eagle3>";
  const auto r = specsim::test::run({"init", "--from-command", command, "--topology", "8x-h100-nvswitch"});
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Contains("/models/some-finetune") && Contains("pass --model NAME"));
  const auto given = specsim::test::run({"init", "--from-command", command, "--model", "llama-3.1-8b", "--topology", "8x-h100-nvswitch"});
  CHECK(given.code == 0);
  CHECK_THAT(given.out, Contains("model: llama-3.1-8b"));
  // Said, in the file and on stderr: the weights are priced as the named file's.
  CHECK_THAT(given.err, Contains("warning: not modelled: the launch's weights '/models/some-finetune' are priced as "
                                 "--model llama-3.1-8b"));
  CHECK_THAT(given.out, Contains("# - the launch's weights '/models/some-finetune' are priced as --model llama-3.1-8b"));
}

TEST_CASE("a hub id that is a known model plus a quantized build's suffix says what --model would price") {
  const std::string command = "vllm serve Qwen/Qwen3-235B-A22B-FP8 --tensor-parallel-size 8";
  const auto r = specsim::test::run({"init", "--from-command", command, "--method", "ngram", "--topology", "8x-h100-nvswitch"});
  CHECK(r.code == 1);
  // models/llm/qwen3-235b-a22b.yaml stores BF16 weights: passing it for the FP8 build would price
  // twice the bytes, so the error says so and names what prices the build's own.
  CHECK_THAT(r.err, Contains("it reads as qwen3-235b-a22b with '-fp8', a build models/llm does not hold") &&
                        Contains("qwen3-235b-a22b.yaml stores bf16 experts and bf16 dense layers") &&
                        Contains("config.json with its quantization_config") && Contains("pass --model NAME"));
  const auto given = specsim::test::run({"init", "--from-command", command, "--method", "ngram", "--model",
                                         "qwen3-235b-a22b", "--topology", "8x-h100-nvswitch"});
  CHECK(given.code == 0);
  CHECK_THAT(given.err, Contains("warning: not modelled: the launch's weights 'Qwen/Qwen3-235B-A22B-FP8' are priced as "
                                 "--model qwen3-235b-a22b: it reads as qwen3-235b-a22b with '-fp8'"));
}

TEST_CASE("a hub id that is a known model plus a tuned build's suffix reads as that model, and says so") {
  for (const std::string id : {"meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-235B-A22B-Instruct-2507"}) {
    INFO(id);
    const std::string command = "vllm serve " + id + " --tensor-parallel-size 8";
    const auto r = specsim::test::run({"init", "--from-command", command, "--method", "ngram", "--topology",
                                       "8x-h100-nvswitch"});
    REQUIRE(r.code == 0);
    const std::string known = id.find("Llama") != std::string::npos ? "llama-3.1-8b" : "qwen3-235b-a22b";
    CHECK_THAT(r.out, Contains("model: " + known));
    CHECK_THAT(r.err, Contains("note: the launch's weights '" + id + "' are read as models/llm/" + known + ".yaml"));
    CHECK_THAT(r.out, Contains("# Read as:"));
  }
  // A draft head's name is never read as a target's build.
  const std::string eagle = "vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config "
                            "'{\"method\":\"eagle3\",\"model\":\"some/Llama-3.1-8B-Instruct-head\",\"num_speculative_tokens\":3}'";
  const auto head = specsim::test::run({"init", "--from-command", eagle, "--topology", "8x-h100-nvswitch"});
  CHECK(head.code == 1);
  CHECK_THAT(head.err, Contains("the launch's draft 'some/Llama-3.1-8B-Instruct-head' is no models/llm name") &&
                           !Contains("it reads as"));
}

TEST_CASE("a plain launch without speculative flags asks for --method, and --method mtp then predicts it") {
  const std::string command = "python -m sglang.launch_server --model-path <path-to-deepseek-v3> --tp 8 --kv-cache-dtype fp8_e4m3";
  const auto r = specsim::test::run({"init", "--from-command", command, "--topology", "8x-h200-nvswitch"});
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Contains("speculation.method: the launch runs no speculative decoding") && Contains("pass --method"));
  const auto given = specsim::test::run({"init", "--from-command", command, "--method", "mtp", "--topology", "8x-h200-nvswitch"});
  CHECK(given.code == 0);
  CHECK_THAT(given.out, Contains("kv_cache_dtype: fp8") && Contains("--kv-cache-dtype fp8_e4m3"));
}

TEST_CASE("vLLM's per-family MTP method names read as mtp, as its model cards launch Qwen3.5 and Qwen3-Next") {
  // The launch the Qwen3.5/3.6 and Qwen3-Next cards give: `qwen3_next_mtp`, one of the names of
  // vLLM's MTPModelTypes; each drafts with the target's own MTP modules.
  for (const char* method : {"qwen3_next_mtp", "qwen3_5_mtp", "deepseek_mtp", "glm4_moe_mtp", "mtp"}) {
    INFO(method);
    const specsim::LaunchReading r = specsim::read_launch_command(
        std::string("vllm serve Qwen/Qwen3.5-397B-A17B --tensor-parallel-size 8 --speculative-config "
                    "'{\"method\": \"") + method + "\", \"num_speculative_tokens\": 2}'");
    CHECK(r.values.at("speculation.method") == "mtp");
    CHECK(r.values.at("speculation.num_steps") == "2");
  }
  // A name vLLM does not list is refused by name, not read as some other method.
  CHECK_THAT(error_of("vllm serve m --speculative-config '{\"method\": \"qwen3_6_mtp\"}'"), Contains("qwen3_6_mtp"));
}

TEST_CASE("python -m vllm.entrypoints.openai.api_server reads as vllm serve, the model by --model") {
  // The rtx6kpro Qwen3.5-397B page's vLLM recipe (docs/references/validation-2026-12.md#qwen35),
  // run through the docker image's python entrypoint rather than `vllm serve`.
  const std::string module =
      "NCCL_P2P_LEVEL=SYS python3 -m vllm.entrypoints.openai.api_server --model lukealonso/Qwen3.5-397B-A17B-NVFP4 "
      "--tensor-parallel-size 4 --gpu-memory-utilization 0.9 --max-num-seqs 128 "
      "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":2}'";
  const specsim::LaunchReading r = specsim::read_launch_command(module);
  CHECK(r.engine == Engine::kVllm);
  CHECK(r.model == "lukealonso/Qwen3.5-397B-A17B-NVFP4");
  CHECK(r.values.at("parallel.tp") == "4");
  CHECK(r.values.at("speculation.method") == "mtp");
  CHECK(r.values.at("comm.nccl_p2p_level") == "sys");
  // The same flags after `vllm serve <model>` read the same, and so with underscores for dashes in
  // the flags' names, which vLLM's parser takes.
  const std::string spec = R"('{"method":"qwen3_next_mtp","num_speculative_tokens":2}')";
  for (const std::string flags : {"--tensor-parallel-size 4 --gpu-memory-utilization 0.9 --max-num-seqs 128 --speculative-config ",
                                  "--tensor_parallel_size 4 --gpu_memory_utilization=0.9 --max-num-seqs 128 --speculative_config "}) {
    INFO(flags);
    const specsim::LaunchReading serve = specsim::read_launch_command(
        "NCCL_P2P_LEVEL=SYS vllm serve lukealonso/Qwen3.5-397B-A17B-NVFP4 " + flags + spec);
    CHECK(serve.values == r.values);
    CHECK(serve.model == r.model);
    CHECK(serve.unmodelled.size() == 1);  // --max-num-seqs 128
  }
  CHECK_THAT(error_of("python3 -m vllm.entrypoints.api_server --model m"), Contains("unknown engine"));
}

TEST_CASE("a Qwen3.5 checkpoint with its MTP module predicts from init, the model named after the file") {
  const specsim::test::TempDir dir("specsim_qwen3_5_init");
  const std::string scenario = (dir.path / "q35.yaml").string();
  const auto init = specsim::test::run({"init", "--model", std::string(SPECSIM_TEST_DATA_DIR) + "/valid/hf/qwen3.5-397b-a17b.config.json",
                                        "--topology", "8x-h200-nvswitch", "--engine", "vllm", "--tp", "8", "-o", scenario});
  REQUIRE(init.code == 0);
  const auto predict = specsim::test::run({"predict", "--scenario", scenario, "--accept-length", "2.6"});
  REQUIRE(predict.code == 0);
  CHECK_THAT(predict.out, Contains("qwen3.5-397b-a17b + qwen3.5-397b-a17b-mtp on 8x-h200-nvswitch"));
}

TEST_CASE("SGLang's argparse abbreviations read as their flags, an ambiguous one is the error argparse gives") {
  // The rtx6kpro Qwen3.5 recipe writes --speculative-algo; SGLang's plain argparse takes any
  // unambiguous prefix of a long option.
  const specsim::LaunchReading r = specsim::read_launch_command(
      "python3 -m sglang.launch_server --model-path m --tp 4 --speculative-algo NEXTN --speculative-num-steps 4 "
      "--speculative-eagle-topk 1 --speculative-num-draft-tokens 6");
  CHECK(r.values.at("speculation.method") == "mtp");
  CHECK_THAT(r.origins.at("speculation.method"), Contains("argparse abbreviation of --speculative-algorithm"));
  // With top-k 1 SGLang runs num_steps + 1 draft tokens whatever the launch says, and says so.
  CHECK(r.values.at("speculation.num_draft_tokens") == "5");
  REQUIRE(r.adjusted.size() == 1);
  CHECK_THAT(r.adjusted.front(), Contains("--speculative-num-draft-tokens 6") && Contains("SGLang runs 5"));
  CHECK_THAT(error_of("python3 -m sglang.launch_server --model-path m --speculative-num 3"),
             Contains("--speculative-num: an ambiguous abbreviation") && Contains("--speculative-num-steps") &&
                 Contains("--speculative-num-draft-tokens"));
  // vLLM's and TensorRT-LLM's parsers are not read this way: a prefix there is no flag specsim reads.
  const specsim::LaunchReading v = specsim::read_launch_command("vllm serve m --tensor-parallel 4");
  CHECK(v.values.count("parallel.tp") == 0);
  CHECK(std::any_of(v.unmodelled.begin(), v.unmodelled.end(), [](const std::string& u) { return u.starts_with("--tensor-parallel 4"); }));
  // A launch SGLang leaves as written has nothing adjusted.
  CHECK(specsim::read_launch_command("python3 -m sglang.launch_server --model-path m --speculative-algorithm EAGLE3 "
                                     "--speculative-draft-model-path d --speculative-num-steps 3 --speculative-eagle-topk 1 "
                                     "--speculative-num-draft-tokens 4")
            .adjusted.empty());
}

TEST_CASE("the MoE kernel backend a launch names is kept, and one the expert-kernel prior was not measured on is warned of") {
  // vLLM normalises --moe-backend to lower case with '_' (vllm/engine/arg_utils.py, KernelConfig
  // group); SGLang's --moe-runner-backend choices are spelled so already.
  const specsim::Scenario vllm = scenario_from(
      "vllm serve nvidia/Qwen3.5-397B-A17B-NVFP4 --tensor-parallel-size 4 --moe-backend FlashInfer-CUTLASS "
      "--speculative-config '{\"method\": \"qwen3_next_mtp\", \"num_speculative_tokens\": 2}'",
      "4x-rtx-pro-6000-pcie5");
  CHECK(vllm.engine.moe_backend == "flashinfer_cutlass");
  const specsim::Scenario sglang = scenario_from(
      "python -m sglang.launch_server --model-path nvidia/Qwen3.5-397B-A17B-NVFP4 --tp 4 --moe-runner-backend marlin "
      "--speculative-algorithm NEXTN --speculative-num-steps 2 --speculative-eagle-topk 1 "
      "--speculative-num-draft-tokens 3",
      "4x-rtx-pro-6000-pcie5");
  CHECK(sglang.engine.moe_backend == "marlin");
  // NVFP4 experts on sm_12x take the prior under either; only the kernel it was not measured on
  // (FlashInfer CUTLASS, models/engines/*.yaml behaviour.expert_kernel.backends) says so.
  const auto backend_warnings = [](const specsim::Scenario& s) {
    const specsim::CycleModel model(s);
    CHECK(model.calibration().expert_bandwidth_efficiency.is_prior());
    const auto& w = model.calibration().warnings;
    return std::count_if(w.begin(), w.end(), [](const std::string& x) { return x.rfind("engine.moe_backend is", 0) == 0; });
  };
  CHECK(backend_warnings(vllm) == 0);
  CHECK(backend_warnings(sglang) == 1);
}

TEST_CASE("engine.moe_backend is read as vLLM spells it: auto is the engine's choice, another spelling an error") {
  const std::string head = "schema_version: 1\nkind: scenario\nname: x\nmodel: qwen3.5-397b-a17b-nvfp4\n"
                           "topology: 4x-rtx-pro-6000-pcie5\nparallel: {tp: 4}\nspeculation: {method: mtp, num_steps: 2}\n"
                           "workload: {batch: 1, context: 1024}\nacceptance: {tokens_per_cycle: 2.5}\nengine:\n  name: vllm\n";
  CHECK(specsim::load_scenario_text(head + "  moe_backend: auto\n", "x.yaml").engine.moe_backend.empty());
  CHECK(specsim::load_scenario_text(head + "  moe_backend: b12x\n", "x.yaml").engine.moe_backend == "b12x");
  try {
    (void)specsim::load_scenario_text(head + "  moe_backend: Flashinfer-Cutlass\n", "x.yaml");
    FAIL("a backend spelled otherwise than vLLM normalises it was accepted");
  } catch (const specsim::Error& e) {
    CHECK_THAT(std::string(e.what()), Contains("x.yaml:12:") && Contains("moe_backend") && Contains("'flashinfer_cutlass'"));
  }
}

TEST_CASE("SGLANG_ENABLE_SPEC_V2 and init --spec-version pick SGLang's worker, whose per-cycle prior the file prices") {
  const std::string launch =
      "python -m sglang.launch_server --model-path openai/gpt-oss-120b --speculative-algorithm EAGLE3 "
      "--speculative-draft-model-path <path-to-gpt-oss-120b-eagle3-specforge> --speculative-num-steps 3 "
      "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --tp-size 1";
  // models/engines/sglang.yaml: v1 (the file's default) 2 ms per cycle, v2 0.9 ms (SGLang PR #11398).
  const auto v2 = scenario_from("export SGLANG_ENABLE_SPEC_V2=1\n" + launch, "8x-h100-nvswitch");
  CHECK(v2.engine.spec_version == "v2");
  CHECK(v2.host.spec_extra_per_cycle_s == Approx(0.9e-3));
  const auto v1 = scenario_from("SGLANG_ENABLE_SPEC_V2=false " + launch, "8x-h100-nvswitch");
  CHECK(v1.engine.spec_version == "v1");
  CHECK(v1.host.spec_extra_per_cycle_s == Approx(2e-3));
  // --emit writes the variable back, and the line it writes reads as the same version.
  const auto emitted = specsim::emit_launch(v2, specsim::Engine::kSglang);
  CHECK_THAT(emitted.script, Contains("export SGLANG_ENABLE_SPEC_V2=1"));
  CHECK(specsim::read_launch_command(emitted.script).values.at("engine.spec_version") == "v2");
  // On another engine's launch the variable is listed, not applied.
  specsim::LaunchReading vllm = specsim::read_launch_command("SGLANG_ENABLE_SPEC_V2=1 vllm serve openai/gpt-oss-120b");
  CHECK(vllm.values.count("engine.spec_version") == 0);
  REQUIRE(vllm.unmodelled.size() == 1);
  CHECK_THAT(vllm.unmodelled[0], Contains("SGLANG_ENABLE_SPEC_V2=1") && Contains("an SGLang setting on a vllm launch"));

  // init: --spec-version writes the key; unstated, a comment names the default it takes and the
  // file loads as v1; on an engine whose file prices no versions the option is refused.
  const specsim::test::TempDir dir("specsim_spec_version_init");
  const std::vector<std::string> args = {"init", "--model", "gpt-oss-120b", "--draft", "gpt-oss-120b-eagle3-specforge",
                                         "--topology", "8x-h100-nvswitch", "--tp", "1"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = args;
    a.insert(a.end(), extra.begin(), extra.end());
    return specsim::test::run(a);
  };
  const auto stated = with({"--engine", "sglang", "--spec-version", "v2", "-o", (dir.path / "v2.yaml").string()});
  REQUIRE(stated.code == 0);
  CHECK(specsim::load_scenario((dir.path / "v2.yaml").string()).engine.spec_version == "v2");
  const auto unstated = with({"--engine", "sglang"});
  REQUIRE(unstated.code == 0);
  CHECK_THAT(unstated.out, Contains("spec_version: not stated, so the engine file's default v1"));
  CHECK(specsim::load_scenario_text(unstated.out, "<init>").host.spec_extra_per_cycle_s == Approx(2e-3));
  const auto refused = with({"--engine", "vllm", "--spec-version", "v2"});
  CHECK(refused.code != 0);
  CHECK_THAT(refused.err, Contains("--spec-version") && Contains("models/engines/vllm.yaml prices no speculative worker versions"));
  const auto unknown = with({"--engine", "sglang", "--spec-version", "v3"});
  CHECK(unknown.code != 0);
  CHECK_THAT(unknown.err, Contains("--spec-version"));
}
