// The report layer's three views of each result agree: the CSV has its header and one row per item
// of the result's natural table, and every cell is the JSON value at the path its column names
// (report.hpp). Both come from the CLI run in-process, as a user gets them.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "cli_run.hpp"
#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"
#include "specsim/report.hpp"

namespace {

using Catch::Matchers::Contains;
using specsim::test::run;
using Table = std::vector<std::vector<std::string>>;

// RFC 4180: quoted fields may hold commas, doubled quotes and line breaks.
Table parse_csv(const std::string& text) {
  Table rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
    } else if (c == '\n') {
      row.push_back(field);
      rows.push_back(row);
      row.clear();
      field.clear();
    } else {
      field += c;
    }
  }
  REQUIRE(field.empty());  // the last line ends with a line break
  return rows;
}

// Whether a CSV cell holds the JSON value `v`: a number the same double, a boolean true/false, a
// text the same text, null nothing, a list its items with "; " between them.
bool holds(const std::string& cell, const nlohmann::json& v) {
  if (v.is_number()) return !cell.empty() && std::stod(cell) == v.get<double>();
  if (v.is_boolean()) return cell == (v.get<bool>() ? "true" : "false");
  if (v.is_string()) return cell == v.get<std::string>();
  if (v.is_null()) return cell.empty();
  std::string joined;
  for (const auto& item : v) joined += (joined.empty() ? "" : "; ") + item.get<std::string>();
  return cell == joined;
}

// The JSON value a column names: keys split at dots; in an array `low`/`high` or a count from 1.
nlohmann::json at(const nlohmann::json& row, const std::vector<std::string>& keys) {
  const nlohmann::json* node = &row;
  for (const auto& key : keys) {
    if (node->is_array()) {
      const std::size_t i = key == "low" ? 0 : key == "high" ? 1 : std::stoul(key) - 1;
      if (i >= node->size()) return nullptr;
      node = &(*node)[i];
    } else if (node->is_object() && node->contains(key)) {
      node = &(*node)[key];
    } else {
      return nullptr;
    }
  }
  return *node;
}

std::vector<std::string> split_dots(const std::string& header) {
  std::vector<std::string> keys(1);
  for (char c : header) {
    if (c == '.') {
      keys.emplace_back();
    } else {
      keys.back() += c;
    }
  }
  return keys;
}

using KeysOf = std::function<std::vector<std::string>(const std::string& header)>;

// `csv` has `header` (in this order), one row per item of `items`, and each cell holds the item's
// JSON value at keys_of(column) (by default the header split at dots; no keys: a column the
// JSON does not hold, not compared). Returns the table.
Table check_agrees(const std::string& csv, const std::vector<std::string>& header, const nlohmann::json& items,
                   const KeysOf& keys_of = split_dots) {
  const Table table = parse_csv(csv);
  REQUIRE(!table.empty());
  CHECK(table.front() == header);
  REQUIRE(table.size() == 1 + items.size());
  for (std::size_t r = 0; r < items.size(); ++r) {
    REQUIRE(table[r + 1].size() == header.size());
    for (std::size_t c = 0; c < header.size(); ++c) {
      INFO("row " << r + 1 << ", column " << header[c]);
      const auto keys = keys_of(header[c]);
      if (!keys.empty()) CHECK(holds(table[r + 1][c], at(items[r], keys)));
    }
  }
  return table;
}

// `specsim ARGS... --json` and `specsim ARGS... --format csv`, both successful.
std::pair<nlohmann::json, std::string> json_and_csv(std::vector<std::string> args) {
  auto json_args = args;
  json_args.push_back("--json");
  const auto json = run(json_args);
  INFO(json.err);
  REQUIRE(json.code == 0);
  args.insert(args.end(), {"--format", "csv"});
  const auto csv = run(args);
  INFO(csv.err);
  REQUIRE(csv.code == 0);
  return {nlohmann::json::parse(json.out), csv.out};
}

