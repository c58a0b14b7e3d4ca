// Reader for the stdout of nccl-tests' *_perf programs (https://github.com/NVIDIA/nccl-tests), the
// all-reduce measurement users already have. It reads every column layout nccl-tests has printed
// (docs/references/nccl.md#nccl-tests-columns): the 2017-2019 `bytes N type op time ... res` layout with
// time in ms, the 2019-2022 `size count type redop time ... error` layout, and the 2022+ layout with
// `root` and `#wrong` (one- or two-space wide), with either bus-id style in the device lines.
// Several tables per file are allowed; lines that are neither table rows nor nccl-tests comments
// (NCCL_DEBUG output, mpirun warnings) are ignored, and `[1,0]<stdout>:` / ` 0: ` prefixes that MPI
// and srun put in front of rows are stripped.
//
// Everything comes out in SI units: bytes, seconds, bytes/s (nccl-tests prints us and GB/s = 1e9).
#pragma once

#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "specsim/comm_curve.hpp"

namespace specsim {

// One half of a row: the out-of-place or the in-place measurement.
struct NcclTestsTiming {
  double time_s = 0.0;                  // average time per collective (nccl-tests `time`)
  double algbw_bytes_per_s = 0.0;       // size / time, as printed (2 decimals of GB/s)
  double busbw_bytes_per_s = 0.0;       // algbw * 2(n-1)/n for all-reduce, as printed
  std::string check;                    // `#wrong` count, `error` / `res` value, or "N/A" (-c 0)
};

struct NcclTestsRow {
  double size_bytes = 0.0;
  long long count = 0;                  // elements
  std::string type;                     // "float", "half", ...
  std::string redop;                    // "sum", ...; empty when the layout has no op column
  int root = -1;                        // -1 when absent or printed as -1 (all-reduce)
  NcclTestsTiming out_of_place;
  NcclTestsTiming in_place;
  int line = 0;                         // 1-based line in the file
};

struct NcclTestsTable {
  // From `# Collective test starting: all_reduce_perf` (nccl-tests 2025+); older output does not
  // name the collective, so it is ParseOptions::collective_if_unnamed.
  std::string collective;
  bool collective_from_log = false;
  // Total ranks: the `#  Rank` device lines (right for MPI runs, which print `nGpus 1`), else
  // nThread x nGpus from the header line, unless ParseOptions::ranks overrides both.
  int ranks = 0;
  // The GPU model of each `#  Rank` device line, in the order printed ("NVIDIA GeForce RTX 5090");
  // empty when the log has no device lines.
  std::vector<std::string> devices;
  // The hosts the device lines name (`... Pid 27238 on crazy device 0 ...`), each once, in order.
  std::vector<std::string> hosts;
  // From the `# nThread ...` header line; -1 when the line or the field is missing.
  int iters = -1;
  int warmup_iters = -1;
  int agg_iters = -1;
  int graph_launches = -1;              // -G: 0 = eager launches, > 0 = CUDA graph replays
  std::string time_unit;                // "us" or "ms" as the table printed it
  int first_line = 0;                   // line of the column header
  std::vector<NcclTestsRow> rows;
};

struct NcclTestsLog {
  std::string file;
  std::string tests_version;            // "2.18.2" from `# nccl-tests version`; empty if absent
  std::string nccl_version;             // "2.29.7" from nccl-library=22907 or `NCCL version 2.x.y`
  // NCCL_* variables NCCL reports as "set by environment to" in NCCL_DEBUG=INFO output.
  std::map<std::string, std::string> env;
  std::vector<NcclTestsTable> tables;
  int skipped_rows = 0;                 // malformed rows dropped in lenient mode
  std::vector<std::string> skipped;     // one "file:line:col: what" message per dropped row
  // What the tables say without being wrong: a size missing from a table's even steps
  // ("file:line: no row between 4 KiB and 16 KiB ..."), one message each.
  std::vector<std::string> warnings;
};

struct ParseOptions {
  // Drop malformed rows (counting them) instead of throwing on the first one.
  bool lenient = false;
  // Rank count for every table, overriding the header (e.g. a log whose header was cut off).
  std::optional<int> ranks;
  // Collective assumed for tables that do not name theirs (all nccl-tests output before 2025).
  std::string collective_if_unnamed = "all_reduce";
};

// Largest message size and time a row may carry. 1 TiB is several times the memory of the largest
// GPU one buffer can live on (288 GB HBM3E on a B300 / MI355X:
// https://www.nvidia.com/en-us/data-center/dgx-b300/, https://www.amd.com/en/products/accelerators/instinct/mi350/mi355x.html);
// an hour per collective is past any all-reduce of that size over any link nccl-tests runs on
// (1 TiB at 1 GB/s is 18 minutes). Past these, a row is a damaged or doctored log.
inline constexpr double kMaxNcclTestsBytes = 1099511627776.0;  // 2^40 B
inline constexpr double kMaxNcclTestsSeconds = 3600.0;

// Throws specsim::Error naming file, line and column for: a malformed row (wrong number of fields,
// a non-numeric or negative number, a size, count or time past the bounds above), a row whose
// `#wrong` column is not 0 (nccl-tests found wrong results: its times are not of a correct
// all-reduce), a row before any column header, a table whose rank count cannot be told, an
// unreadable stream, and a file with no table at all. In lenient mode such rows are dropped and
// listed in NcclTestsLog::skipped instead.
[[nodiscard]] NcclTestsLog parse_nccl_tests(std::istream& in, const std::string& file_name,
                                            const ParseOptions& options = {});
[[nodiscard]] NcclTestsLog parse_nccl_tests_file(const std::string& path,
                                                 const ParseOptions& options = {});

// Which half of an nccl-tests row a curve uses; the model uses out-of-place unless told.
enum class NcclTestsColumn { kOutOfPlace, kInPlace };

// The rows of one table as the model's curve points (rows of size 0 carry no size information and
// are left out), and the curve fitted with the table's rank count: where a parsed log becomes a
// model value (the model never sees the parser's types).
[[nodiscard]] std::vector<CurvePoint> curve_points(const NcclTestsTable& table,
                                                   NcclTestsColumn column = NcclTestsColumn::kOutOfPlace);
[[nodiscard]] MeasuredCurve curve_from_table(const NcclTestsTable& table,
                                             NcclTestsColumn column = NcclTestsColumn::kOutOfPlace,
                                             CurveOptions options = {});

}  // namespace specsim
