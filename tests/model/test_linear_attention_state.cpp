// A Gated DeltaNet layer's recurrent state: read once per forward, written back once per token a
// request runs in it (docs/references/models.md#hybrid-attention). Worked on Qwen3.5-397B-A17B at
// TP4 (models/llm/qwen3.5-397b-a17b-nvfp4.yaml: 45 of 60 layers linear, 16 key and 64 value heads
// of 128, convolution width 4, BF16 activations).
#include <catch2/catch.hpp>

#include "specsim/compute_model.hpp"
#include "specsim/load.hpp"

using Catch::Matchers::WithinRel;

namespace {
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

// Per linear layer, one request, one of 4 ranks (16 of the 64 value heads):
//   state 64 x 128 x 128 = 1,048,576 values; convolution (2 x 16 x 128 + 64 x 128) x 3 = 36,864
//   (1,048,576 + 36,864) / 4 x 2 B = 542,720 B.
constexpr double kStateBytesPerLinearLayer = 542'720.0;
constexpr double kLinearLayers = 45.0;
}  // namespace

TEST_CASE("linear attention: the state is read once and written once per token a request runs", "[hybrid]") {
  const specsim::TransformerSpec m = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "qwen3.5-397b-a17b-nvfp4"));
  REQUIRE(m.layer_attention.linear_layers == 45);
  CHECK_THAT(m.linear_state_bytes_per_layer(4), WithinRel(kLinearLayers * kStateBytesPerLinearLayer / 60.0, 1e-12));
  CHECK(specsim::TransformerSpec{}.linear_state_bytes_per_layer(4) == 0.0);

  const specsim::GpuSpec gpu = specsim::load_gpu(kRoot.resolve(specsim::DataKind::kGpu, "rtx-pro-6000-server"));
  const specsim::ComputeModel c(m, gpu, 4, 8, 1024, specsim::ComputeSettings{}, 0.84, 1.0);
  // Batch 8: a plain step (1 token per request) writes 8 states per linear layer; a verify of 3
  // tokens per request writes 24. The KV cache and the state reads are the same in both.
  const double plain = c.terms(8).kv_bytes;
  const double verify = c.terms(24).kv_bytes;
  CHECK_THAT(verify - plain, WithinRel(8 * 2 * kLinearLayers * kStateBytesPerLinearLayer, 1e-9));
  // The plain step itself: reads (KV cache of 15 layers + 45 states) and 45 writes, per request.
  const double kv_per_request = 15 * 1024 * m.kv_bytes_per_token_layer(4) + kLinearLayers * kStateBytesPerLinearLayer;
  CHECK_THAT(plain, WithinRel(8 * (kv_per_request + kLinearLayers * kStateBytesPerLinearLayer), 1e-9));
}
