// Plausibility bounds (plausibility.hpp) and the load-time consistency checks between files:
// values that overflow or no hardware has, repeated keys, extra documents, a draft that does not
// fit its model, a model in the wrong role, measurement parts that do not add up, TP that cannot
// split the heads, and engine logs with impossible acceptance lengths. The damaged files of
// tests/data/invalid/ are checked in test_invalid_corpus.cpp; here the rest.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cli_run.hpp"
#include "specsim/compute_fit.hpp"
#include "specsim/engine_log.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/model_spec.hpp"
#include "specsim/plausibility.hpp"
#include "specsim/units.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;
using specsim::Magnitude;

namespace {

const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path.string();
}

bool has_note(const std::vector<std::string>& notes, const std::string& piece) {
  for (const auto& n : notes) {
    if (n.find(piece) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("plausibility: one row per magnitude, each with its reason, all in docs/edge-cases.md", "[plausibility]") {
  const std::string doc = read_text(std::string(SPECSIM_SOURCE_DIR) + "/docs/edge-cases.md");
  const auto rows = specsim::plausible_ranges();
  REQUIRE(rows.size() == 8);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    INFO(r.name);
    CHECK(static_cast<std::size_t>(r.magnitude) == i);
    CHECK(r.min < r.max);
    CHECK(!r.reason.empty());
    // The docs table names each row: "| size |", "| acceptance length |", ...
    CHECK_THAT(doc, Contains("| " + std::string(r.name) + " |"));
  }
}

TEST_CASE("plausibility: units refuse values that overflow or no hardware has", "[plausibility]") {
  using specsim::units::Quantity;
  // 1e300 x 1e12 (TB/s) = 1e312 > DBL_MAX (1.8e308): inf after the unit is applied.
  CHECK_THROWS_WITH(specsim::units::parse("1e300TB/s", Quantity::kBandwidth),
                    Contains("'1e300TB/s' is not a finite bandwidth once its unit is applied"));
  // 1e306 x 3600 (h) = 3.6e309 > DBL_MAX.
  CHECK_THROWS_WITH(specsim::units::parse("1e306h", Quantity::kDuration), Contains("not a finite duration"));
  // Finite but past each bound: 2 PB/s > 1 PB/s; 2 EFLOP/s; 2 PiB; 2 years; 2e9 tokens/s.
  CHECK_THROWS_WITH(specsim::units::parse("2PB/s", Quantity::kBandwidth),
                    Contains("outside the plausible bandwidth range [0, 1e+15]"));
  CHECK_THROWS_WITH(specsim::units::parse("2000PFLOP/s", Quantity::kFlopRate), Contains("FLOP rate range"));
  CHECK_THROWS_WITH(specsim::units::parse("2048TiB", Quantity::kBytes), Contains("size range"));
  CHECK_THROWS_WITH(specsim::units::parse("17532h", Quantity::kDuration), Contains("duration range"));
  CHECK_THROWS_WITH(specsim::units::parse("2e9tok/s", Quantity::kRate), Contains("rate range"));
  // The bounds themselves are plausible: 1 PB/s, 1 PiB (now a unit, so format_bytes reads back).
  CHECK(specsim::units::parse("1PB/s", Quantity::kBandwidth) == 1e15);
  CHECK(specsim::units::parse("1PiB", Quantity::kBytes) == 1125899906842624.0);
  CHECK(specsim::units::parse(specsim::units::format_bytes(std::ldexp(1.0, 50)), Quantity::kBytes) ==
        std::ldexp(1.0, 50));
  // Real values far inside: B200 HBM 8 TB/s, its 18 PFLOP/s sparse FP4.
  CHECK(specsim::units::parse("8TB/s", Quantity::kBandwidth) == 8e12);
  CHECK(specsim::units::parse("18PFLOP/s", Quantity::kFlopRate) == 18e15);
}

TEST_CASE("plausibility: a --set patch with an overflowing value names the patch and key", "[plausibility]") {
  try {
    (void)specsim::load_scenario(specsim::kDefaultScenario, {"compute.kernel_floor=1e306h"}, kRoot);
    FAIL("accepted");
  } catch (const specsim::Error& e) {
    CHECK(e.where().file == "--set compute.kernel_floor=1e306h");
    CHECK(e.key_path() == "compute.kernel_floor");
    CHECK_THAT(e.message(), Contains("not a finite duration"));
  }
}

TEST_CASE("plausibility: duplicate keys in nested mappings, and a second document", "[plausibility]") {
  const specsim::test::TempDir dir("specsim-plausibility-yaml");
  // The repeated key sits two levels down: every mapping a reader opens is checked.
  std::string model = read_text(std::string(SPECSIM_SOURCE_DIR) + "/models/llm/llama-3.1-8b.yaml");
  const auto at = model.find("  kv_heads: 8");
  REQUIRE(at != std::string::npos);
  model.insert(at, "  kv_heads: 3\n");
  const std::string path = write_text(dir.path / "dup.yaml", model);
  try {
    (void)specsim::load_model(path);
    FAIL("accepted");
  } catch (const specsim::Error& e) {
    CHECK(e.key_path() == "attention.kv_heads");
    CHECK_THAT(e.message(), Contains("duplicate key"));
    // The second occurrence is the one named (the first, 3, would have been read before).
    const int first_line = 1 + static_cast<int>(std::count(model.begin(), model.begin() + at, '\n'));
    CHECK(e.where().line == first_line + 1);
  }
  // An empty trailing document (a lone '---') holds nothing and is accepted.
  const std::string gpu = read_text(std::string(SPECSIM_SOURCE_DIR) + "/models/gpu/h200.yaml");
  CHECK_NOTHROW(specsim::load_gpu(write_text(dir.path / "trailing.yaml", gpu + "---\n")));
  CHECK_THROWS_WITH(specsim::load_gpu(write_text(dir.path / "two.yaml", gpu + "---\nname: other\n")),
                    Contains("a second YAML document starts here"));
}

TEST_CASE("consistency: tensor parallelism splits heads, replicates KV heads with a note", "[consistency]") {
  const auto llama70 = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "llama-3.3-70b"));  // 64 / 8
  const auto qwen235 = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "qwen3-235b-a22b"));  // 64 / 4
  const auto kimi = specsim::load_model(kRoot.resolve(specsim::DataKind::kModel, "kimi-k2.5"));  // MLA, 64
  CHECK(specsim::check_tensor_parallel(llama70, 8).empty());  // 8 KV heads, one per rank
  // 4 KV heads over 8 ranks: each replicated on 8 / 4 = 2 ranks.
  CHECK_THAT(specsim::check_tensor_parallel(qwen235, 8), Contains("replicated on 2 ranks"));
  CHECK_THAT(specsim::check_tensor_parallel(llama70, 16), Contains("replicated on 2 ranks"));
  CHECK_THROWS_WITH(specsim::check_tensor_parallel(llama70, 3), Contains("tp must divide the 64 attention heads"));
  // 64 heads split over 32 ranks, but 8 KV heads neither split over 32... they do replicate (32 / 8 = 4).
  CHECK_THAT(specsim::check_tensor_parallel(llama70, 32), Contains("replicated on 4 ranks"));
  CHECK(specsim::check_tensor_parallel(kimi, 8).empty());  // MLA: one latent, heads only
  CHECK_THROWS_WITH(specsim::check_tensor_parallel(kimi, 6), Contains("64 attention heads"));
}

