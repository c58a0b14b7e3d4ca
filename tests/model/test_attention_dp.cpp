// Data-parallel attention (parallel.attention_dp): attention weights whole and the KV cache of the
// busiest rank's ceil(B / tp) requests, an all-gather and a reduce-scatter per layer in place of the
// all-reduces, and the memory each rank holds (docs/references/models.md#dp-attention).
#include <catch2/catch.hpp>

#include <algorithm>

#include "specsim/collectives.hpp"
#include "specsim/comm_model.hpp"
#include "specsim/compute_model.hpp"
#include "specsim/cycle.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"
#include "specsim/nccl_prior.hpp"

using Catch::Matchers::WithinRel;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);
const std::string kScenario = "deepseek-v3-mtp-8x-h200-dp-attention";

// DeepSeek-V3's MLA per layer (docs/references/models.md#layer-params), H = 7168, 128 heads:
//   q: 7168 x 1536 + 1536 x 128 x (128 + 64) = 11,010,048 + 37,748,736 = 48,758,784
//   kv_a: 7168 x (512 + 64) = 4,128,768;  kv_b: 512 x 128 x (128 + 128) = 16,777,216
//   o: 128 x 128 x 7168 = 117,440,512;     sum 187,105,280 parameters, FP8 with block scales
const double kMlaParams = 187'105'280.0;
// One token's MLA latent in one layer: (512 + 64) x 2 B (BF16) = 1152 B; x 4096 context tokens.
const double kKvPerRequestLayer = 1152.0 * 4096;

specsim::ForwardTerms decode_terms(const specsim::Scenario& s, int batch) {
  const specsim::ComputeModel m(s.model, s.gpu, s.parallel.tp, batch, s.context_tokens, s.compute, 0.84, 1.0,
                                specsim::rank_placement(s.parallel));
  return m.terms(double(batch));
}

}  // namespace

TEST_CASE("attention dp: whole attention weights, the KV of ceil(B / tp) requests per rank", "[attention_dp]") {
  const specsim::Scenario dp = specsim::load_scenario(kScenario, {}, kRoot);
  const specsim::Scenario tp = specsim::load_scenario(kScenario, {"parallel.attention_dp=false"}, kRoot);
  REQUIRE(dp.parallel.attention_dp == 8);  // `attention_dp: true` is dp = tp
  REQUIRE(dp.parallel.tp == 8);
  REQUIRE(dp.context_tokens == 4096);
  REQUIRE(dp.batch == 128);
  const double attention = kMlaParams * specsim::bytes_per_param(specsim::Dtype::kFp8);
  REQUIRE_THAT(dp.model.attention_params(), WithinRel(kMlaParams, 1e-12));
  // Weights: each of the 61 layers reads its attention whole instead of an eighth: 61 x 7/8 x attention more.
  for (int batch : {1, 8}) {
    INFO(batch);
    CHECK_THAT(decode_terms(dp, batch).weight_bytes - decode_terms(tp, batch).weight_bytes,
               WithinRel(61 * attention * 7.0 / 8.0, 1e-9));
  }
  // KV at batch 8: one request per rank, 61 x 4,718,592 B = 287,834,112 B; TP8 reads all 8 requests'
  // latents on every rank (MLA's latent is not split by head): 8x that.
  CHECK_THAT(decode_terms(dp, 8).kv_bytes, WithinRel(61 * 1 * kKvPerRequestLayer, 1e-12));
  CHECK_THAT(decode_terms(tp, 8).kv_bytes, WithinRel(61 * 8 * kKvPerRequestLayer, 1e-12));
  // KV at batch 1: one rank reads the one request, the same bytes as TP; the other seven wait.
  CHECK_THAT(decode_terms(dp, 1).kv_bytes, WithinRel(61 * kKvPerRequestLayer, 1e-12));
  CHECK(decode_terms(dp, 1).kv_bytes == decode_terms(tp, 1).kv_bytes);
  // At batch 9 the busiest rank holds ceil(9 / 8) = 2 requests.
  CHECK_THAT(decode_terms(dp, 9).kv_bytes, WithinRel(61 * 2 * kKvPerRequestLayer, 1e-12));
  // Attention flops: all 128 heads on the busiest rank's tokens, q x ceil(B/8)/B, against 128/8 heads
  // for every token: equal when 8 divides B; at batch 1 the one rank does 8x a TP rank's.
  CHECK_THAT(decode_terms(dp, 8).attention_flops, WithinRel(decode_terms(tp, 8).attention_flops, 1e-12));
  CHECK_THAT(decode_terms(dp, 1).attention_flops, WithinRel(8 * decode_terms(tp, 1).attention_flops, 1e-12));
}

