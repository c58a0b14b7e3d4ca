// The priors' registry (priors.hpp): every row sourced and consistent, the named constants the code
// prices with are the rows' own values, and each row the band draws is open somewhere and moves the
// prediction there when set. A new prior that breaks one of these says which here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "specsim/cycle.hpp"
#include "specsim/load.hpp"
#include "specsim/prior_band.hpp"
#include "specsim/priors.hpp"

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const specsim::Prior& row_of(std::string_view key) {
  const auto rows = specsim::priors();
  const auto it = std::find_if(rows.begin(), rows.end(), [&](const specsim::Prior& p) { return p.key == key; });
  REQUIRE(it != rows.end());
  return *it;
}

// Deployments on which, together, every row the band draws is open: one GPU with a piecewise verify
// (the compute, eager and piecewise rows; with the plain step alone piecewise, what the eager rows
// change in it the calibration gives back as host time), TP4 with no measured all-reduce table (the
// all-reduce ratio), EP8 with DeepEP's all-to-all and no table for it (its latency), and vLLM's
// NVFP4 experts on RTX PRO 6000s (the expert kernel's efficiency).
struct Deployment {
  std::string scenario;
  std::vector<std::string> patches;
};
const std::vector<Deployment> kDeployments = {
    {"llama-3.1-8b-eagle3-1x-h200", {"engine.verify_mode=piecewise"}},
    {"llama-3.3-70b-eagle3-4x-h100-nvswitch", {}},
    {"deepseek-v3-mtp-8x-h200-ep8", {"parallel.moe_a2a=deepep"}},
    {std::string(SPECSIM_SOURCE_DIR) + "/validation/rtx6kpro-qwen35-397b-mtp/qwen35-397b-nvfp4-mtp2-tp4-c1.yaml", {}},
};

}  // namespace

TEST_CASE("priors: every row says where it comes from, and its value lies in its spread", "[priors]") {
  std::set<std::string_view> keys, labels;
  for (const specsim::Prior& p : specsim::priors()) {
    INFO(p.key);
    CHECK(keys.insert(p.key).second);
    CHECK(labels.insert(p.label).second);
    if (p.second_reading) CHECK(labels.insert(p.second_reading->label).second);
    CHECK_FALSE(p.evidence.empty());
    CHECK_FALSE(p.feeds.empty());
    // The source is a page of docs/references with an anchor that page defines.
    const std::string source(p.source);
    const auto hash = source.find(".md#");
    REQUIRE(source.rfind("docs/references/", 0) == 0);
    REQUIRE(hash != std::string::npos);
    const std::string page = read_text(std::filesystem::path(SPECSIM_SOURCE_DIR) / source.substr(0, hash + 3));
    CHECK(page.find("id=\"" + source.substr(hash + 4) + "\"") != std::string::npos);
    // The band draws a log-normal through p10 and p90: both positive, the value between them, and a
    // cut never inside the p10-p90 it describes.
    CHECK(p.estimate.p10 > 0.0);
    CHECK(p.estimate.p10 <= p.estimate.value);
    CHECK(p.estimate.value <= p.estimate.p90);
    CHECK(p.draw_min <= p.estimate.p10);
    CHECK(p.estimate.p90 <= p.draw_max);
    CHECK(p.drawn() == (p.set != nullptr));
    if (p.second_reading) CHECK(p.drawn());
  }
  // The band lists the engine terms beside the priors: no label may stand for two terms.
  for (const specsim::EngineTerm& t : specsim::engine_terms()) CHECK(labels.insert(t.label).second);
}

