// Launch modes: graph, eager and piecewise (graphs around the layers, attention launched by the
// host between them; docs/model.md#launch-modes).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "specsim/compute_model.hpp"
#include "specsim/cycle.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/report.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

specsim::ComputeModel llama_8b_on_h200(const specsim::Scenario& s) {
  return specsim::ComputeModel(s.model, s.gpu, 1, 1, 2048, s.compute, 0.84, 1.0);
}
}  // namespace

TEST_CASE("piecewise: one replay per piece and the attention kernels launched by the host", "[launch][piecewise]") {
  const auto s = specsim::load_scenario("llama-3.1-8b-eagle3-1x-h200", {}, kRoot);
  REQUIRE(s.model.full_attention_layers() == 32);
  const auto m = llama_8b_on_h200(s);
  // The scenario sets no eager launch cost: the prior's 17.39 us per kernel (docs/model.md#launch-modes).
  // 33 pieces x 5 us + 32 layers x 2 kernels x 17.39 us = 165 + 1112.96 = 1277.96 us
  CHECK_THAT(m.launch_s(specsim::LaunchMode::kPiecewise), WithinRel(1277.96e-6, 1e-12));
  // A graph is one replay; eager launches every kernel: 32 x 11 + 6 = 358 kernels x 17.39 us = 6.226 ms.
  CHECK_THAT(m.launch_s(specsim::LaunchMode::kGraph), WithinRel(5e-6, 1e-12));
  CHECK_THAT(m.launch_s(specsim::LaunchMode::kEager), WithinRel(358 * 17.39e-6, 1e-12));
  // The GPU also waits at each eager attention part, 32 x 5.2 us = 166.4 us (kPriorPiecewiseGpuPerAttentionS),
  // and that ~5.07 ms mostly hides the piecewise launches: with the prior exponent 2.91,
  // g (1 + (1.278 / g)^2.91)^(1/2.91) ~ g x 1.006.
  const double gpu = m.gpu_time_s(1.0) + 32 * 5.2e-6;
  REQUIRE(gpu > 1277.96e-6);
  const double p = 2.91;
  CHECK_THAT(m.local_time_s(1.0, specsim::LaunchMode::kPiecewise),
             WithinRel(gpu * std::pow(1.0 + std::pow(1277.96e-6 / gpu, p), 1.0 / p), 1e-12));
  CHECK(m.local_time_s(1.0, specsim::LaunchMode::kPiecewise) < 1.01 * gpu);
}

TEST_CASE("piecewise: a small draft forward pays launches a full graph does not", "[launch][piecewise]") {
  const auto at = [](const std::string& mode) {
    return specsim::CycleModel(
               specsim::load_scenario("llama-3.1-8b-eagle3-1x-h200", {"engine.draft_mode=" + mode}, kRoot))
        .predict();
  };
  const auto graph = at("graph"), piecewise = at("piecewise"), eager = at("eager");
  // The one-layer EAGLE-3 head: piecewise host = 2 x 5 us + 1 x 2 x 17.39 us = 44.78 us against a GPU
  // time of a few hundred us, so it is nearly hidden; eager launches all its kernels at 17.39 us each.
  CHECK(piecewise.draft_s <= eager.draft_s);
  CHECK(graph.drafts.front().mode == specsim::LaunchMode::kGraph);
  CHECK(piecewise.drafts.front().mode == specsim::LaunchMode::kPiecewise);
  CHECK(std::string(specsim::to_string(piecewise.drafts.front().mode)) == "piecewise");
  // The verify and plain step are untouched.
  CHECK(piecewise.verify.total_s() == graph.verify.total_s());
  CHECK(piecewise.baseline_tokens_per_s == graph.baseline_tokens_per_s);
}

TEST_CASE("piecewise: an engine mode only, a measured table's mode stays graph or eager", "[launch][piecewise][invalid]") {
  CHECK_NOTHROW(specsim::load_scenario("llama-3.1-8b-eagle3-1x-h200", {"engine.verify_mode=piecewise"}, kRoot));
  try {
    (void)specsim::load_scenario("llama-3.1-8b-eagle3-1x-h200", {"engine.verify_mode=partial"}, kRoot);
    FAIL("an unknown mode loaded");
  } catch (const specsim::Error& e) {
    CHECK_THAT(std::string(e.what()), Contains("piecewise"));
  }
}

TEST_CASE("piecewise: the GPU's wait per attention part is priced and says its origin", "[launch][piecewise]") {
  const auto model = [](std::vector<std::string> patches) {
    return specsim::CycleModel(specsim::load_scenario("llama-3.1-8b-eagle3-1x-h200", std::move(patches), kRoot));
  };
  // The one-layer EAGLE-3 head in piecewise mode waits 1 part x 5.2 us on the GPU (the prior); set to
  // 20 us, its draft forwards cost more. A full graph has no such wait, and reports none.
  const auto prior = model({"engine.draft_mode=piecewise"});
  const auto set = model({"engine.draft_mode=piecewise", "compute.piecewise_gpu_per_attention=20us"});
  CHECK_THAT(prior.calibration().piecewise_gpu_per_attention_s.value, WithinRel(5.2e-6, 1e-12));
  CHECK_THAT(prior.calibration().piecewise_gpu_per_attention_s.origin, Contains("prior: 5.2 us, p10-p90 3.3 us to 8.2 us"));
  CHECK(set.calibration().piecewise_gpu_per_attention_s.origin == "set");
  CHECK(set.predict().draft_s > prior.predict().draft_s);
  const std::string text = specsim::render_prediction(prior, prior.predict(), specsim::Format::kText);
  CHECK_THAT(text, Contains("piecewise GPU wait per attention part 5.2 us  (prior:"));
  const auto json = nlohmann::json::parse(specsim::render_prediction(prior, prior.predict(), specsim::Format::kJson));
  CHECK(json["calibration"]["piecewise_gpu_per_attention_s"]["value"] == 5.2e-6);
  const auto graph = model({});
  const auto graph_json = nlohmann::json::parse(specsim::render_prediction(graph, graph.predict(), specsim::Format::kJson));
  CHECK_FALSE(graph_json["calibration"].contains("piecewise_gpu_per_attention_s"));
  CHECK_THAT(specsim::render_prediction(graph, graph.predict(), specsim::Format::kText),
             !Contains("piecewise GPU wait"));
}