const std::vector<std::string> kPredictHeader = {
    "scenario", "baseline.tokens_per_s", "baseline.step_s", "baseline.forward_s", "baseline.compute_s",
    "baseline.comm_s", "baseline.allreduce_count", "baseline.host_s", "speculative.tokens_per_s",
    "speculative.cycle_s", "speculative.tokens_per_cycle", "speculative.draft_s", "speculative.verify_s",
    "speculative.verify_compute_s", "speculative.verify_comm_s", "speculative.verify_allreduce_count",
    "speculative.verify_allreduce_each_s", "speculative.host_s", "speculative.band.p10_tokens_per_s",
    "speculative.band.p50_tokens_per_s", "speculative.band.p90_tokens_per_s", "speculative.call", "speedup",
    "breakeven_tokens_per_cycle", "dominant.part", "dominant.share", "calibration.comm_calibrated",
    "memory.capacity_bytes", "memory.used_bytes", "memory.fits", "warnings"};

}  // namespace

TEST_CASE("report: formats by name, and back", "[report]") {
  for (specsim::Format f : specsim::kFormats) CHECK(specsim::parse_format(specsim::to_string(f)) == f);
  CHECK(std::string(specsim::to_string(specsim::Format::kCsv)) == "csv");
  CHECK_FALSE(specsim::parse_format("xml").has_value());
  CHECK_FALSE(specsim::parse_format("JSON").has_value());
}

TEST_CASE("report: predict's CSV is one row of the JSON's main figures", "[report][predict]") {
  const auto [j, csv] = json_and_csv({"predict", "--accept", "0.7"});
  const Table t = check_agrees(csv, kPredictHeader, nlohmann::json::array({j}));
  // The figures are spelled with the JSON's own digits: a spreadsheet sees what a script sees.
  CHECK(t[0][8] == "speculative.tokens_per_s");
  CHECK(t[1][8] == j["speculative"]["tokens_per_s"].dump());
}

TEST_CASE("report: predict with a Monte Carlo adds its columns under monte_carlo.", "[report][predict]") {
  const auto [j, csv] = json_and_csv({"predict", "--monte-carlo", "50", "--seed", "7"});
  std::vector<std::string> header = kPredictHeader;
  for (const char* c : {"seed", "requests", "cycles", "request_spread", "mean_tokens_per_cycle",
                        "mean_tokens_per_cycle_ci99.low", "mean_tokens_per_cycle_ci99.high",
                        "closed_form_tokens_per_cycle", "tokens_per_s.mean", "tokens_per_s.p10", "tokens_per_s.p50",
                        "tokens_per_s.p90"}) {
    header.push_back(std::string("monte_carlo.") + c);
  }
  const Table t = check_agrees(csv, header, nlohmann::json::array({j}));
  CHECK(t[1][kPredictHeader.size()] == "7");  // the seed, as given
  CHECK(t[1][kPredictHeader.size() + 2] == "5000");  // 50 requests of 100 cycles each
}

TEST_CASE("report: the Monte Carlo and memory views render alone", "[report]") {
  const specsim::Scenario s = specsim::load_scenario(specsim::kDefaultScenario);
  const specsim::MemoryFit fit = specsim::memory_fit(s);
  const auto j = nlohmann::json::parse(specsim::render_memory(fit, specsim::Format::kJson));
  // A part's basis holds commas and parentheses: quoted in the CSV, read back whole.
  check_agrees(specsim::render_memory(fit, specsim::Format::kCsv), {"name", "bytes", "basis"}, j["parts"]);
  CHECK_THAT(specsim::render_memory(fit, specsim::Format::kText), Contains("memory per GPU"));

  specsim::MonteCarloRun mc;
  mc.options.seed = 3;
  mc.options.num_requests = 10;
  mc.result.num_cycles = 1000;
  mc.result.mean_tokens_per_cycle = 2.5;
  mc.result.mean_tokens_per_cycle_interval = {2.4, 2.6};
  mc.result.tokens_per_s = 40.0;
  mc.batch = 2;
  const auto mj = nlohmann::json::parse(specsim::render_monte_carlo(mc, specsim::Format::kJson));
  CHECK(mj["tokens_per_s"]["mean"] == 80.0);  // batch 2 x 40 tok/s per request
  const Table t = parse_csv(specsim::render_monte_carlo(mc, specsim::Format::kCsv));
  REQUIRE(t.size() == 2);
  CHECK(t[0][5] == "mean_tokens_per_cycle_ci99.low");
  CHECK(t[1][5] == "2.4");
  CHECK(t[1][8] == "80.0");  // as JSON spells a whole double
  CHECK_THAT(specsim::render_monte_carlo(mc, specsim::Format::kText), Contains("Monte Carlo (seed 3, 1000 cycles)"));
}

