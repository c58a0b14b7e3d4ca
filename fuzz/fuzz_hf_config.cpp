// Fuzzes the Hugging Face config.json reader (read_hf_config through load_model): each input is
// written as config.json into a scratch checkpoint directory and loaded both as the file and as the
// directory. specsim::Error is the expected answer; a model that loads must have a positive,
// finite shape (what the cycle model divides by).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "scratch_file.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"

namespace {

void check_model(const specsim::TransformerSpec& m) {
  SPECSIM_FUZZ_ASSERT(m.layers > 0 && m.dense_layers >= 0 && m.dense_layers <= m.layers);
  SPECSIM_FUZZ_ASSERT(m.hidden_size > 0 && m.vocab_size > 0);
  SPECSIM_FUZZ_ASSERT(std::isfinite(m.weight_bytes()) && m.weight_bytes() > 0.0);
  SPECSIM_FUZZ_ASSERT(std::isfinite(m.active_params()) && m.active_params() > 0.0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string dir = [] {
    const std::string d = specsim::fuzz::scratch_path("fuzz_hf_config", ".d");
    std::filesystem::create_directories(d);
    return d;
  }();
  static const std::string file = dir + "/config.json";
  specsim::fuzz::write_file(file, data, size);
  try {
    check_model(specsim::load_model(file));
  } catch (const specsim::Error&) {
  }
  try {
    check_model(specsim::load_model(dir));
  } catch (const specsim::Error&) {
  }
  return 0;
}
