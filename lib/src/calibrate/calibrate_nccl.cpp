#include "specsim/calibrate_nccl.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <utility>

#include "specsim/comm_curve.hpp"
#include "specsim/error.hpp"
#include "specsim/nccl_tests.hpp"
#include "specsim/sha256.hpp"

namespace specsim {

namespace {

// nccl-tests' name for a profile's collective: its `*_perf` binary without the suffix.
std::string nccl_tests_name(const std::string& collective) { return collective == "all_to_all" ? "alltoall" : collective; }

// `## key: value` lines that the curated logs in calibration/nccl open with; kept in the profile
// because they say where the numbers come from better than the file name does.
const std::vector<std::string> kLogNoteKeys = {"source", "nccl_version", "env", "command"};

std::vector<std::string> log_notes(const std::string& path) {
  std::vector<std::string> notes;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("## ")) continue;
    for (const auto& key : kLogNoteKeys) {
      if (line.compare(3, key.size() + 1, key + ":") == 0) notes.push_back(line.substr(3));
    }
  }
  return notes;
}

std::string source_of(const std::vector<std::string>& notes) {
  for (const auto& n : notes) {
    if (n.starts_with("source:")) {
      const auto start = n.find_first_not_of(' ', 7);
      return start == std::string::npos ? "" : n.substr(start);
    }
  }
  return "";
}

// The GPU models of a table's device lines ("NVIDIA GeForce RTX 5090"), in the order first seen,
// joined by " + "; empty when the log has no device lines. The rank count is checked on its own.
std::string device_summary(const std::vector<std::string>& devices) {
  std::vector<std::string> models;
  for (const auto& d : devices) {
    if (std::find(models.begin(), models.end(), d) == models.end()) models.push_back(d);
  }
  std::string out;
  for (const auto& m : models) out += (out.empty() ? "" : " + ") + m;
  return out;
}

// Rows of equal size (several tables, several logs) become one point at their mean time.
std::vector<CurvePoint> merge_equal_sizes(std::vector<CurvePoint> points) {
  std::stable_sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  std::vector<CurvePoint> out;
  std::vector<int> counts;
  for (const auto& p : points) {
    if (!out.empty() && out.back().bytes == p.bytes) {
      out.back().time_s += p.time_s;
      ++counts.back();
    } else {
      out.push_back(p);
      counts.push_back(1);
    }
  }
  for (std::size_t i = 0; i < out.size(); ++i) out[i].time_s /= counts[i];
  return out;
}

const std::string kOneRelease = "one profile is one NCCL release; pass --allow-mixed to pool them anyway";

// One property every pooled table must share (a GPU model, a host set): the first table's value and
// where it came from; another value is an error, or with allow_mixed a warning.
struct Shared {
  std::string value;
  std::string from;
};

// The logs pooled into one profile, table by table.
class Pool {
 public:
  explicit Pool(const NcclCalibrationRequest& r) : r_(r) {}

  void add_log(const std::string& path, const NcclTestsLog& log, ProfileSourceFile& file) {
    note_release(log.nccl_version, path);
    std::vector<std::string> other;
    for (const NcclTestsTable& t : log.tables) {
      if (t.collective != nccl_tests_name(r_.collective)) {
        other.push_back(t.collective);
        continue;
      }
      add_table(path, t);
      const auto pts = curve_points(t, r_.in_place ? NcclTestsColumn::kInPlace : NcclTestsColumn::kOutOfPlace);
      file.rows_used += static_cast<int>(pts.size());
      rows_.insert(rows_.end(), pts.begin(), pts.end());
    }
    if (file.rows_used == 0) no_rows(path, other);
  }

  // A log without a release pooled with one that has it: the table's release is unknown, not the
  // other log's.
  void settle_release() {
    if (unversioned_.empty() || version_.value.empty()) return;
    differ(unversioned_, 0, "nccl_version",
           "log prints no NCCL release but " + version_.from + " ran NCCL " + version_.value,
           kOneRelease, "; pooled, and the profile states no release");
    version_.value.clear();
  }

