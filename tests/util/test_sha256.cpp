#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "specsim/sha256.hpp"

TEST_CASE("sha256: FIPS 180-2 test vectors", "[sha256]") {
  // FIPS 180-2 Appendix B.1: one block.
  CHECK(specsim::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Appendix B.2: 56 bytes, so the padding spills into a second block.
  CHECK(specsim::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Appendix B.3: one million 'a', fed in uneven pieces to exercise the buffering.
  specsim::Sha256 h;
  const std::string piece(997, 'a');
  std::size_t left = 1000000;
  while (left > 0) {
    const std::size_t n = std::min(left, piece.size());
    h.update(std::string_view(piece.data(), n));
    left -= n;
  }
  const auto d = h.finish();
  CHECK(d[0] == 0xcd);
  CHECK(d[31] == 0xd0);  // cdc76e5c 9914fb92 81a1c7e2 84d73e67 f1809a48 a497200e 046d39cc c7112cd0
  // The empty message (well known, not in FIPS 180-2).
  CHECK(specsim::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("sha256: a file hashes like its bytes", "[sha256]") {
  const auto path = std::filesystem::temp_directory_path() / "specsim_sha256_test.txt";
  { std::ofstream(path, std::ios::binary) << "abc"; }
  CHECK(specsim::sha256_file_hex(path.string()) == specsim::sha256_hex("abc"));
  std::filesystem::remove(path);
  CHECK_THROWS(specsim::sha256_file_hex(path.string()));
}
