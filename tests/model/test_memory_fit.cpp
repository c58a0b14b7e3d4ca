// Memory fit (memory_fit.hpp, docs/model.md#memory-fit): what one GPU holds against its capacity,
// with the two deployments issue 16 names as not fitting, the engines' memory rules, and every
// shipped scenario and validation row fitting.
#include <catch2/catch.hpp>

#include <filesystem>

#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
const std::string kMtpScenario = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/scenario/deepseek-v3-mtp-8x-h200.yaml";
constexpr double kMiB = 1024.0 * 1024.0;

const specsim::MemoryPart& part(const specsim::MemoryFit& fit, const std::string& name) {
  for (const auto& p : fit.parts) {
    if (p.name == name) return p;
  }
  FAIL("no memory part " << name);
  throw;
}
}  // namespace

TEST_CASE("memory fit: DeepSeek-R1 (FP8, 671B) does not fit on 8x RTX 4090", "[memory]") {
  // deepseek-v3.yaml is DeepSeek-R1's architecture; SGLang, TP8, MTP draft, batch 1, context 1024.
  const auto s = specsim::load_scenario(kMtpScenario, {"topology=8x-rtx-4090-pcie4-p2p"}, kRoot);
  const specsim::MemoryFit fit = specsim::memory_fit(s);
  // Capacity: nvidia-smi's 24,564 MiB = 25.757 GB (models/gpu/rtx-4090.yaml).
  CHECK_THAT(fit.capacity_bytes, WithinRel(24564 * kMiB, 1e-12));
  // Weights: 670.9B params; the fp8 ones (61 MLA blocks of 187,105,280, 3 dense FFNs of
  // 396,361,728, 58 x 257 experts of 44,040,192 = 669.06B) at 1 + 4/16384 B, the embedding and
  // head (2 x 129,280 x 7168 = 1.853B) at 2 B: 672.94 GB, / 8 ranks = 84.12 GB per GPU (> 25.8 GB).
  const double fp8 = 61 * 187105280.0 + 3 * 396361728.0 + 58 * 257 * 44040192.0;
  const double weights = fp8 * (1 + 4.0 / 16384) + 2 * 129280.0 * 7168 * 2;
  CHECK_THAT(part(fit, "target weights").bytes, WithinRel(weights / 8, 1e-12));
  CHECK_THAT(part(fit, "target weights").bytes, WithinRel(84.117e9, 1e-4));
  // KV: the MLA latent (512 + 64) x 2 B on every rank, 61 layers, 1024 + 4 tokens: 72.2 MB.
  CHECK_THAT(part(fit, "target KV cache").bytes, WithinRel(576.0 * 2 * 61 * 1028, 1e-12));
  // Draft: the MTP module, 187,105,280 + 257 x 44,040,192 params in fp8 plus eh_proj 2 x 7168^2 in
  // bf16, / 8 ranks = 1.464 GB.
  const double module = (187105280.0 + 257 * 44040192.0) * (1 + 4.0 / 16384) + 2.0 * 7168 * 7168 * 2;
  CHECK_THAT(part(fit, "draft weights").bytes, WithinRel(module / 8, 1e-12));
  // SGLang's reserve on a 24,564 MiB GPU at TP8: 512 + 1.5 x 2048 + 2 x 80 + 8/8 x 1024 + 2048
  // = 6816 MB, mem_fraction_static = round(17748 / 24564, 3) = 0.723; 0.277 x 25.757 GB = 7.135 GB.
  CHECK_THAT(fit.engine_fraction, WithinRel(0.723, 1e-12));
  CHECK_THAT(part(fit, "engine reserve").bytes, WithinRel(0.277 * 24564 * kMiB, 1e-9));
  CHECK_FALSE(fit.fits());
  // 84.117 + 0.072 + 1.464 + 0.001 + 7.135 = 92.79 GB, 67.0 GB over 25.76 GB.
  CHECK_THAT(fit.over_bytes(), WithinRel(92.79e9 - 25.757e9, 1e-3));
  const std::string why = specsim::describe_overflow(s, fit);
  CHECK_THAT(why, Contains("does not fit in GPU memory: needs 92.8 GB per GPU, 67.0 GB more than the 25.8 GB of one "
                           "rtx-4090 (TP8, batch 1, context 1024)"));
  CHECK_THAT(why, Contains("target weights 84.1 GB (670.9B params as stored, 672.9 GB / 8 ranks)"));
  CHECK_THAT(why, Contains("engine reserve 7.1 GB (1 - 0.723 of the GPU (SGLang's mem_fraction_static default"));
  CHECK_THROWS_WITH(specsim::require_memory_fit(s), Contains(kMtpScenario + ": does not fit in GPU memory"));
}

