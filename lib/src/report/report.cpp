#include "specsim/report.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>

#include "specsim/memory_fit.hpp"
#include "specsim/prior_band.hpp"
#include "specsim/units.hpp"

namespace specsim {

namespace {

using units::format_duration;

std::string fixed(double v, int digits) { return units::format_fixed(v, digits); }

std::string row(const std::string& label, const std::string& base, const std::string& spec) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %-34s %14s %14s\n", label.c_str(), base.c_str(), spec.c_str());
  return buf;
}

std::string forward_note(const ForwardBreakdown& f) {
  std::ostringstream os;
  os << fixed(f.tokens, f.tokens == static_cast<long long>(f.tokens) ? 0 : 2) << " tok, " << to_string(f.mode);
  return os.str();
}

std::string phase_name(const ForwardBreakdown& f) {
  return f.step > 0 ? std::string(f.phase) + " " + std::to_string(f.step) : std::string(f.phase);
}

nlohmann::json forward_json(const ForwardBreakdown& f) {
  return {{"phase", phase_name(f)},          {"tokens", f.tokens},
          {"mode", to_string(f.mode)}, {"total_s", f.total_s()},
          {"compute_s", f.compute_s},  {"comm_s", f.comm_s},
          {"allreduce_count", f.allreduce_count},
          {"message_bytes", f.message_bytes},
          {"allreduce_each_s", f.allreduce_each_s}};
}

nlohmann::json value_json(const CalibratedValue& v) { return {{"value", v.value}, {"origin", v.origin}}; }

std::string gigabytes(double bytes) { return fixed(bytes / 1e9, 1) + " GB"; }

nlohmann::json memory_json(const MemoryFit& fit) {
  nlohmann::json parts = nlohmann::json::array();
  for (const auto& part : fit.parts) parts.push_back({{"name", part.name}, {"bytes", part.bytes}, {"basis", part.basis}});
  return {{"gpu", fit.gpu},
          {"batch", fit.batch},
          {"capacity_bytes", fit.capacity_bytes},
          {"used_bytes", fit.used_bytes()},
          {"fits", fit.fits()},
          {"engine_fraction", fit.engine_fraction},
          {"engine_rule", fit.engine_rule},
          {"parts", parts}};
}

}  // namespace

std::string render_memory_text(const MemoryFit& fit) {
  std::ostringstream os;
  os << "\n  memory per GPU (" << fit.gpu << ", " << gigabytes(fit.capacity_bytes) << "): "
     << gigabytes(fit.used_bytes()) << ", "
     << (fit.fits() ? gigabytes(-fit.over_bytes()) + " to spare" : "OVER by " + gigabytes(fit.over_bytes())) << "\n";
  for (const auto& part : fit.parts) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "    %-18s %9s  ", part.name.c_str(), gigabytes(part.bytes).c_str());
    os << buf << part.basis << "\n";
  }
  return os.str();
}

std::string render_memory_json(const MemoryFit& fit) { return memory_json(fit).dump(); }

std::string held_out_mismatch(const Scenario& s) {
  // A what-if is another deployment: the run measured as the file states it is no yardstick for it.
  if (!s.patched_keys.empty()) return "belongs to the scenario as measured, not to this what-if (--set)";
  if (s.measurements.model) {
    return "was measured with " + s.measurements.model->name + " as the target, not " + s.model.name;
  }
  if (s.measurements.box) {
    return "was measured on " + s.measurements.box->topology.name + " (" + s.measurements.box->gpu.name + "), not " +
           s.topology.name + " (" + s.gpu.name + ")";
  }
  return "";
}

