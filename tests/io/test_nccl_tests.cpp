// The nccl-tests parser on the shipped public logs, on layouts reconstructed from docs/references/nccl.md#nccl-tests-columns around
// real rows, and on hand-damaged copies in tests/data/invalid/nccl/.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "specsim/error.hpp"
#include "specsim/nccl_tests.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;
using specsim::NcclTestsLog;
using specsim::ParseOptions;

namespace {

const std::string kShared = std::string(SPECSIM_SOURCE_DIR) + "/calibration/nccl/";
const std::string kInvalid = std::string(SPECSIM_TEST_DATA_DIR) + "/invalid/nccl/";

NcclTestsLog parse_text(const std::string& text, const ParseOptions& options = {}) {
  std::istringstream in(text);
  return specsim::parse_nccl_tests(in, "<test>", options);
}

// Expects an Error whose what() contains every piece.
void expect_error(const std::string& path, const std::string& location, const std::string& piece,
                  const ParseOptions& options = {}) {
  try {
    (void)specsim::parse_nccl_tests_file(path, options);
    FAIL("no error for " << path);
  } catch (const specsim::Error& e) {
    INFO(e.what());
    CHECK_THAT(e.what(), Contains(location));
    CHECK_THAT(e.what(), Contains(piece));
  }
}

}  // namespace

TEST_CASE("every shipped nccl-tests log parses with its rank count and rows", "[nccl_tests]") {
  SECTION("8x RTX 5090: newest layout, version line, [0000:01:00] bus ids, two-space #wrong") {
    const auto log = specsim::parse_nccl_tests_file(kShared + "aikitoria-8x5090-p2p-turin.log");
    REQUIRE(log.tables.size() == 1);
    const auto& t = log.tables[0];
    CHECK(log.tests_version == "2.18.2");
    CHECK(log.nccl_version == "2.29.7");  // nccl-library=22907 = MMmmpp
    CHECK(t.collective == "all_reduce");  // '# Collective test starting: all_reduce_perf'
    CHECK(t.collective_from_log);
    CHECK(t.ranks == 8);                  // eight '#  Rank' lines
    CHECK(t.rows.size() == 25);           // 8 B .. 128 MiB, doubling: 2^3 .. 2^27
    CHECK(t.iters == 20);
    CHECK(t.warmup_iters == 1);
    CHECK(t.agg_iters == 1);
    CHECK(t.graph_launches == 0);
    CHECK(t.first_line == 26);
    // Row 10 (line 37): '4096  1024  float  sum  -1  36.29  0.11  0.20  0  35.21  0.12  0.20  0'
    const auto& r = t.rows[9];
    CHECK(r.line == 37);
    CHECK(r.size_bytes == 4096.0);
    CHECK(r.count == 1024);
    CHECK(r.type == "float");
    CHECK(r.redop == "sum");
    CHECK(r.root == -1);
    CHECK_THAT(r.out_of_place.time_s, WithinRel(36.29e-6, 1e-12));  // 36.29 us
    CHECK_THAT(r.out_of_place.busbw_bytes_per_s, WithinRel(0.20e9, 1e-12));  // 0.20 GB/s
    CHECK_THAT(r.in_place.time_s, WithinRel(35.21e-6, 1e-12));
    CHECK(r.out_of_place.check == "0");
    // '33554432 ... 1284.81 26.12 45.70': a time wider than %7.2f (getFloatStr, docs/references/nccl.md#nccl-tests-columns b).
    CHECK_THAT(t.rows[22].out_of_place.time_s, WithinRel(1284.81e-6, 1e-12));
  }
  SECTION("2x8 H100 over InfiniBand: 16 ranks on two hosts, the library's bare version banner") {
    const auto log = specsim::parse_nccl_tests_file(kShared + "qoofyk-2x8xH100-xe9680-ib.log");
    const auto& t = log.tables.at(0);
    CHECK(log.nccl_version == "2.26.2");  // line 29: 'NCCL version 2.26.2+cuda12.8', no 'NCCL INFO' prefix
    CHECK(t.ranks == 16);                 // '#  Rank  0' .. '#  Rank 15' over bm-h100-01 and -02
    CHECK(t.rows.size() == 32);           // 8 B .. 16 GiB: 2^3 .. 2^34
    CHECK(t.graph_launches == 0);
    // Line 44: '8192  2048  float  sum  -1  32.12  0.26  0.48  0  31.67  0.26  0.48  0'
    CHECK(t.rows[10].line == 44);
    CHECK_THAT(t.rows[10].in_place.time_s, WithinRel(31.67e-6, 1e-12));
    // Line 65: the 16 GiB row, times wider than %7.2f: '68652  250.24  469.21 ... 68668'
    CHECK_THAT(t.rows[31].in_place.time_s, WithinRel(68668e-6, 1e-12));
  }
  SECTION("2x RTX 2080 Ti: 2022-2025 layout, footer, 1 GiB rows printed with %7.0f") {
    const auto log = specsim::parse_nccl_tests_file(kShared + "anthonyhoo-2x2080ti-nop2p-pix.log");
    const auto& t = log.tables.at(0);
    CHECK(log.tests_version.empty());
    CHECK(log.nccl_version.empty());
    CHECK_FALSE(t.collective_from_log);
    CHECK(t.collective == "all_reduce");  // ParseOptions::collective_if_unnamed
    CHECK(t.ranks == 2);
    CHECK(t.rows.size() == 28);           // 8 B .. 1 GiB: 2^3 .. 2^30
    CHECK(t.warmup_iters == 5);
    const auto& last = t.rows.back();
    CHECK(last.size_bytes == 1073741824.0);
    CHECK_THAT(last.out_of_place.time_s, WithinRel(0.268588, 1e-12));  // '268588' us
    CHECK_THAT(last.out_of_place.algbw_bytes_per_s, WithinRel(4.00e9, 1e-12));
  }
  SECTION("8x RTX 4090 and 8x H100: [0x01] bus ids, trailing spaces in the header") {
    const auto a = specsim::parse_nccl_tests_file(kShared + "chlc-8x4090-nop2p-sys.log");
    CHECK(a.tables.at(0).ranks == 8);
    CHECK(a.tables.at(0).rows.size() == 25);
    CHECK_THAT(a.tables[0].rows[0].out_of_place.time_s, WithinRel(38.83e-6, 1e-12));
    CHECK_THAT(a.tables[0].rows[0].in_place.time_s, WithinRel(40.43e-6, 1e-12));
    const auto b = specsim::parse_nccl_tests_file(kShared + "ncclt290-8xH100-nvswitch-large.log");
    CHECK(b.tables.at(0).ranks == 8);
    CHECK(b.tables.at(0).rows.size() == 6);  // 128 MiB .. 4 GiB
    CHECK(b.tables[0].iters == 2);
    CHECK_THAT(b.tables[0].rows.back().out_of_place.time_s, WithinRel(15870e-6, 1e-12));
  }
}

