#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"

namespace {

// What was printed reached its destination: a full disk, a closed or unwritable stdout fails the
// command (exit 1), so that `specsim validate --json > baseline.json` never leaves half a file
// behind an exit status of 0. A pipe closed by its reader ends the process by SIGPIPE, as usual.
int checked_exit(int code) {
  std::cout.flush();
  errno = 0;
  const bool out_failed = !std::cout.good() || std::fflush(stdout) != 0 || std::ferror(stdout);
  const int out_errno = errno;
  if (out_failed) {
    std::cerr << "specsim: error: cannot write the output to standard output"
              << (out_errno != 0 ? std::string(": ") + std::strerror(out_errno) : std::string(" (full, closed or not writable)")) << "\n";
  }
  std::cerr.flush();
  const bool err_failed = !std::cerr.good() || std::fflush(stderr) != 0 || std::ferror(stderr);
  if (out_failed || err_failed) return code == specsim::cli::kExitOk ? specsim::cli::kExitInput : code;
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  specsim::cli::Io io{std::cout, std::cerr};
  return checked_exit(specsim::cli::run(args, io));
}
