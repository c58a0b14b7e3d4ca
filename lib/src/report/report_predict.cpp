// predict's views: one batch (its cycle, memory, calibration and an optional Monte Carlo) and
// several concurrency levels.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <variant>

#include "report/csv.hpp"
#include "report/text.hpp"
#include "specsim/memory_fit.hpp"
#include "specsim/prior_band.hpp"
#include "specsim/report.hpp"
#include "specsim/units.hpp"

namespace specsim {

namespace {

using units::format_duration;

std::string fixed(double v, int digits) { return units::format_fixed(v, digits); }

// The band's line: the priors' spread and specsim's held-out error, each said where it is drawn.
// One sigma, or the split normal's two tails where they differ.
std::string sigma_text(const ModelError& e) {
  if (e.sigma_below == e.sigma_above) return "sigma " + fixed(e.sigma_below, 3);
  return "sigma " + fixed(e.sigma_below, 3) + " below, " + fixed(e.sigma_above, 3) + " above";
}

// Where the acceptance was one rate with two readings (averaged_rate_reading): both taus, and what
// settles it.
std::string acceptance_readings_text(const PredictionBand& band, double point_tokens_per_cycle) {
  if (!band.averaged_rate_tokens_per_cycle) return "";
  return "    the acceptance rate has two readings, which the band spans: each position's conditional rate "
         "(tau " + fixed(point_tokens_per_cycle, 2) + ", the point) or accepted / drafted, vLLM's 'Avg Draft "
         "acceptance rate' (tau " + fixed(*band.averaged_rate_tokens_per_cycle, 2) + ", " +
         fixed(100.0 * kAveragedRateReadingWeight, 0) + "% of the draws);\n    the engine's mean acceptance length "
         "settles it (--accept-length, or --draft-acceptance-rate for vLLM's average)\n";
}

// The call a user acts on (speculation_call): whether the band clears plain decoding.
std::string call_text(const PredictionBand& band, double spec_tokens_per_s, double plain_tokens_per_s) {
  const bool spread = band.p90_tokens_per_s > band.p10_tokens_per_s;
  const SpeculationCall call = speculation_call(band, spec_tokens_per_s, plain_tokens_per_s);
  const std::string what = spread ? "the p10-p90 band (" + fixed(band.p10_tokens_per_s, 1) + " - " +
                                        fixed(band.p90_tokens_per_s, 1) + " tok/s)"
                                  : "the point (" + fixed(spec_tokens_per_s, 1) + " tok/s, no band)";
  const std::string plain = "plain decoding's " + fixed(plain_tokens_per_s, 1) + " tok/s";
  const std::string lies = spread ? " lies wholly " : " is ";
  switch (call) {
    case SpeculationCall::kPays: return "  speculation pays: " + what + lies + "above " + plain + "\n";
    case SpeculationCall::kLoses: return "  speculation loses: " + what + lies + "below " + plain + "\n";
    case SpeculationCall::kTooClose: break;
  }
  return "  too close to call: " + (spread ? what + " holds " : what + " equals ") + plain +
         "; a measured speculative run on this box settles it\n";
}

std::string band_text(const PredictionBand& band) {
  // Both tails 0: set to the priors alone.
  const bool error =
      band.model_error && (band.model_error->sigma_below > 0.0 || band.model_error->sigma_above > 0.0);
  if (band.terms.empty() && !error) return "";
  std::ostringstream os;
  os << "  speculative p10-p90 " << fixed(band.p10_tokens_per_s, 1) << " - " << fixed(band.p90_tokens_per_s, 1)
     << " tok/s";
  std::string terms;
  for (const auto& t : band.terms) terms += (terms.empty() ? "" : ", ") + t;
  if (!error) return os.str() + " over the spread of the priors (" + terms + ")\n";
  const ModelError& e = *band.model_error;
  if (e.origin == "set") {
    os << " over a model error set by the scenario\n    (band.model_error: sigma " << fixed(e.sigma, 3)
       << " in ln tok/s beyond the priors)";
  } else {
    os << " over specsim's error on public deployments it was not fitted to\n    (" << sigma_text(e)
       << " in ln tok/s beyond the priors, " << e.rows << " fit-set rows of " << e.sources << " sources: " << e.origin
       << ")";
  }
  if (band.transfer_sigma > 0.0) {
    os << ",\n    of which " << fixed(band.transfer_sigma, 3) << " on each tail (in quadrature) is for carrying batch "
       << band.transfer_from_batch << "'s calibration to this batch (" << fixed(e.transfer_sigma_per_ln_batch, 3) << " per unit ln of the batch "
       << "ratio, over " << e.transfer_points << " fit-set batch transfers of " << e.transfer_sources << " sources)";
  }
  if (terms.empty()) {
    os << "; no prior is open\n";
  } else {
    os << "\n    and the priors' spread, alone " << fixed(band.priors_p10_tokens_per_s, 1) << " - "
       << fixed(band.priors_p90_tokens_per_s, 1) << " tok/s (" << terms << ")\n";
  }
  return os.str();
}

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

// The experts' streaming efficiency as stated, or the bandwidth efficiency they follow.
nlohmann::json expert_efficiency_json(const Calibration& cal) {
  const CalibratedValue& experts = cal.expert_bandwidth_efficiency;
  if (experts.origin != kExpertsFollowDense) return value_json(experts);
  return {{"value", cal.bandwidth_efficiency.value}, {"origin", experts.origin}};
}

// An overlap exponent p of (gpu^p + host^p)^(1/p); infinite is perfect overlap.
std::string overlap_exponent_text(double p) { return std::isinf(p) ? "inf, max(gpu, host)" : fixed(p, 2); }

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

std::string memory_text(const MemoryFit& fit) {
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

// " EP8" and its all-to-all backend when experts are spread over the ranks whole; " DP-attention"
// when attention is data parallel.
std::string expert_parallel_note(const Parallelism& p) {
  const std::string dp = !p.data_parallel_attention() ? ""
                         : p.attention_tp() > 1 ? " DP-attention " + std::to_string(p.attention_dp) + " x TP" +
                                                      std::to_string(p.attention_tp())
                                                : " DP-attention";
  if (p.ep <= 1) return dp;
  return " EP" + std::to_string(p.ep) +
         (p.moe_a2a == MoeA2aBackend::kNone ? "" : std::string(" (") + to_string(p.moe_a2a) + " all-to-all)") + dp;
}

// speculation.method ngram: the host's lookup cost per context token, set or the prior.
CalibratedValue ngram_lookup(const Scenario& s) {
  const bool set = s.explicit_keys.count("host.ngram_lookup_per_token") > 0;
  return {s.host.ngram_lookup_per_token_s,
          set ? "set"
              : "prior: vLLM's single-threaded lookup, p10-p90 " + format_duration(kPriorNgramLookupPerTokenS.p10) +
                    " to " + format_duration(kPriorNgramLookupPerTokenS.p90) + " (docs/references/specdec.md#ngram)"};
}

// Why the speedup exceeds the tokens a cycle emits, which needs a cycle shorter than a plain step;
// "" where it does not.
std::string speedup_above_tau(const Scenario& s, const Prediction& p) {
  if (!(p.speedup > p.tokens_per_cycle * (1.0 + 1e-9))) return "";
  std::string why = "the cycle (" + units::format_duration(p.cycle_s) + ") is shorter than a plain step (" +
                    units::format_duration(p.baseline_step_s) + ")";
  if (s.engine.decode_mode != LaunchMode::kGraph && s.engine.verify_mode == LaunchMode::kGraph) {
    why += ": the plain step runs eager (engine.decode_mode) while the verify replays a CUDA graph, so each plain "
           "step pays kernel launches the cycle does not";
  } else if (p.spec_host_s < p.baseline_host_s) {
    why += ": the plain step's host time (" + units::format_duration(p.baseline_host_s) +
           ") exceeds the cycle's (" + units::format_duration(p.spec_host_s) + ")";
  }
  return "speedup " + fixed(p.speedup, 3) + "x is above the " + fixed(p.tokens_per_cycle, 2) +
         " tokens per cycle: " + why;
}

// The cycle's figures side by side with plain decoding, the band, speedup and acceptance.
std::string figures_text(const CycleModel& model, const Prediction& p) {
  const Scenario& s = model.scenario();
  std::ostringstream os;
  os << "specsim predict: " << s.name << "\n";
  os << "  " << s.model.name << " + " << s.draft.name << " on " << s.topology.name << " (" << s.gpu.name
     << "), TP" << s.parallel.tp << expert_parallel_note(s.parallel) << ", batch " << s.batch << ", context " << fixed(s.context_tokens, 0) << "\n";
  if (s.speculation.drafts_block()) {
    os << "  speculation: " << s.speculation.method << " block of " << s.speculation.shape.num_draft_tokens << " ("
       << s.speculation.shape.num_steps << " drafted in one forward over the block, " << s.speculation.shape.num_draft_tokens
       << " verified as a chain)";
  } else {
    os << "  speculation: " << s.speculation.shape.num_steps << " steps, top-k " << s.speculation.shape.eagle_topk << ", "
       << s.speculation.shape.num_draft_tokens << " draft tokens verified";
  }
  if (s.speculation.parallel_drafting) {
    os << ", parallel drafting (all " << s.speculation.shape.num_steps << " in one draft forward)";
  }
  os << "\n\n";

  os << row("", "baseline", "speculative");
  os << row("tokens/s", fixed(p.baseline_tokens_per_s, 1), fixed(p.spec_tokens_per_s, 1));
  os << row("step / cycle", format_duration(p.baseline_step_s), format_duration(p.cycle_s));
  os << row("tokens per step / cycle", "1", fixed(p.tokens_per_cycle, 3));
  os << row("  target forward (" + forward_note(p.decode) + " | " + forward_note(p.verify) + ")",
            format_duration(p.decode.total_s()), format_duration(p.verify.total_s()));
  os << row("    compute", format_duration(p.decode.compute_s), format_duration(p.verify.compute_s));
  const bool only_allreduce = std::all_of(p.verify.collectives.begin(), p.verify.collectives.end(), [](const auto& c) {
    return c.collective.op == CollectiveOp::kAllReduce;
  });
  if (s.parallel.data_parallel_attention() || !only_allreduce) {
    // Not all-reduces alone (DP attention's gathers, an all-to-all backend, pipeline sends): each
    // operation on its own row, so that no other collective's time sits under an all-reduce label.
    os << row("    collectives", format_duration(p.decode.comm_s), format_duration(p.verify.comm_s));
    for (std::size_t i = 0; i < p.verify.collectives.size() && i < p.decode.collectives.size(); ++i) {
      const Collective& c = p.verify.collectives[i].collective;
      os << row("      " + std::string(to_string(c.op)) + " x" + std::to_string(c.count) + " (" +
                    units::format_bytes(p.decode.collectives[i].collective.bytes) + " | " + units::format_bytes(c.bytes) + ")",
                format_duration(p.decode.collectives[i].each_s), format_duration(p.verify.collectives[i].each_s));
    }
  } else if (p.verify.allreduce_count > 0 || p.decode.comm_s > 0) {  // a single rank has none to show
    os << row("    all-reduce x" + std::to_string(p.verify.allreduce_count),
              format_duration(p.decode.comm_s), format_duration(p.verify.comm_s));
    os << row("      each (" + units::format_bytes(p.decode.message_bytes) + " | " +
                  units::format_bytes(p.verify.message_bytes) + ")",
              format_duration(p.decode.allreduce_each_s), format_duration(p.verify.allreduce_each_s));
  }
  if (!s.speculation.runs_draft_forwards()) {
    os << row("  draft: n-gram lookup on the host (in host)", "-", "-");
  } else {
    os << row("  draft forwards x" + std::to_string(p.drafts.size()), "-", format_duration(p.draft_s));
  }
  for (const auto& d : p.drafts) {
    os << row("    " + phase_name(d) + " (" + forward_note(d) + ")", "-", format_duration(d.total_s()));
  }
  os << row("  host", format_duration(p.baseline_host_s), format_duration(p.spec_host_s));
  os << "\n";
  const PredictionBand band = prediction_band(model, p);
  os << band_text(band) << acceptance_readings_text(band, p.tokens_per_cycle);
  os << "  speedup " << fixed(p.speedup, 3) << "x;  break-even at " << fixed(p.breakeven_tokens_per_cycle, 2)
     << " tokens per cycle (this cycle emits " << fixed(p.tokens_per_cycle, 2) << ")\n";
  if (const std::string above = speedup_above_tau(model.scenario(), p); !above.empty()) os << "  " << above << "\n";
  os << call_text(band, p.spec_tokens_per_s, p.baseline_tokens_per_s);
  os << "  dominant: " << p.dominant << ", " << fixed(100.0 * p.dominant_share, 0) << "% of the cycle\n";
  if (!p.conditional_rates.empty()) {
    os << "  acceptance by position (conditional):";
    for (double r : p.conditional_rates) os << " " << fixed(r, 3);
    os << "\n";
  }
  // A first-position rate with a decay is what a drafter's training accuracy gives, not what the
  // deployment accepts: said, with what replaces it.
  const auto& kind = model.scenario().acceptance.kind;
  if (std::holds_alternative<ConstantChain>(kind) || std::holds_alternative<DepthDecayChain>(kind)) {
    os << "  acceptance is an assumption (a first-position rate and a decay profile, not measured on this "
          "deployment): a measured tau or engine log (--accept-length, --acceptance-log) replaces it\n";
  }
  return os.str();
}

// How each run was scheduled and, where a synchronous cycle follows an async plain step, the host
// time the cycle pays that the plain step hid (docs/model.md#async-scheduling). Empty when the runs
// share a regime the scenario does not state.
std::string async_text(const Scenario& s, const Calibration& cal) {
  const AsyncScheduling a = async_scheduling_of(s);
  if (!a.shown()) return "";
  std::ostringstream os;
  os << "    async scheduling: plain run " << (a.plain.on ? "on" : "off") << " (" << a.plain.origin
     << "), speculative run " << (a.speculative.on ? "on" : "off") << " (" << a.speculative.origin << ")\n";
  if (a.cycle_pays_hidden_host()) {
    os << "    host per synchronous step " << format_duration(cal.sync_step_host_s.value) << "  ("
       << cal.sync_step_host_s.origin << ")\n";
  }
  return os.str();
}

nlohmann::json async_json(const Scenario& s, const Calibration& cal) {
  const AsyncScheduling a = async_scheduling_of(s);
  const auto run = [](const AsyncScheduling::Run& r) { return nlohmann::json{{"value", r.on}, {"origin", r.origin}}; };
  nlohmann::json j = {{"plain", run(a.plain)}, {"speculative", run(a.speculative)}};
  if (a.cycle_pays_hidden_host()) {
    j["sync_step_host_s"] = value_json(cal.sync_step_host_s);
    j["unhidden_host_per_cycle_s"] = cal.unhidden_host_s;
  }
  return j;
}

// Each calibrated value with its origin, the calibration's warnings, and the measured rate beside
// the prediction when it is a yardstick for it.
std::string calibration_text(const CycleModel& model, const Prediction& p) {
  const Scenario& s = model.scenario();
  const Calibration& cal = model.calibration();
  std::ostringstream os;
  os << "\n  calibration\n";
  os << "    bandwidth efficiency " << fixed(100.0 * cal.bandwidth_efficiency.value, 1) << "%  ("
     << cal.bandwidth_efficiency.origin << ")\n";
  // A value that cannot move this prediction is left out unless someone set or calibrated it: the
  // routing skew without experts, the eager all-reduce overhead without an eager collective.
  if (s.model.moe || s.draft.moe || !cal.routing_skew.is_prior()) {
    os << "    routing skew " << fixed(cal.routing_skew.value, 3) << "  (" << cal.routing_skew.origin << ")\n";
  }
  if ((s.model.moe || s.draft.moe) && cal.expert_bandwidth_efficiency.origin != kExpertsFollowDense) {
    os << "    expert bandwidth efficiency " << fixed(100.0 * cal.expert_bandwidth_efficiency.value, 1) << "%  ("
       << cal.expert_bandwidth_efficiency.origin << ")\n";
  }
  if ((runs_collectives(s) && launches_eagerly(s)) || !cal.eager_overhead_per_op_s.is_prior()) {
    os << "    eager all-reduce overhead " << format_duration(cal.eager_overhead_per_op_s.value) << " per op  ("
       << cal.eager_overhead_per_op_s.origin << ")\n";
  }
  os << "    host per plain step " << format_duration(cal.host_decode_s.value) << "  (" << cal.host_decode_s.origin
     << ")\n";
  os << "    engine overhead per cycle " << format_duration(cal.spec_extra_per_cycle_s.value) << "  ("
     << cal.spec_extra_per_cycle_s.origin << ")\n";
  if (s.speculation.runs_draft_forwards() || !cal.draft_step_overhead_s.is_prior()) {
    os << "    engine overhead per draft forward " << format_duration(cal.draft_step_overhead_s.value) << "  ("
       << cal.draft_step_overhead_s.origin << ")\n";
  }
  if (s.batch > 1) {
    os << "    engine overhead per request beyond the first " << format_duration(cal.spec_per_request_s.value) << "  ("
       << cal.spec_per_request_s.origin << ")\n";
  }
  if (launches_eagerly(s)) {
    os << "    eager launch per kernel " << format_duration(cal.eager_launch_per_kernel_s.value) << "  ("
       << cal.eager_launch_per_kernel_s.origin << ")\n";
    os << "    eager overlap exponent " << overlap_exponent_text(cal.eager_overlap_exponent.value) << "  ("
       << cal.eager_overlap_exponent.origin << ")\n";
  }
  if (runs_piecewise(s)) {
    os << "    piecewise GPU wait per attention part " << format_duration(cal.piecewise_gpu_per_attention_s.value)
       << "  (" << cal.piecewise_gpu_per_attention_s.origin << ")\n";
  }
  os << async_text(s, cal);
  if (!s.speculation.runs_draft_forwards()) {
    const CalibratedValue lookup = ngram_lookup(s);
    os << "    n-gram lookup per context token " << format_duration(lookup.value) << "  (" << lookup.origin << ")\n";
  }
  if (runs_collectives(s)) {
    os << "    all-reduce: " << cal.comm_source << (cal.comm_calibrated ? "" : "  [UNCALIBRATED]") << "\n";
  }
  if (!cal.all_to_all_source.empty()) {
    os << "    all-to-all: " << cal.all_to_all_source << (cal.all_to_all_calibrated ? "" : "  [UNCALIBRATED]") << "\n";
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

std::string monte_carlo_text(const MonteCarloRun& run) {
  const MonteCarloResult& mc = run.result;
  const double batch = run.batch;
  return "\n  Monte Carlo (seed " + std::to_string(run.options.seed) + ", " + std::to_string(mc.num_cycles) +
         " cycles): tokens per cycle " + fixed(mc.mean_tokens_per_cycle, 3) + " [" +
         fixed(100.0 * run.options.confidence, 0) + "% " + fixed(mc.mean_tokens_per_cycle_interval.low, 3) + ", " +
         fixed(mc.mean_tokens_per_cycle_interval.high, 3) + "], closed form " +
         fixed(mc.closed_form_tokens_per_cycle, 3) + "\n  tokens/s per request p10 / p50 / p90: " +
         fixed(batch * mc.request_tokens_per_s.p10, 1) + " / " + fixed(batch * mc.request_tokens_per_s.p50, 1) +
         " / " + fixed(batch * mc.request_tokens_per_s.p90, 1) + " (batch total, mean " +
         fixed(batch * mc.tokens_per_s, 1) + ")\n";
}

// The interval's key says 99: its level is MonteCarloOptions::confidence's default, which predict
// does not change.
nlohmann::json monte_carlo_json(const MonteCarloRun& run) {
  const MonteCarloResult& mc = run.result;
  const double batch = run.batch;
  return {{"seed", run.options.seed},
          {"requests", run.options.num_requests},
          {"cycles", mc.num_cycles},
          {"request_spread", run.options.request_accept_stddev},
          {"mean_tokens_per_cycle", mc.mean_tokens_per_cycle},
          {"mean_tokens_per_cycle_ci99", {mc.mean_tokens_per_cycle_interval.low, mc.mean_tokens_per_cycle_interval.high}},
          {"closed_form_tokens_per_cycle", mc.closed_form_tokens_per_cycle},
          {"tokens_per_s", {{"mean", batch * mc.tokens_per_s},
                            {"p10", batch * mc.request_tokens_per_s.p10},
                            {"p50", batch * mc.request_tokens_per_s.p50},
                            {"p90", batch * mc.request_tokens_per_s.p90}}}};
}

const std::vector<CsvColumn>& monte_carlo_columns() {
  static const std::vector<CsvColumn> columns = {
      "seed", "requests", "cycles", "request_spread", "mean_tokens_per_cycle", "mean_tokens_per_cycle_ci99.low",
      "mean_tokens_per_cycle_ci99.high", "closed_form_tokens_per_cycle", "tokens_per_s.mean", "tokens_per_s.p10",
      "tokens_per_s.p50", "tokens_per_s.p90"};
  return columns;
}

// The band's model error: each tail's sigma and where it came from; null where the band has none.
nlohmann::json model_error_json(const std::optional<ModelError>& e) {
  if (!e) return nullptr;
  nlohmann::json j = {{"sigma", e->sigma},     {"sigma_below", e->sigma_below}, {"sigma_above", e->sigma_above},
                      {"rows", e->rows},       {"sources", e->sources},         {"origin", e->origin}};
  if (e->transfer_points > 0) j["transfer_sigma_per_ln_batch"] = e->transfer_sigma_per_ln_batch;
  return j;
}

// predict's band in JSON: its percentiles, the priors drawn, the model error and what widened it.
nlohmann::json band_json(const PredictionBand& band) {
  nlohmann::json b = {{"p10_tokens_per_s", band.p10_tokens_per_s},
                       {"p50_tokens_per_s", band.p50_tokens_per_s},
                       {"p90_tokens_per_s", band.p90_tokens_per_s},
                       {"samples", band.samples},
                       {"priors", band.terms},
                       {"priors_p10_tokens_per_s", band.priors_p10_tokens_per_s},
                       {"priors_p90_tokens_per_s", band.priors_p90_tokens_per_s},
                       {"model_error", model_error_json(band.model_error)}};
  if (band.transfer_sigma > 0.0) {
    b["batch_transfer"] = {{"from_batch", band.transfer_from_batch}, {"sigma", band.transfer_sigma}};
  }
  if (band.averaged_rate_tokens_per_cycle) {
    b["acceptance_second_reading"] = {{"reading", "accepted / drafted (vLLM's Avg Draft acceptance rate)"},
                                      {"tokens_per_cycle", *band.averaged_rate_tokens_per_cycle},
                                      {"weight", kAveragedRateReadingWeight}};
  }
  return b;
}

// What was predicted, after every --set: the scenario's name, how the ranks are laid out (the
// dimensions a what-if may change, docs/schema.md parallel.*), the batch, the context and the
// draft's shape.
nlohmann::json predicted_setting_json(const Scenario& s) {
  nlohmann::json j;
  j["scenario"] = s.name;
  j["parallel"] = {{"tp", s.parallel.tp},
                   {"pp", s.parallel.pp},
                   {"draft_ranks", s.parallel.draft_ranks()},
                   {"ep", s.parallel.ep},
                   {"moe_a2a", to_string(s.parallel.moe_a2a)},
                   {"attention_dp", s.parallel.attention_dp},
                   {"attention_tp", s.parallel.attention_tp()}};
  j["workload"] = {{"batch", s.batch}, {"context_tokens", s.context_tokens}};
  j["speculation"] = {{"method", s.speculation.method},
                      {"num_steps", s.speculation.shape.num_steps},
                      {"eagle_topk", s.speculation.shape.eagle_topk},
                      {"num_draft_tokens", s.speculation.shape.num_draft_tokens}};
  return j;
}

nlohmann::json prediction_json(const CycleModel& model, const Prediction& p) {
  const Scenario& s = model.scenario();
  const Calibration& cal = model.calibration();
  nlohmann::json drafts = nlohmann::json::array();
  for (const auto& d : p.drafts) drafts.push_back(forward_json(d));
  nlohmann::json j = predicted_setting_json(s);
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
                      {"parallel_drafting", s.speculation.parallel_drafting},
                      {"drafts", drafts}};
  const PredictionBand band = prediction_band(model, p);
  j["speculative"]["band"] = band_json(band);
  j["speculative"]["call"] = to_string(speculation_call(band, p.spec_tokens_per_s, p.baseline_tokens_per_s));
  j["speedup"] = p.speedup;
  if (const std::string above = speedup_above_tau(model.scenario(), p); !above.empty()) j["speedup_above_tau"] = above;
  j["breakeven_tokens_per_cycle"] = p.breakeven_tokens_per_cycle;
  j["dominant"] = {{"part", p.dominant}, {"share", p.dominant_share}};
  j["calibration"] = {{"bandwidth_efficiency", value_json(cal.bandwidth_efficiency)},
                      {"routing_skew", value_json(cal.routing_skew)},
                      {"expert_bandwidth_efficiency", expert_efficiency_json(cal)},
                      {"eager_overhead_per_op_s", value_json(cal.eager_overhead_per_op_s)},
                      {"host_decode_s", value_json(cal.host_decode_s)},
                      {"spec_extra_per_cycle_s", value_json(cal.spec_extra_per_cycle_s)},
                      {"draft_step_overhead_s", value_json(cal.draft_step_overhead_s)},
                      {"spec_per_request_s", value_json(cal.spec_per_request_s)},
                      {"comm_calibrated", cal.comm_calibrated},
                      {"comm_source", cal.comm_source},
                      {"warnings", cal.warnings}};
  if (!s.speculation.runs_draft_forwards()) j["calibration"]["ngram_lookup_per_token_s"] = value_json(ngram_lookup(s));
  if (!cal.all_to_all_source.empty()) {
    j["calibration"]["all_to_all_calibrated"] = cal.all_to_all_calibrated;
    j["calibration"]["all_to_all_source"] = cal.all_to_all_source;
  }
  if (launches_eagerly(s)) {
    j["calibration"]["eager_launch_per_kernel_s"] = value_json(cal.eager_launch_per_kernel_s);
    // JSON has no infinity: perfect overlap is null, max(gpu, host).
    const CalibratedValue& overlap = cal.eager_overlap_exponent;
    j["calibration"]["eager_overlap_exponent"] = {
        {"value", std::isinf(overlap.value) ? nlohmann::json() : nlohmann::json(overlap.value)},
        {"origin", overlap.origin}};
  }
  if (runs_piecewise(s)) {
    j["calibration"]["piecewise_gpu_per_attention_s"] = value_json(cal.piecewise_gpu_per_attention_s);
  }
  if (async_scheduling_of(s).shown()) j["calibration"]["async_scheduling"] = async_json(s, cal);
  j["memory"] = memory_json(memory_fit(s));
  return j;
}

// The main figures, one row; with a Monte Carlo, its columns under `monte_carlo.`.
std::vector<CsvColumn> prediction_columns(bool with_monte_carlo) {
  std::vector<CsvColumn> columns = {
      "scenario", "baseline.tokens_per_s", "baseline.step_s", "baseline.forward_s", "baseline.compute_s",
      "baseline.comm_s", "baseline.allreduce_count", "baseline.host_s", "speculative.tokens_per_s",
      "speculative.cycle_s", "speculative.tokens_per_cycle", "speculative.draft_s", "speculative.verify_s",
      "speculative.verify_compute_s", "speculative.verify_comm_s", "speculative.verify_allreduce_count",
      "speculative.verify_allreduce_each_s", "speculative.host_s", "speculative.band.p10_tokens_per_s",
      "speculative.band.p50_tokens_per_s", "speculative.band.p90_tokens_per_s", "speculative.call", "speedup",
      "breakeven_tokens_per_cycle", "dominant.part", "dominant.share", "calibration.comm_calibrated",
      "memory.capacity_bytes", "memory.used_bytes", "memory.fits", "warnings"};
  if (with_monte_carlo) {
    for (const auto& c : monte_carlo_columns()) {
      std::vector<std::string> keys = {"monte_carlo"};
      keys.insert(keys.end(), c.keys.begin(), c.keys.end());
      columns.emplace_back("monte_carlo." + c.header, keys);
    }
  }
  return columns;
}

// The levels' table; infeasible levels keep their row, with the reason.
std::string concurrency_text(const std::string& scenario, const ConcurrencyPrediction& cp) {
  std::string levels;
  for (const auto& l : cp.levels) levels += (levels.empty() ? "" : ", ") + std::to_string(l.concurrency);
  std::string out = "specsim predict: " + scenario + " at concurrency " + levels + "\n";
  out += "  " + calibration_note(cp.calibrated_batch) + "\n";
  for (const auto& l : cp.levels) {
    if (!l.feasible()) continue;
    out += "  acceptance per request, the same at every level: " + fixed(l.tokens_per_cycle, 3) + " tokens per cycle\n";
    break;
  }
  out += "  concurrency  plain tok/s/req  spec tok/s/req  plain tok/s  spec tok/s  spec p10-p90     speedup  call   memory per GPU\n";
  char buf[320];
  bool banded = false;
  for (const auto& l : cp.levels) {
    if (!l.feasible()) {
      std::snprintf(buf, sizeof buf, "  %11d  INFEASIBLE: ", l.concurrency);
      out += buf + l.infeasible + "\n";
      continue;
    }
    char band[64] = "-";
    std::string call = "-";
    if (l.has_band()) {
      std::snprintf(band, sizeof band, "%.0f-%.0f", l.spec_p10_aggregate_tokens_per_s, l.spec_p90_aggregate_tokens_per_s);
      banded = true;
      call = l.call() == SpeculationCall::kTooClose ? "close" : std::string(to_string(l.call()));
    }
    std::snprintf(buf, sizeof buf, "  %11d  %15.1f  %14.1f  %11.1f  %10.1f  %-15s %6.3fx  %-5s  %s of %s\n",
                  l.concurrency, l.plain_per_request_tokens_per_s(), l.spec_per_request_tokens_per_s(),
                  l.plain_aggregate_tokens_per_s, l.spec_aggregate_tokens_per_s, band, l.speedup, call.c_str(),
                  gigabytes(l.memory.used_bytes()).c_str(), gigabytes(l.memory.capacity_bytes).c_str());
    out += buf;
  }
  if (banded) {
    out += "  spec p10-p90: predict's band at each level (the priors' spread and specsim's error on public "
           "deployments it was not fitted to), over the batch;\n"
           "  call: pays or loses where the whole band is above or below plain decoding, else close (too close to call)\n";
    const bool transfer = std::any_of(cp.levels.begin(), cp.levels.end(),
                                      [](const ConcurrencyLevel& l) { return l.spec_band_transfer_sigma > 0.0; });
    if (transfer) {
      out += "    at a level away from batch " + std::to_string(cp.calibrated_batch) +
             ", each tail also draws specsim's error on carrying a calibration to another batch\n"
             "    (models/model-error.yaml batch_transfer: per unit ln of the batch ratio, from the fit set's "
             "transfers)\n";
    }
  }
  out += "  " + payoff_summary(cp) + "\n";
  return out;
}

nlohmann::json concurrency_json(const std::string& scenario, const ConcurrencyPrediction& cp) {
  nlohmann::json levels = nlohmann::json::array();
  for (const auto& l : cp.levels) {
    nlohmann::json j{{"concurrency", l.concurrency}, {"feasible", l.feasible()}, {"memory", memory_json(l.memory)}};
    if (!l.feasible()) {
      j["infeasible"] = l.infeasible;
    } else {
      j["plain"] = {{"per_request_tokens_per_s", l.plain_per_request_tokens_per_s()},
                    {"aggregate_tokens_per_s", l.plain_aggregate_tokens_per_s},
                    {"step_s", l.plain_step_s}};
      j["speculative"] = {{"per_request_tokens_per_s", l.spec_per_request_tokens_per_s()},
                          {"aggregate_tokens_per_s", l.spec_aggregate_tokens_per_s},
                          {"cycle_s", l.cycle_s},
                          {"tokens_per_cycle", l.tokens_per_cycle}};
      if (l.has_band()) {
        j["speculative"]["p10_aggregate_tokens_per_s"] = l.spec_p10_aggregate_tokens_per_s;
        j["speculative"]["p90_aggregate_tokens_per_s"] = l.spec_p90_aggregate_tokens_per_s;
        j["speculative"]["band_transfer_sigma"] = l.spec_band_transfer_sigma;
        j["speculative"]["call"] = to_string(l.call());
      }
      j["speedup"] = l.speedup;
    }
    levels.push_back(std::move(j));
  }
  return {{"scenario", scenario},
          {"calibrated_at_batch", cp.calibrated_batch},
          {"note", calibration_note(cp.calibrated_batch)},
          {"payoff", payoff_summary(cp)},
          {"concurrency", levels},
          {"stops_paying_at", cp.stops_paying_at ? nlohmann::json(*cp.stops_paying_at) : nlohmann::json()}};
}

}  // namespace

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

// The cycle model fits a per-position list to the draft length (cycle.cpp: a longer list is cut,
// a shorter one repeats its last rate); say so, rather than let measured positions vanish
// silently. A measured tau is what a cycle emits on any shape, so a tree's measured siblings go
// unused.
std::vector<std::string> acceptance_warnings(const Scenario& s) {
  std::vector<std::string> out;
  std::string w = position_mismatch_warning(listed_positions(s.acceptance.kind), s.speculation.shape.num_steps);
  if (!w.empty()) out.push_back(std::move(w));
  if (std::holds_alternative<MeasuredTau>(s.acceptance.kind) && !s.acceptance.siblings.positional.empty() &&
      !s.speculation.shape.is_chain()) {
    out.push_back("acceptance.tree_positional is not used: a measured tokens per cycle already says what the tree emits");
  }
  return out;
}

std::string render_memory(const MemoryFit& fit, Format format) {
  switch (format) {
    case Format::kText: return memory_text(fit);
    case Format::kJson: return memory_json(fit).dump(2) + "\n";
    case Format::kCsv: return csv_table({"name", "bytes", "basis"}, memory_json(fit)["parts"]);
  }
  return "";
}

std::string render_monte_carlo(const MonteCarloRun& run, Format format) {
  switch (format) {
    case Format::kText: return monte_carlo_text(run);
    case Format::kJson: return monte_carlo_json(run).dump(2) + "\n";
    case Format::kCsv: return csv_table(monte_carlo_columns(), nlohmann::json::array({monte_carlo_json(run)}));
  }
  return "";
}

std::string render_prediction(const CycleModel& model, const Prediction& p, Format format,
                              const std::vector<std::string>& warnings,
                              const std::optional<MonteCarloRun>& monte_carlo) {
  if (format == Format::kText) {
    return figures_text(model, p) + memory_text(memory_fit(model.scenario())) + calibration_text(model, p) +
           text::warning_lines(warnings) + (monte_carlo ? monte_carlo_text(*monte_carlo) : "");
  }
  nlohmann::json j = prediction_json(model, p);
  if (monte_carlo) j["monte_carlo"] = monte_carlo_json(*monte_carlo);
  if (!warnings.empty()) j["warnings"] = warnings;
  if (format == Format::kJson) return j.dump(2) + "\n";
  return csv_table(prediction_columns(monte_carlo.has_value()), nlohmann::json::array({j}));
}

std::string render_concurrency(const std::string& scenario, const ConcurrencyPrediction& p, Format format,
                               const std::vector<std::string>& input_warnings) {
  // The inputs' warnings, then the calibration's and the transfer's (ConcurrencyPrediction::warnings).
  std::vector<std::string> warnings = input_warnings;
  warnings.insert(warnings.end(), p.warnings.begin(), p.warnings.end());
  if (format == Format::kText) return concurrency_text(scenario, p) + text::warning_lines(warnings);
  nlohmann::json j = concurrency_json(scenario, p);
  if (!warnings.empty()) j["warnings"] = warnings;
  if (format == Format::kJson) return j.dump(2) + "\n";
  return csv_table({"concurrency", "feasible", "infeasible", "plain.per_request_tokens_per_s",
                    "plain.aggregate_tokens_per_s", "plain.step_s", "speculative.per_request_tokens_per_s",
                    "speculative.aggregate_tokens_per_s", "speculative.p10_aggregate_tokens_per_s",
                    "speculative.p90_aggregate_tokens_per_s", "speculative.band_transfer_sigma", "speculative.call",
                    "speculative.cycle_s", "speculative.tokens_per_cycle", "speedup", "memory.capacity_bytes", "memory.used_bytes", "memory.fits"},
                   j["concurrency"]);
}

}  // namespace specsim
