#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <sstream>

#include "cli.hpp"
#include "cli_run.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

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

TEST_CASE("cli: a misspelt subcommand names the nearest one; every help page has a working example", "[cli]") {
  const auto typo = run({"predcit"});
  CHECK(typo.code == specsim::cli::kExitUsage);
  CHECK_THAT(typo.err, Contains("'predcit' is not a subcommand; did you mean 'predict'?"));
  const auto none = run({"zzzzzzzz"});
  CHECK_THAT(none.err, Contains("is not a subcommand (subcommands: predict"));
  for (const char* sub : {"predict", "check", "calibrate", "comm", "forward", "topology", "acceptance", "breakeven",
                          "rank", "sweep", "validate", "init"}) {
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
      args.push_back(output ? (dir.path / w).string() : w);
    }
    const auto r = run(args);
    CHECK(r.code == 0);
    CHECK(r.err.empty());
  }
}
