// validate's views of one ValidationReport (validate_corpus.hpp): a line per row, summaries by
// group, and the calibrated rows when asked for.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

#include "report/csv.hpp"
#include "specsim/report.hpp"
#include "specsim/units.hpp"

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
  const std::string call = !r.called() ? "close" : r.call_right() ? "ok" : "WRONG";
  std::snprintf(buf, sizeof buf, "  %-5s %-50s %-7s %-13s %3d %5d %-10s %8s %8s %8s %-15s %8s %6s %6s %-5s %-5s %s\n",
                r.scored() ? r.set.c_str() : "apart", r.name.c_str(), r.engine.c_str(), r.gpu.c_str(), r.tp, r.batch, shape(r).c_str(),
                fixed(r.measured_plain_tokens_per_s, 1).c_str(), fixed(r.measured_spec_tokens_per_s, 1).c_str(),
                fixed(r.predicted_spec_tokens_per_s, 1).c_str(), band.c_str(), percent(r.error()).c_str(),
                fixed(r.measured_speedup(), 2).c_str(), fixed(r.predicted_speedup(), 2).c_str(),
                r.sign_right() ? "ok" : "WRONG", call.c_str(), origins_code(r).c_str());
  return buf;
}

std::string header_line() {
  char buf[512];
  std::snprintf(buf, sizeof buf, "  %-5s %-50s %-7s %-13s %3s %5s %-10s %8s %8s %8s %-15s %8s %6s %6s %-5s %-5s %s\n", "set",
                "row",
                "engine", "gpu", "tp", "batch", "draft", "plain", "spec", "pred", "p10-p90", "error", "x meas",
                "x pred", "sign", "call", "inputs not measured");
  return buf;
}

std::string summary_line(const ErrorSummary& s) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "  %-28s %4d %9s %9s %9s   %3d/%-3d %5s  %3d/%-3d  %3d/%-3d %6s  %3d/%-3d   %s\n",
                s.group.c_str(), s.rows, fixed(100.0 * s.median_abs_error, 1).c_str(),
                fixed(100.0 * s.worst_abs_error, 1).c_str(), percent(s.mean_signed_error).c_str(), s.sign_right, s.rows,
                (fixed(100.0 * s.sign_accuracy(), 0) + "%").c_str(), s.called_right, s.called, s.in_band, s.rows,
                (fixed(100.0 * s.median_band_width, 0) + "%").c_str(), s.in_prior_band, s.rows, s.worst_row.c_str());
  return buf;
}

std::string summary_header() {
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-28s %4s %9s %9s %9s   %-7s %5s  %-7s  %-7s %6s  %-7s   %s\n", "", "rows", "median|e|",
                "worst|e|", "bias", "sign", "", "called", "band", "width", "priors", "worst row");
  return buf;
}

nlohmann::json model_error_json(const ModelError& e) {
  return {{"sigma", e.sigma},
          {"sigma_below", e.sigma_below},
          {"sigma_above", e.sigma_above},
          {"residual_p10", e.residual_p10},
          {"residual_p50", e.residual_p50},
          {"residual_p90", e.residual_p90},
          {"prior_sigma_rms", e.prior_sigma_rms},
          {"prior_sigma_below_rms", e.prior_sigma_below_rms},
          {"prior_sigma_above_rms", e.prior_sigma_above_rms},
          {"small_sample_factor", e.small_sample_factor},
          {"rows", e.rows},
          {"sources", e.sources},
          {"origin", e.origin},
          {"batch_transfer", e.transfer_points > 0 ? nlohmann::json{{"points", e.transfer_points},
                                                                    {"sources", e.transfer_sources},
                                                                    {"sigma_per_ln_batch", e.transfer_sigma_per_ln_batch}}
                                                  : nlohmann::json(nullptr)}};
}

