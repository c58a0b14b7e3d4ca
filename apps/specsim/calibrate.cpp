// specsim calibrate nccl: nccl-tests all_reduce_perf logs -> a comm profile (calibration/profiles)
// with provenance, the fit's per-regime residuals and, with --holdout-every, the error on sizes
// the fit did not see.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <ostream>

#include "cli.hpp"
#include "specsim/comm_curve.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/nccl_tests.hpp"
#include "specsim/output_file.hpp"
#include "specsim/profile_writer.hpp"
#include "specsim/sha256.hpp"
#include "specsim/units.hpp"

namespace specsim::cli {

namespace {

struct CalibrateNcclOptions {
  std::vector<std::string> logs;
  std::string output;
  std::optional<int> holdout_every;
  std::optional<int> ranks;
  bool lenient = false;
  bool in_place = false;
  bool force = false;
  bool allow_mixed = false;
  std::string collective = "all_reduce";  // all_reduce | all_to_all: which tables make the profile
};

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

std::string percent(double fraction) {
  if (!std::isfinite(fraction)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * fraction);
  return buf;
}

std::string us(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f us", seconds * 1e6);
  return buf;
}

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
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

std::string command_line(const CalibrateNcclOptions& o) {
  std::string cmd = "specsim calibrate nccl";
  for (const auto& l : o.logs) cmd += " " + l;
  cmd += " -o " + o.output;
  if (o.holdout_every) cmd += " --holdout-every " + std::to_string(*o.holdout_every);
  if (o.ranks) cmd += " --ranks " + std::to_string(*o.ranks);
  if (o.lenient) cmd += " --lenient";
  if (o.in_place) cmd += " --in-place";
  if (o.force) cmd += " --force";
  if (o.allow_mixed) cmd += " --allow-mixed";
  if (o.collective != "all_reduce") cmd += " --collective " + o.collective;
  return cmd;
}

void run_calibrate_nccl(const CalibrateNcclOptions& o, Io& io) {
  OutputOptions output;
  output.inputs = o.logs;
  output.force = o.force;
  check_output_target(o.output, output);
  ParseOptions parse;
  parse.lenient = o.lenient;
  parse.ranks = o.ranks;
  const NcclTestsColumn column = o.in_place ? NcclTestsColumn::kInPlace : NcclTestsColumn::kOutOfPlace;

  CommProfileProvenance prov;
  prov.tool = std::string("specsim ") + SPECSIM_CLI_VERSION;
  prov.command = command_line(o);
  prov.date_utc = utc_now_iso8601();
  prov.column = o.in_place ? "in_place" : "out_of_place";

  std::vector<CurvePoint> rows;
  std::optional<int> ranks;
  std::optional<int> graph_launches;
  int nodes = 1;
  std::string ranks_from, mode_from, devices_from, devices, hosts_from, hosts;
  std::vector<std::string> sources;
  // One profile is one NCCL release: logs that print different ones are refused (--allow-mixed pools
  // them, and the profile then states no release).
  std::string nccl_version, version_from;
  bool mixed_versions = false;
  std::string unversioned;  // the first log that prints no NCCL release
  const auto note_release = [&](const std::string& version, const std::string& path) {
    if (version.empty() && unversioned.empty()) unversioned = path;
    if (version.empty() || mixed_versions || version == nccl_version) return;
    if (nccl_version.empty()) {
      nccl_version = version;
      version_from = path;
      return;
    }
    const std::string what = "log ran NCCL " + version + " but " + version_from + " ran NCCL " + nccl_version;
    if (!o.allow_mixed) {
      throw Error({path, 0, 0}, "nccl_version", what + " (one profile is one NCCL release; pass --allow-mixed to pool them anyway)");
    }
    io.err << "specsim: warning: " << path << ": " << what << "; pooled, and the profile states no release (--allow-mixed)\n";
    mixed_versions = true;
    nccl_version.clear();
  };
  for (const std::string& path : o.logs) {
    const NcclTestsLog log = parse_nccl_tests_file(path, parse);
    for (const auto& s : log.skipped) io.err << "specsim: warning: skipped " << s << "\n";
    for (const auto& w : log.warnings) io.err << "specsim: warning: " << w << "\n";
    ProfileSourceFile file;
    file.path = path;
    file.sha256 = sha256_file_hex(path);
    file.nccl_version = log.nccl_version;
    file.nccl_tests_version = log.tests_version;
    file.env = log.env;
    file.notes = log_notes(path);
    file.rows_skipped = log.skipped_rows;
    note_release(log.nccl_version, path);
    if (const std::string s = source_of(file.notes); !s.empty()) sources.push_back(s);
    std::vector<std::string> other;
    for (const NcclTestsTable& t : log.tables) {
      const std::string where = path + ":" + std::to_string(t.first_line);
      if (t.collective != nccl_tests_name(o.collective)) {
        other.push_back(t.collective);
        continue;
      }
      // One profile is one box: GPUs of one model at one rank count. --allow-mixed pools anyway,
      // with a warning; the profile then carries the first table's rank count.
      const std::string table_devices = device_summary(t.devices);
      if (!table_devices.empty() && !devices.empty() && table_devices != devices) {
        const std::string what = "table ran on " + table_devices + " but " + devices_from + " ran on " + devices;
        if (!o.allow_mixed) {
          throw Error({path, t.first_line, 0}, "devices",
                      what + " (one profile is one box; pass --allow-mixed to pool them anyway)");
        }
        io.err << "specsim: warning: " << where << ": " << what << "; pooled (--allow-mixed)\n";
      }
      if (ranks && *ranks != t.ranks) {
        const std::string what = "table has " + std::to_string(t.ranks) + " ranks but " + ranks_from + " has " +
                                 std::to_string(*ranks);
        if (!o.allow_mixed) {
          throw Error({path, t.first_line, 0}, "ranks",
                      what + " (one profile is one rank count; pass --ranks to override, or --allow-mixed to "
                             "pool them anyway)");
        }
        io.err << "specsim: warning: " << where << ": " << what << "; pooled as " << *ranks
               << " ranks (--allow-mixed)\n";
      }
      if (devices.empty() && !table_devices.empty()) {
        devices = table_devices;
        devices_from = where;
      }
      // One box is one host set: the same GPU model on another machine is another box (its PCIe
      // tree, BIOS and driver differ).
      const std::string table_hosts = device_summary(t.hosts);
      if (!table_hosts.empty() && !hosts.empty() && table_hosts != hosts) {
        const std::string what = "table ran on host " + table_hosts + " but " + hosts_from + " ran on host " + hosts;
        if (!o.allow_mixed) {
          throw Error({path, t.first_line, 0}, "hosts", what + " (one profile is one box; pass --allow-mixed to pool them anyway)");
        }
        io.err << "specsim: warning: " << where << ": " << what << "; pooled (--allow-mixed)\n";
      }
      if (hosts.empty() && !table_hosts.empty()) {
        hosts = table_hosts;
        hosts_from = where;
      }
      // -G: 0 (or no such field, before nccl-tests printed it) is eager launches.
      const int graph = std::max(t.graph_launches, 0);
      if (graph_launches && (*graph_launches > 0) != (graph > 0)) {
        throw Error({path, t.first_line, 0}, "graph",
                    std::string("table is ") + (graph > 0 ? "graph" : "eager") + " mode but " + mode_from + " is " +
                        (*graph_launches > 0 ? "graph" : "eager") + " (one profile is one launch mode)");
      }
      if (!ranks) {
        ranks = t.ranks;
        ranks_from = where;
      }
      // One run over several hosts is one multi-node box (its ranks crossed the network), not a
      // pool of boxes: the profile says how many nodes it spans.
      nodes = std::max(nodes, static_cast<int>(t.hosts.size()));
      graph_launches = graph;
      mode_from = where;
      const auto pts = curve_points(t, column);
      file.rows_used += static_cast<int>(pts.size());
      rows.insert(rows.end(), pts.begin(), pts.end());
    }
    if (file.rows_used == 0) {
      std::string found;
      for (const auto& c : other) found += (found.empty() ? "" : ", ") + c;
      const bool other_kind = !found.empty() && o.collective == "all_reduce" && found.find("alltoall") != std::string::npos;
      throw Error({path, 0, 0}, "", "no " + nccl_tests_name(o.collective) + " rows with size > 0" +
                                        (found.empty() ? std::string() : " (tables found: " + found + ")") +
                                        (other_kind ? "; --collective all_to_all reads alltoall_perf tables" : ""));
    }
    prov.files.push_back(std::move(file));
  }

  CurveOptions curve_options;
  curve_options.ranks = *ranks;
  const std::vector<CurvePoint> points = merge_equal_sizes(rows);
  const MeasuredCurve curve = MeasuredCurve::fit(points, curve_options);
  prov.regimes = curve.regimes();
  if (o.holdout_every) {
    prov.holdout = holdout(points, *o.holdout_every, std::numeric_limits<double>::infinity(), curve_options);
  }

  // A log without a release pooled with one that has it: the table's release is unknown, not the
  // other log's.
  if (!unversioned.empty() && !nccl_version.empty()) {
    const std::string what = "log prints no NCCL release but " + version_from + " ran NCCL " + nccl_version;
    if (!o.allow_mixed) {
      throw Error({unversioned, 0, 0}, "nccl_version", what + " (one profile is one NCCL release; pass --allow-mixed to pool them anyway)");
    }
    io.err << "specsim: warning: " << unversioned << ": " << what << "; pooled, and the profile states no release (--allow-mixed)\n";
    nccl_version.clear();
  }
  CommProfile profile;
  profile.name = std::filesystem::path(o.output).stem().string();
  profile.collective = o.collective;
  profile.implementation = "nccl";
  profile.ranks = *ranks;
  profile.nodes = nodes > 1 && *ranks % nodes == 0 ? nodes : 1;
  profile.mode = *graph_launches > 0 ? LaunchMode::kGraph : LaunchMode::kEager;
  profile.nccl_version = nccl_version;
  std::string files;
  for (const auto& f : prov.files) files += (files.empty() ? "" : ", ") + std::filesystem::path(f.path).filename().string();
  profile.description = (mixed_versions         ? std::string("NCCL (mixed releases)")
                         : nccl_version.empty() ? std::string("NCCL (version not in log)")
                                                : "NCCL " + nccl_version) +
                        " " + nccl_tests_name(o.collective) + ", " + std::to_string(*ranks) + " ranks" +
                        (profile.nodes > 1 ? " on " + std::to_string(profile.nodes) + " nodes" : "") + ", " + to_string(profile.mode) +
                        ", nccl-tests " + prov.column + " time from " + files;
  for (const auto& s : sources) profile.source += (profile.source.empty() ? "" : "; ") + s;
  if (profile.source.empty()) profile.source = "nccl-tests log(s): " + files;
  for (const auto& p : points) profile.points.push_back({p.bytes, p.time_s});

  // Read the temporary file back with the loader, so a profile that is written is one that loads.
  write_file_atomically(o.output, render_comm_profile_yaml(profile, prov), output,
                        [](const std::string& tmp) { (void)load_comm_profile(tmp); });

  // Report: rendered whole before printing, so a failure never leaves half a report.
  std::string report;
  report += "wrote " + o.output + ": " + std::to_string(points.size()) + " sizes from " +
            std::to_string(rows.size()) + " rows, " + std::to_string(*ranks) + " ranks" +
            (profile.nodes > 1 ? " on " + std::to_string(profile.nodes) + " nodes (hosts " + hosts + ")" : "") + ", " +
            to_string(profile.mode) + ", " + prov.column + "\n";
  report += "fit residuals per regime (|fit/measured - 1| of the regime's alpha-beta line):\n";
  report += "  " + pad("from", 11) + pad("to", 11) + pad("latency", 12) + pad("bandwidth", 13) + pad("rms", 9) + "max\n";
  for (const Regime& r : curve.regimes()) {
    report += "  " + pad(units::format_bytes(r.first_bytes), 11) + pad(units::format_bytes(r.last_bytes), 11) +
              pad(us(r.fit.latency_s), 12) +
              pad(r.fit.seconds_per_byte > 0 ? units::format_bandwidth(r.fit.bandwidth_bytes_per_s()) : "-", 13) +
              pad(percent(r.rms_relative_residual), 9) + percent(r.max_relative_residual) + "\n";
  }
  if (prov.holdout) {
    const HoldoutReport& h = *prov.holdout;
    report += "held out every " + std::to_string(h.every_k) + "-th size (" + std::to_string(h.rows.size()) +
              " rows), fitted on the rest:\n";
    report += "  " + pad("size", 11) + pad("measured", 15) + pad("predicted", 15) + "error\n";
    for (const HoldoutRow& row : h.rows) {
      report += "  " + pad(units::format_bytes(row.bytes), 11) + pad(us(row.measured_s), 15) +
                pad(us(row.predicted_s), 15) + percent(row.relative_error) + "\n";
    }
    report += "  held-out error: median " + percent(h.median_relative_error) + ", worst " +
              percent(h.worst_relative_error) + "\n";
  }
  io.out << report;
}

}  // namespace

void setup_calibrate(CLI::App& app, Io& io) {
  CLI::App* calibrate = app.add_subcommand("calibrate", "Fit measurement files into calibration profiles");
  calibrate->require_subcommand(1);
  auto opts = std::make_shared<CalibrateNcclOptions>();
  CLI::App* nccl = calibrate->add_subcommand("nccl", "nccl-tests all_reduce_perf (or alltoall_perf) logs -> comm profile YAML");
  nccl->add_option("logs", opts->logs, "nccl-tests output files (all one rank count and launch mode)")
      ->required()
      ->check(CLI::ExistingFile);
  nccl->add_option("-o,--output", opts->output, "Profile to write (PROFILE.yaml; its stem is the profile name)")
      ->required();
  nccl->add_option("--holdout-every", opts->holdout_every,
                   "Also fit without every K-th size and report the error on those sizes")
      ->check(CLI::Range(2, 1000));
  nccl->add_option("--ranks", opts->ranks, "Rank count, overriding the logs' headers")->check(CLI::Range(1, 4096));
  nccl->add_flag("--lenient", opts->lenient, "Skip malformed rows (with a warning) instead of failing");
  nccl->add_flag("--in-place", opts->in_place, "Use the in-place time column instead of out-of-place");
  nccl->add_flag("--allow-mixed", opts->allow_mixed,
                 "Pool logs of different GPU models or rank counts into one profile (with a warning)");
  nccl->add_option("--collective", opts->collective,
                   "Which tables make the profile: all_reduce (all_reduce_perf) or all_to_all (alltoall_perf)")
      ->check(CLI::IsMember({"all_reduce", "all_to_all"}));
  nccl->add_flag("--force", opts->force, "Replace a read-only output, or write into a device or FIFO in place");
  nccl->callback([opts, &io]() { run_calibrate_nccl(*opts, io); });
  setup_calibrate_compute(*calibrate, io);
}

}  // namespace specsim::cli
