// No command writes over a file it reads (issue 36): every option that names an input counts,
// --force or not, and the refused file is left as it was.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_run.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using specsim::test::read_text;
using specsim::test::run;
using specsim::test::TempDir;

namespace {

const std::string kRoot = SPECSIM_SOURCE_DIR;
const std::string kTopo = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/topo/club-3090-46-5gpu-sys-phb-node.txt";

// `args` fails naming `target` as an input, and `target` keeps `before`.
void refused(const std::vector<std::string>& args, const std::string& target, const std::string& before) {
  const auto r = run(args);
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Contains("is the input") && Contains("destroy the data it is computed from"));
  CHECK(read_text(target) == before);
}

}  // namespace

TEST_CASE("own inputs: topology import never writes over its --gpu file", "[cli][own_inputs]") {
  TempDir dir("specsim-own-inputs-topology");
  const std::string gpu = (dir.path / "g.yaml").string();
  fs::copy_file(kRoot + "/models/gpu/rtx-4090.yaml", gpu);
  const std::string before = read_text(gpu);
  refused({"topology", "import", kTopo, "--gpu", gpu, "--name", "x", "-o", gpu, "--force"}, gpu, before);
  // Named through the data directory, the resolved file is the input.
  const std::string shipped = kRoot + "/models/gpu/rtx-4090.yaml";
  refused({"topology", "import", kTopo, "--gpu", "rtx-4090", "-o", shipped, "--force"}, shipped, read_text(shipped));
}

TEST_CASE("own inputs: init never writes over its --model, --draft, --topology or --gpu", "[cli][own_inputs]") {
  TempDir dir("specsim-own-inputs-init");
  const std::string model = (dir.path / "m.yaml").string();
  fs::copy_file(kRoot + "/models/llm/llama-3.1-8b.yaml", model);
  const std::string before = read_text(model);
  refused({"init", "--model", model, "--draft", "llama-3.1-8b-eagle3", "--topology", "8x-h200-nvswitch", "--engine",
           "sglang", "--tp", "1", "-o", model, "--force"},
          model, before);
  const std::string topo = kRoot + "/models/topology/8x-h200-nvswitch.yaml";
  refused({"init", "--model", "llama-3.1-8b", "--draft", "llama-3.1-8b-eagle3", "--topology", "8x-h200-nvswitch",
           "--engine", "sglang", "--tp", "1", "-o", topo, "--force"},
          topo, read_text(topo));
}

TEST_CASE("own inputs: validate --write-model-error never replaces its baseline or a data file", "[cli][own_inputs]") {
  TempDir dir("specsim-own-inputs-validate");
  const std::string rows = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/validation";
  const auto json = run({"validate", rows, "--json"});
  REQUIRE(json.code == 0);
  const std::string baseline = (dir.path / "b.json").string();
  { std::ofstream(baseline) << json.out; }
  refused({"validate", rows, "--baseline", baseline, "--write-model-error", baseline}, baseline, json.out);
  const std::string model = kRoot + "/models/llm/llama-3.1-8b.yaml";
  refused({"validate", rows, "--write-model-error", model}, model, read_text(model));
}

TEST_CASE("options: an empty value or a seed out of range is a usage error, never a default", "[cli][options]") {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"predict", "--concurrency", ""},
           {"sweep", "--concurrency", ""},
           {"predict", "--calibrate-spec", ""},
           {"validate", "--calibrate-on", ""}}) {
    const auto r = run(args);
    INFO(args[0] << " " << args[1]);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Contains(args[1] + ": must not be empty"));
    CHECK(r.out.empty());
  }
  for (const std::string seed : {"-1", "1e23", "18446744073709551616", "0x10", ""}) {
    INFO("--seed '" << seed << "'");
    const auto r = run({"predict", "--monte-carlo", "10", "--seed", seed});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Contains("is not a seed: a whole number from 0 to 18446744073709551615"));
  }
  CHECK(run({"predict", "--monte-carlo", "10", "--seed", "18446744073709551615"}).code == 0);
}

TEST_CASE("rank: launches 0 is refused, --path-steps 0 says no plan was asked for", "[cli][rank]") {
  TempDir dir("specsim-rank-launches");
  const std::string catalogue = (dir.path / "c.yaml").string();
  std::ofstream(catalogue) << specsim::test::replaced_once(
      read_text(kRoot + "/models/interventions/any-box.yaml"), "effort: {launches: 1,", "effort: {launches: 0,");
  const auto zero = run({"rank", "--priorities", catalogue});
  CHECK(zero.code == 1);
  CHECK_THAT(zero.err, Contains(catalogue) && Contains("launches: must be > 0"));
  const auto no_plan = run({"rank", "--path-steps", "0"});
  REQUIRE(no_plan.code == 0);
  CHECK_THAT(no_plan.out, Contains("not asked for (--path-steps 0)"));
  CHECK_THAT(no_plan.out, !Contains("nothing in the catalogue gains"));
}