std::string model_error_line(const ModelError& e) {
  return "  specsim's error beyond the priors over the fit set's " + std::to_string(e.rows) + " rows (" +
         std::to_string(e.sources) + " sources, each counted once): ln(measured/predicted) p10 " + fixed(e.residual_p10, 3) + ", p50 " +
         fixed(e.residual_p50, 3) + ", p90 " + fixed(e.residual_p90, 3) + "; priors' sigma (rms) " +
         fixed(e.prior_sigma_rms, 3) + " (below " + fixed(e.prior_sigma_below_rms, 3) + ", above " +
         fixed(e.prior_sigma_above_rms, 3) + "); small-sample factor " + fixed(e.small_sample_factor, 3) +
         " (Student's t, " + std::to_string(e.sources - 1) + " degrees of freedom); model error sigma below " +
         fixed(e.sigma_below, 3) + ", above " +
         fixed(e.sigma_above, 3) + "\n  (a fit row's band uses the fit set without its own source; a check row's, the whole fit set)\n" +
         (e.transfer_points > 0
              ? "  a rate carried to another batch: " + fixed(e.transfer_sigma_per_ln_batch, 3) +
                    " more per unit ln of the batch ratio, in quadrature, over the fit set's " +
                    std::to_string(e.transfer_points) + " batch transfers of " + std::to_string(e.transfer_sources) +
                    " sources (each transfer's band uses those of other sources)\n"
              : "");
}

nlohmann::json row_json(const ValidationRow& r) {
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& in : r.inputs) {
    inputs.push_back({{"name", in.name}, {"origin", to_string(in.origin)}, {"detail", in.detail}});
  }
  return {{"name", r.name},
          {"file", r.file},
          {"set", r.scored() ? nlohmann::json(r.set) : nlohmann::json(nullptr)},
          {"not_scored", r.scored() ? nlohmann::json(nullptr) : nlohmann::json(r.not_scored)},
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
          {"draft", r.draft},
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
                    {"measured_inside", r.in_band()},
                    {"priors", {{"p10_tokens_per_s", r.prior_band_p10_tokens_per_s},
                                {"p90_tokens_per_s", r.prior_band_p90_tokens_per_s},
                                {"measured_inside", r.in_prior_band()}}},
                    {"model_error", r.model_error ? model_error_json(*r.model_error) : nlohmann::json(nullptr)}}},
          {"error", r.error()},
          {"sign_right", r.sign_right()},
          {"call", to_string(r.call())},
          {"call_right", r.called() ? nlohmann::json(r.call_right()) : nlohmann::json(nullptr)},
          {"inputs", inputs},
          {"warnings", r.warnings}};
}

nlohmann::json calibrated_row_json(const CalibratedRow& cr) {
  nlohmann::json row = row_json(cr.row);
  row["calibrated_on"] = cr.calibrated_on;
  return row;
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
          {"called", s.called},
          {"called_right", s.called_right},
          {"in_band", s.in_band},
          {"in_prior_band", s.in_prior_band},
          {"median_band_width", s.median_band_width}};
}