TEST_CASE("consistency: forward --tp 3 on a 32-head model is an error, a replicated KV head a note", "[consistency]") {
  const auto bad = specsim::test::run({"forward", "--model", "llama-3.1-8b", "--gpu", "h200", "--tp", "3", "--tokens",
                                       "1", "--ctx", "0"});
  CHECK(bad.code == specsim::cli::kExitInput);
  CHECK_THAT(bad.err, Contains("--tp 3") && Contains("32 attention heads"));
  // The HF reader makes the same check as the YAML reader (tests/data/valid/hf: 64 heads, 8 KV).
  const std::string hf = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/hf/llama-3.3-70b.config.json";
  const auto hf_bad = specsim::test::run({"forward", "--model", hf, "--gpu", "h200", "--tp", "6", "--tokens", "1",
                                          "--ctx", "0"});
  CHECK(hf_bad.code == specsim::cli::kExitInput);
  CHECK_THAT(hf_bad.err, Contains("64 attention heads"));
  const auto note = specsim::test::run({"forward", "--model", "qwen3-235b-a22b", "--gpu", "h200", "--tp", "8",
                                        "--tokens", "1", "--ctx", "0"});
  INFO(note.err);
  CHECK(note.code == 0);
  CHECK_THAT(note.out, Contains("note: qwen3-235b-a22b: its 4 KV heads are fewer than tp = 8"));
}

