// Fuzzes the step-time CSV reader of `specsim calibrate compute` and the held-out split built on
// its rows. Bad rows must end in specsim::Error; accepted rows must hold what the fit assumes.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "scratch_file.hpp"
#include "specsim/compute_fit.hpp"
#include "specsim/error.hpp"
#include "specsim/plausibility.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = specsim::fuzz::scratch_path("fuzz_compute_csv", ".csv");
  specsim::fuzz::write_file(path, data, size);
  std::vector<specsim::ComputeStep> steps;
  try {
    steps = specsim::read_compute_steps_csv(path);
  } catch (const specsim::Error&) {
    return 0;
  }
  SPECSIM_FUZZ_ASSERT(!steps.empty());
  const auto count_max = specsim::plausible_range(specsim::Magnitude::kCount).max;
  for (const auto& s : steps) {
    SPECSIM_FUZZ_ASSERT(std::isfinite(s.time_s) && s.time_s > 0);
    SPECSIM_FUZZ_ASSERT(specsim::implausible(s.time_s, specsim::Magnitude::kDuration).empty());
    SPECSIM_FUZZ_ASSERT(s.tp >= 1 && s.tp <= count_max);
    SPECSIM_FUZZ_ASSERT(s.tokens >= 1 && s.tokens <= count_max);
    SPECSIM_FUZZ_ASSERT(s.context_tokens >= 0 && s.context_tokens <= count_max * 10);
    SPECSIM_FUZZ_ASSERT(!s.layers_timed || (*s.layers_timed >= 1 && *s.layers_timed <= count_max));
  }
  SPECSIM_FUZZ_ASSERT(specsim::checkerboard_holdout(steps).size() == steps.size());
  return 0;
}