// The pairs' table and their summaries (docs/validation.md#pairs).
std::string pairs_text(const ValidationReport& report) {
  if (report.pairs.empty()) return "";
  std::ostringstream os;
  os << "\npairs: two rows of one source that differ in one tuning setting; gain = after / before - 1 of the "
        "speculative rate\n\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, "  %-5s %-17s %-22s %-50s %9s %9s  %-5s  %-20s %s\n", "set", "setting", "change",
                "after (before)", "measured", "predicted", "sign", "gain p10-p90", "rank says");
  os << buf;
  for (const auto& p : report.pairs) {
    std::string band = "-", says = "-";
    if (p.gain_band) {
      band = percent(p.gain_band->first) + ".." + percent(p.gain_band->second) + (p.band_holds() ? " in" : " out");
      says = p.called() ? (p.predicted_gain > 0.0 ? "better" : "worse") : "too close";
    }
    std::snprintf(buf, sizeof buf, "  %-5s %-17s %-22s %-50s %9s %9s  %-5s  %-20s %s\n", p.set.c_str(),
                  p.setting.c_str(), p.change.c_str(), p.after.c_str(), percent(p.measured_gain).c_str(),
                  percent(p.predicted_gain).c_str(), p.sign_right() ? "ok" : "WRONG", band.c_str(), says.c_str());
    os << buf;
  }
  if (!report.rankings.empty()) {
    os << "\n  rankings (3+ options on one box): Kendall tau of predicted vs measured order, top pick\n";
    for (const auto& k : report.rankings) {
      os << "  " << k.set << " " << k.source << " (" << k.setting << ", " << k.options.size() << " options): tau "
         << fixed(k.kendall_tau, 2) << ", top pick " << (k.top_pick_right ? "right" : "WRONG") << " (predicted "
         << k.predicted_best << ", measured " << k.measured_best << ")";
      if (!k.shortlist.empty()) {
        os << "; too close to call with the pick: " << k.shortlist.size() << " of " << k.options.size()
           << (k.shortlist_holds_best ? ", the measured best among them" : ", the measured best NOT among them");
      }
      os << "\n";
    }
  }
  os << "\n  " << std::string(13, ' ')
     << "pairs  sources  median |gain error|  sign right   rankings  mean tau  top pick   called: right    band"
        "   shortlist: best in (options)\n";
  for (const auto& s : report.pair_summaries) {
    std::snprintf(buf, sizeof buf,
                  "  %-13s %5d  %7d  %14s pts  %4d/%-4d   %8d  %8s  %3d/%-3d  %6d/%-3d %4d/%-3d  %9d/%-3d (%d/%d)\n",
                  s.group.c_str(), s.pairs, s.sources, fixed(s.median_gain_error_points, 1).c_str(), s.sign_right,
                  s.pairs, s.rankings, fixed(s.mean_kendall_tau, 2).c_str(), s.top_pick_right, s.rankings,
                  s.called_right, s.called, s.in_band, s.with_band, s.shortlist_holds_best, s.with_shortlist,
                  s.shortlisted_options, s.shortlist_ranking_options);
    os << buf;
  }
  os << "\n  gain p10-p90: the band rank gives a gain (the fit set's pair residuals of the other sources,\n"
        "  each pair both ways; none where fewer than "
     << kMinModelErrorRows
     << " pairs remain), and whether the measured gain lies in it;\n"
        "  rank says: the sign it commits to when the band is clear of 0, else too close to call;\n"
        "  called: right = signs right of those it commits to; shortlist: rankings whose measured best is\n"
        "  among the options too close to call with rank's pick (those options, of all the rankings' options)\n";
  return os.str();
}

nlohmann::json pairs_json(const ValidationReport& report) {
  nlohmann::json j;
  j["pairs"] = nlohmann::json::array();
  for (const auto& p : report.pairs) {
    j["pairs"].push_back({{"source", p.source}, {"set", p.set}, {"setting", p.setting},
                          {"intervention", p.intervention}, {"before", p.before},
                          {"after", p.after}, {"change", p.change}, {"measured_gain", p.measured_gain},
                          {"predicted_gain", p.predicted_gain}, {"sign_right", p.sign_right()},
                          {"gain_band", p.gain_band ? nlohmann::json{{"p10", p.gain_band->first}, {"p90", p.gain_band->second}}
                                                    : nlohmann::json(nullptr)},
                          {"called", p.called()}, {"band_holds", p.band_holds()}});
  }
  j["rankings"] = nlohmann::json::array();
  for (const auto& k : report.rankings) {
    j["rankings"].push_back({{"source", k.source}, {"set", k.set}, {"setting", k.setting},
                             {"intervention", k.intervention}, {"options", k.options},
                             {"kendall_tau", k.kendall_tau}, {"top_pick_right", k.top_pick_right},
                             {"predicted_best", k.predicted_best}, {"measured_best", k.measured_best},
                             {"shortlist", k.shortlist}, {"shortlist_holds_best", k.shortlist_holds_best}});
  }
  j["pair_summary"] = nlohmann::json::array();
  for (const auto& s : report.pair_summaries) {
    j["pair_summary"].push_back({{"group", s.group}, {"pairs", s.pairs}, {"sources", s.sources},
                                 {"median_gain_error_points", s.median_gain_error_points},
                                 {"sign_right", s.sign_right}, {"rankings", s.rankings},
                                 {"mean_kendall_tau", s.mean_kendall_tau}, {"top_pick_right", s.top_pick_right},
                                 {"with_band", s.with_band}, {"called", s.called}, {"called_right", s.called_right},
                                 {"in_band", s.in_band}, {"with_shortlist", s.with_shortlist},
                                 {"shortlist_holds_best", s.shortlist_holds_best},
                                 {"shortlisted_options", s.shortlisted_options},
                                 {"shortlist_ranking_options", s.shortlist_ranking_options}});
  }
  return j;
}

