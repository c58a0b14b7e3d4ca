// SHA-256 (FIPS 180-4; the test vectors are FIPS 180-2's), so a calibration profile can name the
// exact bytes of the measurement files it was fitted on. Written here rather than pulled from a
// crypto library: it is ~100 lines and provenance is its only use.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace specsim {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  // The digest of everything passed to update(); the object must not be updated afterwards.
  [[nodiscard]] std::array<std::uint8_t, 32> finish();

 private:
  void compress(const std::uint8_t* block);

  std::array<std::uint32_t, 8> state_{};
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
};

// Lower-case hex digest of `bytes`, e.g. "ba7816bf..." for "abc".
[[nodiscard]] std::string sha256_hex(std::string_view bytes);
// Lower-case hex digest of a file's bytes; throws specsim::Error naming the file if unreadable.
[[nodiscard]] std::string sha256_file_hex(const std::string& path);

}  // namespace specsim