TEST_CASE("consistency: the default scenario's measurements and pieces fit, mismatches are refused", "[consistency]") {
  // The shipped scenario: verify 30 ms = 25 ms all-reduce + 5 ms compute, 122 all-reduces.
  const auto s = specsim::load_scenario(specsim::kDefaultScenario, {}, kRoot);
  CHECK(s.notes.empty());
  // A Llama-3.1-8B EAGLE-3 head as Kimi's draft: hidden 4096 vs 7168.
  CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, {"draft=llama-3.1-8b-eagle3"}, kRoot),
                    Contains("draft: 'llama-3.1-8b-eagle3' (built for llama-3.1-8b) does not fit the model "
                             "'kimi-k2.5': hidden_size 4096 vs the model's 7168"));
  // The draft head as the target model (it predicted a 1.72x speedup before).
  CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, {"model=kimi-k2.5-eagle3"}, kRoot),
                    Contains("is an EAGLE-3 draft head"));
  // allreduce_count 0 used to drop the 25 ms of measured all-reduce (57 -> 142 tok/s).
  CHECK_THROWS_WITH(
      specsim::load_scenario(specsim::kDefaultScenario, {"measurements.verify.allreduce_count=0"}, kRoot),
      Contains("allreduce_count: = 0: must be in [1,"));
  // A step smaller than its parts: 20 ms < 25 + 5 ms.
  CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, {"measurements.verify.step=20ms"}, kRoot),
                    Contains("= 30 ms, more than the step"));
  // Within kVerifyPartsTolerance (5% of the step): 31 ms against 30 ms of parts is 1/31 = 3.2%.
  CHECK_NOTHROW(specsim::load_scenario(specsim::kDefaultScenario, {"measurements.verify.step=31ms"}, kRoot));
  // 10 ms of the step unaccounted (40 ms vs 30 ms, 25%) is refused too.
  CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, {"measurements.verify.step=40ms"}, kRoot),
                    Contains("must add up to it within 5%"));
  // parallel.tp = 3 on the 8-GPU box: Kimi's 64 heads do not split in 3.
  CHECK_THROWS_WITH(specsim::load_scenario(specsim::kDefaultScenario, {"parallel.tp=3"}, kRoot),
                    Contains("parallel.tp") && Contains("64 attention heads"));
}

TEST_CASE("consistency: a draft trained for another model of the same shape is noted", "[consistency]") {
  const specsim::test::TempDir dir("specsim-consistency-draft");
  std::string draft = read_text(std::string(SPECSIM_SOURCE_DIR) + "/models/llm/kimi-k2.5-eagle3.yaml");
  const auto at = draft.find("target: kimi-k2.5");
  REQUIRE(at != std::string::npos);
  draft.replace(at, std::string("target: kimi-k2.5").size(), "target: kimi-k2-instruct");
  const std::string path = write_text(dir.path / "other-draft.yaml", draft);
  const auto s = specsim::load_scenario(specsim::kDefaultScenario, {"draft=" + path}, kRoot);
  CHECK(has_note(s.notes, "was trained for 'kimi-k2-instruct', not 'kimi-k2.5'"));
}