// The plain rate at another batch of one deployment, from its lowest batch
// (docs/validation.md#batch-transfer).
std::string batch_transfer_text(const ValidationReport& report) {
  if (report.batch_transfers.empty()) return "";
  std::ostringstream os;
  os << "\nbatch transfer: the plain rate at a higher batch of one deployment, predicted from its lowest batch "
        "as predict --concurrency does (calibrated there, reused); then the speculative rate there, with the "
        "higher batch's acceptance and draft shape, and its band\n\n";
  char buf[640];
  std::snprintf(buf, sizeof buf, "  %-5s %-50s %11s %10s %10s %8s   %10s %10s %8s  %s\n", "set",
                "predicted row (from its lowest batch)", "batch", "plain", "predicted", "error", "spec", "predicted",
                "error", "p10-p90");
  os << buf;
  for (const auto& t : report.batch_transfers) {
    const std::string batches = std::to_string(t.from_batch) + " -> " + std::to_string(t.to_batch);
    std::string spec = "   (not scored)";
    if (t.has_spec()) {
      char s[160];
      std::snprintf(s, sizeof s, "   %10s %10s %8s  %s-%s %s", fixed(t.measured_spec_tokens_per_s, 1).c_str(),
                    fixed(t.predicted_spec_tokens_per_s, 1).c_str(), percent(t.spec_error()).c_str(),
                    fixed(t.spec_p10_tokens_per_s, 0).c_str(), fixed(t.spec_p90_tokens_per_s, 0).c_str(),
                    t.spec_in_band() ? "in" : "out");
      spec = s;
    }
    std::snprintf(buf, sizeof buf, "  %-5s %-50s %11s %10s %10s %8s%s\n", t.set.empty() ? "apart" : t.set.c_str(),
                  t.to_row.c_str(), batches.c_str(), fixed(t.measured_plain_tokens_per_s, 1).c_str(),
                  fixed(t.predicted_plain_tokens_per_s, 1).c_str(), percent(t.error()).c_str(), spec.c_str());
    os << buf;
  }
  os << "\n  " << std::string(6, ' ')
     << "points  sources  median |error|   worst |error|   bias    spec: points  median |error|    bias   band (width)\n";
  for (const auto& s : report.batch_transfer_summaries) {
    std::snprintf(buf, sizeof buf, "  %-6s %6d  %7d  %14s  %14s  %6s   %12d  %14s  %6s   %d/%d (%s)   worst: %s\n",
                  s.group.c_str(), s.points, s.sources, (fixed(100.0 * s.median_abs_error, 1) + "%").c_str(),
                  (fixed(100.0 * s.worst_abs_error, 1) + "%").c_str(), percent(s.mean_signed_error).c_str(),
                  s.spec_points, (fixed(100.0 * s.spec_median_abs_error, 1) + "%").c_str(),
                  percent(s.spec_mean_signed_error).c_str(), s.spec_in_band, s.spec_points,
                  (fixed(100.0 * s.spec_median_band_width, 0) + "%").c_str(), s.worst_point.c_str());
    os << buf;
  }
  os << "  spec: the speculative rate at the higher batch on the lowest batch's calibration, with the higher "
        "batch's own acceptance; band: measurements inside its p10-p90 (predict's band, widened by specsim's "
        "error on the fit set's other sources), width its median (p90 - p10) / predicted\n";
  return os.str();
}

