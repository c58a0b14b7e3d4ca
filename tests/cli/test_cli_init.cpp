// `specsim init` on the command line: the file it writes passes `check` and `predict`; an existing
// file is never replaced without --force; a failed run writes nothing. Readable enum choices.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli.hpp"
#include "cli_run.hpp"

using Catch::Matchers::Contains;
using specsim::test::run;
using specsim::test::TempDir;

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::vector<std::string> kInit = {"init",     "--model",    "llama-3.3-70b", "--draft", "llama-3.3-70b-eagle3",
                                        "--topology", "4x-h100-nvswitch", "--engine", "vllm", "--tp", "4"};

}  // namespace

TEST_CASE("cli init: the file written passes check and predict", "[cli][init]") {
  TempDir dir("specsim-init-ok");
  const std::string file = (dir.path / "mine.yaml").string();
  auto args = kInit;
  args.insert(args.end(), {"-o", file});
  const auto r = run(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("wrote " + file));
  const std::string text = slurp(file);
  CHECK_THAT(text, Contains("name: mine\n"));  // the output file's stem
  CHECK_THAT(text, Contains("source: \"written by `specsim init --model llama-3.3-70b"));
  const auto check = run({"check", file});
  INFO(check.err);
  CHECK(check.code == 0);
  const auto predict = run({"predict", "--scenario", file});
  INFO(predict.err);
  CHECK(predict.code == 0);
  CHECK_THAT(predict.out, Contains("llama-3.3-70b + llama-3.3-70b-eagle3 on 4x-h100-nvswitch (h100-sxm), TP4"));
  CHECK_THAT(predict.out, Contains("[UNCALIBRATED]"));  // no all-reduce table at 4 H100 ranks
  CHECK_THAT(predict.out, !Contains("measured speculative"));
  // Without -o the scenario goes to stdout.
  const auto printed = run(kInit);
  CHECK(printed.code == 0);
  CHECK_THAT(printed.out, Contains("kind: scenario\n"));
}

