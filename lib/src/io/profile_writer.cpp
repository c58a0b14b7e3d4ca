#include "specsim/profile_writer.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <ctime>

#include "specsim/error.hpp"

namespace specsim {

namespace {

std::string format_g(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

// Exact binary units only, so reading the text back gives the same byte count.
std::string size_text(double bytes) {
  struct Unit {
    const char* name;
    double scale;
  };
  for (const Unit u : {Unit{"GiB", 1073741824.0}, Unit{"MiB", 1048576.0}, Unit{"KiB", 1024.0}}) {
    const double q = bytes / u.scale;
    if (q >= 1.0 && q == std::floor(q)) return format_g(q, 15) + u.name;
  }
  return format_g(bytes, 15) + "B";
}

// Six significant digits: nccl-tests prints at most five (e.g. 15870 us, 25.47 us).
std::string time_text(double seconds) { return format_g(seconds * 1e6, 6) + "us"; }

std::string fraction_text(double f) { return std::isfinite(f) ? format_g(f, 4) : std::string("nan"); }

}  // namespace

std::string render_comm_profile_yaml(const CommProfile& p, const CommProfileProvenance& prov) {
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "schema_version" << YAML::Value << 1;
  y << YAML::Key << "kind" << YAML::Value << "comm_profile";
  y << YAML::Key << "name" << YAML::Value << p.name;
  y << YAML::Key << "description" << YAML::Value << YAML::DoubleQuoted << p.description;
  y << YAML::Key << "source" << YAML::Value << YAML::DoubleQuoted << p.source;
  y << YAML::Key << "collective" << YAML::Value << p.collective;
  y << YAML::Key << "implementation" << YAML::Value << p.implementation;
  if (!p.nccl_version.empty()) y << YAML::Key << "nccl_version" << YAML::Value << p.nccl_version;
  y << YAML::Key << "ranks" << YAML::Value << p.ranks;
  if (p.nodes > 1) y << YAML::Key << "nodes" << YAML::Value << p.nodes;
  y << YAML::Key << "mode" << YAML::Value << to_string(p.mode);
  y << YAML::Key << "points" << YAML::Value << YAML::BeginSeq;
  for (const auto& pt : p.points) {
    y << YAML::Flow << YAML::BeginMap << YAML::Key << "size" << YAML::Value << size_text(pt.message_bytes)
      << YAML::Key << "time" << YAML::Value << time_text(pt.time_s) << YAML::EndMap;
  }
  y << YAML::EndSeq;

  y << YAML::Key << "provenance" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "tool" << YAML::Value << prov.tool;
  y << YAML::Key << "command" << YAML::Value << YAML::DoubleQuoted << prov.command;
  y << YAML::Key << "date_utc" << YAML::Value << prov.date_utc;
  y << YAML::Key << "column" << YAML::Value << prov.column;
  int rows = 0;
  y << YAML::Key << "files" << YAML::Value << YAML::BeginSeq;
  for (const auto& f : prov.files) {
    rows += f.rows_used;
    y << YAML::BeginMap;
    y << YAML::Key << "path" << YAML::Value << f.path;
    y << YAML::Key << "sha256" << YAML::Value << f.sha256;
    y << YAML::Key << "nccl_version" << YAML::Value << (f.nccl_version.empty() ? "unknown" : f.nccl_version);
    if (!f.nccl_tests_version.empty()) y << YAML::Key << "nccl_tests_version" << YAML::Value << f.nccl_tests_version;
    y << YAML::Key << "env" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [k, v] : f.env) y << YAML::Key << k << YAML::Value << v;
    y << YAML::EndMap;
    y << YAML::Key << "rows_used" << YAML::Value << f.rows_used;
    if (f.rows_skipped > 0) y << YAML::Key << "rows_skipped" << YAML::Value << f.rows_skipped;
    if (!f.notes.empty()) {
      y << YAML::Key << "log_notes" << YAML::Value << YAML::BeginSeq;
      for (const auto& n : f.notes) y << YAML::DoubleQuoted << n;
      y << YAML::EndSeq;
    }
    y << YAML::EndMap;
  }
  y << YAML::EndSeq;
  y << YAML::Key << "rows_used" << YAML::Value << rows;
  y << YAML::Key << "fit" << YAML::Value << YAML::BeginSeq;
  for (const Regime& r : prov.regimes) {
    y << YAML::Flow << YAML::BeginMap;
    y << YAML::Key << "from" << YAML::Value << size_text(r.first_bytes);
    y << YAML::Key << "to" << YAML::Value << size_text(r.last_bytes);
    y << YAML::Key << "latency" << YAML::Value << time_text(r.fit.latency_s);
    if (r.fit.seconds_per_byte > 0) {
      y << YAML::Key << "bandwidth" << YAML::Value << format_g(r.fit.bandwidth_bytes_per_s() / 1e9, 6) + "GB/s";
    }
    y << YAML::Key << "rms_relative_residual" << YAML::Value << fraction_text(r.rms_relative_residual);
    y << YAML::Key << "max_relative_residual" << YAML::Value << fraction_text(r.max_relative_residual);
    y << YAML::EndMap;
  }
  y << YAML::EndSeq;
  if (prov.holdout) {
    const HoldoutReport& h = *prov.holdout;
    y << YAML::Key << "holdout" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "every" << YAML::Value << h.every_k;
    y << YAML::Key << "rows" << YAML::Value << static_cast<int>(h.rows.size());
    y << YAML::Key << "median_relative_error" << YAML::Value << fraction_text(h.median_relative_error);
    y << YAML::Key << "worst_relative_error" << YAML::Value << fraction_text(h.worst_relative_error);
    y << YAML::EndMap;
  }
  y << YAML::EndMap;
  y << YAML::EndMap;
  if (!y.good()) throw Error(std::string("internal error writing profile YAML: ") + y.GetLastError());
  return std::string(y.c_str()) + "\n";
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace specsim