TEST_CASE("check: every file is checked, a bad one among good ones fails the command at the end", "[cli][check]") {
  const std::string bad = std::string(SPECSIM_TEST_DATA_DIR) + "/invalid/gpu/zero-bandwidth.yaml";
  const auto r = run({"check", kRoot + "/models/gpu/h200.yaml", bad, kRoot + "/models/gpu/rtx-4090.yaml"});
  CHECK(r.code == 1);
  CHECK_THAT(r.out, Contains("h200.yaml: ok") && Contains("rtx-4090.yaml: ok"));
  CHECK_THAT(r.err, Contains(bad + ":6:19: memory_bandwidth") && Contains("1 of 3 files failed the check"));
}

TEST_CASE("inputs: a device is read up to a cap, a key both set and varied is refused", "[cli][inputs]") {
  const auto zero = run({"predict", "--scenario", "/dev/zero"});
  CHECK(zero.code == 1);
  CHECK_THAT(zero.err, Contains("/dev/zero: is larger than 64 MiB"));
  const auto both = run({"sweep", "--set", "speculation.num_steps=2", "--vary", "speculation.num_steps=1..3"});
  CHECK(both.code == 2);
  CHECK_THAT(both.err, Contains("'speculation.num_steps' is also varied"));
  CHECK(both.out.empty());
}

TEST_CASE("nvlink: a card without NVLink is refused on a box wired by NVLink, at import and at load", "[cli][nvlink]") {
  TempDir dir("specsim-nvlink-geforce");
  const std::string out = (dir.path / "x.yaml").string();
  const auto import = run({"topology", "import", std::string(SPECSIM_TEST_DATA_DIR) + "/valid/topo/nccl-1453-8x-nv18-nvswitch.txt",
                           "--gpu", "rtx-4090", "--name", "x", "-o", out});
  CHECK(import.code == 1);
  CHECK_THAT(import.err, Contains("rtx-4090.yaml has no NVLink") && Contains("shows NV# links"));
  CHECK_FALSE(fs::exists(out));
  const auto predict = run({"predict", "--scenario",
                            kRoot + "/validation/angelslim-issue-163-4xh100/as163-qwen3-30b-a3b-eagle3-tp4-bs1-3-2-8.yaml",
                            "--set", "gpu=rtx-4090"});
  CHECK(predict.code == 1);
  CHECK_THAT(predict.err, Contains("--set gpu=rtx-4090") && Contains("'rtx-4090' has no NVLink") &&
                              Contains("links its GPUs by NVLink"));
  CHECK(predict.out.empty());
}

TEST_CASE("predict: a speedup above the tokens per cycle says why, in text and JSON", "[cli][speedup]") {
  const std::vector<std::string> eager_plain{"predict", "--set", "engine.decode_mode=eager", "--set",
                                             "engine.verify_mode=graph", "--set", "engine.draft_mode=graph"};
  const auto text = run(eager_plain);
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Contains("is above the") && Contains("the plain step runs eager (engine.decode_mode)"));
  auto json_args = eager_plain;
  json_args.push_back("--json");
  const auto j = nlohmann::json::parse(run(json_args).out);
  REQUIRE(j["speedup"].get<double>() > j["speculative"]["tokens_per_cycle"].get<double>());
  CHECK_THAT(j["speedup_above_tau"].get<std::string>(), Contains("verify replays a CUDA graph"));
  // The shipped scenario's speedup is below its tokens per cycle: no such note.
  const auto plain = nlohmann::json::parse(run({"predict", "--json"}).out);
  CHECK_FALSE(plain.contains("speedup_above_tau"));
}

TEST_CASE("predict: an acceptance that is a rate and a decay is labelled an assumption, a measured tau is not",
          "[cli][acceptance]") {
  const auto home = run({"predict", "--accept", "0.747"});
  REQUIRE(home.code == 0);
  CHECK_THAT(home.out, Contains("acceptance is an assumption (a first-position rate and a decay profile"));
  const auto tau = run({"predict", "--accept-length", "2.1"});
  REQUIRE(tau.code == 0);
  CHECK_THAT(tau.out, !Contains("acceptance is an assumption"));
}
