// Expert parallelism (parallel.ep, parallel.moe_a2a): whole experts per rank, the busiest rank's
// expert reads, and DeepEP's dispatch and combine in place of the MoE all-reduce
// (docs/references/models.md#expert-parallel).
#include <catch2/catch.hpp>

#include <cmath>

#include "specsim/collectives.hpp"
#include "specsim/comm_model.hpp"
#include "specsim/compute_model.hpp"
#include "specsim/cycle.hpp"
#include "specsim/load.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
const std::string kScenario = "deepseek-v3-mtp-8x-h200-ep8";

}  // namespace

TEST_CASE("expert parallel: the busiest rank's distinct experts", "[expert_parallel]") {
  // Qwen3-235B-A22B (E = 128, k = 8) at ep 8, one token: each rank holds m = 16 experts, each hit
  // with p = 8/128 = 1/16, so X ~ Binomial(16, 1/16) per rank with F(0) = (15/16)^16 = 0.35607,
  // F(1) = F(0) + (15/16)^15 = 0.73588, F(2) = 0.92579, F(3) = 0.98487, F(4) = 0.99767, ...
  // E[max of 8] = sum_j (1 - F(j)^8) = 0.99974 + 0.91415 + 0.46042 + 0.11462 + 0.01848 + ... = 2.50976
  // whole experts, against the mean m p = 1 (TP8 reads 8 experts / 8 ranks: 1 expert's worth).
  CHECK_THAT(specsim::expected_max_experts_per_rank(128, 8, 1.0, 8), WithinRel(2.50976, 1e-5));
  // DeepSeek-V3 (E = 256, k = 8): m = 32, p = 1/32: 2.54449 (computed the same way).
  CHECK_THAT(specsim::expected_max_experts_per_rank(256, 8, 1.0, 8), WithinRel(2.54449, 1e-5));
  // One rank is the mean: expected_distinct_experts exactly.
  CHECK(specsim::expected_max_experts_per_rank(256, 8, 4.0, 1) == specsim::expected_distinct_experts(256, 8, 4.0));
  // Property: never below the mean per rank, never above the rank's m experts, not falling with tokens.
  double last = 0.0;
  for (double q : {1.0, 2.0, 4.0, 8.0, 32.0, 256.0, 4096.0}) {
    INFO(q);
    const double busiest = specsim::expected_max_experts_per_rank(256, 8, q, 8);
    CHECK(busiest >= specsim::expected_distinct_experts(256, 8, q) / 8 - 1e-12);
    CHECK(busiest <= 32.0 + 1e-9);
    CHECK(busiest >= last);
    last = busiest;
  }
}

TEST_CASE("expert parallel: default EP reads whole experts on the busiest rank, same collectives", "[expert_parallel]") {
  const specsim::Scenario ep = specsim::load_scenario(kScenario, {}, kRoot);
  const specsim::Scenario tp = specsim::load_scenario(kScenario, {"parallel.ep=1"}, kRoot);
  REQUIRE(ep.parallel.ep == 8);
  REQUIRE(ep.model.moe_layers() == 58);
  // Expert bytes per rank in one decode forward (q = 1): DeepSeek-V3's expert is 3 x 7168 x 2048 =
  // 44,040,192 parameters, FP8 (1 + 4/16384 B with its block scales). TP8: 58 layers x 8 experts
  // touched x an eighth each; EP8: 58 x 2.54449 whole experts on the busiest rank.
  const double expert = 3.0 * 7168 * 2048 * specsim::bytes_per_param(specsim::Dtype::kFp8);
  const auto terms = [](const specsim::Scenario& s) {
    const specsim::ComputeModel m(s.model, s.gpu, s.parallel.tp, s.batch, s.context_tokens, s.compute, 0.84, 1.0,
                                  specsim::rank_placement(s.parallel));
    return m.terms(1.0);
  };
  CHECK_THAT(terms(tp).expert_bytes, WithinRel(58 * 8 * expert / 8, 1e-12));
  CHECK_THAT(terms(ep).expert_bytes, WithinRel(58 * 2.54449 * expert, 1e-5));
  // Nothing else a rank reads changes without an all-to-all backend.
  CHECK(terms(ep).weight_bytes == terms(tp).weight_bytes);
  // The MoE block still ends in the TP all-reduce: the lists are the same.
  const auto list = [](const specsim::Scenario& s) {
    return specsim::forward_collectives(s.model, specsim::ForwardOf::kTarget, s.parallel, s.engine.embedding_allreduce,
                                        4.0, s.topology.link);
  };
  REQUIRE(list(ep).size() == 1);
  CHECK(list(ep)[0].count == list(tp)[0].count);
  // At batch 1 the busiest rank reads 2.5x the expert bytes: the verify is slower under EP.
  const auto pe = specsim::CycleModel(ep).predict();
  const auto pt = specsim::CycleModel(tp).predict();
  CHECK(pe.verify.compute_s > pt.verify.compute_s);
  CHECK(pe.verify.comm_s == pt.verify.comm_s);
}