TEST_CASE("attention dp: an all-gather and a reduce-scatter per layer instead of the all-reduces", "[attention_dp]") {
  const specsim::Scenario s = specsim::load_scenario(kScenario, {}, kRoot);
  const auto list = [&](const specsim::Parallelism& p, double tokens, int requests) {
    return specsim::forward_collectives(s.model, specsim::ForwardOf::kTarget, p, s.engine.embedding_allreduce, tokens,
                                        s.topology.link, requests);
  };
  // Verify at batch 30, 4 tokens each (q = 120): every rank's slot padded to ceil(30/8) = 4 requests,
  // gathered 8 x 4 x 4 tokens x 7168 x 2 B = 1,835,008 B; 61 layers, no all-reduce (attention and
  // the embedding run on an attention-TP group of one).
  const auto verify = list(s.parallel, 120.0, 30);
  REQUIRE(verify.size() == 2);
  CHECK(specsim::count_of(verify, specsim::CollectiveOp::kAllReduce) == 0);
  CHECK(specsim::count_of(verify, specsim::CollectiveOp::kAllGather) == 61);
  CHECK(specsim::count_of(verify, specsim::CollectiveOp::kReduceScatter) == 61);
  CHECK(verify[0].bytes == 8 * 4 * 4 * 7168 * 2.0);
  CHECK(verify[1].bytes == verify[0].bytes);
  CHECK(verify[0].ranks == 8);
  // Decode at batch 1: the one token is padded onto all 8 slots, 8 x 7168 x 2 B = 114,688 B.
  CHECK(list(s.parallel, 1.0, 1)[0].bytes == 8 * 7168 * 2.0);
  // With DeepEP the 58 MoE layers dispatch and combine instead; the 3 dense layers still gather.
  specsim::Parallelism deepep = s.parallel;
  deepep.ep = 8;
  deepep.moe_a2a = specsim::MoeA2aBackend::kDeepep;
  const auto a2a = list(deepep, 128.0, 32);
  CHECK(specsim::count_of(a2a, specsim::CollectiveOp::kAllReduce) == 0);
  CHECK(specsim::count_of(a2a, specsim::CollectiveOp::kAllGather) == 3);
  CHECK(specsim::count_of(a2a, specsim::CollectiveOp::kReduceScatter) == 3);
  CHECK(specsim::count_of(a2a, specsim::CollectiveOp::kAllToAll) == 2 * 58);
  // The draft (the MTP module) keeps TP: its all-reduces are unchanged.
  specsim::Parallelism plain = s.parallel;
  plain.attention_dp = 1;
  CHECK(specsim::count_of(specsim::forward_collectives(s.draft, specsim::ForwardOf::kDraft, s.parallel, std::nullopt,
                                                       32.0, s.topology.link, 32),
                          specsim::CollectiveOp::kAllReduce) ==
        specsim::count_of(specsim::forward_collectives(s.draft, specsim::ForwardOf::kDraft, plain, std::nullopt, 32.0,
                                                       s.topology.link, 32),
                          specsim::CollectiveOp::kAllReduce));
}

TEST_CASE("attention dp: NCCL's all-gather takes r-1 ring steps", "[attention_dp][nccl_prior]") {
  // Ring Simple over PCIe, 8 ranks, 2 channels x 12 GB/s = busBw 24 GB/s, S = 1 MiB:
  //   all-gather: 8.4 us + 7 x 5.7 us + 1,048,576 x 7 / (8 x 24e9) = 48.3 us + 38.2293 us = 86.5293 us
  //   all-reduce: 8.4 us + 14 x 5.7 us + 1,048,576 x 14 / (8 x 24e9) = 88.2 us + 76.4586 us = 164.6586 us
  specsim::NcclPriorConfig c;
  c.ranks = 8;
  c.protos = {specsim::NcclProto::kSimple};
  c.algos = {specsim::NcclAlgo::kRing};
  const double s = 1'048'576.0;
  CHECK_THAT(specsim::nccl_prior_gather_pick(c, s).time_s, WithinRel(48.3e-6 + s * 7 / (8 * 24e9), 1e-9));
  CHECK_THAT(specsim::nccl_prior_pick(c, s).time_s, WithinRel(88.2e-6 + s * 14 / (8 * 24e9), 1e-9));
}

