// Routed experts where the engine's expert kernel streams slower than its dense GEMMs
// (models/engines/{vllm,sglang}.yaml behaviour.expert_kernel: NVFP4 experts on sm_12x) take the prior
// compute.expert_bandwidth_efficiency, 64% with p10-p90 58-73% (AIConfigurator's vLLM 0.24.0 and
// SGLang 0.5.14 MoE tables on the RTX PRO 6000, docs/references/nvfp4-moe-sm120.md#prior); a set
// value always wins.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/prior_band.hpp"

using Catch::Matchers::StartsWith;
using Catch::Matchers::WithinRel;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
// vLLM, Qwen3.5-397B with NVFP4 experts on 4x RTX PRO 6000 (sm_120), batch 1.
const std::string kVllmRow = std::string(SPECSIM_SOURCE_DIR) +
                             "/validation/rtx6kpro-qwen35-397b-mtp/qwen35-397b-nvfp4-mtp2-tp4-c1.yaml";
// SGLang, MiniMax-M2.7 with NVFP4 experts on 2x RTX PRO 6000: SGLang's file names the same kernel class.
const std::string kSglangRow = std::string(SPECSIM_SOURCE_DIR) +
                               "/validation/rtx6kpro-pr10-minimax-m27-2x/pr10-minimax-m27-nvfp4-eagle3-tp2-c1-sharegpt.yaml";

specsim::Scenario load(const std::string& row, const std::vector<std::string>& patches = {}) {
  return specsim::load_scenario(row, patches, kRoot);
}

bool has_term(const specsim::PredictionBand& band, const std::string& term) {
  return std::find(band.terms.begin(), band.terms.end(), term) != band.terms.end();
}

}  // namespace

TEST_CASE("expert kernel prior: vLLM's NVFP4 experts on sm_12x stream at 64% of datasheet", "[expert_kernel]") {
  const specsim::CycleModel model(load(kVllmRow));
  const auto& cal = model.calibration();
  CHECK_THAT(cal.expert_bandwidth_efficiency.value, WithinRel(0.64, 1e-12));
  CHECK_THAT(cal.expert_bandwidth_efficiency.origin,
             StartsWith("prior: 64%, p10-p90 58-73%, engine vllm's expert kernel on sm_12x"));
  CHECK(model.scenario().compute.expert_efficiency_from_engine);

  // The plain step is still reproduced: the calibration fits the rest of the forward and the host
  // around the slower experts.
  const specsim::Prediction p = model.predict();
  CHECK_THAT(p.baseline_tokens_per_s, WithinRel(85.8, 1e-3));

  // With the rule off the experts follow the dense efficiency: a 3-token verify touches ~3x the
  // experts of a decode step, so the slower experts cost the verify more than the plain step they
  // were calibrated on, and the speculative rate falls with the prior.
  specsim::Scenario off = load(kVllmRow);
  off.rules.expert_kernel_prior = false;
  const specsim::CycleModel without(off);
  CHECK(without.calibration().expert_bandwidth_efficiency.origin == specsim::kExpertsFollowDense);
  CHECK_FALSE(without.scenario().compute.expert_efficiency_from_engine);
  CHECK_THAT(without.predict().baseline_tokens_per_s, WithinRel(85.8, 1e-3));
  CHECK(p.spec_tokens_per_s < 0.99 * without.predict().spec_tokens_per_s);  // 175.0 against 177.9 tok/s
}

TEST_CASE("expert kernel prior: a set value wins, and another engine or GPU does not take it", "[expert_kernel]") {
  const specsim::CycleModel set(load(kVllmRow, {"compute.expert_bandwidth_efficiency=0.8"}));
  CHECK_THAT(set.calibration().expert_bandwidth_efficiency.value, WithinRel(0.8, 1e-12));
  CHECK(set.calibration().expert_bandwidth_efficiency.origin == "set");
  CHECK_FALSE(set.scenario().compute.expert_efficiency_from_engine);

  // SGLang's file names the same GPU and dtype: its NVFP4 experts take the prior too.
  const specsim::CycleModel sglang(load(kSglangRow));
  CHECK_THAT(sglang.calibration().expert_bandwidth_efficiency.origin,
             StartsWith("prior: 64%, p10-p90 58-73%, engine sglang's expert kernel on sm_12x"));
  // TensorRT-LLM's file names no expert kernel: the same deployment served by it follows the dense rate.
  const specsim::CycleModel trtllm(load(kVllmRow, {"engine.name=trtllm"}));
  CHECK_FALSE(trtllm.scenario().compute.expert_efficiency_from_engine);
  CHECK_FALSE(trtllm.scenario().compute.expert_bandwidth_efficiency);

  // The same vLLM deployment moved to H100s (sm_90): the prediction's experts follow the dense rate,
  // while the calibration, on the box the plain rate was measured on, keeps the prior.
  const specsim::CycleModel hopper(load(kVllmRow, {"topology=4x-h100-nvswitch"}));
  CHECK_FALSE(hopper.scenario().compute.expert_efficiency_from_engine);
  CHECK_FALSE(hopper.scenario().compute.expert_bandwidth_efficiency);
  CHECK(hopper.calibration().expert_bandwidth_efficiency.is_prior());
}

TEST_CASE("expert kernel prior: the band draws its spread only where it applies", "[expert_kernel]") {
  const specsim::CycleModel vllm(load(kVllmRow));
  const specsim::PredictionBand band = specsim::prior_band(vllm, vllm.predict());
  CHECK(has_term(band, "expert bandwidth efficiency"));
  // 58-73% moves the verify's experts by about +-11%: the priors' band is wider than without it.
  specsim::Scenario off = load(kVllmRow);
  off.rules.expert_kernel_prior = false;
  const specsim::CycleModel without(off);
  const specsim::PredictionBand narrow = specsim::prior_band(without, without.predict());
  CHECK_FALSE(has_term(narrow, "expert bandwidth efficiency"));
  CHECK(band.p90_tokens_per_s / band.p10_tokens_per_s > narrow.p90_tokens_per_s / narrow.p10_tokens_per_s);

  // On H100s (sm_90) the kernel's prior does not apply: no spread from it.
  const specsim::CycleModel hopper(load(kVllmRow, {"topology=4x-h100-nvswitch"}));
  CHECK_FALSE(has_term(specsim::prior_band(hopper, hopper.predict()), "expert bandwidth efficiency"));
}
