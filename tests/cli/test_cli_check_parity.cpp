// `specsim check` refuses every scenario `specsim predict` refuses, at the same file:line (issue 33):
// each damaged scenario of tests/data/invalid/scenario/, and shipped scenarios edited to break one
// rule across blocks (acceptance against the draft shape, TP against the box, method against draft).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "cli_run.hpp"

namespace fs = std::filesystem;
using specsim::test::read_text;
using specsim::test::replaced_once;
using specsim::test::run;

namespace {

// The first `path:line:col` that names `file` in an error message; "" if none.
std::string location_in(const std::string& text, const std::string& file) {
  const auto at = text.find(file + ":");
  if (at == std::string::npos) return "";
  static const std::regex kLineCol(R"(^:(\d+):(\d+))");
  std::smatch m;
  const std::string rest = text.substr(at + file.size());
  if (!std::regex_search(rest, m, kLineCol)) return "";
  return file + m[0].str();
}

// Both commands refuse `file`; where predict names a line of it, check names the same one.
void expect_same_refusal(const std::string& file) {
  INFO(file);
  const auto predicted = run({"predict", "--scenario", file});
  const auto checked = run({"check", file});
  INFO("predict: " << predicted.err);
  INFO("check: " << checked.err << checked.out);
  CHECK(predicted.code != 0);
  CHECK(checked.code != 0);
  const std::string where = location_in(predicted.err, file);
  if (!where.empty()) CHECK(checked.err.find(where) != std::string::npos);
}

const std::string kShipped = std::string(SPECSIM_SOURCE_DIR) + "/models/scenarios/llama-3.1-8b-eagle3-1x-h200.yaml";

}  // namespace

TEST_CASE("check parity: every damaged scenario is refused by check where predict refuses it", "[check][cli]") {
  int files = 0;
  for (const auto& e : fs::directory_iterator(std::string(SPECSIM_TEST_DATA_DIR) + "/invalid/scenario")) {
    if (e.path().extension() != ".yaml") continue;
    expect_same_refusal(e.path().string());
    ++files;
  }
  CHECK(files >= 50);  // the corpus holds 60; a renamed folder would make the loop vacuous
}

TEST_CASE("check parity: rules across blocks are check's as much as predict's", "[check][cli]") {
  const std::string text = read_text(kShipped);
  // Each edit breaks one rule that joins two blocks of an otherwise valid scenario.
  const std::vector<std::pair<std::string, std::string>> edits = {
      // tau 9 from a chain of 3 draft tokens: at most 4 tokens per cycle.
      {"  accept: 0.7\n", "  tokens_per_cycle: 9\n"},
      // TP 3 on one H200.
      {"  tp: 1                             # --tp", "  tp: 3                             # --tp"},
      // MTP drafts with the target's own module, not an EAGLE-3 head.
      {"  method: eagle3                    # --draft is an EAGLE-3 head", "  method: mtp"},
  };
  specsim::test::TempDir dir("specsim-check-parity");
  int n = 0;
  for (const auto& [from, to] : edits) {
    const fs::path file = dir.path / ("edit-" + std::to_string(n++) + ".yaml");
    std::ofstream(file) << replaced_once(text, from, to);
    expect_same_refusal(file.string());
  }
  // The file as shipped passes both.
  CHECK(run({"check", kShipped}).code == 0);
  CHECK(run({"predict", "--scenario", kShipped}).code == 0);
}