TEST_CASE("attention dp: memory per rank and the cycle at batch 128 and 1", "[attention_dp]") {
  const specsim::Scenario dp = specsim::load_scenario(kScenario, {}, kRoot);
  const specsim::Scenario tp = specsim::load_scenario(kScenario, {"parallel.attention_dp=false"}, kRoot);
  const auto part = [](const specsim::MemoryFit& f, const std::string& name) {
    for (const auto& p : f.parts) {
      if (p.name == name) return p.bytes;
    }
    FAIL("no part " << name);
    return 0.0;
  };
  // KV per rank at batch 128: 16 requests x (4096 + 4 verify tokens) x 1152 B x 61 layers = 4.61 GB
  // under DP attention, all 128 (36.9 GB) under TP8.
  const double per_request = 4100 * 1152.0 * 61;
  CHECK_THAT(part(specsim::memory_fit(dp), "target KV cache"), WithinRel(16 * per_request, 1e-12));
  CHECK_THAT(part(specsim::memory_fit(tp), "target KV cache"), WithinRel(128 * per_request, 1e-12));
  // Weights: attention replicated, 61 x 7/8 x the layer's MLA bytes more per rank.
  const double attention = 61 * kMlaParams * specsim::bytes_per_param(specsim::Dtype::kFp8);
  CHECK_THAT(part(specsim::memory_fit(dp), "target weights") - part(specsim::memory_fit(tp), "target weights"),
             WithinRel(attention * 7.0 / 8.0, 1e-9));
  // Batch 128: each rank reads an eighth of the KV (32.3 GB less per forward) and 10 GB more
  // attention weights, so the verify computes faster.
  const auto pd = specsim::CycleModel(dp).predict();
  const auto pt = specsim::CycleModel(tp).predict();
  CHECK(pd.verify.compute_s < pt.verify.compute_s);
  // Batch 1: the one rank with the request reads the whole attention: slower than TP8.
  const auto p1d = specsim::CycleModel(specsim::load_scenario(kScenario, {"workload.batch=1"}, kRoot)).predict();
  const auto p1t = specsim::CycleModel(
                       specsim::load_scenario(kScenario, {"workload.batch=1", "parallel.attention_dp=false"}, kRoot))
                       .predict();
  CHECK(p1d.verify.compute_s > p1t.verify.compute_s);
  CHECK(p1d.spec_tokens_per_s < p1t.spec_tokens_per_s);
}

TEST_CASE("attention dp: the gather priced over PCIe and over NVLink", "[attention_dp][comm]") {
  // One all-gather of S = 7 MiB (a batch-128 verify's gathered tensor): the box's NCCL all-reduce of
  // S times NCCL's own gather / all-reduce ratio on that box; fewer ring steps, so cheaper than the
  // all-reduce on either link class.
  const double s = 7.0 * 1024 * 1024;
  for (const std::string& name : {std::string("kimi-k2.5-eagle3-8x-rtx-pro-6000"), kScenario}) {
    INFO(name);
    const specsim::Scenario sc =
        specsim::load_scenario(name, {"parallel.attention_dp=true", "comm.implementation=nccl"}, kRoot);
    const specsim::CommModel comm = specsim::CommModel::build(sc, 0.0, 0.0);
    const specsim::NcclPriorConfig cfg = specsim::nccl_prior_config(sc.topology, sc.gpu, sc.parallel.tp);
    const double ratio = specsim::nccl_prior_gather_pick(cfg, s).time_s / specsim::nccl_prior_pick(cfg, s).time_s;
    const double allreduce = comm.allreduce_s(s, specsim::LaunchMode::kGraph);
    CHECK_THAT(comm.gather_s(s, specsim::LaunchMode::kGraph), WithinRel(allreduce * ratio, 1e-12));
    CHECK(ratio < 1.0);
    CHECK(ratio > 0.4);
  }
}