nlohmann::json batch_transfer_json(const ValidationReport& report) {
  nlohmann::json j;
  j["batch_transfers"] = nlohmann::json::array();
  for (const auto& t : report.batch_transfers) {
    j["batch_transfers"].push_back({{"source", t.source}, {"set", t.set}, {"from_row", t.from_row},
                                    {"from_batch", t.from_batch}, {"to_row", t.to_row}, {"to_batch", t.to_batch},
                                    {"measured_plain_tokens_per_s", t.measured_plain_tokens_per_s},
                                    {"predicted_plain_tokens_per_s", t.predicted_plain_tokens_per_s},
                                    {"error", t.error()}});
    if (t.has_spec()) {
      j["batch_transfers"].back()["speculative"] = {{"measured_tokens_per_s", t.measured_spec_tokens_per_s},
                                                    {"predicted_tokens_per_s", t.predicted_spec_tokens_per_s},
                                                    {"p10_tokens_per_s", t.spec_p10_tokens_per_s},
                                                    {"p90_tokens_per_s", t.spec_p90_tokens_per_s},
                                                    {"error", t.spec_error()},
                                                    {"measured_inside", t.spec_in_band()}};
    }
  }
  j["batch_transfer_summary"] = nlohmann::json::array();
  for (const auto& s : report.batch_transfer_summaries) {
    j["batch_transfer_summary"].push_back({{"group", s.group}, {"points", s.points}, {"sources", s.sources},
                                           {"median_abs_error", s.median_abs_error},
                                           {"worst_abs_error", s.worst_abs_error}, {"worst_point", s.worst_point},
                                           {"mean_signed_error", s.mean_signed_error},
                                           {"speculative", {{"points", s.spec_points},
                                                            {"median_abs_error", s.spec_median_abs_error},
                                                            {"mean_signed_error", s.spec_mean_signed_error},
                                                            {"in_band", s.spec_in_band},
                                                            {"median_band_width", s.spec_median_band_width}}}});
  }
  return j;
}

std::string validation_text(const ValidationReport& report) {
  std::ostringstream os;
  int scored = 0;
  for (const auto& r : report.rows) scored += r.scored() ? 1 : 0;
  os << "specsim validate: " << report.rows.size() << " measured deployments (" << scored << " scored, "
     << report.rows.size() - std::size_t(scored) << " reported apart); speculative tokens/s predicted from the "
     << "plain rate and acceptance, the measured value held out\n"
     << "  sets: " << (report.split_file.empty() ? "no split file" : report.split_file)
     << " (fit: priors, rules and the model error may come from it; check: judged only)\n\n";
  os << header_line();
  for (const auto& r : report.rows) os << row_line(r);
  os << "\n  plain/spec/pred: tokens/s over the batch; p10-p90: the prediction's band from the priors' spread\n"
     << "  and specsim's error on the other sources' rows, and whether the measurement lies in it;\n"
     << "  error = pred/spec - 1; x = speedup over plain decoding; sign: whether speculation pays,\n"
     << "  predicted vs measured; call: predict's call (pays or loses where the whole band clears the plain\n"
     << "  rate) against the measurement, close where the band holds the plain rate (too close to call);\n"
     << "  inputs: C calibrated, S set, P prior\n";
  // The rows' warnings before the summaries, which end the report where a terminal shows them.
  bool any_warning = false;
  for (const auto& r : report.rows) {
    for (const auto& w : r.warnings) {
      os << (any_warning ? "" : "\nwarnings\n") << "  " << r.name << ": " << w << "\n";
      any_warning = true;
    }
  }
  // Rows reported apart, by source and reason; the split's notes; the model error.
  std::map<std::pair<std::string, std::string>, int> apart;
  for (const auto& r : report.rows) {
    if (!r.scored()) ++apart[{r.source.source, r.not_scored}];
  }
  if (!apart.empty() || !report.split_notes.empty() || report.model_error || !report.model_error_note.empty()) os << "\n";
  for (const auto& [key, n] : apart) {
    os << "  not scored: " << n << (n == 1 ? " row" : " rows") << " of " << key.first << ": " << key.second << "\n";
  }
  for (const auto& n : report.split_notes) os << "  " << n << "\n";
  if (report.model_error) os << model_error_line(*report.model_error);
  if (!report.model_error_note.empty()) os << "  " << report.model_error_note << "\n";
  os << pairs_text(report);
  os << batch_transfer_text(report);
  os << "\n" << summary_header();
  for (const auto& s : report.summaries) os << summary_line(s);
  if (report.not_scored) os << "\n" << summary_line(*report.not_scored);
  os << "\n  called: rows whose band clears the plain rate (right of called); band: measurements inside the\n"
     << "  p10-p90 band; width: its median (p90 - p10) / predicted; priors: inside the priors' band alone;\n"
     << "  leave-source-out: every scored row, no band fitted on its own source\n";
  if (report.calibration) {
    const CalibrationRun& c = *report.calibration;
    os << "\ncalibrated " << c.mode << ": the per-cycle engine term fitted on one measured speculative run "
       << "of the same deployment (source, then draft and batch), then the row predicted\n\n";
    os << header_line();
    for (const auto& cr : c.rows) os << row_line(cr.row) << "        on " << cr.calibrated_on.front() << "\n";
    os << "\n" << summary_header() << summary_line(c.summary);
    for (const auto& s : c.splits) os << summary_line(s);
    if (!c.sources_skipped.empty()) {
      os << "  sources with too few rows:";
      for (const auto& s : c.sources_skipped) os << " " << s;
      os << "\n";
    }
  }
  return os.str();
}

