#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "cli_run.hpp"
#include "specsim/engine_log.hpp"
#include "specsim/error.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;
using specsim::LogFormat;

namespace {

std::string valid_log(const std::string& name) {
  return std::string(SPECSIM_TEST_DATA_DIR) + "/valid/logs/" + name;
}
std::string invalid_log(const std::string& name) {
  return std::string(SPECSIM_TEST_DATA_DIR) + "/invalid/logs/" + name;
}

}  // namespace

TEST_CASE("SGLang decode lines (sglang issue 11948)", "[engine_log]") {
  const auto records = specsim::parse_engine_log_file(valid_log("sglang_issue11948.log"));
  REQUIRE(records.size() == 2);
  const auto& r = records[0];
  CHECK(r.format == LogFormat::kSglang);
  CHECK(r.where.line == 2);  // line 1 is the source comment
  CHECK_THAT(r.tokens_per_cycle, WithinRel(1.95, 1e-12));
  CHECK_THAT(*r.logged_accept_rate, WithinRel(0.49, 1e-12));
  CHECK_THAT(*r.throughput_tokens_per_s, WithinRel(178.86, 1e-12));
  CHECK(*r.running_requests == 1);
  CHECK_FALSE(r.accepted_tokens);
  CHECK_THAT(records[1].tokens_per_cycle, WithinRel(2.05, 1e-12));

  const auto s = specsim::summarize(records);
  // Both lines cover one running request: tau = (1.95 + 2.05) / 2 = 2.00.
  CHECK_THAT(s.tokens_per_cycle, WithinRel(2.0, 1e-12));
  // Throughput is tokens over time, not the mean of 178.86 and 188.68 (183.77):
  // (1.95 + 2.05) / (1.95/178.86 + 2.05/188.68) = 183.762...
  CHECK_THAT(*s.throughput_tokens_per_s,
             WithinRel((1.95 + 2.05) / (1.95 / 178.86 + 2.05 / 188.68), 1e-12));
  // No counts on SGLang lines, so no interval, and the summary says why.
  CHECK_FALSE(s.tokens_per_cycle_interval);
  CHECK_FALSE(s.cycles_are_counts);
  REQUIRE_FALSE(s.notes.empty());
  CHECK_THAT(s.notes.front(), Contains("#running-req"));
}

TEST_CASE("SGLang lines pool by running requests, not by lines", "[engine_log]") {
  std::istringstream in(
      "Decode batch. #running-req: 1, #token: 10, accept len: 3.00, gen throughput (token/s): 100.00\n"
      "Decode batch. #running-req: 3, #token: 30, accept len: 2.00, gen throughput (token/s): 240.00\n"
      "Decode batch. #running-req: 3, #token: 30, cuda graph: True, gen throughput (token/s): 90.0\n");
  const auto records = specsim::parse_engine_log(in, "<test>");
  REQUIRE(records.size() == 2);  // the line without accept len is plain decoding, skipped
  const auto s = specsim::summarize(records);
  // (1 * 3.00 + 3 * 2.00) / 4 = 2.25, not the line mean 2.50.
  CHECK_THAT(s.tokens_per_cycle, WithinRel(2.25, 1e-12));
}