TEST_CASE("report: predict at concurrency levels is a row per level", "[report][predict]") {
  const auto [j, csv] = json_and_csv({"predict", "--concurrency", "1,4"});
  check_agrees(csv,
               {"concurrency", "feasible", "infeasible", "plain.per_request_tokens_per_s",
                "plain.aggregate_tokens_per_s", "plain.step_s", "speculative.per_request_tokens_per_s",
                "speculative.aggregate_tokens_per_s", "speculative.p10_aggregate_tokens_per_s",
                "speculative.p90_aggregate_tokens_per_s", "speculative.band_transfer_sigma", "speculative.call",
                "speculative.cycle_s", "speculative.tokens_per_cycle", "speedup", "memory.capacity_bytes",
                "memory.used_bytes", "memory.fits"},
               j["concurrency"]);
}

TEST_CASE("report: rank's CSV is a row per intervention", "[report][rank]") {
  const auto [j, csv] = json_and_csv({"rank", "--path-steps", "0"});
  const Table t = check_agrees(
      csv,
      {"name", "feasible", "reason", "tokens_per_s", "gain", "gain_per_launch", "effort_launches", "effort_hours",
       "comm_calibrated", "risk", "patches", "baseline_tokens_per_s", "breakdown.verify_compute_s",
       "breakdown.verify_comm_s", "breakdown.draft_s", "breakdown.host_s", "breakdown.cycle_s",
       "breakdown.tokens_per_cycle"},
      j["interventions"]);
  CHECK(t.size() > 2);
}

TEST_CASE("report: sweep's CSV is a row per point, the axes named by their keys", "[report][sweep]") {
  const auto [j, csv] =
      json_and_csv({"sweep", "--vary", "speculation.num_steps=1..3", "--vary", "acceptance.accept=0.6,0.8"});
  const std::vector<std::string> axes = {"speculation.num_steps", "acceptance.accept"};
  const KeysOf keys_of = [&](const std::string& h) {
    return std::find(axes.begin(), axes.end(), h) != axes.end() ? std::vector<std::string>{"set", h} : split_dots(h);
  };
  const Table t = check_agrees(
      csv, {"speculation.num_steps", "acceptance.accept", "tokens_per_s", "speedup", "tokens_per_cycle", "cycle_s",
            "baseline_tokens_per_s"},
      j["points"], keys_of);
  CHECK(t.size() == 1 + 3 * 2);  // 3 draft lengths x 2 acceptances
  // `--csv` is the same as `--format csv`.
  CHECK(run({"sweep", "--vary", "speculation.num_steps=1..3", "--vary", "acceptance.accept=0.6,0.8", "--csv"}).out ==
        csv);
}

TEST_CASE("report: a concurrency sweep's CSV is a row per level, its best point's figures", "[report][sweep]") {
  const auto [j, csv] = json_and_csv({"sweep", "--concurrency", "1,4", "--vary", "speculation.num_steps=1..3"});
  const KeysOf keys_of = [](const std::string& h) {
    if (h == "concurrency") return std::vector<std::string>{h};
    if (h == "speculation.num_steps") return std::vector<std::string>{"best", "set", h};
    return std::vector<std::string>{"best", h};
  };
  check_agrees(csv,
               {"concurrency", "speculation.num_steps", "tokens_per_s", "per_request_tokens_per_s", "speedup",
                "tokens_per_cycle", "baseline_tokens_per_s"},
               j["concurrency"], keys_of);
}

TEST_CASE("report: breakeven's CSV is a row per draft length", "[report][breakeven]") {
  const auto [j, csv] = json_and_csv({"breakeven"});
  const Table t =
      check_agrees(csv, {"num_steps", "accept", "tokens_per_cycle", "tokens_per_s_at_accept_1"}, j["by_num_steps"]);
  CHECK(t.size() == 1 + 8);  // draft lengths 1..8
}

TEST_CASE("report: comm's CSV is a row per size", "[report][comm]") {
  const auto [j, csv] =
      json_and_csv({"comm", "--profile", "rtx-pro-6000-8x-pcie5-aic-nccl", "--ranks", "8", "--size", "256B,14KiB,1MiB"});
  const Table t = check_agrees(csv, {"bytes", "time_s"}, j["points"]);
  CHECK(t[2][0] == "14336");  // 14 KiB = 14 x 1024 bytes, a whole count as JSON prints it
}

