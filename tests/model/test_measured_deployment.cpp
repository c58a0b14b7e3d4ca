// Measurements belong to the deployment they were taken on (docs/model.md, "Measurements of another
// deployment"): another target model keeps only what the engine and the box explain, says so in
// text and JSON, and the held-out speculative rate is compared only with its own deployment.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>

#include "cli_run.hpp"
#include "specsim/load.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using specsim::test::run;

namespace {

// The default scenario's text with `edit` applied to each line.
std::string home_text(const std::function<std::string(const std::string&)>& edit) {
  std::ifstream in(specsim::DataDir().resolve(specsim::DataKind::kScenario, specsim::kDefaultScenario));
  std::string out;
  for (std::string line; std::getline(in, line);) out += edit(line) + "\n";
  return out;
}

std::string llama_target(const std::string& line) {
  if (line.starts_with("model:")) return "model: llama-3.3-70b";
  if (line.starts_with("draft:")) return "draft: llama-3.3-70b-eagle3";
  return line;
}

const std::vector<std::string> kSwap = {"--set", "model=llama-3.3-70b", "--set", "draft=llama-3.3-70b-eagle3"};

}  // namespace

TEST_CASE("measured deployment: a draft that does not fit the swapped model is an error", "[measured]") {
  // DeepSeek-V3's vocabulary is 129,280 tokens; the Kimi draft's is Kimi's 163,840.
  const auto r = run({"predict", "--set", "model=deepseek-v3"});
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Contains("draft: 'kimi-k2.5-eagle3' (built for kimi-k2.5) does not fit the model 'deepseek-v3': vocab_size"));
}

TEST_CASE("measured deployment: another target keeps the box's values, drops the routing skew, says which", "[measured]") {
  std::vector<std::string> args = {"predict", "--json"};
  args.insert(args.end(), kSwap.begin(), kSwap.end());
  const auto r = run(args);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  // The routing skew was fitted to Kimi's verify compute: Llama-3.3-70B is dense, and any MoE has its
  // own router, so the prior (uniform) comes back.
  CHECK(j["calibration"]["routing_skew"]["value"] == 1.0);
  CHECK_THAT(j["calibration"]["routing_skew"]["origin"].get<std::string>(),
             StartsWith("prior: 1 (uniform routing; the skew calibrated on kimi-k2.5"));
  // What the engine and box explain carries, and the warning names it.
  CHECK_THAT(j["calibration"]["eager_overhead_per_op_s"]["origin"].get<std::string>(), StartsWith("calibrated"));
  CHECK_THAT(j["calibration"]["host_decode_s"]["origin"].get<std::string>(), StartsWith("calibrated"));
  bool warned = false;
  for (const auto& w : j["calibration"]["warnings"]) {
    warned = warned || w.get<std::string>() ==
                           "the measurements were taken on kimi-k2.5, not llama-3.3-70b: calibrated there; its eager "
                           "all-reduce overhead and host time per plain step carried to llama-3.3-70b; its routing "
                           "skew is dropped (prior 1)";
  }
  CHECK(warned);
  // Text: the same warning, and no comparison with Kimi's held-out 60 tok/s.
  std::vector<std::string> text_args = {"predict"};
  text_args.insert(text_args.end(), kSwap.begin(), kSwap.end());
  const auto t = run(text_args);
  REQUIRE(t.code == 0);
  CHECK_THAT(t.out, Contains("warning: the measurements were taken on kimi-k2.5, not llama-3.3-70b"));
  CHECK_THAT(t.out, !Contains("prediction is"));
}

TEST_CASE("measured deployment: measurements.model in a file calibrates on that model and hides the comparison", "[measured]") {
  specsim::test::TempDir dir("specsim-measured-model");
  // The file predicts Llama-3.3-70B on the home box with the measurements taken on Kimi-K2.5.
  const auto other = dir.path / "other.yaml";
  {
    std::ofstream(other) << home_text([](const std::string& line) {
      if (line.starts_with("measurements:")) return line + "\n  model: kimi-k2.5";
      return llama_target(line);
    });
  }
  const auto r = run({"predict", "--scenario", other.string()});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("warning: the measurements were taken on kimi-k2.5, not llama-3.3-70b"));
  CHECK_THAT(r.out, Contains("measured speculative 60.0 tok/s was measured with kimi-k2.5 as the target, not "
                             "llama-3.3-70b: no comparison"));
  // The same prediction as the --set what-if: one rule, two ways to state it.
  std::vector<std::string> set_args = {"predict", "--json"};
  set_args.insert(set_args.end(), kSwap.begin(), kSwap.end());
  const auto via_set = nlohmann::json::parse(run(set_args).out);
  const auto via_file = nlohmann::json::parse(run({"predict", "--scenario", other.string(), "--json"}).out);
  CHECK(via_file["speculative"]["tokens_per_s"] == via_set["speculative"]["tokens_per_s"]);
  CHECK(via_file["calibration"] == via_set["calibration"]);

  // measurements.model naming the scenario's own model changes nothing: the comparison stays.
  const auto same = dir.path / "same.yaml";
  {
    std::ofstream(same) << home_text([](const std::string& line) {
      return line.starts_with("measurements:") ? line + "\n  model: kimi-k2.5" : line;
    });
  }
  const auto s = run({"predict", "--scenario", same.string(), "--accept", "0.747"});
  REQUIRE(s.code == 0);
  CHECK_THAT(s.out, Contains("measured speculative (held out, not an input): 60.0 tok/s; prediction is"));
  CHECK_THAT(s.out, !Contains("measurements were taken on"));

  // An unknown measured model names the key.
  const auto bad = dir.path / "bad.yaml";
  {
    std::ofstream(bad) << home_text([](const std::string& line) {
      return line.starts_with("measurements:") ? line + "\n  model: kimi-k9" : line;
    });
  }
  const auto b = run({"predict", "--scenario", bad.string()});
  CHECK(b.code == 1);
  CHECK_THAT(b.err, Contains("measurements.model: unknown model 'kimi-k9'"));
}

TEST_CASE("measured deployment: measurements on another box hide the comparison and say where", "[measured]") {
  specsim::test::TempDir dir("specsim-measured-box");
  // The file moved to the 2-socket layout; its measurements.topology still names the measured box.
  const auto moved = dir.path / "moved.yaml";
  {
    std::ofstream(moved) << home_text([](const std::string& line) {
      if (line.starts_with("topology:")) return std::string("topology: 8x-rtx-pro-6000-pcie5-2socket");
      return line;
    });
  }
  const auto r = run({"predict", "--scenario", moved.string()});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("warning: calibrated on the measured box 8x-rtx-pro-6000-pcie5"));
  CHECK_THAT(r.out, Contains("measured speculative 60.0 tok/s was measured on 8x-rtx-pro-6000-pcie5 "
                             "(rtx-pro-6000-server), not 8x-rtx-pro-6000-pcie5-2socket (rtx-pro-6000-server): no comparison"));
}
