// Text, JSON and CSV views of one ValidationReport (validate_corpus.hpp). Nothing is computed here
// that the report does not hold, so the three views always agree.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "specsim/error.hpp"

#include "specsim/units.hpp"
#include "specsim/validate_corpus.hpp"

namespace specsim {

namespace {

std::string fixed(double v, int digits) { return units::format_fixed(v, digits); }

std::string percent(double fraction) { return (fraction >= 0 ? "+" : "") + fixed(100.0 * fraction, 1) + "%"; }

std::string shape(const ValidationRow& r) {
  return r.tree ? "tree " + std::to_string(r.num_steps) + "/" + std::to_string(r.num_draft_tokens)
                : "chain " + std::to_string(r.num_steps);
}

// One letter per input that was not measured: what a reader must trust. C calibrated, S set, P prior.
std::string origins_code(const ValidationRow& r) {
  std::string out;
  for (const auto& in : r.inputs) {
    if (in.origin == InputOrigin::kMeasured) continue;
    out += (out.empty() ? "" : " ") + in.code + "=" + static_cast<char>(std::toupper(to_string(in.origin)[0]));
  }
  return out;
}

std::string row_line(const ValidationRow& r) {
  char buf[512];
  const std::string band = fixed(r.band_p10_tokens_per_s, 0) + "-" + fixed(r.band_p90_tokens_per_s, 0) +
                           (r.in_band() ? " in" : " out");
  std::snprintf(buf, sizeof buf, "  %-50s %-7s %-13s %3d %5d %-10s %8s %8s %8s %-15s %8s %6s %6s %-4s %s\n",
                r.name.c_str(), r.engine.c_str(), r.gpu.c_str(), r.tp, r.batch, shape(r).c_str(),
                fixed(r.measured_plain_tokens_per_s, 1).c_str(), fixed(r.measured_spec_tokens_per_s, 1).c_str(),
                fixed(r.predicted_spec_tokens_per_s, 1).c_str(), band.c_str(), percent(r.error()).c_str(),
                fixed(r.measured_speedup(), 2).c_str(), fixed(r.predicted_speedup(), 2).c_str(),
                r.sign_right() ? "ok" : "WRONG", origins_code(r).c_str());
  return buf;
}

std::string header_line() {
  char buf[512];
  std::snprintf(buf, sizeof buf, "  %-50s %-7s %-13s %3s %5s %-10s %8s %8s %8s %-15s %8s %6s %6s %-4s %s\n", "row",
                "engine", "gpu", "tp", "batch", "draft", "plain", "spec", "pred", "p10-p90", "error", "x meas",
                "x pred", "sign", "inputs not measured");
  return buf;
}

std::string summary_line(const ErrorSummary& s) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "  %-24s %4d %9s %9s %9s   %2d/%-2d %5s  %2d/%-2d  %s\n", s.group.c_str(), s.rows,
                fixed(100.0 * s.median_abs_error, 1).c_str(), fixed(100.0 * s.worst_abs_error, 1).c_str(),
                percent(s.mean_signed_error).c_str(), s.sign_right, s.rows,
                (fixed(100.0 * s.sign_accuracy(), 0) + "%").c_str(), s.in_band, s.rows, s.worst_row.c_str());
  return buf;
}

std::string summary_header() {
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-24s %4s %9s %9s %9s   %-5s %5s  %-5s  %s\n", "", "rows", "median|e|", "worst|e|",
                "bias", "sign", "", "band", "worst row");
  return buf;
}

