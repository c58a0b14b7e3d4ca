// What `specsim calibrate nccl` prints once the profile is written (calibrate_nccl.hpp).
#include <string>

#include "specsim/calibrate_nccl.hpp"
#include "report/text.hpp"
#include "specsim/units.hpp"

namespace specsim {

namespace {

std::string percent(double fraction) { return text::percent(fraction, 2); }

std::string us(double seconds) { return units::format_fixed(seconds * 1e6, 2) + " us"; }

using text::pad;

std::string regimes_text(const std::vector<Regime>& regimes) {
  std::string out = "fit residuals per regime (|fit/measured - 1| of the regime's alpha-beta line):\n";
  out += "  " + pad("from", 11) + pad("to", 11) + pad("latency", 12) + pad("bandwidth", 13) + pad("rms", 9) + "max\n";
  for (const Regime& r : regimes) {
    out += "  " + pad(units::format_bytes(r.first_bytes), 11) + pad(units::format_bytes(r.last_bytes), 11) +
           pad(us(r.fit.latency_s), 12) +
           pad(r.fit.seconds_per_byte > 0 ? units::format_bandwidth(r.fit.bandwidth_bytes_per_s()) : "-", 13) +
           pad(percent(r.rms_relative_residual), 9) + percent(r.max_relative_residual) + "\n";
  }
  return out;
}

std::string holdout_text(const HoldoutReport& h) {
  std::string out = "held out every " + std::to_string(h.every_k) + "-th size (" + std::to_string(h.rows.size()) +
                    " rows), fitted on the rest:\n";
  out += "  " + pad("size", 11) + pad("measured", 15) + pad("predicted", 15) + "error\n";
  for (const HoldoutRow& row : h.rows) {
    out += "  " + pad(units::format_bytes(row.bytes), 11) + pad(us(row.measured_s), 15) + pad(us(row.predicted_s), 15) +
           percent(row.relative_error) + "\n";
  }
  out += "  held-out error: median " + percent(h.median_relative_error) + ", worst " + percent(h.worst_relative_error) +
         "\n";
  return out;
}

}  // namespace

std::string render_nccl_calibration(const NcclCalibration& c, const std::string& output) {
  const CommProfile& p = c.profile;
  std::string out = "wrote " + output + ": " + std::to_string(p.points.size()) + " sizes from " +
                    std::to_string(c.rows_read) + " rows, " + std::to_string(p.ranks) + " ranks" +
                    (p.nodes > 1 ? " on " + std::to_string(p.nodes) + " nodes (hosts " + c.hosts + ")" : "") + ", " +
                    to_string(p.mode) + ", " + c.provenance.column + "\n";
  out += regimes_text(c.provenance.regimes);
  if (c.provenance.holdout) out += holdout_text(*c.provenance.holdout);
  return out;
}

}  // namespace specsim