TEST_CASE("report: forward's CSV is a row per token count", "[report][forward]") {
  const auto [j, csv] =
      json_and_csv({"forward", "--model", "llama-3.1-8b", "--gpu", "h200", "--tokens", "1,4,16", "--ctx", "4096"});
  const Table t = check_agrees(csv, {"tokens", "time_s"}, j["points"]);
  CHECK(t.size() == 1 + 3);
}

TEST_CASE("report: acceptance's CSV is one row, a column per draft position", "[report][acceptance]") {
  // vLLM V1 logs per-position rates: columns per_position.1 ... for each kind of rate.
  const std::string log = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/logs/vllm_v1_pr24127.log";
  const auto [j, csv] = json_and_csv({"acceptance", log});
  std::vector<std::string> header = {"lines", "formats", "cycles", "cycles_are_counts", "tokens_per_cycle",
                                     "tokens_per_cycle_interval.low", "tokens_per_cycle_interval.high", "confidence",
                                     "draft_accept_rate", "throughput_tokens_per_s"};
  const std::size_t positions = j["per_position"].size();
  REQUIRE(positions > 0);
  for (const char* kind : {"per_position", "per_position_unconditional"}) {
    for (std::size_t i = 1; i <= positions; ++i) header.push_back(std::string(kind) + "." + std::to_string(i));
  }
  header.insert(header.end(), {"warnings", "notes"});
  check_agrees(csv, header, nlohmann::json::array({j}));
}

TEST_CASE("report: validate's CSV is a row per corpus row, then per calibrated row, pair and batch transfer", "[report][validate]") {
  const std::string rows = std::string(SPECSIM_TEST_DATA_DIR) + "/valid/validation";
  const auto [j, csv] = json_and_csv({"validate", rows, "--calibrate-on", "all"});
  nlohmann::json items = j["rows"];
  for (auto& r : items) r["table"] = "rows";
  CHECK(j["calibration"]["mode"] == "one run -> siblings");  // what --calibrate-on all runs
  for (auto r : j["calibration"]["rows"]) {
    r["table"] = "calibrated one run -> siblings";
    items.push_back(r);
  }
  // Then a line per pair: the row after the change, the pair's own columns beside it.
  for (const auto& p : j["pairs"]) {
    items.push_back({{"table", "pairs"}, {"set", p["set"]}, {"name", p["after"]}, {"source", {{"id", p["source"]}}},
                     {"pair", p}});
  }
  // Then a line per batch transfer: the predicted row, its batch and plain rates, the transfer beside,
  // and where it has one its speculative side in the rows' own columns (error: the spec error).
  for (const auto& t : j["batch_transfers"]) {
    nlohmann::json item{{"table", "batch transfers"}, {"set", t["set"]}, {"name", t["to_row"]},
                        {"source", {{"id", t["source"]}}}, {"batch", t["to_batch"]},
                        {"measured", {{"plain_tokens_per_s", t["measured_plain_tokens_per_s"]}}},
                        {"predicted", {{"plain_tokens_per_s", t["predicted_plain_tokens_per_s"]}}},
                        {"transfer", {{"from_row", t["from_row"]}, {"from_batch", t["from_batch"]}, {"error", t["error"]}}}};
    if (t.contains("speculative")) {
      const auto& sp = t["speculative"];
      item["measured"]["spec_tokens_per_s"] = sp["measured_tokens_per_s"];
      item["predicted"]["spec_tokens_per_s"] = sp["predicted_tokens_per_s"];
      item["band"] = {{"p10_tokens_per_s", sp["p10_tokens_per_s"]},
                      {"p90_tokens_per_s", sp["p90_tokens_per_s"]},
                      {"measured_inside", sp["measured_inside"]}};
      item["error"] = sp["error"];
    }
    items.push_back(std::move(item));
  }
  // inputs_not_measured is the text's letters (C, S, P per input), which the JSON spells out as inputs[].
  const KeysOf keys_of = [](const std::string& h) {
    return h == "inputs_not_measured" ? std::vector<std::string>{} : split_dots(h);
  };
  const Table t = check_agrees(
      csv,
      {"table", "set", "name", "source.id", "source.url", "engine", "interconnect", "gpu", "model", "moe", "tp", "batch",
       "tree", "num_steps", "num_draft_tokens", "measured.plain_tokens_per_s", "measured.spec_tokens_per_s",
       "predicted.plain_tokens_per_s", "predicted.spec_tokens_per_s", "band.p10_tokens_per_s",
       "band.p90_tokens_per_s", "band.measured_inside", "band.priors.p10_tokens_per_s", "band.priors.p90_tokens_per_s",
       "band.priors.measured_inside", "band.model_error.sigma_below", "band.model_error.sigma_above", "error",
       "measured.speedup", "predicted.speedup",
       "sign_right", "call", "call_right", "inputs_not_measured", "calibrated_on", "pair.setting", "pair.intervention", "pair.before",
       "pair.change", "pair.measured_gain", "pair.predicted_gain", "pair.sign_right", "pair.gain_band.p10",
       "pair.gain_band.p90", "pair.called", "pair.band_holds", "transfer.from_row", "transfer.from_batch",
       "transfer.error"},
      items, keys_of);
  // header, 4 rows, 4 calibrated rows (one run -> one sibling each), 1 pair (a-chain2 -> a-chain3),
  // 1 batch transfer (a-chain2 at batch 1 -> a-chain4-bs8)
  CHECK(t.size() == 1 + 4 + 4 + 1 + 1);
}