std::string render_text(const CycleModel& model, const Prediction& p) {
  const Scenario& s = model.scenario();
  const Calibration& cal = model.calibration();
  std::ostringstream os;
  os << "specsim predict: " << s.name << "\n";
  os << "  " << s.model.name << " + " << s.draft.name << " on " << s.topology.name << " (" << s.gpu.name
     << "), TP" << s.parallel.tp << ", batch " << s.batch << ", context " << fixed(s.context_tokens, 0) << "\n";
  os << "  speculation: " << s.speculation.shape.num_steps << " steps, top-k " << s.speculation.shape.eagle_topk << ", "
     << s.speculation.shape.num_draft_tokens << " draft tokens verified\n\n";

  os << row("", "baseline", "speculative");
  os << row("tokens/s", fixed(p.baseline_tokens_per_s, 1), fixed(p.spec_tokens_per_s, 1));
  os << row("step / cycle", format_duration(p.baseline_step_s), format_duration(p.cycle_s));
  os << row("tokens per step / cycle", "1", fixed(p.tokens_per_cycle, 3));
  os << row("  target forward (" + forward_note(p.decode) + " | " + forward_note(p.verify) + ")",
            format_duration(p.decode.total_s()), format_duration(p.verify.total_s()));
  os << row("    compute", format_duration(p.decode.compute_s), format_duration(p.verify.compute_s));
  os << row("    all-reduce x" + std::to_string(p.verify.allreduce_count),
            format_duration(p.decode.comm_s), format_duration(p.verify.comm_s));
  os << row("      each (" + units::format_bytes(p.decode.message_bytes) + " | " +
                units::format_bytes(p.verify.message_bytes) + ")",
            format_duration(p.decode.allreduce_each_s), format_duration(p.verify.allreduce_each_s));
  os << row("  draft forwards x" + std::to_string(p.drafts.size()), "-", format_duration(p.draft_s));
  for (const auto& d : p.drafts) {
    os << row("    " + phase_name(d) + " (" + forward_note(d) + ")", "-", format_duration(d.total_s()));
  }
  os << row("  host", format_duration(p.baseline_host_s), format_duration(p.spec_host_s));
  os << "\n";
  const PredictionBand band = prior_band(model, p);
  if (!band.terms.empty()) {
    os << "  speculative p10-p90 " << fixed(band.p10_tokens_per_s, 1) << " - " << fixed(band.p90_tokens_per_s, 1)
       << " tok/s over the spread of the priors (";
    for (std::size_t i = 0; i < band.terms.size(); ++i) os << (i ? ", " : "") << band.terms[i];
    os << ")\n";
  }
  os << "  speedup " << fixed(p.speedup, 3) << "x;  break-even at " << fixed(p.breakeven_tokens_per_cycle, 2)
     << " tokens per cycle (this cycle emits " << fixed(p.tokens_per_cycle, 2) << ")\n";
  os << "  dominant: " << p.dominant << ", " << fixed(100.0 * p.dominant_share, 0) << "% of the cycle\n";
  if (!p.conditional_rates.empty()) {
    os << "  acceptance by position (conditional):";
    for (double r : p.conditional_rates) os << " " << fixed(r, 3);
    os << "\n";
  }
  os << render_memory_text(memory_fit(s));
  os << "\n  calibration\n";
  os << "    bandwidth efficiency " << fixed(100.0 * cal.bandwidth_efficiency.value, 1) << "%  ("
     << cal.bandwidth_efficiency.origin << ")\n";
  os << "    routing skew " << fixed(cal.routing_skew.value, 3) << "  (" << cal.routing_skew.origin << ")\n";
  os << "    eager all-reduce overhead " << format_duration(cal.eager_overhead_per_op_s.value) << " per op  ("
     << cal.eager_overhead_per_op_s.origin << ")\n";
  os << "    host per plain step " << format_duration(cal.host_decode_s.value) << "  (" << cal.host_decode_s.origin
     << ")\n";
  os << "    engine overhead per cycle " << format_duration(cal.spec_extra_per_cycle_s.value) << "  ("
     << cal.spec_extra_per_cycle_s.origin << ")\n";
  os << "    engine overhead per draft forward " << format_duration(cal.draft_step_overhead_s.value) << "  ("
     << cal.draft_step_overhead_s.origin << ")\n";
  if (s.parallel.tp > 1) {
    os << "    all-reduce: " << cal.comm_source << (cal.comm_calibrated ? "" : "  [UNCALIBRATED]") << "\n";
  }
  for (const auto& w : cal.warnings) os << "  warning: " << w << "\n";
  if (const std::string why = held_out_mismatch(s); s.measurements.speculative_tokens_per_s && !why.empty()) {
    os << "  measured speculative " << fixed(*s.measurements.speculative_tokens_per_s, 1) << " tok/s " << why
       << ": no comparison\n";
  } else if (s.measurements.speculative_tokens_per_s) {
    const double m = *s.measurements.speculative_tokens_per_s;
    os << "  measured speculative (" << (s.measurements.speculative_held_out ? "held out, not an input" : "an input")
       << "): " << fixed(m, 1) << " tok/s; prediction is " << (p.spec_tokens_per_s >= m ? "+" : "")
       << fixed(100.0 * (p.spec_tokens_per_s / m - 1.0), 1) << "%\n";
  }
  return os.str();
}