nlohmann::json validation_json(const ValidationReport& report) {
  nlohmann::json j;
  j["rows"] = nlohmann::json::array();
  for (const auto& r : report.rows) j["rows"].push_back(row_json(r));
  j["summary"] = nlohmann::json::array();
  for (const auto& s : report.summaries) j["summary"].push_back(summary_json(s));
  j["not_scored"] = report.not_scored ? summary_json(*report.not_scored) : nlohmann::json(nullptr);
  j["split"] = {{"file", report.split_file}, {"notes", report.split_notes}};
  j.update(pairs_json(report));
  j.update(batch_transfer_json(report));
  j["model_error"] = report.model_error ? model_error_json(*report.model_error) : nlohmann::json(nullptr);
  if (!report.model_error_note.empty()) j["model_error_note"] = report.model_error_note;
  if (report.calibration) {
    const CalibrationRun& c = *report.calibration;
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& cr : c.rows) rows.push_back(calibrated_row_json(cr));
    j["calibration"] = {{"mode", c.mode},
                        {"rows", rows},
                        {"summary", summary_json(c.summary)},
                        {"splits", [&] {
                           nlohmann::json a = nlohmann::json::array();
                           for (const auto& s : c.splits) a.push_back(summary_json(s));
                           return a;
                         }()},
                        {"sources_skipped", c.sources_skipped}};
  }
  return j;
}

