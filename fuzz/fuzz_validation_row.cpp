// Fuzzes the validation row reader (`specsim validate`): each input is written as a row file and
// read and predicted by validate_row against the source tree's models, and read as a split file
// (validation/split.yaml) by load_validation_split. specsim::Error is the expected answer; a row
// that predicts must give finite, positive rates and an ordered band.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "scratch_file.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/validate_corpus.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = specsim::fuzz::scratch_path("fuzz_validation_row", ".yaml");
  static const specsim::DataDir root(SPECSIM_SOURCE_DIR);
  specsim::fuzz::write_file(path, data, size);
  try {
    const specsim::ValidationRow row = specsim::validate_row(path, root);
    SPECSIM_FUZZ_ASSERT(std::isfinite(row.predicted_spec_tokens_per_s) && row.predicted_spec_tokens_per_s > 0.0);
    SPECSIM_FUZZ_ASSERT(std::isfinite(row.predicted_plain_tokens_per_s) && row.predicted_plain_tokens_per_s > 0.0);
    SPECSIM_FUZZ_ASSERT(std::isfinite(row.error()));
    SPECSIM_FUZZ_ASSERT(row.band_p10_tokens_per_s <= row.band_p90_tokens_per_s);
  } catch (const specsim::Error&) {
  }
  try {
    (void)specsim::load_validation_split(path);
  } catch (const specsim::Error&) {
  }
  return 0;
}
