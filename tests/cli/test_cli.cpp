#include <catch2/catch.hpp>

#include <filesystem>

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "cli.hpp"
#include "cli_run.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace fs = std::filesystem;

namespace {
using specsim::test::Result;
using specsim::test::run;
}  // namespace

TEST_CASE("cli: predict --json carries the contract keys", "[cli]") {
  const auto r = run({"predict", "--accept", "0.747", "--json"});
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"tokens_per_s", "step_s"}) CHECK(j["baseline"].contains(key));
  for (const char* key : {"tokens_per_s", "cycle_s", "tokens_per_cycle", "draft_s", "verify_s", "verify_compute_s",
                          "verify_comm_s", "verify_allreduce_count"}) {
    INFO(key);
    CHECK(j["speculative"].contains(key));
  }
  CHECK(j["speculative"]["verify_allreduce_count"] == 122);
  CHECK_THAT(j["speedup"].get<double>(),
             WithinRel(j["speculative"]["tokens_per_s"].get<double>() / j["baseline"]["tokens_per_s"].get<double>(), 1e-12));
}

TEST_CASE("cli: predict text shows both columns and the break-even", "[cli]") {
  const auto r = run({"predict", "--accept", "0.747"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("baseline") && Contains("speculative") && Contains("break-even") && Contains("dominant"));
}

TEST_CASE("cli: acceptance forms and patches", "[cli]") {
  const auto per = run({"predict", "--accept-per-position", "0.8,0.7,0.6", "--json"});
  REQUIRE(per.code == 0);
  // tau = 1 + 0.8 + 0.8*0.7 + 0.8*0.7*0.6 = 2.696
  CHECK_THAT(nlohmann::json::parse(per.out)["speculative"]["tokens_per_cycle"].get<double>(), WithinRel(2.696, 1e-9));
  const auto len = run({"predict", "--accept-length", "2.4", "--json"});
  REQUIRE(len.code == 0);
  CHECK(nlohmann::json::parse(len.out)["speculative"]["tokens_per_cycle"].get<double>() == 2.4);
  const auto set = run({"predict", "--set", "speculation.num_steps=2", "--json"});
  REQUIRE(set.code == 0);
  CHECK(nlohmann::json::parse(set.out)["speculative"]["drafts"].size() == 2);
}

// One vLLM V1 SpecDecoding line (a public server log, vLLM's loggers.py format) states the same
// acceptance three ways: "Mean acceptance length: 3.07, ... Accepted: 141 tokens, Drafted: 204
// tokens, Per-position acceptance rate: 0.897, 0.676, 0.500, Avg Draft acceptance rate: 69.1%"
// at K = 3. Each form has its option, and all give the same tau; --accept takes the first
// position's rate, not the average, and gives another.
TEST_CASE("cli: an engine's average and per-position rates are read as the engine means them", "[cli]") {
  const auto tau = [](const std::vector<std::string>& args) {
    std::vector<std::string> all = {"predict", "--json"};
    all.insert(all.end(), args.begin(), args.end());
    const auto r = run(all);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out)["speculative"]["tokens_per_cycle"].get<double>();
  };
  // The default scenario drafts a chain of 3 (4 draft tokens): tau = 1 + 0.691 x 3 = 3.073.
  CHECK_THAT(tau({"--draft-acceptance-rate", "0.691"}), WithinRel(3.073, 1e-9));
  // tau = 1 + 0.897 + 0.676 + 0.500 = 3.073 (unconditional rates add up).
  CHECK_THAT(tau({"--accept-unconditional", "0.897,0.676,0.5"}), WithinRel(3.073, 1e-9));
  CHECK_THAT(tau({"--accept-length", "3.07"}), WithinRel(3.07, 1e-9));
  // Read as the first position's rate, 0.691 gives a shorter cycle than the engine measured.
  CHECK(tau({"--accept", "0.691"}) < 2.6);
  // An SGLang tree of 8 draft tokens drafts 7: accepted / drafted 0.3 is tau 1 + 0.3 x 7 = 3.1.
  CHECK_THAT(tau({"--draft-acceptance-rate", "0.3", "--set", "speculation.eagle_topk=4", "--set",
                  "speculation.num_draft_tokens=8"}),
             WithinRel(3.1, 1e-9));

  // rank prices every option at the same acceptance; its --accept now replaces a measured tau too.
  const auto ranked = run({"rank", "--draft-acceptance-rate", "0.691", "--json"});
  REQUIRE(ranked.code == 0);
  const auto by_rate = run({"predict", "--draft-acceptance-rate", "0.691", "--json"});
  REQUIRE(by_rate.code == 0);
  CHECK(nlohmann::json::parse(ranked.out)["scenario_tokens_per_s"].get<double>() ==
        nlohmann::json::parse(by_rate.out)["speculative"]["tokens_per_s"].get<double>());
  // rank's "now" carries predict's band of the scenario as it stands and predict's call on it.
  const auto rj = nlohmann::json::parse(ranked.out), pj = nlohmann::json::parse(by_rate.out);
  CHECK(rj["scenario_band"]["p10_tokens_per_s"] == pj["speculative"]["band"]["p10_tokens_per_s"]);
  CHECK(rj["scenario_band"]["p90_tokens_per_s"] == pj["speculative"]["band"]["p90_tokens_per_s"]);
  CHECK(rj["scenario_call"] == pj["speculative"]["call"]);
  CHECK_THAT(run({"rank"}).out, Contains("now: speculative 54.6 tok/s (p10-p90 43.3 - 60.5), plain decoding 82.0 "
                                         "tok/s: speculation loses"));
  const std::string row = std::string(SPECSIM_SOURCE_DIR) +
                          "/validation/specforge-issue-339-2xh100/sf339-qwen3-30b-a3b-eagle3-tp2-bs1-3-1-4.yaml";
  CHECK(run({"rank", "--scenario", row, "--accept", "0.7", "--format", "csv"}).code == 0);

  const auto rising = run({"predict", "--accept-unconditional", "0.5,0.9"});
  CHECK(rising.code == specsim::cli::kExitInput);
  CHECK_THAT(rising.err, Contains("--accept-unconditional") && Contains("must not rise"));
  CHECK(rising.out.empty());
  CHECK(run({"predict", "--draft-acceptance-rate", "1.2"}).code == specsim::cli::kExitUsage);
  CHECK(run({"predict", "--draft-acceptance-rate", "0.5", "--accept-length", "2"}).code == specsim::cli::kExitUsage);
  CHECK(run({"predict", "--accept-unconditional", "0.5", "--accept", "0.5"}).code == specsim::cli::kExitUsage);
}

