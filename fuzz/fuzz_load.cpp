// Fuzzes the YAML/JSON loaders through their public, path-taking API: each input is written to
// one file in /dev/shm (else /tmp) and read as a model (YAML or HF config.json), a GPU, a
// topology, a comm profile, and through check_data_file. specsim::Error is the expected answer;
// anything else is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "specsim/error.hpp"
#include "specsim/load.hpp"

namespace {

std::string scratch_path() {
  const std::string dir = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
  return dir + "/specsim-fuzz-load-" + std::to_string(::getpid()) + ".yaml";
}

template <typename F>
void expect_clean(F&& load) {
  try {
    (void)load();
  } catch (const specsim::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = scratch_path();
  static const specsim::DataDir root(SPECSIM_SOURCE_DIR);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  expect_clean([&] { return specsim::load_model(path); });
  expect_clean([&] { return specsim::load_gpu(path); });
  expect_clean([&] { return specsim::load_topology(path); });
  expect_clean([&] { return specsim::load_comm_profile(path); });
  expect_clean([&] { return specsim::check_data_file(path, root); });
  return 0;
}