// A published run as a new user has it: K, the accept length the engine printed, the plain rate of
// the same benchmark with its lengths. The command is in the file; predict reads the shape back.
TEST_CASE("cli init: a published run's shape, acceptance and benchmark lengths", "[cli][init]") {
  TempDir dir("specsim-init-published");
  const std::string file = (dir.path / "published.yaml").string();
  auto args = kInit;
  args.insert(args.end(), {"--num-steps", "2", "--accept-length", "2.4", "--plain-rate", "60tok/s", "--plain-end-to-end",
                           "--prompt-tokens", "1000", "--output-tokens", "500", "--plain-tpot", "16ms", "-o", file});
  const auto r = run(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::string text = slurp(file);
  CHECK_THAT(text, Contains("--accept-length 2.400 --plain-rate 60tok/s --plain-end-to-end --prompt-tokens 1000 "
                            "--output-tokens 500 --plain-tpot 16ms --num-steps 2`"));
  CHECK_THAT(text, Contains("tpot: 16ms"));
  const auto predict = run({"predict", "--scenario", file, "--json"});
  INFO(predict.err);
  REQUIRE(predict.code == 0);
  CHECK_THAT(predict.out, Contains("\"num_steps\": 2"));  // speculation{} carries the shape
  CHECK_THAT(predict.out, Contains("\"num_draft_tokens\": 3"));
}

TEST_CASE("cli init: what it says of an engine's defaults comes from that engine's file", "[cli][init]") {
  // vLLM's and SGLang's files give their reasons (models/engines/*.yaml `init:`); TensorRT-LLM's
  // gives none, and its scenario names no other engine.
  const auto vllm = run(kInit);
  REQUIRE(vllm.code == 0);
  CHECK_THAT(vllm.out, Contains("vLLM's default without --enforce-eager"));
  CHECK_THAT(vllm.out, Contains("vLLM V1 EagleProposer.propose"));
  CHECK_THAT(vllm.out, !Contains("SGLang"));
  auto sglang_args = kInit;
  sglang_args[8] = "sglang";
  const auto sglang = run(sglang_args);
  REQUIRE(sglang.code == 0);
  CHECK_THAT(sglang.out, Contains("SGLang's default without --disable-cuda-graph"));
  CHECK_THAT(sglang.out, Contains("SGLang's EAGLE-3 and MTP recipes run 3/1/4"));
  const auto trtllm = run({"init", "--model", "deepseek-v3", "--method", "mtp", "--topology", "8x-h200-nvswitch",
                           "--engine", "trtllm", "--tp", "8"});
  INFO(trtllm.err);
  REQUIRE(trtllm.code == 0);
  const std::string engine_part = trtllm.out.substr(trtllm.out.find("\nengine:\n"));
  CHECK_THAT(engine_part, !Contains("SGLang") && !Contains("vLLM"));
  CHECK_THAT(engine_part, Contains("models/engines/trtllm.yaml states no launch default"));
  // Without a measured plain rate the plain step's host time is the engine's plain_step_host prior,
  // as predict prices it (vllm.yaml 440 us, p10-p90 200 us to 2 ms; sglang.yaml 100 us), not 0.
  CHECK_THAT(vllm.out, Contains("the prior\n#   of models/engines/vllm.yaml, 440 us (p10-p90 200 us to 2 ms)"));
  CHECK_THAT(sglang.out, Contains("models/engines/sglang.yaml, 100 us (p10-p90 20 us to 1.1 ms)"));
  CHECK_THAT(vllm.out + sglang.out, !Contains("(prior:\n#   0)"));
}

TEST_CASE("cli init: an existing file is replaced only with --force", "[cli][init][invalid]") {
  TempDir dir("specsim-init-exists");
  const auto file = dir.path / "mine.yaml";
  { std::ofstream(file) << "my edits\n"; }
  auto args = kInit;
  args.insert(args.end(), {"-o", file.string()});
  const auto refused = run(args);
  CHECK(refused.code == specsim::cli::kExitInput);
  CHECK_THAT(refused.err, Contains("-o: " + file.string() + ": already exists; pass --force to replace it"));
  CHECK(slurp(file) == "my edits\n");
  args.push_back("--force");
  const auto forced = run(args);
  CHECK(forced.code == 0);
  CHECK_THAT(slurp(file), Contains("kind: scenario"));
}

TEST_CASE("cli init: bad input exits 1 naming the option and writes nothing", "[cli][init][invalid]") {
  TempDir dir("specsim-init-bad");
  const auto file = dir.path / "bad.yaml";
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"init", "--model", "llama-9", "--draft", "llama-3.1-8b-eagle3", "--topology", "8x-h200-nvswitch", "--tp", "1"},
       "--model: model: unknown model 'llama-9'"},
      // Llama-3.3-70B has 64 heads and 8 KV heads: TP 3 splits neither.
      {{"init", "--model", "llama-3.3-70b", "--draft", "llama-3.3-70b-eagle3", "--topology", "8x-h200-nvswitch", "--tp", "3"},
       "--tp: parallel.tp: tp = 3 on llama-3.3-70b: tp must divide the 64 attention heads"},
      {{"init", "--model", "llama-3.1-8b", "--draft", "llama-3.3-70b-eagle3", "--topology", "8x-h200-nvswitch", "--tp", "1"},
       "--draft: draft: 'llama-3.3-70b-eagle3' (built for llama-3.3-70b) does not fit the model 'llama-3.1-8b': hidden_size"},
      {{"init", "--model", "llama-3.1-8b", "--draft", "llama-3.1-8b-eagle3", "--topology", "8x-h200-nvswitch", "--tp", "1",
        "--engine", "lmdeploy"},
       "--engine: engine.name: unknown engine 'lmdeploy'"},
      // A tree needs its verified tokens; the loader would otherwise take num_steps + 1.
      {{"init", "--model", "llama-3.1-8b", "--draft", "llama-3.1-8b-eagle3", "--topology", "8x-h200-nvswitch", "--tp", "1",
        "--num-steps", "4", "--topk", "4"},
       "--num-draft-tokens: speculation.num_draft_tokens: required with a tree (top-k 4)"},
      // tau 6 from 3 steps: more than the cycle can emit, named at the acceptance option.
      {{"init", "--model", "llama-3.1-8b", "--draft", "llama-3.1-8b-eagle3", "--topology", "8x-h200-nvswitch", "--tp", "1",
        "--num-steps", "3", "--accept-length", "6"},
       "--accept-length: acceptance.tokens_per_cycle: = 6: must lie in [1, speculation.num_steps + 1] = [1, 4]"},
  };
  for (const Case& c : cases) {
    auto args = c.args;
    args.insert(args.end(), {"-o", file.string()});
    const auto r = run(args);
    INFO(r.err);
    CHECK(r.code == specsim::cli::kExitInput);
    CHECK_THAT(r.err, Contains(c.message));
    CHECK(r.out.empty());
    CHECK_FALSE(std::filesystem::exists(file));
  }
  // An output in a folder that does not exist: refused before any work, nothing left behind.
  auto args = kInit;
  args.insert(args.end(), {"-o", (dir.path / "no-such-dir" / "x.yaml").string()});
  const auto r = run(args);
  CHECK(r.code == specsim::cli::kExitInput);
  CHECK_THAT(r.err, Contains("no-such-dir"));
  CHECK(std::filesystem::is_empty(dir.path));
  // A required option left out is a usage error.
  const auto missing = run({"init", "--model", "llama-3.1-8b"});
  CHECK(missing.code == specsim::cli::kExitUsage);
  CHECK_THAT(missing.err, Contains("--topology is required"));
  // Benchmark lengths price an end-to-end rate's prefill: both, and only beside --plain-end-to-end.
  for (const auto& [extra, message] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--plain-rate", "100tok/s", "--prompt-tokens", "1000", "--output-tokens", "200"}, "--prompt-tokens requires --plain-end-to-end"},
           {{"--plain-rate", "100tok/s", "--plain-end-to-end", "--prompt-tokens", "1000"}, "--prompt-tokens requires --output-tokens"},
           {{"--plain-rate", "100tok/s", "--plain-tpot", "7ms"}, "--plain-tpot requires --plain-end-to-end"},
           {{"--num-steps", "0"}, "--num-steps"}}) {
    auto bad = kInit;
    bad.insert(bad.end(), extra.begin(), extra.end());
    const auto usage = run(bad);
    CHECK(usage.code == specsim::cli::kExitUsage);
    CHECK_THAT(usage.err, Contains(message));
  }
  // --method takes the methods init writes, and nothing else.
  const auto method = run({"init", "--model", "qwen3-8b", "--method", "medusa", "--topology", "1x-b200", "--tp", "1"});
  CHECK(method.code == specsim::cli::kExitUsage);
  CHECK_THAT(method.err, Contains("--method"));
}