// --accept on a scenario without a depth profile: the rate is read per position (the point) and the
// band spans vLLM's average too, saying so in text and JSON; a measured tau has one reading.
TEST_CASE("cli: one acceptance rate shows both of its readings", "[cli][acceptance]") {
  const auto json = run({"predict", "--scenario", "llama-3.1-8b-eagle3-1x-h200", "--accept", "0.691", "--json"});
  INFO(json.err);
  REQUIRE(json.code == 0);
  const auto j = nlohmann::json::parse(json.out);
  const int k = j["speculation"]["num_steps"].get<int>();
  const auto& reading = j["speculative"]["band"]["acceptance_second_reading"];
  CHECK_THAT(reading["tokens_per_cycle"].get<double>(), WithinRel(1.0 + 0.691 * k, 1e-9));
  CHECK(reading["weight"].get<double>() == 0.5);
  CHECK(j["speculative"]["band"]["p90_tokens_per_s"].get<double>() > j["speculative"]["tokens_per_s"].get<double>());
  const auto text = run({"predict", "--scenario", "llama-3.1-8b-eagle3-1x-h200", "--accept", "0.691"});
  CHECK_THAT(text.out, Contains("the acceptance rate has two readings") && Contains("--accept-length"));
  const auto measured = run({"predict", "--scenario", "llama-3.1-8b-eagle3-1x-h200", "--accept-length", "2.5", "--json"});
  REQUIRE(measured.code == 0);
  CHECK_FALSE(nlohmann::json::parse(measured.out)["speculative"]["band"].contains("acceptance_second_reading"));
}