TEST_CASE("priors: every calibration reading names its source, what settles it and a weight in (0, 1)",
          "[priors]") {
  std::set<std::string_view> labels;
  for (const specsim::Prior& p : specsim::priors()) labels.insert(p.label);
  for (const specsim::CalibrationReading& r : specsim::calibration_readings()) {
    INFO(r.key);
    CHECK(labels.insert(r.label).second);  // the band lists it among the priors' labels
    CHECK_FALSE(r.point.empty());
    CHECK_FALSE(r.other.empty());
    CHECK_FALSE(r.settles.empty());
    CHECK(r.weight > 0.0);
    CHECK(r.weight < 1.0);
    REQUIRE(r.open != nullptr);
    REQUIRE(r.set != nullptr);
    const std::string source(r.source);
    const auto hash = source.find(".md#");
    REQUIRE(hash != std::string::npos);
    const std::string page = read_text(std::filesystem::path(SPECSIM_SOURCE_DIR) / source.substr(0, hash + 3));
    CHECK(page.find("id=\"" + source.substr(hash + 4) + "\"") != std::string::npos);
  }
}

TEST_CASE("priors: the named values are the rows' own", "[priors]") {
  CHECK(&specsim::kPriorBandwidthEfficiency == &row_of("compute.bandwidth_efficiency").estimate);
  CHECK(&specsim::kPriorKvVerifyRatio == &row_of("compute.kv_verify_ratio").estimate);
  CHECK(&specsim::kPriorMultiTokenStepS == &row_of("compute.multi_token_step").estimate);
  CHECK(&specsim::kPriorEagerLaunchPerKernelS == &row_of("compute.eager_launch_per_kernel").estimate);
  CHECK(&specsim::kPriorEagerOverlapExponent == &row_of("compute.eager_overlap_exponent").estimate);
  CHECK(&specsim::kPriorAllReduceRatio == &row_of("comm.scale").estimate);
  CHECK(&specsim::kPriorPiecewiseGpuPerAttentionS == &row_of("compute.piecewise_gpu_per_attention").estimate);
  CHECK(&specsim::kPriorAllToAllLatencyS == &row_of("comm.all_to_all_latency").estimate);
  CHECK(&specsim::kPriorNgramLookupPerTokenS == &row_of("host.ngram_lookup_per_token").estimate);
  CHECK(&specsim::kPriorExpertBandwidthEfficiency == &row_of("compute.expert_bandwidth_efficiency").estimate);
  CHECK(&specsim::kPriorRoutingSkew == &row_of("compute.routing_skew").estimate);
  // A scenario that states none of them starts from them.
  const specsim::ComputeSettings compute;
  CHECK(compute.bandwidth_efficiency == specsim::kPriorBandwidthEfficiency.value);
  CHECK(compute.kv_verify_ratio == specsim::kPriorKvVerifyRatio.value);
  CHECK(compute.multi_token_step_s == specsim::kPriorMultiTokenStepS.value);
  CHECK(compute.routing_skew == specsim::kPriorRoutingSkew.value);
  CHECK(specsim::HostSettings{}.ngram_lookup_per_token_s == specsim::kPriorNgramLookupPerTokenS.value);
}

TEST_CASE("priors: each row the band draws is open on a deployment, and its setter moves the prediction there",
          "[priors]") {
  for (const specsim::Prior& p : specsim::priors()) {
    if (!p.drawn()) continue;
    INFO(p.key);
    bool open_somewhere = false;
    bool moved = false;
    for (const Deployment& d : kDeployments) {
      const specsim::Scenario s = specsim::load_scenario(d.scenario, d.patches, kRoot);
      const specsim::CycleModel model(s);
      if (!p.open(model.scenario(), model.calibration())) continue;
      open_somewhere = true;
      INFO(d.scenario);
      // What the open-predicate says the band may vary, the setter varies: the rate at p10 and at p90
      // differ (a recalibrated model, as the band draws it). Not on every deployment: a measured
      // plain step shorter than the forward at p90 lifts a prior efficiency to fill it, wherever
      // it starts.
      const auto rate_at = [&](double v) {
        specsim::Scenario x = s;
        p.set(x, v);
        return specsim::CycleModel(std::move(x)).predict().spec_tokens_per_s;
      };
      moved = moved || rate_at(p.estimate.p10) != rate_at(p.estimate.p90);
    }
    CHECK(open_somewhere);
    CHECK(moved);
  }
}