TEST_CASE("expert parallel: DeepEP replaces each MoE all-reduce with a dispatch and a combine", "[expert_parallel]") {
  const specsim::Scenario s = specsim::load_scenario(kScenario, {"parallel.moe_a2a=deepep"}, kRoot);
  // A verify of 4 tokens at batch 1: each rank dispatches its share, ceil(4 / 8) = 1 token, to its 8
  // experts' ranks: 8 x 7168 x 1 B (FP8) = 57,344 B out, 8 x 7168 x 2 B (BF16) = 114,688 B back, once
  // per MoE layer (58). The all-reduces left: 2 x 61 - 58 + 1 embedding = 65.
  const auto list = specsim::forward_collectives(s.model, specsim::ForwardOf::kTarget, s.parallel,
                                                 s.engine.embedding_allreduce, 4.0, s.topology.link);
  REQUIRE(list.size() == 3);
  CHECK(list[0].op == specsim::CollectiveOp::kAllReduce);
  CHECK(list[0].count == 65);
  CHECK(list[1].op == specsim::CollectiveOp::kAllToAll);
  CHECK(list[1].bytes == 57344.0);
  CHECK(list[1].count == 58);
  CHECK(list[1].ranks == 8);
  CHECK(list[2].bytes == 114688.0);
  CHECK(list[2].count == 58);
  // 64 tokens: ceil(64 / 8) = 8 per rank, 8 x 57,344 B.
  CHECK(specsim::forward_collectives(s.model, specsim::ForwardOf::kTarget, s.parallel, s.engine.embedding_allreduce,
                                     64.0, s.topology.link)[1]
            .bytes == 8 * 57344.0);
  // Priced from the topology: the 30 us kernel-latency prior + 7/8 x 57,344 B / 450 GB/s (H200
  // NVLink per direction).
  const auto comm = specsim::CommModel::build(s, 0.0, 0.0);
  CHECK_THAT(comm.time_s(list[1], specsim::LaunchMode::kGraph), WithinRel(30e-6 + 7.0 / 8 * 57344 / 450e9, 1e-12));
  // The draft (the MTP module) keeps its TP all-reduces.
  CHECK(specsim::count_of(specsim::forward_collectives(s.draft, specsim::ForwardOf::kDraft, s.parallel,
                                                       s.engine.embedding_allreduce, 1.0, s.topology.link),
                          specsim::CollectiveOp::kAllToAll) == 0);
  // Shared experts are whole on every rank: 58 x 44,040,192 x 7/8 more FP8 bytes than TP8 slices.
  const auto weight_bytes = [](const specsim::Scenario& sc) {
    return specsim::ComputeModel(sc.model, sc.gpu, sc.parallel.tp, sc.batch, sc.context_tokens, sc.compute, 0.84, 1.0,
                                 specsim::rank_placement(sc.parallel))
        .terms(1.0)
        .weight_bytes;
  };
  const specsim::Scenario plain = specsim::load_scenario(kScenario, {}, kRoot);
  CHECK_THAT(weight_bytes(s) - weight_bytes(plain),
             WithinRel(58 * 3.0 * 7168 * 2048 * specsim::bytes_per_param(specsim::Dtype::kFp8) * 7 / 8, 1e-9));
  const auto p = specsim::CycleModel(s).predict();
  CHECK(p.verify.allreduce_count == 65);
  CHECK(p.verify.collectives.size() == 3);
}