TEST_CASE("vLLM V1 SpecDecoding metrics (vllm PR 24127, ngram K = 5)", "[engine_log]") {
  const auto records = specsim::parse_engine_log_file(valid_log("vllm_v1_pr24127.log"));
  REQUIRE(records.size() == 1);
  const auto& r = records[0];
  CHECK(r.format == LogFormat::kVllmV1);
  CHECK_THAT(r.tokens_per_cycle, WithinRel(5.44, 1e-12));
  CHECK(*r.accepted_tokens == 262);
  CHECK(*r.drafted_tokens == 295);
  CHECK(*r.num_draft_positions == 5);
  // drafts = Drafted / K = 295 / 5 = 59; 1 + 262/59 = 5.4407 -> printed 5.44.
  CHECK(r.cycles == 59.0);
  CHECK_THAT(*r.logged_accept_rate, WithinRel(0.888, 1e-12));  // "88.8%"
  REQUIRE(r.unconditional_rates.size() == 5);
  CHECK_THAT(r.unconditional_rates[4], WithinRel(0.712, 1e-12));
  // Generated tokens/s = (accepted + drafts) / interval, interval = Drafted / drafted throughput
  // = 295 / 4.92 s: (262 + 59) * 4.92 / 295 = 5.3536 tokens/s.
  CHECK_THAT(*r.throughput_tokens_per_s, WithinRel(321.0 * 4.92 / 295.0, 1e-12));

  const auto s = specsim::summarize(records);
  // Conditional rates from unconditional: b_2 = 0.949 / 0.983 = 0.96541.
  CHECK_THAT(s.conditional_rates[1], WithinRel(0.949 / 0.983, 1e-12));
  CHECK_THAT(*s.draft_accept_rate, WithinRel(262.0 / 295.0, 1e-12));
  REQUIRE(s.tokens_per_cycle_interval);
  // tau interval = 1 + (295 / 59) * [lo, hi] of 262/295; it holds the exact 1 + 262/59.
  CHECK(s.tokens_per_cycle_interval->low < 1.0 + 262.0 / 59.0);
  CHECK(s.tokens_per_cycle_interval->high > 1.0 + 262.0 / 59.0);
  CHECK_THAT(s.tokens_per_cycle_interval->low,
             WithinRel(1.0 + 5.0 * s.draft_accept_rate_interval->low, 1e-12));
}

TEST_CASE("vLLM V1 with nothing accepted (vllm-ascend issue 13665)", "[engine_log]") {
  const auto records = specsim::parse_engine_log_file(valid_log("vllm_v1_ascend13665.log"));
  REQUIRE(records.size() == 1);
  const auto& r = records[0];
  CHECK_THAT(r.tokens_per_cycle, WithinRel(1.0, 1e-12));
  CHECK(r.cycles == 99.0);                                  // 495 / 5
  CHECK_THAT(*r.logged_accept_rate, WithinAbs(0.0, 1e-15));  // "Avg Draft acceptance rate: 0.0%"
  // (0 + 99) * 1.23 / 495 = 0.246 tokens/s
  CHECK_THAT(*r.throughput_tokens_per_s, WithinRel(0.246, 1e-12));

  const auto s = specsim::summarize(records);
  // Clopper-Pearson for 0 of n: high = 1 - (alpha/2)^(1/n) = 1 - 0.025^(1/495) = 0.0074243...
  CHECK_THAT(s.draft_accept_rate_interval->high, WithinRel(1.0 - std::pow(0.025, 1.0 / 495.0), 1e-9));
  CHECK(s.draft_accept_rate_interval->low == 0.0);
  CHECK(s.conditional_rates == std::vector<double>(5, 0.0));
}

TEST_CASE("pooling two vLLM V1 files weights by drafts", "[engine_log]") {
  auto records = specsim::parse_engine_log_file(valid_log("vllm_v1_pr24127.log"));
  const auto more = specsim::parse_engine_log_file(valid_log("vllm_v1_ascend13665.log"));
  records.insert(records.end(), more.begin(), more.end());
  const auto s = specsim::summarize(records);
  CHECK(s.cycles == 158.0);  // 59 + 99 drafts
  // (59 * 5.44 + 99 * 1.00) / 158 = 419.96 / 158 = 2.65797, not the line mean (5.44 + 1) / 2 = 3.22.
  CHECK_THAT(s.tokens_per_cycle, WithinRel((59 * 5.44 + 99 * 1.0) / 158.0, 1e-12));
  // a_1 = (59 * 0.983 + 99 * 0) / 158 = 0.367070
  CHECK_THAT(s.unconditional_rates[0], WithinRel(59 * 0.983 / 158.0, 1e-12));
  // Counts add: 262 accepted of 295 + 495 = 790 drafted.
  CHECK(*s.accepted_tokens == 262);
  CHECK(*s.drafted_tokens == 790);
  // Per-position interval: round(0.983 * 59) = 58 successes of 158 drafts.
  CHECK_THAT(s.unconditional_rate_intervals[0].low,
             WithinRel(specsim::clopper_pearson(58, 158, 0.95).low, 1e-12));
}

