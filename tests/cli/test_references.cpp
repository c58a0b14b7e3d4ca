// Sources stay inside the repository. The facts the code and data rely on live in docs/references/
// (docs/references/README.md); a comment, data file, doc or printed string that cites one of the
// research notes (hardware, nccl, models, specdec, measured-compute, ... with ".md") must cite it at
// a path that exists in the repository, and every `page.md#anchor` it names must exist in that
// page (an explicit <a id="..."> or a heading). Paths resolve from the repository root or from the
// citing file's folder, as a Markdown link would.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// The notes a session could cite: the project's research notes and design files, which lived
// outside the repository. The ".md" suffix is added where they are matched, so this file does not
// cite them itself.
const std::set<std::string> kNoteNames = {
    "hardware", "nccl",   "models",          "specdec",           "specdec-features", "measured-compute",
    "DESIGN",   "STYLE",  "accuracy-claims", "anchors-simulators", "aesthetics",       "findings-2026-12"};

// Text that can only point outside the clone (a sibling checkout or a machine-local folder).
const std::vector<std::string> kOutsidePaths = {std::string("shared/") + "reference", std::string("/work/") + "shared"};

bool path_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/';
}
bool anchor_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'; }

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// GitHub's heading anchor: lower case, spaces to '-', punctuation other than '-' and '_' dropped.
std::string heading_slug(const std::string& heading) {
  std::string out;
  for (char c : heading) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_') out += static_cast<char>(std::tolower(u));
    else if (c == ' ') out += '-';
  }
  return out;
}

std::set<std::string> anchors_of(const std::string& markdown) {
  std::set<std::string> out;
  for (std::size_t at = markdown.find("id=\""); at != std::string::npos; at = markdown.find("id=\"", at + 1)) {
    const std::size_t end = markdown.find('"', at + 4);
    if (end != std::string::npos) out.insert(markdown.substr(at + 4, end - at - 4));
  }
  std::istringstream lines(markdown);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t hashes = line.find_first_not_of('#');
    if (hashes == 0 || hashes == std::string::npos || line[hashes] != ' ') continue;
    out.insert(heading_slug(line.substr(hashes + 1)));
  }
  return out;
}

int line_of(const std::string& text, std::size_t pos) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
}

// Files a reader of the repository sees: everything under root except hidden folders (.git, ...),
// build trees and Python caches. Binary files (a NUL in the first 4 KiB) are skipped.
std::vector<fs::path> repository_files(const fs::path& root) {
  std::vector<fs::path> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory()) {
      const bool top = it.depth() == 0;
      if (name.front() == '.' || name == "__pycache__" || (top && name.rfind("build", 0) == 0)) {
        it.disable_recursion_pending();
      }
      continue;
    }
    if (it->is_regular_file()) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct CitationCheck {
  std::vector<std::string> problems;
  int citations = 0;  // note paths that resolved inside the repository
  int anchors = 0;    // anchors found in their page
};

