// The collectives one forward lists, and the comm layer pricing them by operation.
#include <catch2/catch.hpp>

#include "specsim/collectives.hpp"
#include "specsim/comm_model.hpp"
#include "specsim/cycle.hpp"
#include "specsim/load.hpp"

using Catch::Matchers::WithinRel;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

}  // namespace

TEST_CASE("collectives: a TP8 Kimi verify lists 123 all-reduces of 56 KiB", "[collectives]") {
  const specsim::Scenario s = specsim::load_scenario(specsim::kDefaultScenario, {}, kRoot);
  REQUIRE(s.parallel.tp == 8);
  // Verify of 4 tokens: 2 all-reduces x 61 layers + 1 vocab-parallel embedding = 123, each of
  // 4 x 7168 x 2 B (bf16) = 57,344 B, over the box's ring link (docs/references/models.md#tp-collectives).
  const auto list = specsim::forward_collectives(s.model, specsim::ForwardOf::kTarget, s.parallel, std::nullopt, 4.0,
                                                 s.topology.link);
  REQUIRE(list.size() == 1);
  CHECK(list[0].op == specsim::CollectiveOp::kAllReduce);
  CHECK(list[0].count == 2 * 61 + 1);
  CHECK(list[0].bytes == 4.0 * 7168 * 2);
  CHECK(list[0].ranks == 8);
  CHECK(list[0].link == s.topology.link);
  // The engine's override drops the embedding's.
  CHECK(specsim::count_of(specsim::forward_collectives(s.model, specsim::ForwardOf::kTarget, s.parallel, false, 4.0,
                                                       s.topology.link),
                          specsim::CollectiveOp::kAllReduce) == 122);
  // A replicated draft (draft_tp 1) never talks; a TP1 target neither.
  specsim::Parallelism replicated = s.parallel;
  replicated.draft_tp = 1;
  CHECK(specsim::forward_collectives(s.draft, specsim::ForwardOf::kDraft, replicated, false, 1.0, s.topology.link).empty());
  CHECK(specsim::forward_collectives(s.model, specsim::ForwardOf::kTarget, specsim::Parallelism{}, std::nullopt, 1.0,
                                     s.topology.link)
            .empty());
}

TEST_CASE("collectives: pipeline stages add pp - 1 sends to the target, none to the draft", "[collectives]") {
  specsim::Parallelism p;
  p.tp = 2;
  p.pp = 4;
  const specsim::Scenario s = specsim::load_scenario(specsim::kDefaultScenario, {}, kRoot);
  const auto target = specsim::forward_collectives(s.model, specsim::ForwardOf::kTarget, p, std::nullopt, 1.0,
                                                   specsim::LinkClass::kNvlink);
  REQUIRE(target.size() == 2);
  CHECK(target[1].op == specsim::CollectiveOp::kSend);
  CHECK(target[1].count == 3);  // 4 stages, 3 boundaries
  CHECK(target[1].ranks == 2);
  CHECK(target[1].bytes == 7168.0 * 2);  // one token's bf16 hidden state
  CHECK(specsim::count_of(specsim::forward_collectives(s.draft, specsim::ForwardOf::kDraft, p, false, 1.0,
                                                       specsim::LinkClass::kNvlink),
                          specsim::CollectiveOp::kSend) == 0);
}

TEST_CASE("collectives: the comm layer prices each by its operation, a forward sums count x each",
          "[collectives][comm]") {
  // TP4 x PP2 on the home box; its 8-rank NCCL table scaled to 4 ranks by NCCL's model.
  const specsim::Scenario s = specsim::load_scenario(
      specsim::kDefaultScenario, {"parallel.tp=4", "parallel.pp=2", "comm.rank_scaling=nccl", "comm.custom_profile="},
      kRoot);
  const auto comm = specsim::CommModel::build(s, 0.0, 0.0);
  const auto list = specsim::forward_collectives(s.model, specsim::ForwardOf::kTarget, s.parallel, std::nullopt, 4.0,
                                                 s.topology.link);
  REQUIRE(list.size() == 2);
  // An all-reduce through the registered implementation, a send by send_s: 10 us + 57,344 B / 56 GB/s
  // (PCIe Gen5 peer bandwidth, docs/references/hardware.md#pcie5-p2p-measured).
  CHECK(comm.time_s(list[0], specsim::LaunchMode::kGraph) == comm.allreduce_s(list[0].bytes, specsim::LaunchMode::kGraph));
  CHECK_THAT(comm.time_s(list[1], specsim::LaunchMode::kGraph), WithinRel(10e-6 + 57344.0 / 56e9, 1e-12));
  for (const auto& row : specsim::CommModel::operations()) CHECK(row.equation[0] != '\0');

  // The verify's breakdown keeps the priced list, and its comm time is the sum over it.
  const specsim::CycleModel model(s);
  const auto p = model.predict();
  REQUIRE(p.verify.collectives.size() == 2);
  double sum = 0.0;
  for (const auto& c : p.verify.collectives) sum += c.collective.count * c.each_s;
  CHECK_THAT(p.verify.comm_s, WithinRel(sum, 1e-12));
  CHECK(p.verify.allreduce_count == p.verify.collectives[0].collective.count);
  CHECK(p.verify.allreduce_each_s == p.verify.collectives[0].each_s);
}