TEST_CASE("vLLM V0 Speculative metrics (vllm issue 9539)", "[engine_log]") {
  const auto records = specsim::parse_engine_log_file(valid_log("vllm_v0_issue9539.log"));
  REQUIRE(records.size() == 1);
  const auto& r = records[0];
  CHECK(r.format == LogFormat::kVllmV0);
  // steps = 13311 / 3 = 4437; tau = emitted / steps = 10616 / 4437 = 2.39261
  // (= System efficiency 0.598 * (K + 1) = 2.392 within the printed precision).
  CHECK_THAT(r.tokens_per_cycle, WithinRel(10616.0 / 4437.0, 1e-12));
  CHECK_THAT(r.tokens_per_cycle, WithinAbs(0.598 * 4, 0.002));
  CHECK(r.cycles == 4437.0);
  CHECK(*r.num_draft_positions == 3);
  // Chain-accepted drafts = emitted - steps = 6179 (V0's "accepted" 8547 also counts drafts
  // after a rejection; it stays only as the logged rate 0.642).
  CHECK(*r.accepted_tokens == 6179);
  CHECK_THAT(*r.logged_accept_rate, WithinRel(0.642, 1e-12));
  CHECK(r.cumulative);
}

TEST_CASE("vLLM V0 counters are cumulative: only the last line of a run counts", "[engine_log]") {
  std::istringstream in(
      "Speculative metrics: Draft acceptance rate: 0.600, System efficiency: 0.500, Number of "
      "speculative tokens: 3, Number of accepted tokens: 60, Number of draft tokens: 300, Number of "
      "emitted tokens: 200.\n"
      "Speculative metrics: Draft acceptance rate: 0.642, System efficiency: 0.598, Number of "
      "speculative tokens: 3, Number of accepted tokens: 8547, Number of draft tokens: 13311, Number "
      "of emitted tokens: 10616.\n");
  const auto s = specsim::summarize(specsim::parse_engine_log(in, "<test>"));
  CHECK(s.num_records == 1);
  CHECK(s.cycles == 4437.0);
  CHECK_THAT(s.tokens_per_cycle, WithinRel(10616.0 / 4437.0, 1e-12));
}

TEST_CASE("llama.cpp draft acceptance (llama.cpp PR 24536)", "[engine_log]") {
  const auto records = specsim::parse_engine_log_file(valid_log("llamacpp_pr24536.log"));
  REQUIRE(records.size() == 1);
  const auto& r = records[0];
  CHECK(r.format == LogFormat::kLlamaCpp);
  CHECK_THAT(r.tokens_per_cycle, WithinRel(2.92, 1e-12));
  CHECK(*r.accepted_tokens == 167);
  CHECK(*r.drafted_tokens == 259);
  CHECK_THAT(*r.logged_accept_rate, WithinRel(0.64479, 1e-12));
  // drafts = 167 / (0.805 + 0.632 + 0.483) = 167 / 1.92 = 86.98 -> 87 (and 87 * 0.805 = 70.0,
  // 87 * 0.632 = 55.0, 87 * 0.483 = 42.0 add up to 167).
  CHECK(r.cycles == 87.0);
  const auto s = specsim::summarize(records);
  // b_2 = 0.632 / 0.805 = 0.78509, b_3 = 0.483 / 0.632 = 0.76424
  CHECK_THAT(s.conditional_rates[1], WithinRel(0.632 / 0.805, 1e-12));
  CHECK_THAT(s.conditional_rates[2], WithinRel(0.483 / 0.632, 1e-12));
  CHECK_FALSE(s.throughput_tokens_per_s);
}

