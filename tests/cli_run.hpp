// Helpers shared by the tests that run the command line in-process.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.hpp"

namespace specsim::test {

struct Result {
  int code;
  std::string out;
  std::string err;
};

// `specsim ARGS...` without a process: exit code, stdout and stderr.
inline Result run(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = specsim::cli::run(args, {out, err});
  return {code, out.str(), err.str()};
}

// The shipped scenarios (models/scenarios/*.yaml), in name order.
inline std::vector<std::filesystem::path> shipped_scenarios() {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(SPECSIM_SOURCE_DIR) + "/models/scenarios")) {
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A fresh directory per test, removed on exit. Its name carries the process id: ctest runs test
// cases side by side, and test runs of other checkouts share /tmp (two runs of the concurrent-writers
// test removed each other's directory).
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name)
      : path(std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// A file's whole text.
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// `text` with the first `from` replaced by `to`; a test whose edit finds nothing to edit fails.
inline std::string replaced_once(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos) throw std::runtime_error("'" + from + "' not in the text to edit");
  return text.replace(at, from.size(), to);
}

}  // namespace specsim::test
