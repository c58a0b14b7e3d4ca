// The corpus's fit and check sets (validation/split.yaml, docs/validation.md#fit-and-check-sets):
// what the split file may say, which rows are scored and in which set, and that the model error a
// band draws never comes from the check set.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "cli_run.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/validate_corpus.hpp"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

const std::string kRows = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/validation";
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

const std::string kSplit = R"(schema_version: 1
kind: validation_split
rule: "by hand"
salt: none
sources:
  run-a:
    set: fit
  run-b:
    set: check
)";

// The test corpus copied to a temporary folder (one per process: ctest runs test cases side by side)
// with `split` as its split.yaml ("" for none).
struct Corpus {
  specsim::test::TempDir dir;
  explicit Corpus(const std::string& split, const std::string& tag = "specsim-split") : dir(tag + "-" + std::to_string(::getpid())) {
    fs::copy(kRows, dir.path, fs::copy_options::recursive);
    fs::remove(dir.path / "split.yaml");
    if (!split.empty()) std::ofstream(dir.path / "split.yaml") << split;
  }
  std::string file(const std::string& rel) const { return (dir.path / rel).string(); }
  specsim::ValidationReport validate() const {
    return specsim::validate_corpus(specsim::find_validation_rows({dir.path.string()}, kRoot), {}, kRoot);
  }
};

const specsim::ErrorSummary& group(const specsim::ValidationReport& r, const std::string& name) {
  const auto it = std::find_if(r.summaries.begin(), r.summaries.end(), [&](const auto& s) { return s.group == name; });
  REQUIRE(it != r.summaries.end());
  return *it;
}

}  // namespace

TEST_CASE("split: the repository's split.yaml is frozen, 30-50% of its rule's sources checked, every engine and link",
          "[validate][split]") {
  const auto split = specsim::load_validation_split(specsim::validation_split_file(kRoot));
  // The rule's share holds for the sources it placed; those found after the freeze (`added:`) are all
  // check sources, however many (docs/validation.md#fit-and-check-sets).
  int check = 0, fit = 0;
  for (const auto& [source, set] : split.set_of) {
    if (split.added.count(source)) {
      CHECK(set == "check");
      continue;
    }
    (set == "check" ? check : fit) += 1;
  }
  CHECK(!split.added.empty());
  CHECK(check >= 0.3 * (check + fit));
  CHECK(check <= 0.5 * (check + fit));
  // The rows' sets, engines and links: the check set holds every engine and interconnect that the
  // scored rows hold, and the files are not rows themselves.
  const auto report = specsim::validate_corpus(specsim::find_validation_rows({}, kRoot), {}, kRoot);
  std::set<std::string> engines, links, check_engines, check_links;
  for (const auto& r : report.rows) {
    CHECK(r.file.find("split.yaml") == std::string::npos);
    if (!r.scored()) {
      CHECK(split.not_scored.count(r.source.source) == 1);
      continue;
    }
    INFO(r.name);
    REQUIRE(split.set_of.count(r.source.source) == 1);
    CHECK(r.set == split.set_of.at(r.source.source));
    engines.insert(r.engine);
    links.insert(r.interconnect);
    if (r.set == "check") {
      check_engines.insert(r.engine);
      check_links.insert(r.interconnect);
    }
  }
  CHECK(check_engines == engines);
  CHECK(check_links == links);
  CHECK(report.split_notes.empty());
}

TEST_CASE("split: fit, check and leave-source-out are summarized apart, the model error from fit rows only",
          "[validate][split]") {
  const Corpus c(kSplit);
  const auto report = c.validate();
  CHECK(group(report, "check").rows == 1);
  CHECK(group(report, "fit").rows == 3);
  CHECK(group(report, "leave-source-out").rows == 4);
  CHECK(group(report, "check engine sglang").rows == 1);
  // The model error is the fit set's alone: three rows of one source are below kMinModelErrorRows and
  // kMinModelErrorSources, so there is none, although the corpus holds four rows of two sources.
  CHECK_FALSE(report.model_error.has_value());
  for (const auto& r : report.rows) CHECK_FALSE(r.model_error.has_value());
}

