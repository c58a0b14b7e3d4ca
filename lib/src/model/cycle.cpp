#include "specsim/cycle.hpp"

#include <boost/math/tools/roots.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "specsim/acceptance.hpp"
#include "specsim/error.hpp"
#include "specsim/scenario_fields.hpp"
#include "specsim/units.hpp"

namespace specsim {

namespace {


// Single-token draft forwards of a cycle besides the extend: num_steps - 1 when the extend yields
// the first draft token (SGLang, vLLM), num_steps otherwise; none for ngram, and none for a block
// drafter, whose one forward over the accepted tokens yields all of them (docs/model.md#parallel-drafting).
int sequential_draft_steps(const Scenario& s, const DraftShape& sp) {
  if (!s.speculation.runs_draft_forwards() || s.speculation.parallel_drafting || s.speculation.drafts_block()) return 0;
  return s.engine.extend_yields_first_draft ? sp.num_steps - 1 : sp.num_steps;
}

// Tokens per request that a block drafter's forward adds to the extend: K - 1 mask slots. vLLM's
// proposer reserves K slots per request (extra_slots_per_request) and the first, next-token slot
// is the extend's own last token (llm_base_proposer.py; docs/references/specdec.md#parallel-drafting).
int block_mask_slots(const Scenario& s, const DraftShape& sp) {
  return s.speculation.parallel_drafting ? sp.num_steps - 1 : 0;
}

// Tokens of the one draft forward that ends each cycle: the extend over the tau accepted tokens per
// request (plus the mask slots of parallel drafting), or a block drafter's block, the last verified
// token and block_size - 1 mask slots per request whatever was accepted (DFlash; z-lab/dflash
// model.py runs its layers and the target's LM head over the block). Its context, the tau accepted
// tokens' tapped hidden states, passes only fc and each layer's K/V projection into the draft's
// cache: under 5% of the block's flops for the published drafters, left out
// (docs/model.md#block-drafters).
double final_draft_tokens(const Scenario& s, const DraftShape& sp, double tau) {
  if (s.speculation.drafts_block()) return sp.num_draft_tokens;
  return tau + block_mask_slots(s, sp);
}

const char* final_draft_phase(const Scenario& s) {
  return s.speculation.parallel_drafting || s.speculation.drafts_block() ? "block draft" : "draft extend";
}

// The eager verify measured on the deployment as it ran (its file, before what-ifs), if any.
const Measurements::Verify* measured_eager_verify(const Scenario& s) {
  const auto& verify = (s.as_measured ? *s.as_measured : s).measurements.verify;
  return verify && verify->mode == LaunchMode::kEager && verify->compute_s > 0 ? &*verify : nullptr;
}

// A measured eager verify's compute already holds the launches as they overlapped the GPU: its
// calibration fits the GPU side to it, so the forward is priced at perfect overlap, max(gpu,
// host), unless the scenario or its compute profile states an exponent.
Scenario with_measured_eager_overlap(Scenario s) {
  if (s.compute.eager_overlap_exponent || !measured_eager_verify(s)) return s;
  s.compute.eager_overlap_exponent = kPerfectOverlapExponent;
  if (s.as_measured && !s.as_measured->compute.eager_overlap_exponent) {
    auto measured = std::make_shared<Scenario>(*s.as_measured);
    measured->compute.eager_overlap_exponent = kPerfectOverlapExponent;
    s.as_measured = std::move(measured);
  }
  return s;
}

// Where the eager launch cost and overlap exponent of `s` come from: set by the file or a patch,
// fitted in its compute profile, perfect overlap from a measured eager verify, or the prior.
void eager_origins(const Scenario& s, Calibration& cal) {
  const auto prior = [](const std::string& value, const std::string& p10, const std::string& p90) {
    return "prior: " + value + ", p10-p90 " + p10 + " to " + p90 +
           " (plain PyTorch on one H200, calibration/profiles/h200-torch-compute.yaml; "
           "docs/references/specdec.md#eager-launch)";
  };
  const auto profile = "profile: " + s.compute.profile + " (fitted, calibration/profiles/" + s.compute.profile + ".yaml)";
  const ComputeSettings& c = s.compute;
  const auto& launch = kPriorEagerLaunchPerKernelS;
  // The priors' texts are constants: formatted once, not per what-if point.
  static const std::string launch_prior =
      prior(units::format_duration(launch.value), units::format_duration(launch.p10), units::format_duration(launch.p90));
  cal.eager_launch_per_kernel_s = {c.eager_launch_per_kernel_or_prior_s(),
                                   s.explicit_keys.count("compute.eager_launch_per_kernel") ? "set"
                                   : c.eager_launch_per_kernel_s                          ? profile
                                                                                          : launch_prior};
  const auto& exponent = kPriorEagerOverlapExponent;
  std::string origin;
  if (s.explicit_keys.count("compute.eager_overlap_exponent")) {
    origin = "set";
  } else if (const auto* verify = measured_eager_verify(s); verify && std::isinf(c.eager_overlap_exponent_or_prior())) {
    origin = "calibrated: the measured eager verify compute " + units::format_duration(verify->compute_s) +
             " holds its launches, so max(gpu, host)";
  } else if (c.eager_overlap_exponent) {
    origin = profile;
  } else {
    static const std::string exponent_prior = prior(units::format_fixed(exponent.value, 2),
                                                    units::format_fixed(exponent.p10, 1), units::format_fixed(exponent.p90, 1));
    origin = exponent_prior;
  }
  cal.eager_overlap_exponent = {c.eager_overlap_exponent_or_prior(), origin};
  const auto& wait = kPriorPiecewiseGpuPerAttentionS;
  static const std::string wait_prior = "prior: " + units::format_duration(wait.value) + ", p10-p90 " +
                                        units::format_duration(wait.p10) + " to " + units::format_duration(wait.p90) +
                                        " (one H200, calibration/compute/h200-piecewise.csv; docs/model.md#launch-modes)";
  cal.piecewise_gpu_per_attention_s = {c.piecewise_gpu_per_attention_s.value_or(wait.value),
                                       s.explicit_keys.count("compute.piecewise_gpu_per_attention") ? "set"
                                       : c.piecewise_gpu_per_attention_s                            ? profile
                                                                                                    : wait_prior};
}

// Whether any forward of `s` (the target's decode and verify, the draft's where it runs) is in a
// mode `in_mode` accepts.
template <class Pred>
bool any_forward_in(const Scenario& s, Pred in_mode) {
  return in_mode(s.engine.decode_mode) || in_mode(s.engine.verify_mode) ||
         (s.speculation.runs_draft_forwards() && in_mode(s.engine.draft_mode));
}

}  // namespace

std::vector<std::pair<std::string, bool ModelRules::*>> model_rule_names() {
  return {{"prefill-per-output-token", &ModelRules::prefill_per_output_token},
          {"end-to-end-residual-per-request", &ModelRules::end_to_end_residual_per_request},
          {"end-to-end-band-readings", &ModelRules::end_to_end_band_readings},
          {"efficiency-to-short-step", &ModelRules::efficiency_to_short_step},
          {"efficiency-to-long-step", &ModelRules::efficiency_to_long_step},
          {"host-prior-without-step", &ModelRules::host_prior_without_step},
          {"engine-prior-scoped-to-method", &ModelRules::engine_prior_scoped_to_method},
          {"spec-per-request", &ModelRules::spec_per_request},
          {"model-error-per-source", &ModelRules::model_error_per_source},
          {"model-error-small-sample", &ModelRules::model_error_small_sample},
          {"expert-kernel-prior", &ModelRules::expert_kernel_prior},
          {"routing-skew-spread", &ModelRules::routing_skew_spread},
          {"prefill-scales-with-batch", &ModelRules::prefill_scales_with_batch},
          {"batch-transfer-error", &ModelRules::batch_transfer_error}};
}

namespace {

// Whether the engine's file names this GPU's compute-capability major and the target's expert dtype.
bool expert_kernel_applies(const Scenario& s) {
  const auto& kernel = s.engine.behaviour.expert_kernel;
  if (!s.rules.expert_kernel_prior || !kernel || !s.model.moe) return false;
  const auto& majors = kernel->compute_capability_majors;
  const auto& dtypes = kernel->experts;
  return std::find(majors.begin(), majors.end(), s.gpu.compute_capability / 10) != majors.end() &&
         std::find(dtypes.begin(), dtypes.end(), s.model.weights.experts) != dtypes.end();
}

void apply_expert_kernel_prior(Scenario& s) {
  ComputeSettings& c = s.compute;
  if (c.expert_efficiency_from_engine && !expert_kernel_applies(s)) {
    c.expert_bandwidth_efficiency.reset();
    c.expert_efficiency_from_engine = false;
  }
  if (!c.expert_bandwidth_efficiency && expert_kernel_applies(s)) {
    c.expert_bandwidth_efficiency = kPriorExpertBandwidthEfficiency.value;
    c.expert_efficiency_from_engine = true;
  }
}

}  // namespace

Scenario with_expert_kernel_prior(Scenario s) {
  apply_expert_kernel_prior(s);
  if (s.as_measured) {
    Scenario measured = *s.as_measured;
    measured.rules = s.rules;
    apply_expert_kernel_prior(measured);
    if (measured.compute.expert_bandwidth_efficiency != s.as_measured->compute.expert_bandwidth_efficiency) {
      s.as_measured = std::make_shared<Scenario>(std::move(measured));
    }
  }
  return s;
}

bool launches_eagerly(const Scenario& s) {
  return any_forward_in(s, [](LaunchMode m) { return m != LaunchMode::kGraph; });
}

bool runs_piecewise(const Scenario& s) {
  return any_forward_in(s, [](LaunchMode m) { return m == LaunchMode::kPiecewise; });
}

bool runs_collectives(const Scenario& s) { return s.parallel.tp > 1 || s.parallel.draft_ranks() > 1; }

namespace {

// One run's regime: the scenario's setting, else the engine's default.
AsyncScheduling::Run async_run(const std::optional<bool>& set, bool by_default, std::string why) {
  if (set) return {*set, "set"};
  return {by_default, "engine default: " + std::move(why)};
}

}  // namespace

// vLLM decides per run (vllm/config/vllm.py, docs/references/engine-overheads-research.md section 8):
// the plain run is async by default since v0.14.0, a speculative run only for the methods its
// engine file lists; an explicit --async-scheduling / --no-async-scheduling wins.
AsyncScheduling async_scheduling_of(const Scenario& s) {
  const auto& async_default = s.engine.behaviour.async_scheduling;
  const std::string file = "models/engines/" + s.engine.name + ".yaml";
  AsyncScheduling a;
  a.stated = s.engine.async_plain || s.engine.async_speculative;
  if (!async_default) {
    const std::string why = "synchronous (" + file + " gives no async_scheduling)";
    a.plain = async_run(s.engine.async_plain, false, why);
    a.speculative = async_run(s.engine.async_speculative, false, why);
    return a;
  }
  const auto& d = *async_default;
  const auto& m = d.methods;
  const bool listed = std::find(m.begin(), m.end(), s.speculation.method) != m.end();
  std::string methods;
  for (const auto& name : m) methods += (methods.empty() ? "" : ", ") + name;
  a.plain = async_run(s.engine.async_plain, d.plain,
                      std::string(d.plain ? "async" : "synchronous") + " (" + file + ")");
  a.speculative = async_run(s.engine.async_speculative, listed,
                            s.speculation.method + (listed ? " is" : " is not") + " among " + s.engine.name +
                                "'s async methods (" + methods + "; " + file + ")");
  return a;
}

namespace {

// The per-request term as the cycle pays it: a value set always, else the engine's prior where the
// speculative run is synchronous (an async run does this host work while the GPU runs the forwards;
// docs/references/batch-speculation.md#per-request-prior) and the rule is on.
CalibratedValue spec_per_request_of(const Scenario& s, std::string origin) {
  if (s.explicit_keys.count("host.spec_per_request")) return {s.host.spec_per_request_s, std::move(origin)};
  if (!s.rules.spec_per_request) return {0.0, "0 (rule spec-per-request off)"};
  const AsyncScheduling::Run run = async_scheduling_of(s).speculative;
  if (run.on) return {0.0, "0: hidden, the speculative run is async (" + run.origin + "); the " + origin};
  return {s.host.spec_per_request_s, std::move(origin)};
}

}  // namespace

CycleModel::CycleModel(Scenario scenario) : CycleModel(std::move(scenario), nullptr, true) {}

CycleModel::CycleModel(Scenario scenario, const Calibration& measured)
    : CycleModel(std::move(scenario), &measured, true) {}

Calibration calibrate(const Scenario& scenario, const Calibration* without_overrides) {
  CycleModel m(scenario, nullptr, false, without_overrides);
  return std::move(m.calibration_);
}

CycleModel::CycleModel(Scenario scenario, const Calibration* measured, bool finish,
                       const Calibration* without_overrides)
    : scenario_(with_expert_kernel_prior(with_measured_eager_overlap(std::move(scenario)))),
      target_(scenario_.model, scenario_.gpu, scenario_.parallel.tp, scenario_.batch, scenario_.context_tokens,
              scenario_.compute, kPriorBandwidthEfficiency.value, 1.0),
      draft_(scenario_.draft, scenario_.gpu, scenario_.parallel.draft_ranks(), scenario_.batch, scenario_.context_tokens,
             scenario_.compute, kPriorBandwidthEfficiency.value, 1.0) {
  if (measured) {
    calibration_ = *measured;
  } else {
    calibrate_measured(without_overrides);
  }
  if (finish) apply_calibration();
}

// Calibrate under the conditions the measurements were taken in: the scenario as its file states
// it (no what-if patches), on the box it names as measured.
void CycleModel::calibrate_measured(const Calibration* without_overrides) {
  Scenario basis = scenario_.as_measured ? *scenario_.as_measured : scenario_;
  if (const auto& box = basis.measurements.box) {
    basis.topology = box->topology;
    basis.gpu = box->gpu;
    basis.comm_profile = box->comm_profile;
    basis.custom_profile.reset();
    const auto overhead = basis.comm.eager_overhead_per_op_s;
    basis.comm = CommSettings{};
    basis.comm.eager_overhead_per_op_s = overhead;
  }
  if (basis.measurements.model) basis.model = *basis.measurements.model;
  // The rules are the prediction's (validate --ablate flips them there), wherever the basis came from.
  basis.rules = scenario_.rules;
  basis = with_expert_kernel_prior(std::move(basis));
  calibrate_with_overrides(basis, without_overrides);
  active_ = &scenario_;
  if (basis.model.name != scenario_.model.name) {
    // Measured on another target (`--set model=...`, or measurements.model): what the engine and the
    // box explain carries over; the routing skew describes that model's router and does not.
    std::vector<std::string> names;
    for (const auto& [what, value] : {std::pair{"bandwidth efficiency", &calibration_.bandwidth_efficiency},
                                      std::pair{"eager all-reduce overhead", &calibration_.eager_overhead_per_op_s},
                                      std::pair{"host time per plain step", &calibration_.host_decode_s}}) {
      if (value->origin.rfind("calibrated", 0) == 0) names.emplace_back(what);
    }
    std::string carried;
    for (std::size_t i = 0; i < names.size(); ++i) {
      carried += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    }
    std::string dropped;
    if (calibration_.routing_skew.origin.rfind("calibrated", 0) == 0) {
      calibration_.routing_skew = {kPriorRoutingSkew.value, "prior: 1 (uniform routing; the skew calibrated on " +
                                                                basis.model.name + " describes that model's routing, not " +
                                                                scenario_.model.name + "'s)"};
      dropped = "; its routing skew is dropped (prior 1)";
    }
    if (!carried.empty() || !dropped.empty()) {
      calibration_.warnings.push_back("the measurements were taken on " + basis.model.name + ", not " +
                                      scenario_.model.name + ": calibrated there" +
                                      (carried.empty() ? "" : "; its " + carried + " carried to " + scenario_.model.name) +
                                      dropped);
    }
  }
  if (basis.topology.name != scenario_.topology.name || basis.gpu.name != scenario_.gpu.name) {
    calibration_.warnings.push_back("calibrated on the measured box " + basis.topology.name + " (" + basis.gpu.name +
                                    "); its engine efficiency, eager overhead and host time are carried to " +
                                    scenario_.topology.name + " (" + scenario_.gpu.name + ")");
  }
}

// The models of the box predicted, with the calibrated values, and what the scenario itself says
// about them (its notes, where its all-reduces leave the measured table). Whether it fits in memory
// is memory_fit()'s question, asked by predict, rank and sweep.
void CycleModel::apply_calibration() {
  active_ = &scenario_;
  for (const auto& note : scenario_.notes) calibration_.warnings.push_back(note);
  const Scenario& s = scenario_;
  {
    const auto origin = [&](const char* key, const EnginePrior::Term* term) -> std::string {
      if (s.explicit_keys.count(key)) return "set";
      if (!term && !s.engine_prior_skipped.empty()) return "prior: 0 (" + s.engine_prior_skipped + ")";
      if (!term) return "prior: 0 (no models/engines file for engine '" + s.engine.name + "')";
      return term->origin;  // "prior: engine NAME, p10-p90 ... (models/engines/NAME.yaml)", written at load
    };
    const auto* prior = s.engine_prior ? &*s.engine_prior : nullptr;
    calibration_.spec_extra_per_cycle_s = {s.host.spec_extra_per_cycle_s,
                                           origin("host.spec_extra_per_cycle", prior ? &prior->cycle_overhead : nullptr)};
    calibration_.draft_step_overhead_s = {s.host.draft_step_overhead_s,
                                          origin("host.draft_step_overhead", prior ? &prior->draft_step_overhead : nullptr)};
    calibration_.spec_per_request_s = spec_per_request_of(s, origin("host.spec_per_request",
                                                                    prior && prior->spec_per_request ? &*prior->spec_per_request : nullptr));
  }
  eager_origins(s, calibration_);
  scale_prefill_to_batch(s);
  comm_ = CommModel::build(s, calibration_.eager_overhead_per_op_s.value, 2.0 * s.compute.kernel_floor_s);
  calibration_.comm_calibrated = comm_.calibrated();
  calibration_.comm_source = comm_.source();
  target_ = ComputeModel(s.model, s.gpu, s.parallel.tp, s.batch, s.context_tokens, s.compute,
                         calibration_.bandwidth_efficiency.value, calibration_.routing_skew.value,
                         rank_placement(s.parallel));
  draft_ = ComputeModel(s.draft, s.gpu, s.parallel.draft_ranks(), s.batch, s.context_tokens, s.compute,
                        calibration_.bandwidth_efficiency.value, calibration_.routing_skew.value);
  price_sync_host();
  calibrate_engine_cycle();
  // Say where the all-reduces of this deployment fall below the measured table.
  if (const double min = comm_.measured_min_bytes();
      min > 0 && count_of(collectives(s.model, ForwardOf::kTarget, s.batch), CollectiveOp::kAllReduce) > 0) {
    const double decode_bytes = activation_message_bytes(s.model, s.batch);
    if (decode_bytes < min) {
      calibration_.warnings.push_back("the decode all-reduce (" + units::format_bytes(decode_bytes) +
                                      ") is below the table's smallest measured message (" + units::format_bytes(min) +
                                      "): priced by NCCL's prior joined to the table's first point (extrapolated)");
    }
  }
  note_all_to_all(s);
}

void CycleModel::note_all_to_all(const Scenario& s) {
  const double decode_tokens = s.batch;
  const double verify_tokens = s.batch * s.speculation.shape.num_draft_tokens;
  if (count_of(collectives(s.model, ForwardOf::kTarget, decode_tokens), CollectiveOp::kAllToAll) == 0) return;
  calibration_.all_to_all_calibrated = comm_.all_to_all_calibrated();
  calibration_.all_to_all_source = comm_.all_to_all_source();
  if (!comm_.all_to_all_calibrated()) return;
  const auto [lo, hi] = comm_.all_to_all_measured_bytes();
  // The dispatch is the smaller message of a forward (FP8), the combine the larger (BF16): both ends
  // of the decode and the verify are checked against the table, one warning per message outside it.
  std::vector<std::pair<Collective, std::string>> outside;  // the message, and the forwards that send it
  for (const auto& [what, tokens] : {std::pair{"decode", decode_tokens}, std::pair{"verify", verify_tokens}}) {
    for (const auto& c : collectives(s.model, ForwardOf::kTarget, tokens)) {
      if (c.op != CollectiveOp::kAllToAll || (c.bytes >= lo && c.bytes <= hi)) continue;
      const auto same = std::find_if(outside.begin(), outside.end(), [&](const auto& o) {
        return o.first.bytes == c.bytes && std::string_view(o.first.carries) == c.carries;
      });
      if (same == outside.end()) outside.push_back({c, what});
      else same->second += std::string(" and the ") + what;
    }
  }
  for (const auto& [c, forwards] : outside) {
    calibration_.warnings.push_back(
        "the " + forwards + "'s all-to-all (" + c.carries + ", " + units::format_bytes(c.bytes) + ") is " +
        (c.bytes < lo ? "below the all-to-all table's smallest measured message (" + units::format_bytes(lo) +
                            "): priced by the all-to-all prior joined to the table's first point (extrapolated)"
                      : "above the all-to-all table's largest measured message (" + units::format_bytes(hi) +
                            "): priced by the table's last regime continued (extrapolated)"));
  }
  const CommProfile& p = *s.all_to_all_profile;
  if (p.mode == LaunchMode::kEager && (s.engine.decode_mode != LaunchMode::kEager || s.engine.verify_mode != LaunchMode::kEager)) {
    calibration_.warnings.push_back("comm.all_to_all_profile '" + p.name +
                                    "' was measured with eager launches: graph-mode forwards pay its launch and skew too (an upper bound)");
  }
  if (p.implementation != to_string(s.parallel.moe_a2a)) {
    calibration_.warnings.push_back("comm.all_to_all_profile '" + p.name + "' times " + p.implementation +
                                    "'s all-to-all; the deployment runs " + to_string(s.parallel.moe_a2a) +
                                    "'s kernels, priced by that table as a stand-in");
  }
}

// Calibrates on `basis` (the scenario as measured). A calibrated key that a `--set` patch gives
// wins over calibration, the what-if being the point: calibration runs once without it first, so the
// report can show the calibrated value beside the set one.
void CycleModel::calibrate_with_overrides(Scenario& basis, const Calibration* without_overrides) {
  const auto patched = [&](const char* key) { return scenario_.patched_keys.count(key) > 0; };
  const bool overrides = std::any_of(scenario_.patched_keys.begin(), scenario_.patched_keys.end(), is_calibrated_key);
  // A patch under measurements.* corrects what was measured, not the deployment: the basis takes it.
  const bool measurement_patched = std::any_of(scenario_.patched_keys.begin(), scenario_.patched_keys.end(),
                                               [](const std::string& k) { return k.rfind("measurements.", 0) == 0; });
  if (measurement_patched) {
    const auto box = basis.measurements.box;
    const auto model = basis.measurements.model;
    basis.measurements = scenario_.measurements;
    basis.measurements.box = box;
    basis.measurements.model = model;
  }
  active_ = &basis;
  Calibration calibrated;
  if (overrides) {
    if (without_overrides) {
      calibrated = *without_overrides;
    } else {
      calibrate(basis);
      calibrated = calibration_;
    }
    calibration_ = Calibration{};
    const auto take = [&](const char* key, auto& field, const auto& value) {
      if (!patched(key)) return;
      field = value;
      basis.explicit_keys.insert(key);
    };
    take("compute.bandwidth_efficiency", basis.compute.bandwidth_efficiency, scenario_.compute.bandwidth_efficiency);
    take("compute.routing_skew", basis.compute.routing_skew, scenario_.compute.routing_skew);
    take("compute.expert_bandwidth_efficiency", basis.compute.expert_bandwidth_efficiency,
         scenario_.compute.expert_bandwidth_efficiency);
    if (patched("compute.expert_bandwidth_efficiency")) basis.compute.expert_efficiency_from_engine = false;
    take("comm.eager_overhead_per_op", basis.comm.eager_overhead_per_op_s, scenario_.comm.eager_overhead_per_op_s);
    take("host.decode_per_step", basis.host.decode_per_step_s, scenario_.host.decode_per_step_s);
  }
  calibrate(basis);
  if (overrides) {
    const auto beside = [](CalibratedValue& now, const CalibratedValue& before, bool is_patched, auto format) {
      if (is_patched && now.origin == "set" && before.origin.rfind("calibrated", 0) == 0) {
        now.origin = "set, calibrated: " + format(before.value);
      }
    };
    const auto ratio = [](double v) { return units::format_fixed(v, 3); };
    const auto duration = [](double v) { return units::format_duration(v); };
    beside(calibration_.bandwidth_efficiency, calibrated.bandwidth_efficiency, patched("compute.bandwidth_efficiency"), ratio);
    beside(calibration_.routing_skew, calibrated.routing_skew, patched("compute.routing_skew"), ratio);
    beside(calibration_.eager_overhead_per_op_s, calibrated.eager_overhead_per_op_s, patched("comm.eager_overhead_per_op"), duration);
    beside(calibration_.host_decode_s, calibrated.host_decode_s, patched("host.decode_per_step"), duration);
  }
}

// Async scheduling hides the host work of a plain step behind the GPU's previous step, so the
// measured step leaves little of it beyond the forward. A speculative run the engine schedules
// synchronously pays it in full: a synchronous step's host time, the engine's plain_step_host prior,
// which is at least what the async step left exposed (docs/model.md#async-scheduling).
void CycleModel::price_sync_host() {
  calibration_.sync_step_host_s = {};
  calibration_.unhidden_host_s = 0.0;
  if (!async_scheduling_of(scenario_).cycle_pays_hidden_host()) return;
  const auto& prior = scenario_.engine_prior;
  if (!prior || !prior->plain_step_host) {
    calibration_.sync_step_host_s = {0.0, "prior: 0 (models/engines/" + scenario_.engine.name +
                                              ".yaml gives no plain_step_host for a synchronous step)"};
    return;
  }
  const EnginePrior::Term& t = *prior->plain_step_host;
  const double step = step_host_s();
  calibration_.unhidden_host_s = std::max(0.0, t.value_s - step);
  calibration_.sync_step_host_s = {
      t.value_s, "prior: engine " + prior->name + " plain_step_host, p10-p90 " + units::format_duration(t.p10_s) +
                     " to " + units::format_duration(t.p90_s) + " (models/engines/" + prior->name +
                     ".yaml); the plain step was async, the speculative run is not: the cycle pays " +
                     units::format_duration(calibration_.unhidden_host_s) + " over the plain step's " +
                     units::format_duration(step)};
}

void CycleModel::calibrate_engine_cycle() {
  const Measurements& m = scenario_.measurements;
  if (!m.speculative_tokens_per_s || m.speculative_held_out || scenario_.explicit_keys.count("host.spec_extra_per_cycle")) {
    return;
  }
  double extra = 0.0;
  const Scenario* run = &scenario_;
  if (scenario_.as_measured && !scenario_.as_measured->measurements.speculative_held_out) {
    // A what-if on a file whose run calibrates: the term comes from the run as it was measured.
    run = scenario_.as_measured.get();
    extra = CycleModel(*scenario_.as_measured).calibration().spec_extra_per_cycle_s.value;
  } else {
    // The cycle is linear in the term: extra = B * tau / measured - (T_cycle - extra_now).
    const Prediction p = predict();
    extra = scenario_.batch * p.tokens_per_cycle / *m.speculative_tokens_per_s -
            (p.cycle_s - scenario_.host.spec_extra_per_cycle_s);
  }
  if (extra < 0) {
    calibration_.warnings.push_back("the measured speculative run is faster than the modelled cycle without engine "
                                    "overhead: the calibrated per-cycle term is negative (" +
                                    units::format_duration(extra) + ")");
  }
  scenario_.host.spec_extra_per_cycle_s = extra;
  const DraftShape& shape = run->speculation.shape;
  calibration_.spec_extra_per_cycle_s = {
      extra, "calibrated from the speculative run: the measured " + units::format_fixed(*m.speculative_tokens_per_s, 1) +
                 " tok/s at " + std::to_string(shape.num_steps) + " steps, top-k " + std::to_string(shape.eagle_topk) +
                 ", batch " + std::to_string(run->batch) + ", minus the modelled cycle without it"};
}

std::vector<Collective> CycleModel::collectives(const TransformerSpec& model, ForwardOf of, double tokens) const {
  return forward_collectives(model, of, active().parallel, active().engine.embedding_allreduce, tokens,
                             active().topology.link, active().batch,
                             active().topology.nodes > 1 ? active().topology.gpus_per_node : 0);
}

void CycleModel::calibrate(const Scenario& s) {
  calibrate_comm(s);
  calibrate_compute(s);
  calibrate_host(s);
}

// 1. Eager per-collective overhead: measured all-reduce time per op minus the graph-mode table.
void CycleModel::calibrate_comm(const Scenario& s) {
  Calibration& cal = calibration_;
  const auto& verify = s.measurements.verify;
  const double act_width = s.model.hidden_size * bytes_per_param(s.model.activation_dtype);
  const CommModel graph_only = CommModel::baseline(s);
  if (s.comm.eager_overhead_per_op_s) {
    cal.eager_overhead_per_op_s = {*s.comm.eager_overhead_per_op_s, "set"};
  } else if (verify && verify->mode == LaunchMode::kEager && verify->allreduce_count > 0 && s.parallel.tp > 1) {
    const double per_op = verify->allreduce_total_s / verify->allreduce_count;
    const double bytes = s.batch * verify->tokens_per_request * act_width;
    const double table = graph_only.allreduce_s(bytes, LaunchMode::kGraph);
    double overhead = per_op - table;
    if (overhead < 0) {
      cal.warnings.push_back("the measured eager all-reduce (" + units::format_duration(per_op) +
                             ") is faster than the graph-mode table (" + units::format_duration(table) +
                             "); eager overhead set to 0");
      overhead = 0;
    }
    cal.eager_overhead_per_op_s = {overhead, "calibrated: measured " + units::format_duration(per_op) +
                                                 " per verify all-reduce minus the table's " +
                                                 units::format_duration(table) + " at " +
                                                 units::format_bytes(bytes)};
  } else {
    cal.eager_overhead_per_op_s = {0.0, "prior: none (no eager all-reduce measurement)"};
  }
  // The FP8 path adds a quantise and a dequantise kernel around each all-reduce (docs/references/nccl.md#fp8-allreduce).
  comm_ = CommModel::build(s, cal.eager_overhead_per_op_s.value, 2.0 * s.compute.kernel_floor_s);
  cal.comm_calibrated = comm_.calibrated();
  cal.comm_source = comm_.source();

}

namespace {

// Where the routed experts' streaming efficiency comes from. The origin lambda names a set or a
// compute profile's value; without either the experts follow the bandwidth efficiency.
// The expert-kernel prior in words: "64%, p10-p90 58-73%".
std::string expert_prior_text() {
  const PriorValue& prior = kPriorExpertBandwidthEfficiency;
  const auto percent = [](double v) { return units::format_fixed(100.0 * v, 0); };
  return percent(prior.value) + "%, p10-p90 " + percent(prior.p10) + "-" + percent(prior.p90) + "%";
}

template <class Origin>
CalibratedValue expert_efficiency_of(const Scenario& s, const Origin& origin) {
  const ComputeSettings& c = s.compute;
  if (!c.expert_bandwidth_efficiency) return {0.0, std::string(kExpertsFollowDense)};
  if (c.expert_efficiency_from_engine) {
    return {*c.expert_bandwidth_efficiency,
            "prior: " + expert_prior_text() + ", engine " + s.engine.name + "'s expert kernel on sm_" +
                std::to_string(s.gpu.compute_capability / 10) +
                "x (behaviour.expert_kernel, docs/references/nvfp4-moe-sm120.md#prior)"};
  }
  return {*c.expert_bandwidth_efficiency,
          origin("compute.expert_bandwidth_efficiency", !c.profile.empty(), "stated in the scenario")};
}

// Where the experts take the engine's expert-kernel prior but the deployment names another MoE
// backend than the one measured: the prior holds all the same, said so. "" otherwise.
std::string expert_backend_warning(const Scenario& s) {
  const auto& kernel = s.engine.behaviour.expert_kernel;
  const std::string& backend = s.engine.moe_backend;
  if (!s.compute.expert_efficiency_from_engine || !kernel || backend.empty()) return "";
  if (std::find(kernel->backends.begin(), kernel->backends.end(), backend) != kernel->backends.end()) return "";
  std::string measured;
  for (const std::string& b : kernel->backends) measured += (measured.empty() ? "" : ", ") + b;
  return "engine.moe_backend is '" + backend + "', not the kernel the expert-kernel prior was measured on (" + measured +
         "; docs/references/nvfp4-moe-sm120.md#prior): the experts take it all the same (" + expert_prior_text() +
         "); set compute.expert_bandwidth_efficiency where that kernel's rate is known";
}

}  // namespace

// 2. Compute: whichever of bandwidth efficiency and routing skew the scenario leaves open is solved
//    (TOMS 748) so that the modelled GPU time of the verify equals its measured compute.
void CycleModel::calibrate_compute(const Scenario& s) {
  Calibration& cal = calibration_;
  const auto& verify = s.measurements.verify;
  auto make = [&](const TransformerSpec& m, double eta, double skew) {
    return ComputeModel(m, s.gpu, s.parallel.tp, s.batch, s.context_tokens, s.compute, eta, skew,
                        rank_placement(s.parallel));
  };
  // A value the file or a patch states is "set"; a default or a compute profile's value is a prior.
  const auto origin = [&](const char* key, bool from_profile, const std::string& prior) -> std::string {
    if (s.explicit_keys.count(key)) return "set";
    return from_profile ? "prior: compute profile " + s.compute.profile : prior;
  };
  const bool profile = !s.compute.profile.empty();
  cal.bandwidth_efficiency = {s.compute.bandwidth_efficiency.value_or(kPriorBandwidthEfficiency.value),
                              origin("compute.bandwidth_efficiency", profile,
                                     "prior: 84% of datasheet bandwidth (BF16 GEMV at M <= 64, docs/references/measured-compute.md#gemm-efficiency)")};
  cal.routing_skew = {s.compute.routing_skew.value_or(kPriorRoutingSkew.value),
                      origin("compute.routing_skew", profile, "prior: 1 (uniform routing)")};
  cal.expert_bandwidth_efficiency = expert_efficiency_of(s, origin);
  if (std::string w = expert_backend_warning(s); !w.empty()) cal.warnings.push_back(std::move(w));
  const bool solve_eta = !s.compute.bandwidth_efficiency;
  const bool solve_skew = !s.compute.routing_skew;
  if ((solve_eta || solve_skew) && verify && verify->compute_s > 0) {
    const double tokens = double(s.batch) * verify->tokens_per_request;
    CalibratedValue& target = solve_eta ? cal.bandwidth_efficiency : cal.routing_skew;
    auto time_at = [&](double x) {
      return solve_eta ? make(s.model, x, cal.routing_skew.value).gpu_time_s(tokens)
                       : make(s.model, cal.bandwidth_efficiency.value, x).gpu_time_s(tokens);
    };
    auto residual = [&](double x) { return time_at(x) - verify->compute_s; };
    // An efficiency stays inside its plausible range; a skew inside [0, 1].
    const double lo = solve_eta ? kMinPlausibleBandwidthEfficiency : 0.0;
    const double hi = solve_eta ? kMaxPlausibleBandwidthEfficiency : 1.0;
    double x = hi;
    // Time falls as efficiency rises and rises with skew: find the end where the model is fastest.
    const double fastest = solve_eta ? hi : lo;
    const double slowest = solve_eta ? lo : hi;
    if (residual(fastest) > 0) {
      x = fastest;
      cal.warnings.push_back("the measured verify compute (" + units::format_duration(verify->compute_s) +
                             ") is below the model's fastest (" + units::format_duration(time_at(fastest)) +
                             "); " + (solve_eta ? "bandwidth efficiency" : "routing skew") + " pinned at its bound");
    } else if (residual(slowest) < 0) {
      x = slowest;
      cal.warnings.push_back("the measured verify compute (" + units::format_duration(verify->compute_s) +
                             ") is above the model's slowest (" + units::format_duration(time_at(slowest)) +
                             "); " + (solve_eta ? "bandwidth efficiency" : "routing skew") + " pinned at its bound");
    } else {
      boost::uintmax_t iterations = 60;
      const auto [a, b] = boost::math::tools::toms748_solve(residual, lo, hi,
                                                            boost::math::tools::eps_tolerance<double>(40), iterations);
      x = 0.5 * (a + b);
    }
    target = {x, "calibrated: the verify's measured compute " + units::format_duration(verify->compute_s) + " at " +
                     std::to_string(verify->tokens_per_request) + " tokens per request"};
  } else if (solve_eta || solve_skew) {
    cal.warnings.push_back("compute left to calibrate but the scenario has no verify measurement; priors used");
  }
  target_ = make(s.model, cal.bandwidth_efficiency.value, cal.routing_skew.value);
  draft_ = ComputeModel(s.draft, s.gpu, s.parallel.draft_ranks(), s.batch, s.context_tokens, s.compute,
                        cal.bandwidth_efficiency.value, cal.routing_skew.value);

}

// 3. Host time per plain step: what the measured step leaves after the modelled forward.
void CycleModel::calibrate_host(const Scenario& s) {
  Calibration& cal = calibration_;
  const Measurements& m = s.measurements;
  if (s.host.decode_per_step_s) {
    cal.host_decode_s = {*s.host.decode_per_step_s, "set"};
    return;
  }
  if (!m.baseline_tokens_per_s || !(*m.baseline_tokens_per_s > 0)) {
    host_without_step(s);
    return;
  }
  const double end_to_end = s.batch / *m.baseline_tokens_per_s;
  // With a measured TPOT the decode step is known apart from prefill and batch tails.
  const double step = m.baseline_tpot_s.value_or(end_to_end);
  const ForwardBreakdown f = forward(target_, s.model, ForwardOf::kTarget, s.batch, s.engine.decode_mode, "decode");
  double host = step - f.total_s();
  host = host < 0 ? fit_forward_to_step(s, step, f.total_s()) : fit_forward_to_host_prior(s, step, host);
  const double modelled = step - host;
  cal.host_decode_s = {host, "calibrated: measured step " + units::format_duration(step) + " minus the modelled forward " +
                                 units::format_duration(modelled)};
  cal.calibrated_batch = s.batch;
  cal.batch_measured = true;
  if (m.baseline_tpot_s) {
    const double per_token = end_to_end - step;
    cal.host_per_output_token_s = per_token;
    // Of what the TPOT leaves per output token, the stated prompt's prefill is the part a batch
    // scales (scale_prefill_to_batch); the rest is batch tails.
    if (s.rules.prefill_per_output_token && m.baseline_output_tokens > 0) {
      cal.prefill_per_output_token_s = std::min(per_token, prefill_s(s) / m.baseline_output_tokens);
    }
    cal.host_decode_s.value += per_token;
    cal.host_decode_s.origin = "calibrated: measured TPOT " + units::format_duration(step) +
                               " minus the modelled forward " + units::format_duration(modelled) +
                               " per step, plus the end-to-end step " + units::format_duration(end_to_end) +
                               " less the TPOT (prefill and batch tails), " + units::format_duration(per_token) +
                               " per output token (x tau per cycle)";
  } else if (m.baseline_includes_prefill) {
    charge_prefill_per_token(s, host);
  }
}

// Without a measured plain step the engine's own host time is still paid: its plain_step_host prior
// (a step's scheduling, input preparation and sampling), said so; 0 only where the engine has none.
void CycleModel::host_without_step(const Scenario& s) {
  Calibration& cal = calibration_;
  const auto& prior = s.engine_prior;
  if (!s.rules.host_prior_without_step || !prior || !prior->plain_step_host) {
    cal.host_decode_s = {0.0, "prior: 0 (no baseline measurement" +
                                  std::string(prior && prior->plain_step_host ? ")" : ", and models/engines/" + s.engine.name +
                                                                                       ".yaml gives no plain_step_host)")};
    return;
  }
  const EnginePrior::Term& t = *prior->plain_step_host;
  cal.host_decode_s = {t.value_s, "prior: engine " + prior->name + " plain_step_host, p10-p90 " +
                                      units::format_duration(t.p10_s) + " to " + units::format_duration(t.p90_s) +
                                      " (models/engines/" + prior->name + ".yaml; no baseline measurement)"};
}

// The prefill an end-to-end plain run holds: one forward over the batch's prompts (batch x the
// stated mean prompt), which the O output steps share. 0 without both lengths.
double CycleModel::prefill_s(const Scenario& s) const {
  const Measurements& m = s.measurements;
  if (!(m.baseline_prompt_tokens > 0 && m.baseline_output_tokens > 0)) return 0.0;
  return forward(target_, s.model, ForwardOf::kTarget, s.batch * m.baseline_prompt_tokens, LaunchMode::kGraph, "prefill")
      .total_s();
}

// At another batch than the measured one, the priced prefill per output token grows with the batch
// (rules.prefill_scales_with_batch): c requests carry c / O prefills per step where B carried B / O.
void CycleModel::scale_prefill_to_batch(const Scenario& s) {
  Calibration& cal = calibration_;
  const double per_token = cal.prefill_per_output_token_s;
  if (!s.rules.prefill_scales_with_batch || per_token <= 0.0 || s.batch == cal.calibrated_batch) return;
  const double extra = per_token * (double(s.batch) / cal.calibrated_batch - 1.0);
  cal.host_per_output_token_s += extra;
  cal.host_decode_s.value += extra;
  cal.host_decode_s.origin += "; at batch " + std::to_string(s.batch) + " the priced prefill, " +
                              units::format_duration(per_token) + " per output token at batch " +
                              std::to_string(cal.calibrated_batch) + ", is " +
                              units::format_duration(per_token + extra) + " (x " + std::to_string(s.batch) + " / " +
                              std::to_string(cal.calibrated_batch) + ")";
}

// An end-to-end plain rate holds, besides the steps, each request's prefill and the batch's tails
// (requests finishing apart): time paid once per request, which speculation does not shorten, so per
// output token (x tau per cycle). Its residual beyond the modelled forward is split: prefill of the
// stated prompt priced from the target's forward (one forward of B x P tokens spread over the O
// steps that emit the output: T_fwd(B x P) / O per step, docs/model.md#prefill), per-step host work
// up to the engine's plain_step_host prior p90 (a step's scheduling and sampling cannot take more),
// and what is left per request. Without the prior, all of what is left is per step.
void CycleModel::charge_prefill_per_token(const Scenario& s, double host) {
  Calibration& cal = calibration_;
  const Measurements& m = s.measurements;
  if (!s.rules.prefill_per_output_token) return;
  double prefill_share = 0.0;
  std::string how;
  if (m.baseline_prompt_tokens > 0 && m.baseline_output_tokens > 0) {
    const double prefill = prefill_s(s);
    prefill_share = std::min(host, prefill / m.baseline_output_tokens);
    cal.prefill_per_output_token_s = prefill_share;
    how = "prefill of " + units::format_fixed(m.baseline_prompt_tokens, 0) + " prompt tokens per request (" +
          units::format_duration(prefill) + " for the batch) over " + units::format_fixed(m.baseline_output_tokens, 0) +
          " output tokens, " + units::format_duration(prefill_share) + "; ";
  }
  const double rest = host - prefill_share;
  const auto& prior = s.engine_prior;
  const bool bounded = prior && prior->plain_step_host && !s.rules.end_to_end_residual_per_request;
  const double per_step = s.rules.end_to_end_residual_per_request ? 0.0
                          : bounded                               ? std::min(rest, prior->plain_step_host->p90_s)
                                                                  : rest;
  const double per_request = prefill_share + (rest - per_step);
  cal.host_per_output_token_s = per_request;
  if (s.rules.end_to_end_residual_per_request) cal.end_to_end_unsplit_s = rest;
  cal.host_decode_s.origin += "; measured end to end: " + how +
                              (s.rules.end_to_end_residual_per_request ? std::string("no TPOT to separate per-step work")
                                                                       : "per-step host work up to the engine's prior p90") +
                              ", " + units::format_duration(per_step) + " per step; per request (prefill, batch tails), " +
                              units::format_duration(per_request) + " per output token (x tau per cycle)";
  if (s.rules.end_to_end_residual_per_request && rest > 0.0) {
    cal.warnings.push_back("the plain rate is end to end with no TPOT: the " + units::format_duration(rest) +
                           " per step it leaves beyond the modelled forward" + (how.empty() ? "" : " and the priced prefill") +
                           " has two readings, per-request time (prefill, batch tails), which speculation does not "
                           "shorten, or per-step host work, which a cycle pays once for tau tokens. The point takes the "
                           "first" + (s.rules.end_to_end_band_readings ? ", the band draws both" : "") +
                           " (docs/model.md#end-to-end-readings); the plain benchmark's mean TPOT would settle it" +
                           (how.empty() ? " (its mean prompt and output lengths would price the prefill part)" : ""));
  }
  if (bounded && rest - per_step > 0.0) {
    cal.warnings.push_back("the plain rate is end to end and leaves " + units::format_duration(rest) +
                           " per step beyond the modelled forward" + (how.empty() ? "" : " and the priced prefill") +
                           ", more than the " + s.engine.name + " host prior allows (p90 " +
                           units::format_duration(per_step) + "): the excess is read as per-request time (prefill, " +
                           "batch tails), which speculation does not shorten; a measured TPOT would settle it");
  }
}

// The larger batch a plain step's two readings are told apart at, as a multiple of the measured one.
constexpr int kSecondBatchFactor = 8;

// At batch 1 a measured plain step holds the forward and the engine's host work. When it leaves more
// host time than the engine's prior allows (its p90), it has two readings: host work that does not
// grow with the verify's width, or weight streaming slower than the prior efficiency says, which
// the verify and the drafts pay too. The efficiency may take only its plausible range, so the GPU
// reading absorbs at most what the range's floor leaves; the rest is host time either way. The
// point takes the host reading unless rules.efficiency_to_long_step says otherwise; the other
// reading is kept for the band (Calibration::plain_step_readings). Returns the host time left.
double CycleModel::fit_forward_to_host_prior(const Scenario& s, double step, double host) {
  Calibration& cal = calibration_;
  // The prior is of graph-mode steps; an eager step's launches are host work of another size.
  // Above batch 1 an end-to-end step also holds prefill and batch tails, unless a measured TPOT
  // gave the decode step apart from them.
  if ((s.batch != 1 && !s.measurements.baseline_tpot_s) || s.engine.decode_mode != LaunchMode::kGraph ||
      !s.engine_prior || !s.engine_prior->plain_step_host) {
    return host;
  }
  const EnginePrior::Term& prior = *s.engine_prior->plain_step_host;
  if (host <= prior.p90_s || cal.bandwidth_efficiency.origin.rfind("prior", 0) != 0) return host;
  const ForwardTerms bytes = target_.terms(1.0);
  if (bytes.kv_bytes > bytes.weight_bytes + bytes.expert_bytes) return host;
  const auto decode_s = [&](double eta) { return decode_at_efficiency(s, eta); };
  const double from = cal.bandwidth_efficiency.value;
  const double wanted = step - prior.value_s;
  double eta = kMinPlausibleBandwidthEfficiency;
  if (decode_s(eta) > wanted) {
    boost::uintmax_t iterations = 60;
    const auto [a, b] = boost::math::tools::toms748_solve([&](double x) { return decode_s(x) - wanted; }, eta, from,
                                                          boost::math::tools::eps_tolerance<double>(40), iterations);
    eta = 0.5 * (a + b);
  }
  const double gpu_host = std::max(0.0, step - decode_s(eta));
  const std::string what = s.measurements.baseline_tpot_s ? "the measured plain TPOT " : "the measured plain step ";
  const std::string host_reading = "read as host time, efficiency " + units::format_fixed(100.0 * from, 0) + "% and " +
                                   units::format_duration(host) + " host per step";
  const std::string gpu_detail = "efficiency " + units::format_fixed(100.0 * eta, 0) + "% (the plausible floor is " +
                                 units::format_fixed(100.0 * kMinPlausibleBandwidthEfficiency, 0) + "%) and " +
                                 units::format_duration(gpu_host) + " host";
  const std::string gpu_reading = "read as slower weight streaming, " + gpu_detail;
  // A measured verify compute is GPU time: where even uniform-free routing (skew 0) at the GPU
  // reading's efficiency cannot be that fast, the measurement refutes that reading.
  const auto& verify = s.measurements.verify;
  const bool refuted = verify && verify->compute_s > 0 &&
                       ComputeModel(s.model, s.gpu, s.parallel.tp, s.batch, s.context_tokens, s.compute, eta, 0.0,
                                    rank_placement(s.parallel))
                               .gpu_time_s(double(s.batch) * verify->tokens_per_request) > verify->compute_s;
  const std::string beyond = what + "(" + units::format_duration(step) + ") leaves " + units::format_duration(host) +
                             " beyond the modelled forward at batch " + std::to_string(s.batch) + ", more than the " +
                             s.engine.name + " host prior allows (p90 " + units::format_duration(prior.p90_s) + ")";
  if (refuted) {
    cal.warnings.push_back(beyond + ": read as host time; slower weight streaming (" + gpu_detail +
                           ") would make the verify's measured compute (" + units::format_duration(verify->compute_s) +
                           ") unreachable");
    return host;
  }
  const bool gpu = s.rules.efficiency_to_long_step;
  cal.plain_step_readings = {{from, host}, {eta, gpu_host}};
  // What a plain step at a larger batch would tell: host time stays, and the slower streaming adds
  // only as much again as the step reads more (experts touched, KV), so the two readings' steps
  // there differ by their forwards' growth apart. Weights read once per step grow by nothing.
  const int other = kSecondBatchFactor * s.batch;
  const double host_reading_other_s = decode_at_efficiency(s, from, other);
  const double apart_s = (decode_at_efficiency(s, eta, other) - decode_s(eta)) - (host_reading_other_s - decode_s(from));
  const double other_step_s = host_reading_other_s + host;
  cal.warnings.push_back(beyond + ": two readings, " + host_reading + "; or " + gpu_reading + ". The point takes the " +
                         (gpu ? "second" : "first") + ", the band spans both. A plain step at batch " +
                         std::to_string(other) + " would come out " + units::format_duration(apart_s) + " (" +
                         units::format_fixed(100.0 * apart_s / other_step_s, 1) +
                         "%) apart under the two (the slower streaming grows with a step only as far as it "
                         "reads more: experts touched, KV); a profile's kernel sum, or one measured speculative run "
                         "(measurements.speculative with held_out: false), would settle it");
  if (!gpu) return host;
  cal.bandwidth_efficiency = {eta, "calibrated: " + what + units::format_duration(step) +
                                       " less the engine's host prior " + units::format_duration(prior.value_s) +
                                       ", within the plausible range"};
  use_efficiency(s, eta);
  return gpu_host;
}

// Which part of the model reads more than the engine does, where a step is shorter than the forward
// even at the datasheet's bandwidth.
std::string CycleModel::heaviest_part(const Scenario& s) const {
  const ForwardTerms t = target_.terms(double(s.batch));
  if (t.expert_bytes >= t.weight_bytes && t.expert_bytes >= t.kv_bytes) {
    return "its expert weights (at batch " + std::to_string(s.batch) +
           " requests share experts more than uniform routing says, or the engine's MoE kernel reads fewer bytes)";
  }
  if (t.kv_bytes >= t.weight_bytes) return "its KV cache reads (the engine's attention reads less of it)";
  return "its weights (a quantised format or fused kernels reading fewer bytes)";
}

// The measured plain step is shorter than the forward modelled at the bandwidth efficiency in use:
// the model reads more bytes, or reads them slower, than this engine does. A prior efficiency rises
// (TOMS 748) to fill the step with no host time, never above the datasheet's bandwidth
// (kMaxPlausibleBandwidthEfficiency): beyond it the model's bytes are wrong, which the warning names,
// and the host time is 0. Returns the host time left.
double CycleModel::fit_forward_to_step(const Scenario& s, double step, double modelled) {
  Calibration& cal = calibration_;
  const auto decode_s = [&](double eta) { return decode_at_efficiency(s, eta); };
  const std::string what = "the modelled decode forward (" + units::format_duration(modelled) +
                           ") exceeds the measured step (" + units::format_duration(step) + ")";
  if (cal.bandwidth_efficiency.origin.rfind("prior", 0) != 0 || !s.rules.efficiency_to_short_step) {
    cal.warnings.push_back(what + "; host time per step set to 0");
    return 0.0;
  }
  const double from = cal.bandwidth_efficiency.value;
  double eta = std::max(from, kMaxPlausibleBandwidthEfficiency);
  const bool fits = decode_s(eta) <= step;
  if (fits) {
    boost::uintmax_t iterations = 60;
    const auto [a, b] = boost::math::tools::toms748_solve([&](double x) { return decode_s(x) - step; }, from, eta,
                                                          boost::math::tools::eps_tolerance<double>(40), iterations);
    eta = 0.5 * (a + b);
  }
  cal.bandwidth_efficiency = {eta, "calibrated: the measured plain step " + units::format_duration(step) +
                                       " is shorter than the forward at the prior " +
                                       units::format_fixed(100.0 * from, 0) + "%" + (fits ? "" : " (at its bound)")};
  cal.warnings.push_back(
      what + " at the prior bandwidth efficiency " + units::format_fixed(100.0 * from, 0) + "%: efficiency calibrated to " +
      units::format_fixed(100.0 * eta, 0) + "%" +
      (fits ? " so that the forward fills the step with no host time"
            : ", the datasheet's bandwidth, and the forward still exceeds the step (" +
                  units::format_duration(decode_s(eta)) + "): the model reads more than this engine does in " +
                  heaviest_part(s) + "; host time per step set to 0"));
  use_efficiency(s, eta);
  return std::max(0.0, step - decode_s(eta));
}

// The plain decode forward with the target read at bandwidth efficiency `eta`, at `batch` requests
// (0: the scenario's).
double CycleModel::decode_at_efficiency(const Scenario& s, double eta, int batch) const {
  const int b = batch > 0 ? batch : s.batch;
  const ComputeModel m(s.model, s.gpu, s.parallel.tp, b, s.context_tokens, s.compute, eta,
                       calibration_.routing_skew.value, rank_placement(s.parallel));
  return forward(m, s.model, ForwardOf::kTarget, b, s.engine.decode_mode, "decode").total_s();
}

// Target and draft priced at a calibrated bandwidth efficiency.
void CycleModel::use_efficiency(const Scenario& s, double eta) {
  // A routing skew calibrated from the measured verify compute was solved at the efficiency then in
  // use: solved again at this one, so that the verify still reproduces its measurement.
  const auto& verify = s.measurements.verify;
  if (!s.compute.routing_skew && verify && verify->compute_s > 0 &&
      calibration_.routing_skew.origin.rfind("calibrated", 0) == 0) {
    const double tokens = double(s.batch) * verify->tokens_per_request;
    const auto residual = [&](double skew) {
      return ComputeModel(s.model, s.gpu, s.parallel.tp, s.batch, s.context_tokens, s.compute, eta, skew,
                          rank_placement(s.parallel))
                 .gpu_time_s(tokens) -
             verify->compute_s;
    };
    if (residual(0.0) >= 0.0) {
      calibration_.routing_skew.value = 0.0;
    } else if (residual(1.0) <= 0.0) {
      calibration_.routing_skew.value = 1.0;
    } else {
      boost::uintmax_t iterations = 60;
      const auto [a, b] = boost::math::tools::toms748_solve(residual, 0.0, 1.0,
                                                            boost::math::tools::eps_tolerance<double>(40), iterations);
      calibration_.routing_skew.value = 0.5 * (a + b);
    }
  }
  const double skew = calibration_.routing_skew.value;
  target_ = ComputeModel(s.model, s.gpu, s.parallel.tp, s.batch, s.context_tokens, s.compute, eta, skew,
                         rank_placement(s.parallel));
  draft_ = ComputeModel(s.draft, s.gpu, s.parallel.draft_ranks(), s.batch, s.context_tokens, s.compute, eta, skew);
}

ForwardBreakdown CycleModel::forward(const ComputeModel& compute, const TransformerSpec& model, ForwardOf of,
                                     double tokens, LaunchMode mode, const char* phase, int step) const {
  ForwardBreakdown f;
  f.phase = phase;
  f.step = step;
  f.tokens = tokens;
  f.mode = mode;
  f.compute_s = compute.local_time_s(tokens, mode);
  f.message_bytes = activation_message_bytes(model, tokens);
  // Each collective priced by its operation's registered implementation (CommModel::operations()).
  for (const Collective& c : collectives(model, of, tokens)) {
    const double each = comm_.time_s(c, mode);
    f.comm_s += c.count * each;
    if (c.op == CollectiveOp::kAllReduce) {
      f.allreduce_count += c.count;
      f.allreduce_each_s = each;
    }
    f.collectives.push_back({c, each});
  }
  const CommSettings& c = active().comm;
  if (c.fuse_residual_norm && f.allreduce_count > 0) {
    // Each fused all-reduce absorbs the residual add and the RMSNorm that follow it: two kernels
    // fewer per collective (SGLang ENABLE_ALLREDUCE_RMSNORM_FUSION, docs/references/models.md#tp-collectives).
    const double per_kernel = mode == LaunchMode::kEager ? active().compute.eager_launch_per_kernel_or_prior_s()
                                                         : active().compute.kernel_floor_s;  // fused in a graph piece
    f.compute_s = std::max(0.0, f.compute_s - 2.0 * f.allreduce_count * per_kernel);
  }
  if (c.overlap > 0) {
    // Overlapping communication with compute hides up to `overlap` of the smaller of the two.
    const double hidden = c.overlap * std::min(f.compute_s, f.comm_s);
    f.comm_s -= hidden;
  }
  return f;
}

double CycleModel::tokens_per_cycle(const Acceptance& a, std::vector<double>* conditional) const {
  return tokens_per_cycle(scenario_.speculation.shape, a, conditional);
}

double CycleModel::tokens_per_cycle(const DraftShape& shape, const Acceptance& a,
                                    std::vector<double>* conditional) const {
  const double tau = specsim::tokens_per_cycle(a, shape);
  if (conditional) {
    conditional->clear();
    if (!prices_a_tree(a, shape) && !std::holds_alternative<MeasuredTau>(a.kind)) {
      *conditional = chain_conditional_rates(a, shape);
    }
  }
  return tau;
}

double CycleModel::step_host_s() const {
  return calibration_.host_decode_s.value - calibration_.host_per_output_token_s;
}

double CycleModel::baseline_step_s() const {
  const Scenario& s = scenario_;
  return forward(target_, s.model, ForwardOf::kTarget, s.batch, s.engine.decode_mode, "decode").total_s() +
         calibration_.host_decode_s.value;
}

Prediction CycleModel::predict() const { return predict(scenario_.acceptance); }

Prediction CycleModel::predict(const Acceptance& acceptance) const {
  return predict(scenario_.speculation.shape, acceptance);
}

Prediction CycleModel::predict(const DraftShape& sp, const Acceptance& acceptance) const {
  const Scenario& s = scenario_;
  const double b = s.batch;
  Prediction p;
  p.decode = forward(target_, s.model, ForwardOf::kTarget, b, s.engine.decode_mode, "decode");
  p.baseline_host_s = calibration_.host_decode_s.value;
  p.baseline_step_s = p.decode.total_s() + p.baseline_host_s;
  p.baseline_tokens_per_s = b / p.baseline_step_s;

  p.tokens_per_cycle = tokens_per_cycle(sp, acceptance, &p.conditional_rates);
  CycleForwards forwards = cycle_forwards(sp, p.tokens_per_cycle, true);
  p.verify = std::move(forwards.verify);
  p.drafts = std::move(forwards.drafts);
  p.draft_s = 0;
  for (const auto& d : p.drafts) p.draft_s += d.total_s();
  p.spec_host_s = spec_host_s(double(p.drafts.size()), p.tokens_per_cycle);
  p.cycle_s = p.verify.total_s() + p.draft_s + p.spec_host_s;
  p.spec_tokens_per_s = b * p.tokens_per_cycle / p.cycle_s;
  p.speedup = p.spec_tokens_per_s / p.baseline_tokens_per_s;
  // Break-even: tau* = T_cycle(tau*) / T_base. The extend depends on tau, and so does a host time
  // paid per output token (h tau): tau = (T_fixed + extend(tau)) / (T_base - h), iterated to its
  // fixed point (a contraction: the extend's slope in tau is far below T_base - h = the forward).
  const double per_token_host = calibration_.host_per_output_token_s;
  const double extend_s = p.drafts.empty() ? 0.0 : p.drafts.back().total_s();
  const double fixed_part = p.cycle_s - extend_s - per_token_host * p.tokens_per_cycle;
  double tau = p.tokens_per_cycle;
  for (int i = 0; i < 8; ++i) {
    const double extend =
        p.drafts.empty() ? 0.0
                         : forward(draft_, s.draft, ForwardOf::kDraft, b * final_draft_tokens(s, sp, tau), s.engine.draft_mode, "")
                               .total_s();
    const double next = (fixed_part + extend) / (p.baseline_step_s - per_token_host);
    const bool settled = std::fabs(next - tau) < 1e-9 * next;
    tau = next;
    if (settled) break;
  }
  p.breakeven_tokens_per_cycle = tau;

  const std::pair<const char*, double> parts[] = {
      {"verify all-reduce", p.verify.comm_s},
      {"verify compute", p.verify.compute_s},
      {"draft", p.draft_s},
      {"host", p.spec_host_s},
  };
  const auto* top = std::max_element(std::begin(parts), std::end(parts),
                                     [](const auto& x, const auto& y) { return x.second < y.second; });
  p.dominant = top->first;
  p.dominant_share = top->second / p.cycle_s;
  return p;
}

double CycleModel::cycle_s(double tau) const { return cycle_s(scenario_.speculation.shape, tau); }

double CycleModel::cycle_s(const DraftShape& sp, double tau) const {
  const CycleForwards parts = cycle_forwards(sp, tau, false);
  double t = parts.verify.total_s();
  for (const ForwardBreakdown& d : parts.drafts) t += d.total_s();
  return t + spec_host_s(double(parts.drafts.size()), tau);
}

CycleModel::CycleForwards CycleModel::cycle_forwards(const DraftShape& sp, double tau, bool named) const {
  const Scenario& s = scenario_;
  const double b = s.batch;
  const auto name = [named](const char* phase) { return named ? phase : ""; };
  CycleForwards out;
  out.verify = forward(target_, s.model, ForwardOf::kTarget, b * sp.num_draft_tokens, s.engine.verify_mode, name("verify"));
  if (!s.speculation.runs_draft_forwards()) return out;
  const int draft_steps = sequential_draft_steps(s, sp);
  for (int i = 0; i < draft_steps; ++i) {
    // The first draft step expands one token per request; later ones expand eagle_topk.
    const bool first = i == 0 && !s.engine.extend_yields_first_draft;
    const double tokens = b * (first ? 1 : sp.eagle_topk);
    out.drafts.push_back(forward(draft_, s.draft, ForwardOf::kDraft, tokens, s.engine.draft_mode, name("draft step"),
                                 named ? i + 1 + (s.engine.extend_yields_first_draft ? 1 : 0) : 0));
  }
  out.drafts.push_back(forward(draft_, s.draft, ForwardOf::kDraft, b * final_draft_tokens(s, sp, tau), s.engine.draft_mode,
                               name(final_draft_phase(s))));
  return out;
}

double CycleModel::spec_host_s(double draft_forwards, double tau) const {
  const HostSettings& h = scenario_.host;
  const double per_token = calibration_.host_per_output_token_s;
  const double host = calibration_.host_decode_s.value - per_token + per_token * tau;
  // Prompt lookup scans each request's context on the host (docs/model.md#ngram).
  const double lookup = scenario_.speculation.runs_draft_forwards()
                            ? 0.0
                            : h.ngram_lookup_per_token_s * scenario_.batch * scenario_.context_tokens;
  const double per_request = calibration_.spec_per_request_s.value * std::max(0.0, scenario_.batch - 1.0);
  return host + calibration_.unhidden_host_s + h.spec_extra_per_cycle_s + draft_forwards * h.draft_step_overhead_s +
         per_request + lookup;
}

}  // namespace specsim