  std::vector<CurvePoint> rows_;
  std::optional<int> ranks_;
  std::optional<int> graph_launches_;
  int nodes_ = 1;
  bool mixed_versions_ = false;
  Shared version_, devices_, hosts_;

 private:
  // An error at path:line on `key` saying `why` it is refused, or with allow_mixed a warning with
  // `pooled` appended.
  void differ(const std::string& path, int line, const std::string& key, const std::string& what,
              const std::string& why, const std::string& pooled) const {
    if (!r_.allow_mixed) throw Error({path, line, 0}, key, what + " (" + why + ")");
    if (r_.warn) r_.warn(path + (line ? ":" + std::to_string(line) : "") + ": " + what + pooled + " (--allow-mixed)");
  }

  // One profile is one NCCL release: logs that print different ones are refused (allow_mixed pools
  // them, and the profile then states no release).
  void note_release(const std::string& version, const std::string& path) {
    if (version.empty() && unversioned_.empty()) unversioned_ = path;
    if (version.empty() || mixed_versions_ || version == version_.value) return;
    if (version_.value.empty()) {
      version_ = {version, path};
      return;
    }
    differ(path, 0, "nccl_version", "log ran NCCL " + version + " but " + version_.from + " ran NCCL " + version_.value,
           kOneRelease, "; pooled, and the profile states no release");
    mixed_versions_ = true;
    version_.value.clear();
  }

  // One profile is one box: GPUs of one model at one rank count on one host set, one launch mode.
  void add_table(const std::string& path, const NcclTestsTable& t) {
    const std::string where = path + ":" + std::to_string(t.first_line);
    same(devices_, device_summary(t.devices), path, t.first_line, "devices", "ran on ");
    if (ranks_ && *ranks_ != t.ranks) {
      differ(path, t.first_line, "ranks",
             "table has " + std::to_string(t.ranks) + " ranks but " + ranks_from_ + " has " + std::to_string(*ranks_),
             "one profile is one rank count; pass --ranks to override, or --allow-mixed to pool them anyway",
             "; pooled as " + std::to_string(*ranks_) + " ranks");
    }
    // The same GPU model on another machine is another box (its PCIe tree, BIOS and driver differ).
    same(hosts_, device_summary(t.hosts), path, t.first_line, "hosts", "ran on host ");
    // -G: 0 (or no such field, before nccl-tests printed it) is eager launches.
    const int graph = std::max(t.graph_launches, 0);
    if (graph_launches_ && (*graph_launches_ > 0) != (graph > 0)) {
      throw Error({path, t.first_line, 0}, "graph",
                  std::string("table is ") + (graph > 0 ? "graph" : "eager") + " mode but " + mode_from_ + " is " +
                      (*graph_launches_ > 0 ? "graph" : "eager") + " (one profile is one launch mode)");
    }
    if (!ranks_) {
      ranks_ = t.ranks;
      ranks_from_ = where;
    }
    // One run over several hosts is one multi-node box (its ranks crossed the network), not a pool
    // of boxes: the profile says how many nodes it spans.
    nodes_ = std::max(nodes_, static_cast<int>(t.hosts.size()));
    graph_launches_ = graph;
    mode_from_ = where;
  }

  void same(Shared& shared, const std::string& value, const std::string& path, int line, const std::string& key,
            const std::string& verb) const {
    if (!value.empty() && !shared.value.empty() && value != shared.value) {
      differ(path, line, key, "table " + verb + value + " but " + shared.from + " " + verb + shared.value,
             "one profile is one box; pass --allow-mixed to pool them anyway", "; pooled");
    }
    if (shared.value.empty() && !value.empty()) shared = {value, path + ":" + std::to_string(line)};
  }