TEST_CASE("tables written by calibration/nccl/sweep_allreduce.py parse as nccl-tests output", "[nccl_tests]") {
  // A one-GPU run of the sweep on the H200 (calibration/nccl/h200-1x-smoke/): the layout of
  // docs/references/nccl.md#nccl-tests-columns (a), bf16 rows, the script's '##' notes, NCCL's own INFO lines for version and environment.
  const std::string dir = kShared + "h200-1x-smoke/";
  const auto eager = specsim::parse_nccl_tests_file(dir + "h200-1x-default-eager.log");
  const auto graph = specsim::parse_nccl_tests_file(dir + "h200-1x-default-graph.log");
  for (const auto* log : {&eager, &graph}) {
    REQUIRE(log->tables.size() == 1);
    const auto& t = log->tables[0];
    CHECK(log->nccl_version == "2.28.9");              // 'NCCL INFO NCCL version 2.28.9+cuda13.0'
    CHECK(log->env.at("NCCL_NVLS_ENABLE") == "0");     // NCCL 2.28 prints 'set by environment to 0.'
    CHECK(t.collective == "all_reduce");
    CHECK(t.ranks == 1);                                // one '#  Rank' line
    CHECK(t.rows.size() == 26);                         // 8 B .. 256 MiB: 2^3 .. 2^28
    CHECK(t.rows.front().type == "bfloat16");
    CHECK(t.rows.front().count == 4);                   // 8 B of bf16
    CHECK(t.rows.back().size_bytes == 268435456.0);
    CHECK(t.iters == 20);
    CHECK(t.warmup_iters == 5);
    for (const auto& r : t.rows) CHECK(r.out_of_place.check == "0");
  }
  CHECK(eager.tables[0].graph_launches == 0);
  CHECK(graph.tables[0].graph_launches == 5);
  // Row 1 of the eager table: '8  4  bfloat16  sum  -1  31.42  0.00  0.00  0  27.48  0.00  0.00  0'.
  CHECK_THAT(eager.tables[0].rows[0].out_of_place.time_s, WithinRel(31.42e-6, 1e-12));
  CHECK_THAT(eager.tables[0].rows[0].in_place.time_s, WithinRel(27.48e-6, 1e-12));
}