TEST_CASE("llama-server draft acceptance rate with its statistics lines (llama.cpp docs)", "[engine_log]") {
  const auto records = specsim::parse_engine_log_file(valid_log("llama_server_docs_speculative.log"));
  REQUIRE(records.size() == 1);
  const auto& r = records[0];
  CHECK(r.format == LogFormat::kLlamaServer);
  CHECK(*r.accepted_tokens == 171);
  CHECK(*r.drafted_tokens == 297);  // 187 + 110 over the two implementations
  CHECK_THAT(*r.logged_accept_rate, WithinRel(0.57576, 1e-12));
  // drafts = 5 (ngram_simple) + 10 (draft) = 15; tau = 1 + 171 / 15 = 12.4.
  CHECK(r.cycles == 15.0);
  CHECK_THAT(r.tokens_per_cycle, WithinRel(12.4, 1e-12));
}

TEST_CASE("llama-server: a request's drafts are the statistics' growth since the last request", "[engine_log]") {
  // The statistics count since the server started. The docs' request again, then a second one
  // whose lines grew by 2 ngram_simple drafts (10 tokens, 5 accepted) and 1 draft-model draft
  // (10 tokens, 5 accepted): 10 accepted / 20 generated over 3 drafts, tau = 1 + 10 / 3.
  std::istringstream in(
      "draft acceptance rate = 0.57576 (  171 accepted /   297 generated)\n"
      "statistics ngram_simple: #calls = 15, #gen drafts = 5, #acc drafts = 5, #gen tokens = 187, #acc tokens = 73\n"
      "statistics draft: #calls = 10, #gen drafts = 10, #acc drafts = 10, #gen tokens = 110, #acc tokens = 98\n"
      "draft acceptance rate = 0.50000 (   10 accepted /    20 generated)\n"
      "statistics ngram_simple: #calls = 19, #gen drafts = 7, #acc drafts = 7, #gen tokens = 197, #acc tokens = 78\n"
      "statistics draft: #calls = 11, #gen drafts = 11, #acc drafts = 11, #gen tokens = 120, #acc tokens = 103\n");
  const auto records = specsim::parse_engine_log(in, "<test>");
  REQUIRE(records.size() == 2);
  CHECK(records[1].cycles == 3.0);  // (7 - 5) + (11 - 10)
  CHECK_THAT(records[1].tokens_per_cycle, WithinRel(1.0 + 10.0 / 3.0, 1e-12));
  // Pooled by request-cycles: (15 x 12.4 + 3 x 13/3) / 18 = (186 + 13) / 18.
  CHECK_THAT(specsim::summarize(records).tokens_per_cycle, WithinRel(199.0 / 18.0, 1e-12));
}

TEST_CASE("llama-server: a rate line without its draft count is refused with the reason", "[engine_log][invalid]") {
  // The docs' second example: a later request (90 / 128) whose statistics count since the server
  // started (730 / 960): the log does not start with the server, so the request's drafts are unknown.
  std::istringstream mid_run(
      "draft acceptance rate = 0.70312 (   90 accepted /   128 generated)\n"
      "statistics ngram_mod: #calls = 810, #gen drafts = 15, #acc drafts = 15, #gen tokens = 960, #acc tokens = 730, "
      "dur(b,g,a) = 0.149, 0.347, 0.005 ms\n");
  CHECK_THROWS_WITH(specsim::parse_engine_log(mid_run, "<test>"),
                    Contains("<test>:1:") && Contains("grew by 730 accepted / 960 generated tokens, not this "
                                                      "request's 90 / 128"));
  std::istringstream alone("draft acceptance rate = 0.70312 (   90 accepted /   128 generated)\n");
  CHECK_THROWS_WITH(specsim::parse_engine_log(alone, "<test>"), Contains("no 'statistics NAME: ... #gen drafts = N"));
}

