// README's and docs' example outputs are what the binary prints: every fenced block that starts
// with `$ specsim ARGS` is run in-process and compared line by line with the rest of the block. A
// line `...` in the block stands for any number of output lines (to show the head and tail of a
// long table), so examples cannot go stale again.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"

namespace {

struct Example {
  std::string file;
  int line = 0;  // of the `$ specsim` line
  std::vector<std::string> args;
  std::vector<std::string> expected;
};

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<Example> examples(const std::string& file) {
  std::ifstream in(std::string(SPECSIM_SOURCE_DIR) + "/" + file);
  REQUIRE(in.good());
  std::vector<Example> out;
  std::string line;
  int n = 0;
  bool fenced = false;
  Example* open = nullptr;
  while (std::getline(in, line)) {
    ++n;
    if (line.rfind("```", 0) == 0) {
      fenced = !fenced;
      open = nullptr;
      continue;
    }
    if (!fenced) continue;
    if (line.rfind("$ specsim ", 0) == 0) {
      Example e{file, n, {}, {}};
      std::istringstream words(line.substr(10));
      for (std::string w; words >> w;) e.args.push_back(w);
      out.push_back(e);
      open = &out.back();
    } else if (open) {
      open->expected.push_back(line);
    }
  }
  return out;
}

// Whether `got` matches `want`, where a `...` line in `want` matches any run of lines.
bool matches(const std::vector<std::string>& want, std::size_t w, const std::vector<std::string>& got, std::size_t g) {
  if (w == want.size()) return g == got.size();
  if (want[w] == "...") {
    for (std::size_t k = g; k <= got.size(); ++k) {
      if (matches(want, w + 1, got, k)) return true;
    }
    return false;
  }
  return g < got.size() && want[w] == got[g] && matches(want, w + 1, got, g + 1);
}

}  // namespace

TEST_CASE("readme: every `$ specsim` example prints what the binary prints", "[readme]") {
  int checked = 0;
  for (const char* file : {"README.md", "docs/validation.md"}) {
    for (const auto& e : examples(file)) {
      INFO(e.file << ":" << e.line << ": specsim " << [&] {
        std::string s;
        for (const auto& a : e.args) s += a + " ";
        return s;
      }());
      const auto r = specsim::test::run(e.args);
      REQUIRE(r.code == 0);
      const auto got = split_lines(r.out);
      CHECK(matches(e.expected, 0, got, 0));
      if (!matches(e.expected, 0, got, 0)) {
        // Show the first line that differs, to make a stale example quick to mend.
        for (std::size_t i = 0; i < std::min(e.expected.size(), got.size()); ++i) {
          if (e.expected[i] == "...") break;
          if (e.expected[i] != got[i]) {
            UNSCOPED_INFO("first difference at block line " << i + 1 << ":\n  readme: " << e.expected[i]
                                                            << "\n  binary: " << got[i]);
            break;
          }
        }
      }
      ++checked;
    }
  }
  CHECK(checked >= 3);  // predict, rank and validate in README
}

TEST_CASE("readme: the held-out error the prose gives is the one the first example prints", "[readme]") {
  // The first example ends "prediction is -5.4%" (against the held-out 60 tok/s); the sentence after
  // it says the same in words ("lands 5.4% below it"). scripts/update_examples.py writes both.
  const std::vector<Example> all = examples("README.md");
  REQUIRE(!all.empty());
  std::string printed;
  for (const auto& l : all.front().expected) {
    if (const auto at = l.find("prediction is "); at != std::string::npos) printed = l.substr(at + 14);
  }
  REQUIRE(!printed.empty());
  const double error_percent = std::stod(printed);  // "-5.4%" -> -5.4
  std::ifstream in(std::string(SPECSIM_SOURCE_DIR) + "/README.md");
  std::stringstream text;
  text << in.rdbuf();
  std::smatch m;
  const std::string readme = text.str();
  REQUIRE(std::regex_search(readme, m, std::regex(R"(prediction lands ([0-9.]+)% (below|above) it)")));
  char want[32];
  std::snprintf(want, sizeof want, "%.1f", std::abs(error_percent));
  CHECK(m[1].str() == want);
  CHECK(m[2].str() == (error_percent < 0 ? "below" : "above"));
}