  [[noreturn]] void no_rows(const std::string& path, const std::vector<std::string>& other) const {
    std::string found;
    for (const auto& c : other) found += (found.empty() ? "" : ", ") + c;
    const bool other_kind = !found.empty() && r_.collective == "all_reduce" && found.find("alltoall") != std::string::npos;
    throw Error({path, 0, 0}, "", "no " + nccl_tests_name(r_.collective) + " rows with size > 0" +
                                      (found.empty() ? std::string() : " (tables found: " + found + ")") +
                                      (other_kind ? "; --collective all_to_all reads alltoall_perf tables" : ""));
  }

  const NcclCalibrationRequest& r_;
  std::string unversioned_;  // the first log that prints no NCCL release
  std::string ranks_from_, mode_from_;
};

// The logs' file names, comma-separated.
std::string file_names(const NcclCalibration& c) {
  std::string files;
  for (const auto& f : c.provenance.files) {
    files += (files.empty() ? "" : ", ") + std::filesystem::path(f.path).filename().string();
  }
  return files;
}

std::string profile_description(const NcclCalibration& c, const Pool& pool, const std::string& collective) {
  const std::string files = file_names(c);
  const CommProfile& p = c.profile;
  return (pool.mixed_versions_           ? std::string("NCCL (mixed releases)")
          : pool.version_.value.empty() ? std::string("NCCL (version not in log)")
                                         : "NCCL " + pool.version_.value) +
         " " + nccl_tests_name(collective) + ", " + std::to_string(p.ranks) + " ranks" +
         (p.nodes > 1 ? " on " + std::to_string(p.nodes) + " nodes" : "") + ", " + to_string(p.mode) +
         ", nccl-tests " + c.provenance.column + " time from " + files;
}

}  // namespace

NcclCalibration calibrate_nccl(const NcclCalibrationRequest& r) {
  ParseOptions parse;
  parse.lenient = r.lenient;
  parse.ranks = r.ranks;
  NcclCalibration c;
  c.provenance.column = r.in_place ? "in_place" : "out_of_place";
  Pool pool(r);
  std::vector<std::string> sources;
  for (const std::string& path : r.logs) {
    const NcclTestsLog log = parse_nccl_tests_file(path, parse);
    if (r.warn) {
      for (const auto& s : log.skipped) r.warn("skipped " + s);
      for (const auto& w : log.warnings) r.warn(w);
    }
    ProfileSourceFile file;
    file.path = path;
    file.sha256 = sha256_file_hex(path);
    file.nccl_version = log.nccl_version;
    file.nccl_tests_version = log.tests_version;
    file.env = log.env;
    file.notes = log_notes(path);
    file.rows_skipped = log.skipped_rows;
    if (const std::string s = source_of(file.notes); !s.empty()) sources.push_back(s);
    pool.add_log(path, log, file);
    c.provenance.files.push_back(std::move(file));
  }
  CurveOptions options;
  options.ranks = *pool.ranks_;
  const std::vector<CurvePoint> points = merge_equal_sizes(pool.rows_);
  c.provenance.regimes = MeasuredCurve::fit(points, options).regimes();
  if (r.holdout_every) {
    c.provenance.holdout = holdout(points, *r.holdout_every, std::numeric_limits<double>::infinity(), options);
  }
  pool.settle_release();
  CommProfile& p = c.profile;
  p.name = r.profile_name;
  p.collective = r.collective;
  p.implementation = "nccl";
  p.ranks = *pool.ranks_;
  p.nodes = pool.nodes_ > 1 && p.ranks % pool.nodes_ == 0 ? pool.nodes_ : 1;
  p.mode = *pool.graph_launches_ > 0 ? LaunchMode::kGraph : LaunchMode::kEager;
  p.nccl_version = pool.version_.value;
  p.description = profile_description(c, pool, r.collective);
  for (const auto& s : sources) p.source += (p.source.empty() ? "" : "; ") + s;
  if (p.source.empty()) p.source = "nccl-tests log(s): " + file_names(c);
  for (const auto& q : points) p.points.push_back({q.bytes, q.time_s});
  c.rows_read = pool.rows_.size();
  c.hosts = pool.hosts_.value;
  return c;
}

}  // namespace specsim