TEST_CASE("cli: --format picks the view, --json is --format json, a bad format is a usage error", "[report][cli]") {
  const auto json = run({"breakeven", "--json"});
  const auto format_json = run({"breakeven", "--format", "json"});
  REQUIRE(json.code == 0);
  CHECK(format_json.out == json.out);
  CHECK(run({"breakeven", "--format", "text"}).out == run({"breakeven"}).out);

  const auto csv = run({"breakeven", "--format", "csv"});
  CHECK(csv.code == 0);
  CHECK(csv.out.rfind("num_steps,accept,tokens_per_cycle,tokens_per_s_at_accept_1\n", 0) == 0);

  for (const char* command : {"predict", "rank", "sweep", "breakeven", "comm", "forward", "acceptance", "validate"}) {
    INFO(command);
    const auto bad = run({command, "--format", "xml"});
    CHECK(bad.code == specsim::cli::kExitUsage);
    CHECK_THAT(bad.err, Contains("--format") && Contains("'xml' is not one of {text,json,csv}"));
    CHECK(bad.out.empty());
  }
  const auto both = run({"breakeven", "--json", "--format", "csv"});
  CHECK(both.code == specsim::cli::kExitUsage);
  CHECK_THAT(both.err, Contains("excludes"));
}

TEST_CASE("report: predict's text leaves out what cannot move the prediction, unless it was set", "[report][predict]") {
  // Llama-3.1-8B + EAGLE-3 on one H200 in graph mode: no experts, no collective, no eager launch.
  const auto dense = run({"predict", "--scenario", "llama-3.1-8b-eagle3-1x-h200"});
  REQUIRE(dense.code == 0);
  CHECK_THAT(dense.out, !Contains("routing skew"));
  CHECK_THAT(dense.out, !Contains("all-reduce x"));
  CHECK_THAT(dense.out, !Contains("eager all-reduce overhead"));
  CHECK_THAT(dense.out, Contains("engine overhead per draft forward"));
  // A set routing skew is shown, labelled as set, though this target has no experts.
  const auto set = run({"predict", "--scenario", "llama-3.1-8b-eagle3-1x-h200", "--set", "compute.routing_skew=0.5"});
  REQUIRE(set.code == 0);
  CHECK_THAT(set.out, Contains("routing skew 0.500"));
  // n-gram lookup runs no draft forward: its overhead is neither a calibration line nor a band source.
  const auto ngram = run({"predict", "--scenario", "qwen3-8b-ngram-1x-rtx-4090"});
  REQUIRE(ngram.code == 0);
  CHECK_THAT(ngram.out, !Contains("engine overhead per draft forward"));
  // The home box: an MoE target over PCIe with an eager verify shows all three.
  const auto home = run({"predict", "--accept", "0.747"});
  REQUIRE(home.code == 0);
  CHECK_THAT(home.out, Contains("routing skew") && Contains("all-reduce x") && Contains("eager all-reduce overhead"));
}