TEST_CASE("cli: bad input gives one line naming the option, file or key, and a non-zero exit", "[cli][invalid]") {
  const auto accept = run({"predict", "--accept", "1.5"});
  CHECK(accept.code == specsim::cli::kExitUsage);
  CHECK_THAT(accept.err, Contains("--accept"));
  CHECK(accept.out.empty());

  const auto name = run({"predict", "--scenario", "nope"});
  CHECK(name.code == specsim::cli::kExitInput);
  CHECK_THAT(name.err, Contains("unknown scenario 'nope'"));

  const auto set = run({"predict", "--set", "speculation.num_steps"});
  CHECK(set.code == specsim::cli::kExitInput);
  CHECK_THAT(set.err, Contains("--set") && Contains("expected key=value"));

  const auto unit = run({"predict", "--set", "host.spec_extra_per_cycle=3", "--json"});
  CHECK(unit.code == specsim::cli::kExitInput);
  CHECK_THAT(unit.err, Contains("host.spec_extra_per_cycle: expected a duration with unit"));
  CHECK(unit.out.empty());  // never half a JSON document

  const auto both = run({"predict", "--accept", "0.5", "--accept-length", "2"});
  CHECK(both.code == specsim::cli::kExitUsage);

  for (const auto& r : {accept, name, set, unit}) {
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("cli: check prints normalised files and rejects bad ones", "[cli]") {
  const std::string root = SPECSIM_SOURCE_DIR;
  const auto ok = run({"check", root + "/models/gpu/h200.yaml"});
  REQUIRE(ok.code == 0);
  CHECK_THAT(ok.out, Contains("memory_bandwidth: 4.8 TB/s"));
  const auto bad = run({"check", std::string(SPECSIM_TEST_DATA_DIR) + "/invalid/gpu/missing-unit.yaml"});
  CHECK(bad.code == specsim::cli::kExitInput);
  CHECK_THAT(bad.err, Contains("missing-unit.yaml:5:19: memory_bandwidth"));
}

TEST_CASE("cli: check takes shipped names as it takes files", "[cli]") {
  // `--model kimi-k2.5` and `--gpu h200` name these files; check reads the same names.
  const std::string root = SPECSIM_SOURCE_DIR;
  const auto named = run({"check", "h200", "kimi-k2.5", "8x-h200-nvswitch"});
  INFO(named.err);
  REQUIRE(named.code == 0);
  const auto by_path = run({"check", root + "/models/gpu/h200.yaml"});
  // The same normalised text after its "# FILE: ok" line.
  CHECK_THAT(named.out, Contains(by_path.out.substr(by_path.out.find('\n'))));
  CHECK_THAT(named.out, Contains("models/llm/kimi-k2.5.yaml: ok"));
  CHECK_THAT(named.out, Contains("models/topology/8x-h200-nvswitch.yaml: ok"));
  const auto typo = run({"check", "h2000"});
  CHECK(typo.code == specsim::cli::kExitInput);
  CHECK_THAT(typo.err, Contains("h2000: no such file, nor a model, GPU, topology"));
  CHECK_THAT(typo.err, Contains("did you mean 'h200'?"));
  // H20 is a GPU of its own (models/gpu/h20.yaml), not a typo.
  CHECK(run({"check", "h20"}).code == 0);
}

TEST_CASE("cli: a misspelt subcommand names the nearest one, every help page has a working example", "[cli]") {
  const auto typo = run({"predcit"});
  CHECK(typo.code == specsim::cli::kExitUsage);
  CHECK_THAT(typo.err, Contains("'predcit' is not a subcommand; did you mean 'predict'?"));
  const auto none = run({"zzzzzzzz"});
  CHECK_THAT(none.err, Contains("is not a subcommand (subcommands: predict"));
  for (const char* sub : {"predict", "check", "calibrate", "comm", "forward", "topology", "acceptance", "breakeven",
                          "rank", "sweep", "validate", "init", "priors"}) {
    INFO(sub);
    const auto help = run({sub, "--help"});
    REQUIRE(help.code == 0);
    CHECK_THAT(help.out, Contains(std::string("Usage: specsim ") + sub));
    // The example's arguments, run in-process (outputs into a temporary folder): it must work.
    const auto at = help.out.find("Example:\n  specsim ");
    REQUIRE(at != std::string::npos);
    const auto start = at + std::string("Example:\n  specsim ").size();
    std::istringstream words(help.out.substr(start, help.out.find('\n', start) - start));
    std::vector<std::string> args;
    specsim::test::TempDir dir(std::string("specsim-example-") + sub);
    for (std::string w; words >> w;) {
      const bool output = !args.empty() && args.back() == "-o";
      // An example names repository files from the repository root; ctest runs elsewhere.
      const fs::path in_repo = fs::path(SPECSIM_SOURCE_DIR) / w;
      args.push_back(output ? (dir.path / w).string() : fs::exists(in_repo) ? in_repo.string() : w);
    }
    const auto r = run(args);
    CHECK(r.code == 0);
    CHECK(r.err.empty());
  }
}

TEST_CASE("cli: predict refuses a deployment that does not fit in GPU memory", "[cli][memory]") {
  // DeepSeek-R1's shape (FP8, 671B) on 8x RTX 4090: 84.1 GB of weights per GPU against 25.8 GB
  // (tests/model/test_memory_fit.cpp works the numbers out).
  const std::string mtp = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/scenario/deepseek-v3-mtp-8x-h200.yaml";
  const auto r1 = run({"predict", "--scenario", mtp, "--set", "topology=8x-rtx-4090-pcie4-p2p"});
  CHECK(r1.code == 1);
  CHECK(r1.out.empty());
  CHECK_THAT(r1.err, Contains(mtp + ": does not fit in GPU memory: needs 92.8 GB per GPU, 67.0 GB more than the 25.8 GB "
                                    "of one rtx-4090 (TP8, batch 1, context 1024): target weights 84.1 GB"));
  // A BF16 70B dense model on one 80 GB H100: 141.1 GB of weights.
  const auto r2 = run({"predict", "--scenario", "llama-3.3-70b-eagle3-4x-h100-nvswitch", "--set", "parallel.tp=1", "--json"});
  CHECK(r2.code == 1);
  CHECK_THAT(r2.err, Contains("69.6 GB more than the 85.5 GB of one h100-sxm (TP1, batch 1, context 2048): target weights "
                              "141.1 GB") && Contains("activations 2.0 GB") && Contains("engine reserve 8.6 GB"));
}

TEST_CASE("cli: predict on two RTX 3090s over PCIe without P2P", "[cli][hardware]") {
  // models/gpu/rtx-3090.yaml: 24,576 MiB (nvidia-smi), 936 GB/s; models/topology/2x-rtx-3090-pcie4.yaml: the pair
  // meets at the host bridge (PHB) and the stock GeForce driver grants no P2P.
  const auto on = [&](const std::string& topology, const std::string& tp) {
    const auto r = run({"predict", "--scenario", "llama-3.1-8b-eagle3-1x-h200", "--set", "topology=" + topology, "--set",
                        "parallel.tp=" + tp, "--json"});
    REQUIRE(r.code == 0);
    return nlohmann::json::parse(r.out);
  };
  const auto tp2 = on("2x-rtx-3090-pcie4", "2");
  CHECK(tp2["memory"]["gpu"] == "rtx-3090");
  CHECK_THAT(tp2["memory"]["capacity_bytes"].get<double>(), WithinRel(24576.0 * 1024 * 1024, 1e-12));
  CHECK(tp2["memory"]["fits"] == true);
  CHECK_THAT(tp2["calibration"]["comm_source"].get<std::string>(),
             Contains("PHB ring: SHM through host memory (the topology has p2p off)") && Contains("uncalibrated"));
  CHECK(tp2["baseline"]["comm_s"].get<double>() > 0.0);
  // At batch 1 a Llama-3.1-8B step streams its weights: one RTX 3090 (936 GB/s) against one RTX 4090
  // (1,008 GB/s) at the same efficiency prior takes 1008 / 936 = 1.077 times as long, less the fixed
  // per-kernel costs both share (within 1%).
  const auto one_3090 = on("2x-rtx-3090-pcie4", "1");
  const auto one_4090 = on("8x-rtx-4090-pcie4-nop2p", "1");
  CHECK_THAT(one_3090["baseline"]["compute_s"].get<double>() / one_4090["baseline"]["compute_s"].get<double>(),
             WithinRel(1008.0 / 936.0, 0.01));
}

TEST_CASE("cli: predict shows the memory per GPU in text and JSON", "[cli][memory]") {
  const auto text = run({"predict", "--accept", "0.747"});
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Contains("memory per GPU (rtx-pro-6000-server, 102.6 GB)") && Contains("target weights") &&
                           Contains("target KV cache") && Contains("draft weights") && Contains("engine reserve"));
  const auto json = run({"predict", "--accept", "0.747", "--json"});
  REQUIRE(json.code == 0);
  const auto j = nlohmann::json::parse(json.out);
  CHECK(j["memory"]["fits"] == true);
  CHECK(j["memory"]["gpu"] == "rtx-pro-6000-server");
  // The call on the home case: the whole band (43.3-60.5 tok/s) lies below plain decoding's 82.0.
  CHECK_THAT(text.out, Contains("speculation loses: the p10-p90 band (43.3 - 60.5 tok/s) lies wholly below plain "
                                "decoding's 82.0 tok/s"));
  CHECK(j["speculative"]["call"] == "loses");
  CHECK_THAT(j["memory"]["capacity_bytes"].get<double>(), WithinRel(97887.0 * 1024 * 1024, 1e-12));
  double sum = 0.0;
  for (const auto& p : j["memory"]["parts"]) sum += p["bytes"].get<double>();
  CHECK_THAT(j["memory"]["used_bytes"].get<double>(), WithinRel(sum, 1e-12));
}

TEST_CASE("cli: sweep and rank mark points that do not fit in memory as infeasible", "[cli][memory]") {
  // The home scenario holds ~10 GB of KV room per GPU: 64 requests of 4096 tokens (64 x 288 MB of
  // MLA cache per GPU = 18.4 GB) do not fit; one request does.
  const auto text = run({"sweep", "--vary", "workload.batch=1,64"});
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Contains("1 of them do not fit in GPU memory") &&
                           Contains("INFEASIBLE: does not fit in GPU memory: needs"));
  const auto json = run({"sweep", "--vary", "workload.batch=1,64", "--json"});
  REQUIRE(json.code == 0);
  const auto j = nlohmann::json::parse(json.out);
  CHECK(j["infeasible"] == 1);
  REQUIRE(j["points"].size() == 2);
  CHECK(j["points"][0]["set"]["workload.batch"] == "1");
  CHECK(j["points"][1]["set"]["workload.batch"] == "64");
  CHECK(j["points"][1]["feasible"] == false);
  CHECK_THAT(j["points"][1]["infeasible"].get<std::string>(), Contains("batch 64"));
  CHECK_THAT(json.err, Contains("1 of 2 points do not fit in GPU memory"));
  const auto rank = run({"rank", "--set", "workload.batch=64"});
  REQUIRE(rank.code == 0);
  CHECK_THAT(rank.out, Contains("INFEASIBLE as it stands: does not fit in GPU memory") &&
                           Contains("INFEASIBLE: does not fit in GPU memory"));
}