TEST_CASE("a summary becomes an acceptance model", "[engine_log]") {
  // vLLM line with per-position rates: the unconditional kind, tau = 1 + sum a = 5.44 again.
  const auto v1 = specsim::summarize(specsim::parse_engine_log_file(valid_log("vllm_v1_pr24127.log")));
  const auto from_rates = specsim::acceptance_from_summary(v1);
  CHECK(specsim::to_string(from_rates.kind) == "unconditional");
  CHECK(specsim::listed_positions(from_rates.kind) == 5);
  const specsim::DraftShape five{5, 1, 6};  // num_steps, eagle_topk, num_draft_tokens
  CHECK_THAT(specsim::tokens_per_cycle(from_rates, five), WithinRel(5.44, 1e-12));
  // SGLang lines carry only tau (2.00 pooled); the chain length comes from the caller.
  const auto sg = specsim::summarize(specsim::parse_engine_log_file(valid_log("sglang_issue11948.log")));
  const auto measured = specsim::acceptance_from_summary(sg);
  CHECK(specsim::to_string(measured.kind) == "measured");
  CHECK_THAT(specsim::tokens_per_cycle(measured, specsim::DraftShape{}), WithinRel(2.0, 1e-12));
  // A chain length of 0 is rejected by validation.
  CHECK_THROWS_WITH(specsim::validate(measured, specsim::DraftShape{0, 1, 1}), Contains("speculation.num_steps = 0: must be >= 1"));
}

TEST_CASE("Clopper-Pearson interval, textbook values", "[engine_log]") {
  // 5 of 10 at 95 %: [0.18709, 0.81291] (Clopper & Pearson 1934; any statistics table).
  const auto ci = specsim::clopper_pearson(5, 10, 0.95);
  CHECK_THAT(ci.low, WithinAbs(0.18709, 1e-5));
  CHECK_THAT(ci.high, WithinAbs(0.81291, 1e-5));
  // n of n: low = (alpha/2)^(1/n) = 0.025^(1/20) = 0.83157
  CHECK_THAT(specsim::clopper_pearson(20, 20, 0.95).low, WithinRel(std::pow(0.025, 1.0 / 20.0), 1e-9));
  CHECK_THROWS_WITH(specsim::clopper_pearson(3, 2, 0.95), Contains("need 0 <= successes <= trials"));
}

TEST_CASE("lines without a metrics marker are skipped", "[engine_log]") {
  const specsim::SourceLocation where{"<test>", 1, 0};
  CHECK_FALSE(specsim::parse_engine_log_line("INFO: Started server process [1234]", where));
  CHECK_FALSE(specsim::parse_engine_log_line(
      "Decode batch. #running-req: 1, #token: 186, gen throughput (token/s): 93.10", where));
}

