// The smallest planning tool on top of libspecsim: load the default scenario, patch it the way
// `specsim predict --set` does, predict, print tokens/s for plain and speculative decoding.
//
//   planner [--data-dir DIR] [key=value ...]      e.g. planner speculation.num_steps=2
//
// The data directory is, in order: --data-dir, $SPECSIM_DATA_DIR, the installed share/specsim the
// package config reported at build time.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "specsim/specsim.hpp"

int main(int argc, char** argv) {
  std::string data_dir = SPECSIM_INSTALLED_DATA_DIR;
  if (const char* env = std::getenv("SPECSIM_DATA_DIR"); env && *env) data_dir = env;
  std::vector<std::string> patches;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--data-dir" && i + 1 < argc) {
      data_dir = argv[++i];
    } else {
      patches.push_back(arg);
    }
  }
  try {
    const specsim::DataDir data(data_dir);
    specsim::Scenario scenario = specsim::load_scenario(specsim::kDefaultScenario, patches, data);
    const specsim::CycleModel model(std::move(scenario));
    const specsim::Prediction p = model.predict();
    std::printf("scenario %s\n", specsim::kDefaultScenario);
    for (const auto& patch : patches) std::printf("  --set %s\n", patch.c_str());
    std::printf("plain decoding        %7.1f tokens/s\n", p.baseline_tokens_per_s);
    std::printf("speculative decoding  %7.1f tokens/s  (%.3f tokens per cycle, %.2f ms cycle)\n",
                p.spec_tokens_per_s, p.tokens_per_cycle, p.cycle_s * 1e3);
    std::printf("speedup               %7.3fx\n", p.speedup);
    return 0;
  } catch (const specsim::Error& e) {
    std::fprintf(stderr, "planner: %s\n", e.what());
    return 1;
  }
}