TEST_CASE("expert parallel: the loader names the rule a bad ep breaks", "[expert_parallel][load]") {
  CHECK_THROWS_WITH(specsim::load_scenario(kScenario, {"parallel.ep=16"}, kRoot),
                    Contains("parallel.ep: = 16: must divide parallel.tp (8)"));
  // ep 4 divides tp 8, but an all-to-all backend needs one expert-parallel rank per GPU.
  CHECK_THROWS_WITH(specsim::load_scenario(kScenario, {"parallel.ep=4", "parallel.moe_a2a=deepep"}, kRoot),
                    Contains("parallel.moe_a2a: = deepep") && Contains("parallel.ep = parallel.tp (8)"));
  CHECK_THROWS_WITH(specsim::load_scenario(kScenario, {"parallel.moe_a2a=nvshmem"}, kRoot),
                    Contains("parallel.moe_a2a") && Contains("deepep"));
  CHECK_THROWS_WITH(
      specsim::load_scenario(kScenario, {"topology=8x-rtx-pro-6000-pcie5", "parallel.moe_a2a=deepep"}, kRoot),
      Contains("parallel.moe_a2a: = deepep: DeepEP needs NVLink"));
}

TEST_CASE("expert parallel: ep groups smaller than tp split each expert over the group", "[expert_parallel]") {
  // TensorRT-LLM --tp 8 --ep 4: 4 groups of 64 whole experts, each expert sliced over 2 GPUs.
  const specsim::Scenario s = specsim::load_scenario(kScenario, {"parallel.ep=4", "parallel.moe_a2a=none"}, kRoot);
  REQUIRE(s.parallel.ep == 4);
  const specsim::ComputeModel ep4(s.model, s.gpu, 8, 1, s.context_tokens, s.compute, 0.84, 1.0,
                                  specsim::rank_placement(s.parallel));
  const specsim::Scenario tp = specsim::load_scenario(kScenario, {"parallel.ep=1", "parallel.moe_a2a=none"}, kRoot);
  const specsim::ComputeModel tp8(tp.model, tp.gpu, 8, 1, tp.context_tokens, tp.compute, 0.84, 1.0,
                                  specsim::rank_placement(tp.parallel));
  // One decode token, 8 experts per layer: under TP8 every rank reads an eighth of all 8; under EP4 x
  // TP2 the busiest group's expected experts, E[max of 4 groups], each a half. With
  // expected_max_experts_per_rank(256, 8, 1, 4) = m experts: m / 2 against 8 / 8 expert-widths.
  const double m = specsim::expected_max_experts_per_rank(256, 8, 1.0, 4);
  CHECK_THAT(ep4.terms(1.0).expert_bytes / tp8.terms(1.0).expert_bytes, WithinRel((m / 2.0) / (8.0 / 8.0), 1e-9));
}

TEST_CASE("routing skew: shared within a request, independent across requests", "[expert_parallel]") {
  // Kimi (E = 384, k = 8) with the home case's calibrated skew 0.038. One request verifying 4 tokens:
  // D = 1 + 3 x 0.038 = 1.114 draws, 384 (1 - (1 - 8/384)^1.114) = 8.901 experts (docs/model.md).
  CHECK_THAT(specsim::routing_draws(4.0, 1.0, 0.038), WithinRel(1.114, 1e-12));
  CHECK_THAT(specsim::expected_distinct_experts(384, 8, 4.0, 0.038), WithinRel(8.9014, 1e-4));
  // 128 requests decoding one token each route independently: D = 128 whatever the skew, so
  // 384 (1 - (376/384)^128) = 358.06 experts, not the 44.3 of D = 1 + 127 x 0.038 = 5.83 from
  // treating the batch as one request.
  CHECK(specsim::routing_draws(128.0, 128.0, 0.038) == 128.0);
  CHECK_THAT(specsim::expected_distinct_experts(384, 8, 128.0, 0.038, 128.0), WithinRel(358.06, 1e-4));
  // 8 requests x 4 verify tokens: D = 8 x 1.114 = 8.912.
  CHECK_THAT(specsim::routing_draws(32.0, 8.0, 0.038), WithinRel(8.912, 1e-12));
  // Uniform routing (skew 1) is q tokens, however they are split into requests.
  CHECK(specsim::routing_draws(32.0, 8.0, 1.0) == 32.0);
  CHECK(specsim::expected_distinct_experts(128, 8, 32.0, 1.0, 8.0) == specsim::expected_distinct_experts(128, 8, 32.0));
  // The busiest rank under ep follows the same draws.
  CHECK(specsim::expected_max_experts_per_rank(384, 8, 32.0, 1, 0.038, 8.0) ==
        specsim::expected_distinct_experts(384, 8, 32.0, 0.038, 8.0));
}
