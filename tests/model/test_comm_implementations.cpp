#include <catch2/catch.hpp>

#include "specsim/comm_model.hpp"
#include "specsim/cycle.hpp"
#include "specsim/load.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
constexpr double kKiB = 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

// The default scenario moved onto another box: `ranks` GPUs of `topology` with its NCCL table.
specsim::Scenario on_box(const std::string& topology, const std::string& profile, int ranks,
                         const std::string& implementation) {
  specsim::Scenario s = specsim::load_scenario(specsim::kDefaultScenario, {}, kRoot);
  s.topology = specsim::load_topology(kRoot.resolve(specsim::DataKind::kTopology, topology));
  s.gpu = specsim::load_gpu(kRoot.resolve(specsim::DataKind::kGpu, s.topology.gpu));
  s.comm_profile = specsim::load_comm_profile(kRoot.resolve(specsim::DataKind::kCommProfile, profile));
  s.custom_profile.reset();
  s.parallel.tp = ranks;
  s.comm.implementation = implementation;
  return s;
}

specsim::CommModel build(const specsim::Scenario& s) { return specsim::CommModel::build(s, 0.0, 0.0); }

}  // namespace

TEST_CASE("comm implementations: one registry names what the loader accepts", "[comm][implementations]") {
  const auto names = specsim::allreduce_implementation_names();
  CHECK(names == std::vector<std::string>{"nccl", "custom_oneshot", "custom_twoshot", "fp8", "engine"});
  for (const auto& name : names) {
    INFO(name);
    CHECK_NOTHROW(specsim::load_scenario(specsim::kDefaultScenario, {"comm.implementation=" + name}, kRoot));
  }
  CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, {"comm.implementation=mscclpp"}, kRoot),
                    Contains("comm.implementation") && Contains("engine"));
  CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, {"comm.custom_max_bytes=1MiB"}, kRoot),
                    Contains("applies to comm.implementation: engine only"));
}

TEST_CASE("comm implementations: the engines' rule keeps NCCL on 8 PCIe GPUs", "[comm][implementations]") {
  // vLLM and SGLang disable their custom kernel on more than two PCIe-only GPUs: the home box's
  // all-reduces stay NCCL's at every size, and the source says why.
  const specsim::Scenario s = on_box("8x-rtx-pro-6000-pcie5", "rtx-pro-6000-8x-pcie5-aic-nccl", 8, "engine");
  specsim::Scenario plain = s;
  plain.comm.implementation = "nccl";
  const auto engine = build(s);
  const auto nccl = build(plain);
  for (double bytes : {14 * kKiB, 56 * kKiB, 16 * kMiB}) {
    CHECK(engine.allreduce_s(bytes, specsim::LaunchMode::kGraph) == nccl.allreduce_s(bytes, specsim::LaunchMode::kGraph));
  }
  CHECK_THAT(engine.source(), Contains("NCCL at every size: the engines disable their custom all-reduce"));
}

TEST_CASE("comm implementations: the engines' one-shot below 8 MiB on 2 PCIe GPUs and on NVLink",
          "[comm][implementations]") {
  {
    // 2 ranks over PCIe Gen5: one-shot prior 7.5 us + (2-1) x 14,336 B / 56 GB/s = 7.756 us.
    const auto s = on_box("2x-rtx-pro-6000-pcie5", "rtx-pro-6000-2x-pcie5-aic-nccl", 2, "engine");
    const auto m = build(s);
    CHECK_THAT(m.allreduce_s(14 * kKiB, specsim::LaunchMode::kGraph), WithinRel(7.5e-6 + 14 * kKiB / 56e9, 1e-12));
    specsim::Scenario plain = s;
    plain.comm.implementation = "nccl";
    // At and above the cap the engine hands the message to NCCL.
    CHECK(m.allreduce_s(8 * kMiB, specsim::LaunchMode::kGraph) ==
          build(plain).allreduce_s(8 * kMiB, specsim::LaunchMode::kGraph));
    CHECK_THAT(m.source(), Contains("below 8 MiB the engine's one-shot kernel (prior)"));
  }
  {
    // 8 H200 on NVSwitch: 7.5 us + 7 x 14,336 B / 450 GB/s (the GPU file's per-direction NVLink).
    const auto s = on_box("8x-h200-nvswitch", "h200-8x-nvswitch-aic-nccl", 8, "engine");
    REQUIRE(s.gpu.nvlink_bandwidth_bytes_per_s);
    CHECK_THAT(build(s).allreduce_s(14 * kKiB, specsim::LaunchMode::kGraph),
               WithinRel(7.5e-6 + 7 * 14 * kKiB / *s.gpu.nvlink_bandwidth_bytes_per_s, 1e-12));
  }
}

