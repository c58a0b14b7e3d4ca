// Helpers shared by the tests that run the command line in-process.
#pragma once

#include <filesystem>
#include <sstream>
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

// A fresh directory per test, removed on exit.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name) : path(std::filesystem::temp_directory_path() / name) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

}  // namespace specsim::test
