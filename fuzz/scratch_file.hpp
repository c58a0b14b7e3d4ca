// The loaders take paths: a target writes each input to one file in /dev/shm (else /tmp), named
// after the target and the process, and hands that path over.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

namespace specsim::fuzz {

inline std::string scratch_path(const std::string& target, const std::string& extension) {
  const std::string dir = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
  return dir + "/specsim-" + target + "-" + std::to_string(::getpid()) + extension;
}

inline void write_file(const std::string& path, const std::uint8_t* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

// A broken invariant: abort, so libFuzzer saves the input.
#define SPECSIM_FUZZ_ASSERT(cond)                                                \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                              \
    }                                                                            \
  } while (0)

}  // namespace specsim::fuzz