TEST_CASE("split: a source the split does not list is scored in the check set, with a note", "[validate][split]") {
  const Corpus c(specsim::test::replaced_once(kSplit, "  run-b:\n    set: check\n", ""));
  const auto report = c.validate();
  const auto b = std::find_if(report.rows.begin(), report.rows.end(), [](const auto& r) { return r.name == "b-chain3"; });
  REQUIRE(b != report.rows.end());
  CHECK(b->set == "check");
  REQUIRE(report.split_notes.size() == 1);
  CHECK_THAT(report.split_notes[0], Contains("'run-b' is not in") && Contains("check set"));
  // No split file above the rows: the data directory's applies, and its sources do not list run-a or
  // run-b, so both are new sources, scored in the check set.
  const Corpus bare("");
  const auto unsplit = bare.validate();
  CHECK(unsplit.split_file == "validation/split.yaml");
  for (const auto& r : unsplit.rows) CHECK(r.set == "check");
  CHECK(unsplit.split_notes.size() == 2);
}

TEST_CASE("split: rows whose measurement is an input are reported apart, never scored", "[validate][split]") {
  const Corpus c(kSplit);
  // held_out false: the measured speculative rate calibrates the row, which then scores +0.0%.
  const std::string b = c.file("run-b/b-chain3.yaml");
  std::ofstream(b, std::ios::trunc) << specsim::test::replaced_once(specsim::test::read_text(kRows + "/run-b/b-chain3.yaml"),
                                                                    "held_out: true", "held_out: false");
  // tau derived from the row's own speculative timing: scored, it would predict what it was read from.
  const std::string a = c.file("run-a/a-chain3.yaml");
  std::ofstream(a, std::ios::trunc) << specsim::test::replaced_once(
      specsim::test::read_text(kRows + "/run-a/a-chain3.yaml"), "  source: run-a\n",
      "  source: run-a\n  inputs_from_speculative_run: \"tau = mean ITL / mean TPOT of this run\"\n");
  const auto report = c.validate();
  int apart = 0;
  for (const auto& r : report.rows) {
    if (r.name == "b-chain3" || r.name == "a-chain3") {
      CHECK_FALSE(r.scored());
      CHECK(r.set.empty());
      ++apart;
    }
  }
  CHECK(apart == 2);
  REQUIRE(report.not_scored);
  CHECK(report.not_scored->rows == 2);
  CHECK(group(report, "leave-source-out").rows == 2);
  CHECK(group(report, "check").rows == 0);
  const auto text = specsim::test::run({"validate", c.dir.path.string()});
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Contains("not scored: 1 row of run-b: measurements.speculative.held_out is false") &&
                           Contains("not scored: 1 row of run-a: inputs from its own speculative run"));
}

TEST_CASE("split: a bad split file is refused by file and key", "[validate][split]") {
  const auto refused = [](const std::string& text, const std::string& key, const std::string& why) {
    const Corpus c(text);
    const std::string f = c.file("split.yaml");
    CHECK_THROWS_WITH(c.validate(), Contains(f) && Contains(key) && Contains(why));
  };
  refused(specsim::test::replaced_once(kSplit, "set: fit", "set: train"), "set", "fit");
  refused(kSplit + "added:\n  run-c:\n    set: fit\n", "set", "goes to the check set");
  refused(kSplit + "not_scored: [run-a]\n", "not_scored", "also in a set");
  refused(kSplit + "added:\n  run-a:\n    set: check\n", "run-a", "twice");
  refused(specsim::test::replaced_once(kSplit, "salt: none\n", ""), "salt", "");
  refused(kSplit + "seed: 3\n", "seed", "");
  // Rows under two corpora with different split files: which one holds is not guessed.
  const Corpus one(kSplit, "specsim-split-one"), two(kSplit, "specsim-split-two");
  fs::remove_all(one.dir.path / "run-b");  // distinct rows: names are unique across the corpus
  fs::remove_all(two.dir.path / "run-a");
  CHECK_THROWS_WITH(specsim::validate_corpus(specsim::find_validation_rows({one.dir.path.string(), two.dir.path.string()},
                                                                          kRoot),
                                             {}, kRoot),
                    Contains("2 split files") && Contains("--split"));
}