// Layouts of docs/references/nccl.md#nccl-tests-columns (c) and (d), built around rows of the shipped 2080 Ti log.
TEST_CASE("older column layouts: 'error' without root, and the first releases in ms", "[nccl_tests]") {
  SECTION("2019-2022: no root column, error as %5.0le, pre-2022 device lines") {
    const auto log = parse_text(
        "# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 \n"
        "#\n"
        "# Using devices\n"
        "#   Rank  0 Pid  31706 on     host device  0 [0xb4] GeForce RTX 2080 Ti\n"
        "#   Rank  1 Pid  31706 on     host device  1 [0xb5] GeForce RTX 2080 Ti\n"
        "#\n"
        "#                                                     out-of-place                       in-place\n"
        "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
        "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
        "           8             2   float     sum    12.25    0.00    0.00  0e+00    12.00    0.00    0.00  0e+00\n"
        "          16             4   float     sum    11.77    0.00    0.00  0e+00    11.69    0.00    0.00  0e+00\n");
    const auto& t = log.tables.at(0);
    CHECK(t.ranks == 2);
    CHECK(t.agg_iters == -1);  // 'agg iters' and 'graph' came with the 2022-08 resync
    CHECK(t.graph_launches == -1);
    REQUIRE(t.rows.size() == 2);
    CHECK(t.rows[1].root == -1);
    CHECK(t.rows[1].out_of_place.check == "0e+00");
    CHECK_THAT(t.rows[1].out_of_place.time_s, WithinRel(11.77e-6, 1e-12));
  }
  SECTION("2017-2019: 'bytes N type op ... res', time in ms") {
    const auto log = parse_text(
        "# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 \n"
        "#                                                 out-of-place                    in-place\n"
        "#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res\n"
        "           8             2   float     sum    0.012   0.00   0.00    0e+00    0.012   0.00   0.00    0e+00\n");
    const auto& t = log.tables.at(0);
    CHECK(t.time_unit == "ms");
    CHECK_THAT(t.rows.at(0).out_of_place.time_s, WithinRel(12e-6, 1e-12));  // 0.012 ms
  }
}