TEST_CASE("damaged engine log lines give exact errors", "[engine_log]") {
  // file -> the exact "line:column: " prefix and a piece of the message. Columns were checked
  // against the files: each points at the first character of the offending value.
  const std::map<std::string, std::pair<std::string, std::string>> expected{
      {"sglang_accept_len_not_number.log",
       {":2:102: ", "SGLang decode line: accept len: expected a number (non-negative), got '1.9x5'"}},
      {"sglang_accept_len_below_one.log",
       {":2:102: ", "accept len: expected a value >= 1 (accept len counts the bonus token), got '0.95'"}},
      {"sglang_accept_len_implausible.log",
       {":2:102: ", "accept len: '1e308' = 1e+308: outside the plausible acceptance length range [1, 65]"}},
      {"sglang_missing_throughput.log",
       {":2: ", "SGLang decode line: missing field 'gen throughput (token/s): <number>'"}},
      {"sglang_no_speculation.log", {": ", "no speculative-decoding metrics line found"}},
      {"vllm_v1_mean_mismatch.log",
       {":2:137: ", "Mean acceptance length: expected 1 + Accepted/drafts = 1 + 262/59 = 5.44068, got '4.44'"}},
      {"vllm_v1_drafted_not_multiple.log",
       {":2:245: ", "Drafted: expected a multiple of the 5 per-position rates (drafts * K), got 296"}},
      {"vllm_v1_per_position_garbled.log",
       {":2:294: ", "Per-position acceptance rate: expected a number (non-negative), got '0.9x49'"}},
      {"vllm_v1_rate_without_percent.log",
       {":2:315: ", "Avg Draft acceptance rate: expected a number followed by '%', got '0.0'"}},
      {"vllm_v1_count_without_unit.log",
       {":2:192: ", "Accepted: expected a number followed by 'tokens', got '0'"}},
      {"vllm_v0_efficiency_mismatch.log",
       {":2:107: ", "System efficiency: expected emitted/(steps*(K+1)) = 10616/17748 = 0.598152, got '0.698'"}},
      {"vllm_v0_truncated.log",
       {":2:180: ", "vLLM Speculative metrics line: expected 'key: value', got 'Numb'"}},
      {"llamacpp_missing_slash.log", {":2:47: ", "llama.cpp draft acceptance line: expected '/', got '259 generated)"}},
      {"llamacpp_rate_mismatch.log",
       {":2:20: ", "draft acceptance: expected accepted/generated = 0.644788, got 0.74479"}},
      {"llamacpp_unclosed_list.log", {":2:147: ", "expected ')', got the end of the line"}},
      {"llama_speculative_accept_exceeds.log",
       {":3: ", "llama-speculative summary line: n_accept: n_accept = 147 exceeds n_drafted = 132"}},
  };
  // Every damaged file has an expectation, and every expectation a file.
  std::size_t files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(SPECSIM_TEST_DATA_DIR) + "/invalid/logs")) {
    if (entry.path().extension() != ".log") continue;
    ++files;
    const std::string name = entry.path().filename().string();
    INFO(name);
    REQUIRE(expected.count(name) == 1);
  }
  CHECK(files == expected.size());

  for (const auto& [name, want] : expected) {
    INFO(name);
    const std::string path = invalid_log(name);
    CHECK_THROWS_WITH(specsim::parse_engine_log_file(path),
                      Contains(name + want.first) && Contains(want.second));
  }
}

TEST_CASE("llama-speculative end summary (llama.cpp PR 2926 and PR 3006)", "[engine_log]") {
  auto records = specsim::parse_engine_log_file(valid_log("llama_speculative_pr2926.log"));
  REQUIRE(records.size() == 1);
  const auto& r = records[0];
  CHECK(r.format == LogFormat::kLlamaSpeculative);
  CHECK(r.where.line == 6);  // the n_drafted line
  CHECK(r.num_draft_positions == 8);
  CHECK(r.accepted_tokens == 47);
  CHECK(r.drafted_tokens == 132);
  // Each verify emits its accepted drafts plus one target token: cycles = 129 - 47 = 82,
  // tau = 129 / 82 = 1.5732.
  CHECK(r.cycles == 82.0);
  CHECK_THAT(r.tokens_per_cycle, WithinRel(129.0 / 82.0, 1e-12));
  CHECK_THAT(*r.logged_accept_rate, WithinRel(0.35606, 1e-9));
  // PR 3006, 16-token drafts: 266 - 223 = 43 cycles, tau = 266 / 43 = 6.186.
  records = specsim::parse_engine_log_file(valid_log("llama_speculative_pr3006.log"));
  REQUIRE(records.size() == 1);
  CHECK_THAT(records[0].tokens_per_cycle, WithinRel(266.0 / 43.0, 1e-12));
  const auto s = specsim::summarize(records);
  CHECK_THAT(*s.draft_accept_rate, WithinRel(223.0 / 254.0, 1e-12));
}