// The rows and the calibrated rows in one table, each with the view's own `table` (which table it is
// from), `set` (fit, check, or "not scored") and `inputs_not_measured` (the text's letters).
std::string validation_csv(const ValidationReport& report) {
  nlohmann::json rows = nlohmann::json::array();
  auto add = [&](const std::string& table, const ValidationRow& r, nlohmann::json row) {
    row["table"] = table;
    row["set"] = r.scored() ? r.set : "not scored";
    row["inputs_not_measured"] = origins_code(r);
    rows.push_back(std::move(row));
  };
  for (const auto& r : report.rows) add("rows", r, row_json(r));
  if (report.calibration) {
    for (const auto& cr : report.calibration->rows) {
      add("calibrated " + report.calibration->mode, cr.row, calibrated_row_json(cr));
    }
  }
  // Each pair as its own line: `name` the row after the change, the pair's columns beside it.
  const nlohmann::json pairs = pairs_json(report)["pairs"];
  for (const auto& p : pairs) {
    rows.push_back({{"table", "pairs"}, {"set", p["set"]}, {"name", p["after"]}, {"source", {{"id", p["source"]}}},
                    {"pair", p}});
  }
  // Each batch transfer as its own line: `name` the predicted row, `batch` its batch.
  // The speculative side, where the row is scored, in the rows' own columns (error: its spec error).
  for (const auto& t : report.batch_transfers) {
    nlohmann::json row{{"table", "batch transfers"}, {"set", t.set.empty() ? "not scored" : t.set}, {"name", t.to_row},
                       {"source", {{"id", t.source}}}, {"batch", t.to_batch},
                       {"measured", {{"plain_tokens_per_s", t.measured_plain_tokens_per_s}}},
                       {"predicted", {{"plain_tokens_per_s", t.predicted_plain_tokens_per_s}}},
                       {"transfer", {{"from_row", t.from_row}, {"from_batch", t.from_batch}, {"error", t.error()}}}};
    if (t.has_spec()) {
      row["measured"]["spec_tokens_per_s"] = t.measured_spec_tokens_per_s;
      row["predicted"]["spec_tokens_per_s"] = t.predicted_spec_tokens_per_s;
      row["band"] = {{"p10_tokens_per_s", t.spec_p10_tokens_per_s},
                     {"p90_tokens_per_s", t.spec_p90_tokens_per_s},
                     {"measured_inside", t.spec_in_band()}};
      row["error"] = t.spec_error();
    }
    rows.push_back(std::move(row));
  }
  return csv_table({"table", "set", "name", "source.id", "source.url", "engine", "interconnect", "gpu", "model", "moe", "tp",
                    "batch", "tree", "num_steps", "num_draft_tokens", "measured.plain_tokens_per_s",
                    "measured.spec_tokens_per_s", "predicted.plain_tokens_per_s", "predicted.spec_tokens_per_s",
                    "band.p10_tokens_per_s", "band.p90_tokens_per_s", "band.measured_inside",
                    "band.priors.p10_tokens_per_s", "band.priors.p90_tokens_per_s", "band.priors.measured_inside",
                    "band.model_error.sigma_below", "band.model_error.sigma_above", "error",
                    "measured.speedup", "predicted.speedup", "sign_right", "call", "call_right", "inputs_not_measured", "calibrated_on",
                    "pair.setting", "pair.intervention", "pair.before", "pair.change", "pair.measured_gain",
                    "pair.predicted_gain", "pair.sign_right", "pair.gain_band.p10", "pair.gain_band.p90",
                    "pair.called", "pair.band_holds", "transfer.from_row", "transfer.from_batch", "transfer.error"},
                   rows);
}

}  // namespace

std::string render_validation(const ValidationReport& report, Format format) {
  switch (format) {
    case Format::kText: return validation_text(report);
    case Format::kJson: return validation_json(report).dump(2) + "\n";
    case Format::kCsv: return validation_csv(report);
  }
  return "";
}