CitationCheck check_citations(const fs::path& root) {
  CitationCheck check;
  std::map<fs::path, std::set<std::string>> anchor_cache;
  const fs::path canonical_root = fs::weakly_canonical(root);
  for (const fs::path& file : repository_files(root)) {
    const std::string text = read_file(file);
    if (text.find('\0') < std::min<std::size_t>(text.size(), 4096)) continue;
    const std::string rel = fs::relative(file, root).generic_string();
    auto problem = [&](std::size_t pos, const std::string& what) {
      check.problems.push_back(rel + ":" + std::to_string(line_of(text, pos)) + ": " + what);
    };
    for (const std::string& outside : kOutsidePaths) {
      for (std::size_t at = text.find(outside); at != std::string::npos; at = text.find(outside, at + 1)) {
        problem(at, "cites '" + outside + "', a path outside the repository");
      }
    }
    for (std::size_t md = text.find(".md"); md != std::string::npos; md = text.find(".md", md + 1)) {
      const std::size_t after = md + 3;
      if (after < text.size() && (std::isalnum(static_cast<unsigned char>(text[after])) || text[after] == '_')) continue;
      std::size_t start = md;
      while (start > 0 && path_char(text[start - 1])) --start;
      const std::string token = text.substr(start, after - start);
      const std::string file_name = token.substr(token.rfind('/') + 1);  // no '/': npos + 1 == 0
      const std::string name = file_name.substr(0, file_name.size() - 3);
      if (!kNoteNames.count(name) && token.find("references/") == std::string::npos) continue;

      fs::path target;
      for (const fs::path& base : {root, file.parent_path()}) {
        const fs::path candidate = fs::weakly_canonical(base / token);
        const std::string inside = fs::relative(candidate, canonical_root).generic_string();
        if (inside.rfind("..", 0) != 0 && fs::is_regular_file(candidate)) {
          target = candidate;
          break;
        }
      }
      if (target.empty()) {
        problem(start, "cites '" + token + "', which is not a file in the repository (docs/references/ holds the notes)");
        continue;
      }
      ++check.citations;
      // '#anchor', then any ', #anchor' that follows (one page, several sections).
      std::size_t pos = after;
      while (pos < text.size() && text[pos] == '#') {
        std::size_t end = pos + 1;
        while (end < text.size() && anchor_char(text[end])) ++end;
        while (end > pos + 1 && text[end - 1] == '.') --end;  // a sentence's full stop
        const std::string anchor = text.substr(pos + 1, end - pos - 1);
        auto cached = anchor_cache.find(target);
        if (cached == anchor_cache.end()) cached = anchor_cache.emplace(target, anchors_of(read_file(target))).first;
        if (cached->second.count(anchor)) ++check.anchors;
        else problem(pos, "cites '" + token + "#" + anchor + "', an anchor that page does not have");
        pos = text.compare(end, 3, ", #") == 0 ? end + 2 : text.size();
      }
    }
  }
  return check;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

}  // namespace

TEST_CASE("every cited note is in the repository and every cited anchor exists", "[references]") {
  const CitationCheck check = check_citations(SPECSIM_SOURCE_DIR);
  INFO(joined(check.problems));
  CHECK(check.problems.empty());
  // The code and data cite the notes ~400 times; far fewer found means the walk missed the tree.
  CHECK(check.citations >= 300);
  CHECK(check.anchors >= 300);
}

TEST_CASE("the citation check finds a note outside the repository and a missing anchor", "[references]") {
  // The cited names are assembled from pieces, so that this file does not cite them itself.
  const std::string md = ".md";
  const std::string outside = std::string("shared/") + "reference/";
  const fs::path root = fs::temp_directory_path() / "specsim_references_check";
  fs::remove_all(root);
  write(root / "docs/references/nccl.md", "# NCCL\n\n<a id=\"protocols\"></a>\n## Protocols\n");
  write(root / "docs/guide.md", "See [protocols](references/nccl" + md + "#protocols) and references/nccl" + md + "#nccl.\n");
  write(root / "lib/a.cpp", "// LL is half bandwidth (docs/references/nccl" + md + "#protocols, #protocols).\n");
  write(root / "build/copy.cpp", "// nccl" + md + " 1.6 in a build tree is not the repository\n");
  SECTION("well-formed citations pass") {
    const CitationCheck check = check_citations(root);
    INFO(joined(check.problems));
    CHECK(check.problems.empty());
    CHECK(check.citations == 3);
    CHECK(check.anchors == 4);
  }
  SECTION("a bare note, a path outside the clone and a missing anchor each fail, with file and line") {
    write(root / "models/gpu.yaml", "memory: 96GB   # hardware" + md + " 1\n");
    write(root / "lib/b.hpp", "\n// " + outside + "nccl" + md + " section 1\n");
    write(root / "lib/c.cpp", "// docs/references/nccl" + md + "#protocols, #ll128\n");
    const CitationCheck check = check_citations(root);
    const std::string all = joined(check.problems);
    INFO(all);
    CHECK(check.problems.size() == 4);  // b.hpp twice: the outside path, and the note it names
    CHECK_THAT(all, Catch::Matchers::Contains("models/gpu.yaml:1: cites 'hardware" + md + "'"));
    CHECK_THAT(all, Catch::Matchers::Contains("lib/b.hpp:2: cites '" + outside.substr(0, outside.size() - 1) + "'"));
    CHECK_THAT(all, Catch::Matchers::Contains("lib/b.hpp:2: cites '" + outside + "nccl" + md + "'"));
    CHECK_THAT(all, Catch::Matchers::Contains("lib/c.cpp:1: cites 'docs/references/nccl" + md + "#ll128'"));
  }
  fs::remove_all(root);
}