TEST_CASE("vLLM /metrics: two scrapes give the interval, and agree with the log line", "[engine_log]") {
  const auto records = specsim::parse_engine_log_file(valid_log("vllm_metrics_pr24127_interval.prom"));
  REQUIRE(records.size() == 1);
  const auto& r = records[0];
  CHECK(r.format == LogFormat::kVllmMetrics);
  CHECK_FALSE(r.cumulative);
  // Differences: drafts 159 - 100 = 59, draft tokens 795 - 500 = 295, accepted 562 - 300 = 262.
  CHECK(r.cycles == 59.0);
  CHECK(r.drafted_tokens == 295);
  CHECK(r.accepted_tokens == 262);
  // tau = 1 + 262 / 59 = 5.4407, the "Mean acceptance length: 5.44" the same interval logged.
  CHECK_THAT(r.tokens_per_cycle, WithinRel(1.0 + 262.0 / 59.0, 1e-12));
  const auto logged = specsim::parse_engine_log_file(valid_log("vllm_v1_pr24127.log"));
  CHECK_THAT(r.tokens_per_cycle, WithinAbs(logged[0].tokens_per_cycle, 0.005));
  // Per position 58, 56, 54, 52, 42 of 59: the logged 0.983, 0.949, 0.915, 0.881, 0.712.
  REQUIRE(r.unconditional_rates.size() == 5);
  for (std::size_t j = 0; j < 5; ++j) {
    CHECK_THAT(r.unconditional_rates[j], WithinAbs(logged[0].unconditional_rates[j], 0.0005));
  }
  // One scrape alone (the first five counters) gives totals since start, and says so.
  std::istringstream one(
      "vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"m\"} 100.0\n"
      "vllm:spec_decode_num_draft_tokens_total{engine=\"0\",model_name=\"m\"} 500.0\n"
      "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"m\"} 300.0\n");
  const auto totals = specsim::parse_engine_log(one, "<one scrape>");
  REQUIRE(totals.size() == 1);
  CHECK(totals[0].cumulative);
  CHECK_THAT(totals[0].tokens_per_cycle, WithinRel(4.0, 1e-12));  // 1 + 300 / 100
  const auto s = specsim::summarize(totals);
  bool said = false;
  for (const auto& n : s.notes) said = said || n.find("totals since the server started") != std::string::npos;
  CHECK(said);
}

TEST_CASE("vLLM /metrics: data-parallel engines are records of their own, pooled by drafts", "[engine_log]") {
  std::istringstream dp(
      "vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"m\"} 20.0\n"
      "vllm:spec_decode_num_draft_tokens_total{engine=\"0\",model_name=\"m\"} 60.0\n"
      "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"m\"} 40.0\n"
      "vllm:spec_decode_num_drafts_total{engine=\"1\",model_name=\"m\"} 30.0\n"
      "vllm:spec_decode_num_draft_tokens_total{engine=\"1\",model_name=\"m\"} 90.0\n"
      "vllm:spec_decode_num_accepted_tokens_total{engine=\"1\",model_name=\"m\"} 30.0\n");
  const auto records = specsim::parse_engine_log(dp, "<dp>");
  REQUIRE(records.size() == 2);
  // tau = 1 + (40 + 30) / (20 + 30) = 2.4, not the mean of 3.0 and 2.0.
  CHECK_THAT(specsim::summarize(records).tokens_per_cycle, WithinRel(2.4, 1e-12));
}

TEST_CASE("SGLang /metrics gauges: one record per scrape", "[engine_log]") {
  const auto records = specsim::parse_engine_log_file(valid_log("sglang_metrics_issue11948.prom"));
  REQUIRE(records.size() == 2);
  CHECK(records[0].format == LogFormat::kSglangMetrics);
  CHECK(records[0].tokens_per_cycle == 1.95);
  CHECK(records[1].tokens_per_cycle == 2.05);
  CHECK(records[0].running_requests == 1);
  // Equal running requests: tau = (1.95 + 2.05) / 2 = 2.0, as the two log lines give.
  CHECK_THAT(specsim::summarize(records).tokens_per_cycle, WithinRel(2.0, 1e-12));
}