namespace {

// Whether the model as shipped does better on a group than with the rule flipped: lower median
// |error| at the 0.1 points the table prints (a difference it cannot show is no effect), ties
// broken by sign and band coverage.
std::string verdict(const ErrorSummary& shipped, const ErrorSummary& flipped) {
  const auto key = [](const ErrorSummary& s) {
    return std::make_tuple(-std::round(1000.0 * s.median_abs_error), s.sign_right, s.in_band);
  };
  if (key(shipped) == key(flipped)) return "no effect";
  return key(shipped) > key(flipped) ? "as shipped is better" : "flipped is better";
}

std::string ablation_text(const std::vector<RuleAblation>& rules) {
  std::ostringstream os;
  os << "specsim validate --ablate: each calibration rule flipped against the model as shipped "
        "(docs/validation.md#ablation)\n";
  for (const auto& r : rules) {
    os << "\n" << r.rule << " (" << (r.shipped ? "on" : "off") << " as shipped; flipped: " << (r.shipped ? "off" : "on")
       << "): on the check set, " << verdict(r.as_shipped.front(), r.flipped.front()) << "\n"
       << summary_header();
    for (std::size_t i = 0; i < r.as_shipped.size(); ++i) {
      ErrorSummary a = r.as_shipped[i], b = r.flipped[i];
      a.group = a.group + " as shipped";
      b.group = b.group + " flipped";
      os << summary_line(a) << summary_line(b);
    }
    for (std::size_t i = 0; i < r.transfers_as_shipped.size() && i < r.transfers_flipped.size(); ++i) {
      const auto line = [](const BatchTransferSummary& s) {
        return fixed(100.0 * s.spec_median_abs_error, 1) + "% median |error|, " + std::to_string(s.spec_in_band) + "/" +
               std::to_string(s.spec_points) + " in band (width " + fixed(100.0 * s.spec_median_band_width, 0) + "%)";
      };
      os << "  batch transfers " << r.transfers_as_shipped[i].group << " (speculative): as shipped "
         << line(r.transfers_as_shipped[i]) << "; flipped " << line(r.transfers_flipped[i]) << "\n";
    }
  }
  return os.str();
}

nlohmann::json transfer_ablation_json(const BatchTransferSummary& s) {
  return {{"group", "batch transfers " + s.group},
          {"rows", s.spec_points},
          {"median_abs_error", s.spec_median_abs_error},
          {"mean_signed_error", s.spec_mean_signed_error},
          {"in_band", s.spec_in_band},
          {"median_band_width", s.spec_median_band_width}};
}

nlohmann::json ablation_json(const std::vector<RuleAblation>& rules) {
  nlohmann::json j;
  j["rules"] = nlohmann::json::array();
  for (const auto& r : rules) {
    nlohmann::json a = nlohmann::json::array(), b = nlohmann::json::array();
    for (const auto& s : r.as_shipped) a.push_back(summary_json(s));
    for (const auto& s : r.flipped) b.push_back(summary_json(s));
    nlohmann::json ta = nlohmann::json::array(), tb = nlohmann::json::array();
    for (const auto& s : r.transfers_as_shipped) ta.push_back(transfer_ablation_json(s));
    for (const auto& s : r.transfers_flipped) tb.push_back(transfer_ablation_json(s));
    j["rules"].push_back({{"rule", r.rule},
                          {"shipped", r.shipped},
                          {"check_verdict", verdict(r.as_shipped.front(), r.flipped.front())},
                          {"as_shipped", a},
                          {"flipped", b},
                          {"batch_transfers", {{"as_shipped", ta}, {"flipped", tb}}}});
  }
  return j;
}

std::string ablation_csv(const std::vector<RuleAblation>& rules) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : rules) {
    for (std::size_t i = 0; i < r.as_shipped.size(); ++i) {
      for (const auto& [state, s] : {std::pair{"as shipped", &r.as_shipped[i]}, std::pair{"flipped", &r.flipped[i]}}) {
        nlohmann::json row = summary_json(*s);
        row["rule"] = r.rule;
        row["shipped"] = r.shipped;
        row["state"] = state;
        rows.push_back(std::move(row));
      }
    }
    // The batch transfers' speculative side, a row per set and state: sign and the priors' band are
    // not measured there and stay empty.
    for (std::size_t i = 0; i < r.transfers_as_shipped.size() && i < r.transfers_flipped.size(); ++i) {
      for (const auto& [state, s] : {std::pair{"as shipped", &r.transfers_as_shipped[i]},
                                     std::pair{"flipped", &r.transfers_flipped[i]}}) {
        nlohmann::json row = transfer_ablation_json(*s);
        row["rule"] = r.rule;
        row["shipped"] = r.shipped;
        row["state"] = state;
        rows.push_back(std::move(row));
      }
    }
  }
  return csv_table({"rule", "shipped", "state", "group", "rows", "median_abs_error", "worst_abs_error", "worst_row",
                    "mean_signed_error", "sign_right", "called", "called_right", "in_band", "in_prior_band",
                    "median_band_width"},
                   rows);
}

}  // namespace

std::string render_ablation(const std::vector<RuleAblation>& rules, Format format) {
  switch (format) {
    case Format::kText: return ablation_text(rules);
    case Format::kJson: return ablation_json(rules).dump(2) + "\n";
    case Format::kCsv: return ablation_csv(rules);
  }
  return "";
}

}  // namespace specsim
