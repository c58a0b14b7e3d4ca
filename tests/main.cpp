// The Catch2 (v2, Debian 12) runner for every tests/test_*.cpp.
//
// Each run gets a temporary directory of its own (TMPDIR, which std::filesystem::temp_directory_path
// reads), removed at exit: tests name their scratch files after themselves, so two runs at once
// (ctest -j, two checkouts on one machine) would otherwise write into each other's files.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

int main(int argc, char* argv[]) {
  namespace fs = std::filesystem;
  const fs::path own = fs::temp_directory_path() / ("specsim-tests-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::create_directories(own, ec);
  if (!ec) ::setenv("TMPDIR", own.c_str(), 1);
  const int result = Catch::Session().run(argc, argv);
  if (!ec) fs::remove_all(own, ec);
  return result;
}