nlohmann::json row_json(const ValidationRow& r) {
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& in : r.inputs) {
    inputs.push_back({{"name", in.name}, {"origin", to_string(in.origin)}, {"detail", in.detail}});
  }
  return {{"name", r.name},
          {"file", r.file},
          {"source", {{"id", r.source.source},
                      {"url", r.source.url},
                      {"published", r.source.published},
                      {"engine_version", r.source.engine_version},
                      {"measured", r.source.measured},
                      {"acceptance_published", r.source.acceptance_published},
                      {"assumptions", r.source.assumptions}}},
          {"engine", r.engine},
          {"interconnect", r.interconnect},
          {"gpu", r.gpu},
          {"model", r.model},
          {"moe", r.moe},
          {"tp", r.tp},
          {"batch", r.batch},
          {"tree", r.tree},
          {"num_steps", r.num_steps},
          {"num_draft_tokens", r.num_draft_tokens},
          {"tokens_per_cycle", r.tokens_per_cycle},
          {"spec_extra_per_cycle_s", r.spec_extra_per_cycle_s},
          {"measured", {{"plain_tokens_per_s", r.measured_plain_tokens_per_s},
                        {"spec_tokens_per_s", r.measured_spec_tokens_per_s},
                        {"speedup", r.measured_speedup()}}},
          {"predicted", {{"plain_tokens_per_s", r.predicted_plain_tokens_per_s},
                         {"spec_tokens_per_s", r.predicted_spec_tokens_per_s},
                         {"speedup", r.predicted_speedup()}}},
          {"band", {{"p10_tokens_per_s", r.band_p10_tokens_per_s},
                    {"p90_tokens_per_s", r.band_p90_tokens_per_s},
                    {"measured_inside", r.in_band()}}},
          {"error", r.error()},
          {"sign_right", r.sign_right()},
          {"inputs", inputs},
          {"warnings", r.warnings}};
}

nlohmann::json summary_json(const ErrorSummary& s) {
  return {{"group", s.group},
          {"rows", s.rows},
          {"median_abs_error", s.median_abs_error},
          {"worst_abs_error", s.worst_abs_error},
          {"worst_row", s.worst_row},
          {"mean_signed_error", s.mean_signed_error},
          {"sign_right", s.sign_right},
          {"sign_accuracy", s.sign_accuracy()},
          {"in_band", s.in_band}};
}

// RFC 4180: a field holding a comma, a quote or a line break is quoted, quotes doubled.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

std::string render_validation_text(const ValidationReport& report) {
  std::ostringstream os;
  os << "specsim validate: " << report.rows.size() << " measured deployments; speculative tokens/s predicted "
     << "from the plain rate and acceptance, the measured value held out\n\n";
  os << header_line();
  for (const auto& r : report.rows) os << row_line(r);
  os << "\n  plain/spec/pred: tokens/s over the batch; p10-p90: the prediction's band from the priors' spread,\n"
     << "  and whether the measurement lies in it; error = pred/spec - 1; x = speedup over plain decoding;\n"
     << "  sign: whether speculation pays, predicted vs measured; inputs: C calibrated, S set, P prior\n\n";
  os << summary_header();
  for (const auto& s : report.summaries) os << summary_line(s);
  if (report.calibration) {
    const CalibrationRun& c = *report.calibration;
    os << "\ncalibrated " << c.mode << ": the per-cycle engine term fitted on measured speculative rows of the "
       << "same source, then the row predicted\n\n";
    os << header_line();
    for (const auto& cr : c.rows) os << row_line(cr.row);
    os << "\n" << summary_header() << summary_line(c.summary);
    if (!c.sources_skipped.empty()) {
      os << "  sources with too few rows:";
      for (const auto& s : c.sources_skipped) os << " " << s;
      os << "\n";
    }
  }
  bool any_warning = false;
  for (const auto& r : report.rows) {
    for (const auto& w : r.warnings) {
      if (!any_warning) os << "\nwarnings\n";
      any_warning = true;
      os << "  " << r.name << ": " << w << "\n";
    }
  }
  return os.str();
}

std::string render_validation_json(const ValidationReport& report) {
  nlohmann::json j;
  j["rows"] = nlohmann::json::array();
  for (const auto& r : report.rows) j["rows"].push_back(row_json(r));
  j["summary"] = nlohmann::json::array();
  for (const auto& s : report.summaries) j["summary"].push_back(summary_json(s));
  if (report.calibration) {
    const CalibrationRun& c = *report.calibration;
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& cr : c.rows) {
      nlohmann::json row = row_json(cr.row);
      row["calibrated_on"] = cr.calibrated_on;
      rows.push_back(row);
    }
    j["calibration"] = {{"mode", c.mode},
                        {"rows", rows},
                        {"summary", summary_json(c.summary)},
                        {"sources_skipped", c.sources_skipped}};
  }
  return j.dump(2) + "\n";
}