TEST_CASE("consistency: a comm profile from another box is a visible warning", "[consistency]") {
  // The 8-rank RTX PRO 6000 table, rank-scaled to the 4-GPU box: measured on a bigger box.
  const auto s = specsim::load_scenario(
      specsim::kDefaultScenario,
      {"topology=4x-rtx-pro-6000-pcie5", "parallel.tp=4", "comm.rank_scaling=power",
       "comm.profile=rtx-pro-6000-8x-pcie5-aic-nccl", "comm.custom_profile="},
      kRoot);
  CHECK(has_note(s.notes, "was measured at 8 ranks, more than the 4 GPUs of 4x-rtx-pro-6000-pcie5"));
  // A profile that names its GPU: the 8x RTX 5090 table on the RTX PRO 6000 box.
  const auto other = specsim::load_scenario(
      specsim::kDefaultScenario, {"comm.profile=nccl-aikitoria-8x5090-p2p-turin"}, kRoot);
  CHECK(has_note(other.notes, "was measured on rtx-5090 GPUs; the scenario runs rtx-pro-6000-server"));
}

TEST_CASE("consistency: engine logs: impossible acceptance lengths refused, cut positions noted", "[consistency]") {
  const specsim::SourceLocation where{"<test>", 1, 0};
  // SGLang issue 11948's line 1 with accept len 1e308.
  const std::string sglang =
      "[2025-10-22 10:27:57 TP0] Decode batch. #running-req: 1, #token: 186, token usage: 0.00, accept len: %s, "
      "accept rate: 0.49, cuda graph: True, gen throughput (token/s): 178.86, #queue-req: 0,";
  auto line = [&](const char* len) {
    std::string l = sglang;
    l.replace(l.find("%s"), 2, len);
    return l;
  };
  CHECK_THROWS_WITH(specsim::parse_engine_log_line(line("1e308"), where),
                    Contains("accept len: '1e308' = 1e+308: outside the plausible acceptance length range [1, 65]"));
  CHECK_THROWS_WITH(specsim::parse_engine_log_line(line("66"), where), Contains("acceptance length range"));
  CHECK_NOTHROW(specsim::parse_engine_log_line(line("65"), where));
  // Two vLLM lines, K = 5 and K = 3: only the 3 positions both have are pooled, and the summary says so.
  specsim::LogRecord five, three;
  five.format = three.format = specsim::LogFormat::kVllmV1;
  five.cycles = three.cycles = 10;
  five.cycles_are_counts = three.cycles_are_counts = true;
  five.unconditional_rates = {0.9, 0.8, 0.7, 0.6, 0.5};
  five.tokens_per_cycle = 1 + 0.9 + 0.8 + 0.7 + 0.6 + 0.5;
  three.unconditional_rates = {0.9, 0.8, 0.7};
  three.tokens_per_cycle = 1 + 0.9 + 0.8 + 0.7;
  const std::vector<specsim::LogRecord> records{five, three};
  const auto s = specsim::summarize(records);
  CHECK(s.unconditional_rates.size() == 3);
  CHECK(has_note(s.warnings, "records log 3 to 5 per-position rates"));
  // Different engines pooled: noted.
  auto sg = specsim::parse_engine_log_line(line("2.5"), where);
  REQUIRE(sg);
  const std::vector<specsim::LogRecord> mixed{*sg, three};
  CHECK(has_note(specsim::summarize(mixed).warnings, "lines from different engines pooled together"));
}

