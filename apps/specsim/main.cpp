#include <iostream>
#include <string>
#include <vector>

#include "cli.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  specsim::cli::Io io{std::cout, std::cerr};
  return specsim::cli::run(args, io);
}