std::string render_validation_csv(const ValidationReport& report) {
  std::ostringstream os;
  os << "set,name,source,url,engine,interconnect,gpu,model,moe,tp,batch,tree,num_steps,num_draft_tokens,"
        "measured_plain_tokens_per_s,measured_spec_tokens_per_s,predicted_plain_tokens_per_s,"
        "predicted_spec_tokens_per_s,band_p10_tokens_per_s,band_p90_tokens_per_s,in_band,error,measured_speedup,"
        "predicted_speedup,sign_right,inputs_not_measured\n";
  auto line = [&](const std::string& set, const ValidationRow& r) {
    os << csv_field(set) << ',' << csv_field(r.name) << ',' << csv_field(r.source.source) << ','
       << csv_field(r.source.url) << ',' << csv_field(r.engine) << ',' << r.interconnect << ','
       << csv_field(r.gpu) << ',' << csv_field(r.model) << ',' << (r.moe ? 1 : 0) << ',' << r.tp << ','
       << r.batch << ',' << (r.tree ? 1 : 0) << ',' << r.num_steps << ',' << r.num_draft_tokens << ','
       << number(r.measured_plain_tokens_per_s) << ',' << number(r.measured_spec_tokens_per_s) << ','
       << number(r.predicted_plain_tokens_per_s) << ',' << number(r.predicted_spec_tokens_per_s) << ','
       << number(r.band_p10_tokens_per_s) << ',' << number(r.band_p90_tokens_per_s) << ',' << (r.in_band() ? 1 : 0)
       << ',' << number(r.error()) << ',' << number(r.measured_speedup()) << ',' << number(r.predicted_speedup()) << ','
       << (r.sign_right() ? 1 : 0) << ',' << csv_field(origins_code(r)) << '\n';
  };
  for (const auto& r : report.rows) line("rows", r);
  if (report.calibration) {
    for (const auto& cr : report.calibration->rows) line("calibrated " + report.calibration->mode, cr.row);
  }
  return os.str();
}

}  // namespace specsim

namespace specsim {

std::vector<std::string> regressions_against(const ValidationReport& report, const std::string& baseline_file,
                                             const RegressionMargins& margins) {
  std::ifstream in(baseline_file);
  if (!in) throw Error(SourceLocation{baseline_file, 0, 0}, "", "cannot read the baseline summary");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(SourceLocation{baseline_file, 0, 0}, "", std::string("not JSON: ") + e.what());
  }
  if (!j.is_object() || !j.contains("summary") || !j["summary"].is_array()) {
    throw Error(SourceLocation{baseline_file, 0, 0}, "summary", "expected the `summary` array of `specsim validate --json`");
  }
  std::vector<std::string> out;
  for (const auto& b : j["summary"]) {
    const auto get = [&](const char* key) {
      if (!b.contains(key) || !b[key].is_number()) {
        throw Error(SourceLocation{baseline_file, 0, 0}, std::string("summary[].") + key, "expected a number");
      }
      return b[key].get<double>();
    };
    if (!b.contains("group") || !b["group"].is_string()) {
      throw Error(SourceLocation{baseline_file, 0, 0}, "summary[].group", "expected a text");
    }
    const std::string group = b["group"].get<std::string>();
    const auto it = std::find_if(report.summaries.begin(), report.summaries.end(),
                                 [&](const ErrorSummary& s) { return s.group == group; });
    if (it == report.summaries.end()) {
      out.push_back(group + ": in the baseline, not in this corpus");
      continue;
    }
    const int rows = static_cast<int>(get("rows"));
    if (rows != it->rows) {
      out.push_back(group + ": " + std::to_string(it->rows) + " rows, the baseline has " + std::to_string(rows) +
                    " (rewrite the baseline with the corpus change)");
      continue;
    }
    const double median = get("median_abs_error");
    const double worst = get("worst_abs_error");
    const int sign = static_cast<int>(get("sign_right"));
    if (it->median_abs_error > median + margins.median_abs_error) {
      out.push_back(group + ": median |error| " + fixed(100 * it->median_abs_error, 1) + "%, baseline " +
                    fixed(100 * median, 1) + "%");
    }
    if (it->worst_abs_error > worst + margins.worst_abs_error) {
      out.push_back(group + ": worst |error| " + fixed(100 * it->worst_abs_error, 1) + "% (" + it->worst_row +
                    "), baseline " + fixed(100 * worst, 1) + "%");
    }
    if (it->sign_right < sign - margins.sign_rows) {
      out.push_back(group + ": speedup sign right in " + std::to_string(it->sign_right) + " rows, baseline " +
                    std::to_string(sign));
    }
  }
  return out;
}

}  // namespace specsim
