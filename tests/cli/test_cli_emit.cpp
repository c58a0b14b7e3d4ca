// `--emit` on the command line: predict, sweep and rank print the launch (text) or add it to their
// JSON; an engine name it does not know and a CSV request are usage errors.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli_run.hpp"

using Catch::Matchers::Contains;
using specsim::test::run;

TEST_CASE("cli: predict --emit prints the launch, and --json carries it beside the prediction", "[cli]") {
  const auto text = run({"predict", "--emit", "sglang"});
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Contains("python -m sglang.launch_server") && Contains("--speculative-num-steps 3"));
  CHECK_THAT(text.out, !Contains("tokens/s"));  // the launch alone, ready to paste
  const auto json = run({"predict", "--emit", "trtllm", "--json"});
  REQUIRE(json.code == 0);
  const auto doc = nlohmann::json::parse(json.out);
  CHECK(doc["speculative"]["tokens_per_s"].is_number());
  CHECK(doc["launch"]["engine"] == "trtllm");
  CHECK(doc["launch"]["commands"][0]["config_file"]["name"] == "extra-llm-api-options.yaml");
}

TEST_CASE("cli: --emit takes the three engine names and no CSV", "[cli]") {
  const auto engine = run({"predict", "--emit", "tgi"});
  CHECK(engine.code == specsim::cli::kExitUsage);
  CHECK_THAT(engine.err, Contains("'tgi' is not one of {vllm,sglang,trtllm}"));
  const auto csv = run({"predict", "--emit", "vllm", "--format", "csv"});
  CHECK(csv.code == specsim::cli::kExitUsage);
  CHECK_THAT(csv.err, Contains("--emit") && Contains("CSV"));
}

TEST_CASE("cli: sweep --emit gives the best setting per concurrency level, rank --emit the top pick", "[cli]") {
  const auto sweep = run({"sweep", "--scenario", "kimi-k2.5-eagle3-8x-h200-nvswitch", "--concurrency", "1,8",
                          "--vary", "speculation.num_steps=1..4", "--emit", "sglang", "--json"});
  REQUIRE(sweep.code == 0);
  const auto doc = nlohmann::json::parse(sweep.out);
  REQUIRE(doc["launch"]["commands"].size() == 2);  // SGLang has no schedule: a command per level
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& level = doc["concurrency"][i];
    const auto& command = doc["launch"]["commands"][i];
    CHECK(command["concurrency"] == level["concurrency"]);
    // The level's best draft depth is the command's (or no speculation where plain decoding wins).
    const std::string line = command["command"];
    if (level["pays"].get<bool>()) {
      CHECK_THAT(line, Contains("--speculative-num-steps " + level["best"]["set"]["speculation.num_steps"].get<std::string>()));
    } else {
      CHECK_THAT(line, !Contains("--speculative-algorithm"));
    }
  }
  const auto rank = run({"rank", "--emit", "vllm", "--path-steps", "0"});
  REQUIRE(rank.code == 0);
  CHECK_THAT(rank.out, Contains("vllm serve") && Contains("--speculative-config"));
}