TEST_CASE("pooling different draft lengths or engines is a warning, not a silent cut", "[engine_log]") {
  // K = 5 (vLLM PR 24127) with K = 3 (llama.cpp PR 24536): only 3 positions are pooled, and the
  // warning names the positions left out; two engines, and that is said too.
  auto records = specsim::parse_engine_log_file(valid_log("vllm_v1_pr24127.log"));
  const auto more = specsim::parse_engine_log_file(valid_log("llamacpp_pr24536.log"));
  records.insert(records.end(), more.begin(), more.end());
  const auto s = specsim::summarize(records);
  CHECK(s.unconditional_rates.size() == 3);
  REQUIRE(s.warnings.size() == 2);
  CHECK_THAT(s.warnings[0], Contains("records log 3 to 5 per-position rates") && Contains("positions 4-5 are left out"));
  CHECK_THAT(s.warnings[1], Contains("lines from different engines pooled together (vllm-v1, llama.cpp)"));
  CHECK(specsim::position_mismatch_warning(5, 3) ==
        "the measured acceptance has 5 positions and the scenario drafts 3: positions 4-5 not used (set "
        "speculation.num_steps=5 to use them)");
  CHECK(specsim::position_mismatch_warning(3, 3).empty());
}

TEST_CASE("vLLM /metrics: two scrapes given as two files are differenced, never pooled", "[engine_log]") {
  // vllm_metrics_pr24127_interval.prom split at its second scrape: the first file's totals, then
  // the second's. Pooled, they would give tau 1 + (300 + 562) / (100 + 159) = 4.33; differenced,
  // 1 + 262 / 59 = 5.44, as the one two-scrape file does.
  const std::string text = specsim::test::read_text(valid_log("vllm_metrics_pr24127_interval.prom"));
  const std::string sample = "\nvllm:spec_decode_num_drafts_total{";
  const auto cut = text.find(sample, text.find(sample) + 1);
  REQUIRE(cut != std::string::npos);
  std::istringstream first(text.substr(0, cut)), second(text.substr(cut));
  std::vector<specsim::LogRecord> records = specsim::parse_engine_log(first, "before.prom");
  for (auto& r : specsim::parse_engine_log(second, "after.prom")) records.push_back(r);
  REQUIRE(records.size() == 2);
  CHECK(records[0].cumulative);
  CHECK(records[1].cumulative);
  const auto s = specsim::summarize(records);
  CHECK_THAT(s.tokens_per_cycle, WithinRel(1.0 + 262.0 / 59.0, 1e-12));
  CHECK(s.cycles == 59.0);
  REQUIRE(s.unconditional_rates.size() == 5);
  CHECK_THAT(s.unconditional_rates[0], WithinRel(58.0 / 59.0, 1e-9));  // 148 - 90
  bool said = false;
  for (const auto& n : s.notes) said = said || n.find("2 /metrics scrapes differenced") != std::string::npos;
  CHECK(said);
  // Given in the wrong order (or across a restart), the counters fall: refused.
  CHECK_THROWS_WITH(specsim::summarize(std::vector<specsim::LogRecord>{records[1], records[0]}),
                    Catch::Matchers::Contains("counters fell") && Catch::Matchers::Contains("restarted"));
}

TEST_CASE("vLLM /metrics: a per-position count that rises with position is refused", "[engine_log]") {
  std::istringstream in(
      "vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"m\"} 100.0\n"
      "vllm:spec_decode_num_draft_tokens_total{engine=\"0\",model_name=\"m\"} 300.0\n"
      "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"m\"} 150.0\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\",position=\"0\"} 40.0\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\",position=\"1\"} 60.0\n"
      "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\",position=\"2\"} 50.0\n");
  CHECK_THROWS_WITH(specsim::parse_engine_log(in, "rising.prom"),
                    Catch::Matchers::Contains("rising.prom:5") && Catch::Matchers::Contains("more than position 0"));
}