TEST_CASE("consistency: the compute CSV refuses counts that wrap and times no forward takes", "[consistency]") {
  const specsim::test::TempDir dir("specsim-consistency-csv");
  const std::string header = "model,gpu,tp,tokens,context,mode,time_ms\n";
  // 2^32 + 1 ranks used to become tp = 1 when narrowed to int.
  const std::string wrap = write_text(dir.path / "wrap.csv", header + "llama-3.1-8b,H200,4294967297,1,0,graph,5\n");
  CHECK_THROWS_WITH(specsim::read_compute_steps_csv(wrap), Contains("tp: expected an integer in [1, 10000000]"));
  const std::string slow = write_text(dir.path / "slow.csv", header + "llama-3.1-8b,H200,1,1,0,graph,1e300\n");
  try {
    (void)specsim::read_compute_steps_csv(slow);
    FAIL("accepted");
  } catch (const specsim::Error& e) {
    CHECK(e.where().line == 2);
    CHECK(e.where().column == 7);
    CHECK_THAT(e.message(), Contains("'1e300ms' = 1e+297: outside the plausible duration range"));
  }
}

TEST_CASE("consistency: every shipped data file still loads and checks", "[consistency]") {
  namespace fs = std::filesystem;
  int checked = 0;
  for (const char* dir : {"models/llm", "models/gpu", "models/topology", "models/scenarios", "models/interventions",
                          "calibration/profiles"}) {
    for (const auto& entry : fs::directory_iterator(fs::path(SPECSIM_SOURCE_DIR) / dir)) {
      if (entry.path().extension() != ".yaml") continue;
      INFO(entry.path());
      CHECK_NOTHROW(specsim::check_data_file(entry.path().string(), kRoot));
      ++checked;
    }
  }
  CHECK(checked >= 41);  // the 41 files shipped today
}

TEST_CASE("consistency: comm warns when a profile's box is not the topology's, sizes are bounded", "[consistency]") {
  // The 8x RTX 5090 table (its gpu: rtx-5090) read against the 8x RTX PRO 6000 topology.
  const auto other = specsim::test::run({"comm", "--profile", "nccl-aikitoria-8x5090-p2p-turin", "--ranks", "8",
                                         "--topology", "8x-rtx-pro-6000-pcie5", "--size", "64KiB"});
  INFO(other.err);
  CHECK(other.code == 0);
  CHECK_THAT(other.err, Contains("warning: profile 'nccl-aikitoria-8x5090-p2p-turin' was measured on rtx-5090 GPUs; "
                                 "topology '8x-rtx-pro-6000-pcie5' has rtx-pro-6000-server"));
  // The 8-rank table against the 4-GPU box, estimating 4 ranks by NCCL's model ratio.
  const auto bigger = specsim::test::run({"comm", "--profile", "rtx-pro-6000-8x-pcie5-aic-nccl", "--ranks", "4",
                                          "--topology", "4x-rtx-pro-6000-pcie5", "--size", "64KiB"});
  INFO(bigger.err);
  CHECK(bigger.code == 0);
  CHECK_THAT(bigger.err, Contains("measured at 8 ranks, more than the 4 GPUs of topology '4x-rtx-pro-6000-pcie5'"));
  // The same box: no warning.
  const auto same = specsim::test::run({"comm", "--profile", "rtx-pro-6000-8x-pcie5-aic-nccl", "--ranks", "8",
                                        "--topology", "8x-rtx-pro-6000-pcie5", "--size", "64KiB"});
  CHECK(same.code == 0);
  CHECK(same.err.empty());
  // A plain byte count of 400 digits used to escape the units (std::stod): now 1e400 B is refused by
  // the size row (it is not even finite).
  const auto huge = specsim::test::run({"comm", "--profile", "rtx-pro-6000-8x-pcie5-aic-nccl", "--ranks", "8",
                                        "--size", std::string(400, '9')});
  CHECK(huge.code == specsim::cli::kExitInput);
  CHECK_THAT(huge.err, Contains("--size"));
}