TEST_CASE("memory fit: a BF16 70B dense model does not fit on one 80 GB H100", "[memory]") {
  // Llama-3.3-70B (70.55B params) in BF16, vLLM, TP1, batch 1, context 2048.
  const auto s = specsim::load_scenario("llama-3.3-70b-eagle3-4x-h100-nvswitch", {"parallel.tp=1"}, kRoot);
  const specsim::MemoryFit fit = specsim::memory_fit(s);
  // 80 x (8192 x (64 + 16) x 128 + 64 x 128 x 8192 + 3 x 8192 x 28672) + 2 x 128,256 x 8192
  // = 70.552B params x 2 B = 141.10 GB on one GPU, against 81,559 MiB = 85.52 GB.
  const double params = 80 * (8192.0 * 80 * 128 + 64.0 * 128 * 8192 + 3.0 * 8192 * 28672) + 2.0 * 128256 * 8192;
  CHECK_THAT(part(fit, "target weights").bytes, WithinRel(2 * params, 1e-12));
  CHECK_THAT(part(fit, "target weights").bytes, WithinRel(141.105e9, 1e-4));
  CHECK_THAT(fit.capacity_bytes, WithinRel(85.52e9, 1e-4));
  // KV: 2 x 8 KV heads x 128 x 2 B x 80 layers x (2048 + 4) tokens = 672 MB.
  CHECK_THAT(part(fit, "target KV cache").bytes, WithinRel(2.0 * 8 * 128 * 2 * 80 * 2052, 1e-12));
  // vLLM on a GPU of >= 70 GiB: a profile run of 8192 tokens x (2 x 28672 + 4 x 8192) x 2 B plus
  // 1024 x 128,256 fp32 logits = 1.5057 + 0.5253 = 2.002 GB; the unused 10%: 8.552 GB.
  CHECK_THAT(part(fit, "activations").bytes, WithinRel(8192.0 * (2 * 28672 + 4 * 8192) * 2 + 1024.0 * 128256 * 4, 1e-12));
  CHECK_THAT(fit.engine_fraction, WithinRel(0.9, 1e-12));
  CHECK_THAT(part(fit, "engine reserve").bytes, WithinRel(0.1 * 81559 * kMiB, 1e-9));
  CHECK_FALSE(fit.fits());
  // + the EAGLE-3 head 2.806 GB and its KV 8.4 MB: 155.14 GB, 69.6 GB over.
  CHECK_THAT(fit.over_bytes(), WithinRel(155.14e9 - 85.52e9, 1e-3));
  CHECK_THAT(specsim::describe_overflow(s, fit),
             Contains("69.6 GB more than the 85.5 GB of one h100-sxm (TP1, batch 1, context 2048): target weights 141.1 GB"));
  // At TP4, as shipped: 35.3 GB of weights per GPU; it fits.
  CHECK(specsim::memory_fit(specsim::load_scenario("llama-3.3-70b-eagle3-4x-h100-nvswitch", {}, kRoot)).fits());
}

TEST_CASE("memory fit: engine rules and engine.memory_fraction", "[memory]") {
  // SGLang on one H100 (81,559 MiB) at TP1: reserved 512 + 1.5 x 8192 + 2 x 256 + 1/8 x 1024 = 13,440,
  // raised to 10 GiB's floor (already above), + 2048 for the draft = 15,488; f = round(66,071 / 81,559, 3) = 0.81.
  const auto h100 = specsim::load_scenario("llama-3.3-70b-eagle3-4x-h100-nvswitch",
                                           {"parallel.tp=1", "engine.name=sglang"}, kRoot);
  CHECK_THAT(specsim::memory_fit(h100).engine_fraction, WithinRel(0.81, 1e-12));
  // No activation part under SGLang: its reserve holds them.
  for (const auto& p : specsim::memory_fit(h100).parts) CHECK(p.name != "activations");
  // The launch flag wins: --gpu-memory-utilization 0.94 leaves 6% unused.
  const auto set = specsim::load_scenario("llama-3.3-70b-eagle3-4x-h100-nvswitch", {"engine.memory_fraction=0.94"}, kRoot);
  const auto fit = specsim::memory_fit(set);
  CHECK_THAT(fit.engine_fraction, WithinRel(0.94, 1e-12));
  CHECK_THAT(part(fit, "engine reserve").bytes, WithinRel(0.06 * 81559 * kMiB, 1e-9));
  CHECK(fit.engine_rule == "engine.memory_fraction");
  CHECK_THROWS_WITH(specsim::load_scenario("llama-3.3-70b-eagle3-4x-h100-nvswitch", {"engine.memory_fraction=1.5"}, kRoot),
                    Contains("engine.memory_fraction"));
  // The KV cache grows with the batch: 64 requests hold 64 x the one request's.
  const auto one = specsim::memory_fit(set, 1);
  const auto many = specsim::memory_fit(set, 64);
  CHECK_THAT(part(many, "target KV cache").bytes, WithinRel(64 * part(one, "target KV cache").bytes, 1e-12));
  CHECK(many.batch == 64);
}

TEST_CASE("memory fit: every shipped scenario and validation row fits", "[memory]") {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(fs::path(SPECSIM_SOURCE_DIR) / "models/scenarios")) {
    files.push_back(e.path().string());
  }
  for (const auto& dir : fs::directory_iterator(fs::path(SPECSIM_SOURCE_DIR) / "validation")) {
    if (!dir.is_directory()) continue;
    for (const auto& e : fs::directory_iterator(dir.path())) {
      if (e.path().extension() == ".yaml") files.push_back(e.path().string());
    }
  }
  REQUIRE(files.size() > 50);
  for (const auto& f : files) {
    const auto s = specsim::load_scenario(f, {}, kRoot);
    const auto fit = specsim::memory_fit(s);
    INFO(f << ": " << (fit.fits() ? "" : specsim::describe_overflow(s, fit)));
    CHECK(fit.fits());
  }
}