TEST_CASE("cli: enum options show and check readable choices", "[cli]") {
  // forward --mode maps to LaunchMode: help and errors name the choices, not CLI11's map.
  const auto help = run({"forward", "--help"});
  CHECK_THAT(help.out, Contains("--mode MODE:{graph,eager}"));
  CHECK_THAT(help.out, !Contains("->"));
  const auto bad = run({"forward", "--model", "llama-3.1-8b", "--gpu", "h200", "--tokens", "1", "--ctx", "0",
                        "--mode", "fast"});
  CHECK(bad.code == specsim::cli::kExitUsage);
  CHECK_THAT(bad.err, Contains("--mode: 'fast' is not one of {graph,eager}"));
  // The enum's number is no longer a back door.
  const auto number = run({"forward", "--model", "llama-3.1-8b", "--gpu", "h200", "--tokens", "1", "--ctx", "0",
                           "--mode", "1"});
  CHECK(number.code == specsim::cli::kExitUsage);
  const auto eager = run({"forward", "--model", "llama-3.1-8b", "--gpu", "h200", "--tokens", "1", "--ctx", "0",
                          "--mode", "eager", "--json"});
  CHECK(eager.code == 0);
  // topology import --p2p maps on/off to a bool the same way.
  const auto topo = run({"topology", "import", "--help"});
  CHECK_THAT(topo.out, Contains("--p2p P2P:{on,off}"));
  const auto p2p = run({"topology", "import", std::string(SPECSIM_TEST_DATA_DIR) + "/valid/topo/club-3090-46-5gpu-sys-phb-node.txt",
                        "-o", "x.yaml", "--gpu", "rtx-4090", "--p2p", "yes"});
  CHECK(p2p.code == specsim::cli::kExitUsage);
  CHECK_THAT(p2p.err, Contains("'yes' is not one of {on,off}"));
}

TEST_CASE("topology import: p2p follows the GPU file unless --p2p says", "[cli][topology]") {
  // rtx-4090.yaml: p2p_supported false (no P2P on GeForce with the stock driver); h100-sxm grants it.
  TempDir dir("specsim-topology-import-p2p");
  const std::string topo = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/topo/nccl-tests-307-8x4090-pix-sys.txt";
  const auto import = [&](const std::string& gpu, std::vector<std::string> extra) {
    const std::string out = (dir.path / (gpu + ".yaml")).string();
    std::vector<std::string> args{"topology", "import", topo, "-o", out, "--gpu", gpu, "--force"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return std::make_pair(r.out, slurp(out));
  };
  const auto [geforce_report, geforce] = import("rtx-4090", {});
  CHECK_THAT(geforce_report, Contains("p2p off (from the GPU file's p2p_supported)"));
  CHECK_THAT(geforce, Contains("p2p: false"));
  const auto [patched_report, patched] = import("rtx-4090", {"--p2p", "on"});
  CHECK_THAT(patched_report, Contains("p2p on (from --p2p)"));
  CHECK_THAT(patched, Contains("p2p: true"));
  const auto [datacenter_report, datacenter] = import("h100-sxm", {});
  CHECK_THAT(datacenter, Contains("p2p: true"));
}

TEST_CASE("cli init: a bare file name in the working directory is nvidia-smi topo -m output", "[cli][init][topology]") {
  // `--topology topo.txt` has no '/' and no .yaml: it used to be looked up as a models/topology name.
  TempDir dir("specsim-init-bare-topo");
  std::filesystem::copy_file(std::string(SPECSIM_TEST_DATA_DIR) + "/valid/topo/nccl-tests-307-8x4090-pix-sys.txt",
                             dir.path / "topo.txt");
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path);
  const auto r = run({"init", "--model", "llama-3.1-8b", "--draft", "llama-3.1-8b-eagle3", "--topology", "topo.txt",
                      "--gpu", "rtx-4090", "--engine", "vllm", "--tp", "1"});
  std::filesystem::current_path(cwd);
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("imported from topo.txt (nvidia-smi topo -m)"));
  CHECK_THAT(r.out, Contains("p2p: false"));  // the GPU file's p2p_supported, as topology import does
}