TEST_CASE("attention dp: dp groups smaller than tp run attention TP inside each group", "[attention_dp]") {
  // SGLang --tp 8 --dp 2 --enable-dp-attention: two groups of four ranks.
  const specsim::Scenario dp2 = specsim::load_scenario(kScenario, {"parallel.attention_dp=2"}, kRoot);
  const specsim::Scenario tp = specsim::load_scenario(kScenario, {"parallel.attention_dp=false"}, kRoot);
  REQUIRE(dp2.parallel.attention_dp == 2);
  REQUIRE(dp2.parallel.attention_tp() == 4);
  const double attention = kMlaParams * specsim::bytes_per_param(specsim::Dtype::kFp8);
  // Weights: a quarter of each layer's attention instead of an eighth: 61 x (1/4 - 1/8) x attention more.
  CHECK_THAT(decode_terms(dp2, 8).weight_bytes - decode_terms(tp, 8).weight_bytes,
             WithinRel(61 * attention / 8.0, 1e-9));
  // KV at batch 8: the group's ceil(8 / 2) = 4 requests (MLA's latent whole on each rank).
  CHECK_THAT(decode_terms(dp2, 8).kv_bytes, WithinRel(61 * 4 * kKvPerRequestLayer, 1e-12));
  // Attention flops at batch 8: 128 / 4 heads for 4 of the 8 requests, the same as TP8's 16 heads for all 8.
  CHECK_THAT(decode_terms(dp2, 8).attention_flops, WithinRel(decode_terms(tp, 8).attention_flops, 1e-12));

  // Collectives of a verify at batch 30, 4 tokens each: the slot is ceil(30 / 2) = 15 requests x 4 =
  // 60 tokens x 7168 x 2 B = 860,160 B, summed and split over the group's 4 ranks before the gather
  // and joined in it after; the gather over all 8 ranks moves 2 slots = 1,720,320 B.
  const auto verify = specsim::forward_collectives(dp2.model, specsim::ForwardOf::kTarget, dp2.parallel,
                                                   dp2.engine.embedding_allreduce, 120.0, dp2.topology.link, 30);
  REQUIRE(verify.size() == 4);
  CHECK(specsim::count_of(verify, specsim::CollectiveOp::kAllReduce) == 0);
  CHECK(specsim::count_of(verify, specsim::CollectiveOp::kReduceScatter) == 2 * 61);
  CHECK(specsim::count_of(verify, specsim::CollectiveOp::kAllGather) == 2 * 61);
  for (const auto& c : verify) {
    INFO(c.carries);
    if (c.ranks == 4) CHECK(c.bytes == 60 * 7168 * 2.0);
    else CHECK(c.bytes == 2 * 60 * 7168 * 2.0);
  }

  // Memory: attention weights / 4 on each rank.
  const auto fit = specsim::memory_fit(dp2);
  const auto weights = std::find_if(fit.parts.begin(), fit.parts.end(), [](const auto& p) { return p.name == "target weights"; });
  REQUIRE(weights != fit.parts.end());
  const double all_attention = 61 * attention;
  CHECK_THAT(weights->bytes, WithinRel((dp2.model.weight_bytes() - all_attention) / 8 + all_attention / 4, 1e-12));
}

TEST_CASE("attention dp: the dp groups must divide tp, and 1 is plain TP", "[attention_dp]") {
  CHECK(specsim::load_scenario(kScenario, {"parallel.attention_dp=1"}, kRoot).parallel.attention_dp == 1);
  CHECK(specsim::load_scenario(kScenario, {"parallel.attention_dp=4"}, kRoot).parallel.attention_tp() == 2);
  for (const char* bad : {"parallel.attention_dp=3", "parallel.attention_dp=16", "parallel.attention_dp=0"}) {
    INFO(bad);
    try {
      (void)specsim::load_scenario(kScenario, {bad}, kRoot);
      FAIL("accepted");
    } catch (const specsim::Error& e) {
      CHECK_THAT(std::string(e.what()), Catch::Matchers::Contains("attention_dp"));
    }
  }
}

TEST_CASE("attention dp: the MTP draft's KV cache is its group's ceil(B / dp) requests, as the target's", "[attention_dp]") {
  const specsim::Scenario dp = specsim::load_scenario(kScenario, {"workload.batch=64"}, kRoot);
  const specsim::Scenario tp = specsim::load_scenario(kScenario, {"workload.batch=64", "parallel.attention_dp=false"}, kRoot);
  const auto part = [](const specsim::MemoryFit& f, const std::string& name) {
    const auto it = std::find_if(f.parts.begin(), f.parts.end(), [&](const auto& p) { return p.name == name; });
    REQUIRE(it != f.parts.end());
    return *it;
  };
  const auto fit = specsim::memory_fit(dp);
  // The MTP module has one layer of the target's MLA: per rank, ceil(64 / 8) = 8 requests' latents of
  // (4096 context + the verify's tokens) each, the target's per-layer bytes over its 61 layers.
  const auto target = part(fit, "target KV cache");
  const auto draft = part(fit, "draft KV cache");
  CHECK_THAT(draft.bytes, WithinRel(target.bytes / 61.0, 1e-9));
  CHECK_THAT(draft.basis, Catch::Matchers::Contains("ceil(64 / dp 8) requests per rank"));
  // Without DP attention every rank caches all 64 requests' latents: 8x the DP figure.
  CHECK_THAT(part(specsim::memory_fit(tp), "draft KV cache").bytes, WithinRel(8.0 * draft.bytes, 1e-9));
}