TEST_CASE("several tables, NCCL_DEBUG output and launcher prefixes in one file", "[nccl_tests]") {
  // Two runs (an MPI run printing 'nGpus 1' with four device lines, then a -g 2 run), NCCL INFO
  // lines and mpirun noise in between, Open MPI --tag-output and srun --label prefixes.
  const std::string text =
      "node1:100:100 [0] NCCL INFO NCCL version 2.19.3+cuda12.2\n"
      "node1:100:100 [0] NCCL INFO NCCL_PROTO set by environment to Simple\n"
      "[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 1\n"
      "[1,0]<stdout>:#  Rank  0 Group  0 Pid    100 on      node1 device  0 [0x01] NVIDIA A100\n"
      "[1,0]<stdout>:#  Rank  1 Group  0 Pid    101 on      node1 device  1 [0x02] NVIDIA A100\n"
      "[1,0]<stdout>:#  Rank  2 Group  0 Pid    102 on      node1 device  2 [0x03] NVIDIA A100\n"
      "[1,0]<stdout>:#  Rank  3 Group  0 Pid    103 on      node1 device  3 [0x04] NVIDIA A100\n"
      "[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "[1,0]<stdout>:#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "[1,0]<stdout>:           8             2     float     sum      -1    15.31    0.00    0.00    N/A    15.40    0.00    0.00    N/A\n"
      "node1:101:101 [1] NCCL INFO comm 0x5555 rank 1 nranks 4 - Init COMPLETE\n"
      "--------------------------------------------------------------------------\n"
      "[1,0]<stdout>:          16             4     float     sum      -1    15.90    0.00    0.00    N/A    15.88    0.00    0.00    N/A\n"
      "0: # nThread 1 nGpus 2 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
      "0: #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
      "0:            8             2     float     sum      -1    12.25    0.00    0.00      0    12.00    0.00    0.00      0\n";
  const auto log = parse_text(text);
  CHECK(log.nccl_version == "2.19.3");
  CHECK(log.env.at("NCCL_PROTO") == "Simple");
  REQUIRE(log.tables.size() == 2);
  CHECK(log.tables[0].ranks == 4);  // device lines, not nThread x nGpus = 1
  CHECK(log.tables[0].devices == std::vector<std::string>(4, "NVIDIA A100"));
  CHECK(log.tables[1].devices.empty());
  CHECK(log.tables[0].graph_launches == 1);
  REQUIRE(log.tables[0].rows.size() == 2);
  CHECK(log.tables[0].rows[1].line == 13);
  CHECK(log.tables[0].rows[1].out_of_place.check == "N/A");  // -c 0
  CHECK(log.tables[1].ranks == 2);  // no device lines: nThread 1 x nGpus 2
  CHECK_THAT(log.tables[1].rows.at(0).in_place.time_s, WithinRel(12.00e-6, 1e-12));

  ParseOptions forced;
  forced.ranks = 8;
  CHECK(parse_text(text, forced).tables[0].ranks == 8);
}

TEST_CASE("damaged logs fail with the line, column and what is wrong", "[nccl_tests][invalid]") {
  // chlc log with the 512 KiB row cut after its out-of-place busbw (line 43).
  expect_error(kInvalid + "truncated_row.log", "truncated_row.log:43:7: row:",
               "row has 8 fields, expected 13 (size count type redop root time algbw busbw #wrong "
               "time algbw busbw #wrong) as in the header on line 25; truncated row?");
  // aikitoria log with a 14th field on the 16 KiB row (line 39).
  expect_error(kInvalid + "extra_column.log", "extra_column.log:39:8: row:", "row has 14 fields, expected 13");
  // 2080 Ti log whose 4 KiB out-of-place time reads '11.7.9' (line 28, column 57).
  expect_error(kInvalid + "non_numeric_time.log", "non_numeric_time.log:28:57: out-of-place time:",
               "expected a number, got '11.7.9'");
  // H100 log without its three column-header lines: the first row (line 22) has no header.
  expect_error(kInvalid + "missing_header.log", "missing_header.log:22:4: header:",
               "table row before any column header");
  // chlc log without the '# nThread' line and the device lines: the header on line 16 cannot say
  // how many ranks ran.
  expect_error(kInvalid + "no_rank_count.log", "no_rank_count.log:16:1: ranks:", "cannot tell the rank count");
  ParseOptions forced;
  forced.ranks = 8;
  CHECK(specsim::parse_nccl_tests_file(kInvalid + "no_rank_count.log", forced).tables.at(0).ranks == 8);
}

TEST_CASE("lenient mode skips and counts malformed rows", "[nccl_tests][invalid]") {
  ParseOptions lenient;
  lenient.lenient = true;
  const auto log = specsim::parse_nccl_tests_file(kInvalid + "truncated_row.log", lenient);
  CHECK(log.skipped_rows == 1);
  REQUIRE(log.skipped.size() == 1);
  CHECK_THAT(log.skipped[0], Contains("truncated_row.log:43:7"));
  CHECK(log.tables.at(0).rows.size() == 24);  // 25 rows less the damaged one
  const auto bad = specsim::parse_nccl_tests_file(kInvalid + "non_numeric_time.log", lenient);
  CHECK(bad.skipped_rows == 1);
  CHECK(bad.tables.at(0).rows.size() == 27);
}

TEST_CASE("a file without any table is an error", "[nccl_tests][invalid]") {
  CHECK_THROWS_WITH(parse_text("node1:1:1 [0] NCCL INFO Bootstrap : Using eth0\n"),
                    Contains("<test>: no nccl-tests table found"));
  CHECK_THROWS_WITH(specsim::parse_nccl_tests_file(kInvalid + "does_not_exist.log"), Contains("cannot open file"));
}