TEST_CASE("comm implementations: two-shot prior and pipeline sends over the box's link", "[comm][implementations]") {
  // Two-shot on 2 PCIe Gen5 ranks at 1 MiB: 2 x 7.5 us + 2 x (1/2) x 1 MiB / 56 GB/s.
  const auto two = build(on_box("2x-rtx-pro-6000-pcie5", "rtx-pro-6000-2x-pcie5-aic-nccl", 2, "custom_twoshot"));
  CHECK_THAT(two.allreduce_s(kMiB, specsim::LaunchMode::kGraph), WithinRel(15e-6 + kMiB / 56e9, 1e-12));
  CHECK_FALSE(two.calibrated());
  // A send of one 7168-wide bf16 token (14 KiB): 10 us + S / B_p2p, PCIe Gen5 56 GB/s against
  // NVLink 450 GB/s; a PP hop on NVSwitch is no longer priced as PCIe.
  const auto pcie = build(on_box("8x-rtx-pro-6000-pcie5", "rtx-pro-6000-8x-pcie5-aic-nccl", 8, "nccl"));
  const auto nvlink = build(on_box("8x-h200-nvswitch", "h200-8x-nvswitch-aic-nccl", 8, "nccl"));
  CHECK_THAT(pcie.send_s(14 * kKiB), WithinRel(10e-6 + 14 * kKiB / 56e9, 1e-12));
  CHECK_THAT(nvlink.send_s(14 * kKiB), WithinRel(10e-6 + 14 * kKiB / 450e9, 1e-12));
}

TEST_CASE("comm implementations: the GPU file states its architecture", "[comm][hardware]") {
  CHECK(specsim::load_gpu(kRoot.resolve(specsim::DataKind::kGpu, "h200")).architecture == specsim::GpuArch::kHopper);
  CHECK(specsim::load_gpu(kRoot.resolve(specsim::DataKind::kGpu, "rtx-4090")).architecture == specsim::GpuArch::kAda);
  CHECK(specsim::load_gpu(kRoot.resolve(specsim::DataKind::kGpu, "rtx-pro-6000-server")).architecture ==
        specsim::GpuArch::kBlackwell);
  CHECK(specsim::parse_gpu_arch("hopper") == specsim::GpuArch::kHopper);
  CHECK_FALSE(specsim::parse_gpu_arch("h100"));
  CHECK(std::string(specsim::to_string(specsim::GpuArch::kAda)) == "ada");
}

TEST_CASE("comm implementations: vLLM runs NCCL on sm_12x GPUs under CUDA graphs", "[comm][implementations]") {
  // vLLM's custom all-reduce aborts during graph capture on compute capability 12.x (vllm#47266
  // item 9a), so a running TP2 deployment on two RTX PRO 6000 passes --disable-custom-all-reduce:
  // the engine rule prices NCCL at every size there. SGLang's kernel runs (AIC timed it in a graph).
  specsim::Scenario s = on_box("2x-rtx-pro-6000-pcie5", "rtx-pro-6000-2x-pcie5-aic-nccl", 2, "engine");
  REQUIRE(s.gpu.compute_capability == 120);
  // The engine is its file: vllm.yaml's behaviour.custom_allreduce lists 12 under
  // aborts_in_graph_capture_on (the loader reads it with engine.name).
  s.engine.name = "vllm";
  s.engine.behaviour = specsim::load_engine_prior(kRoot.resolve(specsim::DataKind::kEngine, "vllm")).behaviour;
  specsim::Scenario plain = s;
  plain.comm.implementation = "nccl";
  const auto vllm = build(s);
  for (double bytes : {14 * kKiB, 56 * kKiB}) {
    CHECK(vllm.allreduce_s(bytes, specsim::LaunchMode::kGraph) == build(plain).allreduce_s(bytes, specsim::LaunchMode::kGraph));
  }
  CHECK_THAT(vllm.source(), Contains("NCCL at every size: vLLM's custom all-reduce aborts during CUDA graph capture on "
                                     "sm_12x GPUs (vllm#47266 item 9a"));
  // Every forward eager: nothing is captured, and the one-shot prior applies below 8 MiB again.
  specsim::Scenario eager = s;
  eager.engine.decode_mode = eager.engine.verify_mode = eager.engine.draft_mode = specsim::LaunchMode::kEager;
  CHECK_THAT(build(eager).allreduce_s(14 * kKiB, specsim::LaunchMode::kGraph), WithinRel(7.5e-6 + 14 * kKiB / 56e9, 1e-12));
  // Hopper (9.0) keeps vLLM's kernel: 7.5 us + 7 x 14 KiB / 450 GB/s on 8 H200.
  specsim::Scenario hopper = on_box("8x-h200-nvswitch", "h200-8x-nvswitch-aic-nccl", 8, "engine");
  hopper.engine.name = "vllm";
  hopper.engine.behaviour = s.engine.behaviour;
  REQUIRE(hopper.gpu.compute_capability == 90);
  CHECK_THAT(build(hopper).allreduce_s(14 * kKiB, specsim::LaunchMode::kGraph),
             WithinRel(7.5e-6 + 7 * 14 * kKiB / 450e9, 1e-12));
  // An explicit custom_oneshot under vLLM on 12.x is priced, with a note that vLLM cannot run it.
  const auto custom =
      specsim::load_scenario(specsim::kDefaultScenario, {"engine.name=vllm", "comm.implementation=custom_oneshot"}, kRoot);
  bool noted = false;
  for (const auto& n : custom.notes) noted = noted || n.find("custom_oneshot under vLLM on sm_12x GPUs") != std::string::npos;
  CHECK(noted);
}

TEST_CASE("comm implementations: the GPU file's compute capability", "[comm][hardware]") {
  CHECK(specsim::load_gpu(kRoot.resolve(specsim::DataKind::kGpu, "b200")).compute_capability == 100);
  CHECK(specsim::load_gpu(kRoot.resolve(specsim::DataKind::kGpu, "rtx-4090")).compute_capability == 89);
  CHECK(specsim::load_gpu(kRoot.resolve(specsim::DataKind::kGpu, "rtx-5090")).compute_capability == 120);
}