std::string render_json(const CycleModel& model, const Prediction& p) {
  const Scenario& s = model.scenario();
  const Calibration& cal = model.calibration();
  nlohmann::json drafts = nlohmann::json::array();
  for (const auto& d : p.drafts) drafts.push_back(forward_json(d));
  nlohmann::json j;
  j["scenario"] = s.name;
  j["baseline"] = {{"tokens_per_s", p.baseline_tokens_per_s},
                   {"step_s", p.baseline_step_s},
                   {"forward_s", p.decode.total_s()},
                   {"compute_s", p.decode.compute_s},
                   {"comm_s", p.decode.comm_s},
                   {"allreduce_count", p.decode.allreduce_count},
                   {"host_s", p.baseline_host_s}};
  j["speculative"] = {{"tokens_per_s", p.spec_tokens_per_s},
                      {"cycle_s", p.cycle_s},
                      {"tokens_per_cycle", p.tokens_per_cycle},
                      {"conditional_rates", p.conditional_rates},
                      {"draft_s", p.draft_s},
                      {"verify_s", p.verify.total_s()},
                      {"verify_compute_s", p.verify.compute_s},
                      {"verify_comm_s", p.verify.comm_s},
                      {"verify_allreduce_count", p.verify.allreduce_count},
                      {"verify_allreduce_each_s", p.verify.allreduce_each_s},
                      {"host_s", p.spec_host_s},
                      {"drafts", drafts}};
  const PredictionBand band = prior_band(model, p);
  j["speculative"]["band"] = {{"p10_tokens_per_s", band.p10_tokens_per_s},
                              {"p50_tokens_per_s", band.p50_tokens_per_s},
                              {"p90_tokens_per_s", band.p90_tokens_per_s},
                              {"samples", band.samples},
                              {"priors", band.terms}};
  j["speedup"] = p.speedup;
  j["breakeven_tokens_per_cycle"] = p.breakeven_tokens_per_cycle;
  j["dominant"] = {{"part", p.dominant}, {"share", p.dominant_share}};
  j["calibration"] = {{"bandwidth_efficiency", value_json(cal.bandwidth_efficiency)},
                      {"routing_skew", value_json(cal.routing_skew)},
                      {"eager_overhead_per_op_s", value_json(cal.eager_overhead_per_op_s)},
                      {"host_decode_s", value_json(cal.host_decode_s)},
                      {"spec_extra_per_cycle_s", value_json(cal.spec_extra_per_cycle_s)},
                      {"draft_step_overhead_s", value_json(cal.draft_step_overhead_s)},
                      {"comm_calibrated", cal.comm_calibrated},
                      {"comm_source", cal.comm_source},
                      {"warnings", cal.warnings}};
  j["memory"] = memory_json(memory_fit(s));
  return j.dump(2) + "\n";
}

}  // namespace specsim