namespace {
// The default scenario with its acceptance given as per-position rates: 0.747 x (1, 0.529, 0.300)
// = (0.747, 0.395, 0.224), rounded as a user would copy them. Written under `dir`.
std::string per_position_scenario(const specsim::test::TempDir& dir) {
  using specsim::test::replaced_once;
  const std::string root = SPECSIM_SOURCE_DIR;
  std::string text = specsim::test::read_text(root + "/models/scenarios/kimi-k2.5-eagle3-8x-rtx-pro-6000.yaml");
  text = replaced_once(text, "  accept: 0.747\n", "  per_position: [0.747, 0.395, 0.224]\n");
  text = replaced_once(text, "  depth_profile: [1.0, 0.529, 0.300]\n", "");
  const std::string path = (dir.path / "per-position.yaml").string();
  std::ofstream(path) << text;
  return path;
}

nlohmann::json json_of(const std::vector<std::string>& args) {
  const auto r = run(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(r.out);
}
}  // namespace

TEST_CASE("cli: --accept, the sweep key and break-even scale a per-position profile (issue 14)", "[cli][acceptance]") {
  specsim::test::TempDir dir("specsim_test_accept_scales");
  const std::string file = per_position_scenario(dir);
  // b = (0.747, 0.395, 0.224) x 0.6 / 0.747: tau = 1 + 0.6 + 0.6 x 0.317269 + 0.6 x 0.317269 x
  // 0.179920 = 1.824611 (test_acceptance.cpp); flattened to 0.6 it was 1 + 0.6 + 0.36 + 0.216 = 2.176.
  const double s = 0.6 / 0.747;
  const double tau = 1 + 0.6 + 0.6 * (0.395 * s) + 0.6 * (0.395 * s) * (0.224 * s);
  const auto predict = json_of({"predict", "--scenario", file, "--accept", "0.6", "--json"});
  CHECK_THAT(predict["speculative"]["tokens_per_cycle"].get<double>(), WithinRel(tau, 1e-12));
  // The sweep key on values is the same rule, not a switch to a constant chain.
  const auto sweep = json_of({"sweep", "--scenario", file, "--vary", "acceptance.accept=0.6", "--json"});
  REQUIRE(sweep["points"].size() == 1);
  CHECK_THAT(sweep["points"][0]["tokens_per_cycle"].get<double>(), WithinRel(tau, 1e-12));
  // Break-even at accept 1 prices b = (1, 0.395 / 0.747, 0.224 / 0.747), what --accept 1 predicts,
  // not a constant chain of 1 (tau 4).
  const auto at_one = json_of({"predict", "--scenario", file, "--accept", "1", "--json"});
  const auto breakeven = json_of({"breakeven", "--scenario", file, "--json"});
  CHECK_THAT(breakeven["tokens_per_s_at_accept_1"].get<double>(),
             WithinRel(at_one["speculative"]["tokens_per_s"].get<double>(), 1e-12));
  CHECK(at_one["speculative"]["tokens_per_cycle"].get<double>() < 3.0);
}

TEST_CASE("cli: --accept on a measured tau says it replaces it (issue 14)", "[cli][acceptance]") {
  const std::string root = SPECSIM_SOURCE_DIR;
  specsim::test::TempDir dir("specsim_test_accept_measured");
  std::string text = specsim::test::read_text(root + "/models/scenarios/kimi-k2.5-eagle3-8x-rtx-pro-6000.yaml");
  text = specsim::test::replaced_once(text, "  accept: 0.747\n", "  tokens_per_cycle: 2.5\n");
  text = specsim::test::replaced_once(text, "  depth_profile: [1.0, 0.529, 0.300]\n", "");
  const std::string file = (dir.path / "measured.yaml").string();
  std::ofstream(file) << text;
  // Leviathan's constant chain at 0.6 for k = 3: 1 + 0.6 + 0.36 + 0.216 = 2.176, and a warning.
  const auto j = json_of({"predict", "--scenario", file, "--accept", "0.6", "--json"});
  CHECK_THAT(j["speculative"]["tokens_per_cycle"].get<double>(), WithinRel(2.176, 1e-12));
  REQUIRE(j.contains("warnings"));
  CHECK_THAT(j["warnings"][0].get<std::string>(), Contains("--accept 0.600 replaces the measured acceptance.tokens_per_cycle"));
}

TEST_CASE("cli: a tree SGLang cannot draft fails at load naming the --set option (issue 14)", "[cli][invalid]") {
  // SGLang scores topk + (num_steps - 1) topk^2 = 2 + 2 x 4 = 10 candidates for (3, 2): 11 tokens
  // at most. 12 passed loading (its limit was 1 + num_steps topk^2 = 13) and then failed in the
  // acceptance with a key that does not exist and no option.
  const auto twelve = run({"predict", "--set", "speculation.eagle_topk=2", "--set", "speculation.num_draft_tokens=12"});
  CHECK(twelve.code == specsim::cli::kExitInput);
  CHECK_THAT(twelve.err, Contains("--set speculation.num_draft_tokens=12") &&
                             Contains("speculation.num_draft_tokens: = 12: must lie in [2, 1 + topk + (num_steps - 1) * topk^2] = [2, 11]"));
  const auto eleven = run({"predict", "--set", "speculation.eagle_topk=2", "--set", "speculation.num_draft_tokens=11", "--json"});
  CHECK(eleven.code == 0);
  // With another problem, both at once, each with its option.
  const auto two = run({"predict", "--set", "speculation.eagle_topk=2", "--set", "speculation.num_draft_tokens=12",
                        "--set", "workload.batch=0"});
  CHECK(two.code == specsim::cli::kExitInput);
  CHECK_THAT(two.err, Contains("2 problems") && Contains("--set workload.batch=0") &&
                          Contains("--set speculation.num_draft_tokens=12"));
}

TEST_CASE("cli: predict and sweep report every problem at once, each with its option (issue 14)", "[cli][invalid]") {
  // Three rules of three blocks: two bounds, and tp against the 64 attention heads of Kimi K2.5 and of its head.
  const auto predict = run({"predict", "--set", "speculation.num_steps=0", "--set", "workload.batch=0", "--set",
                            "parallel.tp=3"});
  CHECK(predict.code == specsim::cli::kExitInput);
  CHECK_THAT(predict.err, Contains("4 problems:") &&
                              Contains("--set speculation.num_steps=0: speculation.num_steps: = 0: must be in [1, 64]") &&
                              Contains("--set workload.batch=0: workload.batch: = 0: must be in [1, 1000000]") &&
                              Contains("--set parallel.tp=3: parallel.tp: tp = 3 on ") &&
                              Contains("tp must divide the 64 attention heads"));
  // Two malformed axis values, both named with --vary before the grid runs.
  const auto sweep = run({"sweep", "--vary", "speculation.num_steps=0,3", "--vary", "workload.batch=1,0"});
  CHECK(sweep.code == specsim::cli::kExitInput);
  CHECK_THAT(sweep.err, Contains("2 problems:") &&
                            Contains("--vary: speculation.num_steps: = 0: must be in [1, 64]") &&
                            Contains("--vary: workload.batch: = 0: must be in [1, 1000000]"));
  // A point set on the loaded scenario names every rule it breaks, at the patch: tp = 3 against the
  // 64 heads of the target and of its head (the comm tables' ranks are not checked against a
  // broken layout). A malformed value (batch 0) is refused before the grid, as above.
  const auto point = run({"sweep", "--vary", "parallel.tp=3,8", "--vary", "workload.batch=1,2"});
  CHECK(point.code == 0);
  CHECK_THAT(point.out, Contains("first invalid: parallel.tp=3 workload.batch=1: 2 problems:") &&
                            Contains("--set parallel.tp=3: parallel.tp: tp = 3 on kimi-k2.5: tp must divide the 64") &&
                            Contains("--set parallel.tp=3: parallel.tp: tp = 3 on kimi-k2.5-eagle3: tp must divide the 64"));
  const auto malformed = run({"sweep", "--vary", "parallel.tp=3,8", "--vary", "workload.batch=0,1"});
  CHECK(malformed.code == specsim::cli::kExitInput);
  CHECK_THAT(malformed.err, Contains("--vary: workload.batch: = 0: must be in [1, 1000000]"));
}

TEST_CASE("cli: --acceptance-log keeps the scenario's tree_positional (issue 14)", "[cli][acceptance]") {
  const std::string root = SPECSIM_SOURCE_DIR;
  const std::string log = root + "/tests/data/valid/logs/llamacpp_pr24536.log";
  const std::vector<std::string> tree{"--set", "speculation.eagle_topk=2", "--set", "speculation.num_draft_tokens=6",
                                      "--set", "acceptance.tree_positional=0.805,0.1"};
  // The log's a_1 = 0.805 is the tree's p_1 either way; the measured p_2 = 0.1 replaces the power
  // law's (1 - 0.805)(1 - 2^-0.5) = 0.0571. Five drafts reach the rank-2 children (0.805, 0.648,
  // 0.522, then 0.1 and 0.0805), so the kept siblings show in tau.
  std::vector<std::string> with = {"predict", "--acceptance-log", log, "--json"};
  with.insert(with.end(), tree.begin(), tree.end());
  const auto kept = json_of(with);
  std::vector<std::string> per = {"predict", "--accept-per-position", "0.805", "--json"};
  per.insert(per.end(), tree.begin(), tree.end());
  CHECK_THAT(kept["speculative"]["tokens_per_cycle"].get<double>(),
             WithinRel(json_of(per)["speculative"]["tokens_per_cycle"].get<double>(), 1e-12));
  const auto dropped = json_of({"predict", "--acceptance-log", log, "--json", "--set", "speculation.eagle_topk=2",
                                "--set", "speculation.num_draft_tokens=6"});
  CHECK(kept["speculative"]["tokens_per_cycle"].get<double>() > dropped["speculative"]["tokens_per_cycle"].get<double>());
}
