// The speculative cycle against the plain decoding step (docs/model.md#equations, docs/references/specdec.md#cycle):
//
//   T_base  = T_fwd(target, B) + T_host_decode
//   T_cycle = sum_i T_fwd(draft, B * t_i)        draft decode steps
//           + T_fwd(target, B * n)               verify (n = k + 1 for a chain)
//           + T_fwd(draft, B * tau)              draft extend over the accepted tokens
//           + T_host_decode + T_host_spec_extra
//           + max(0, h_sync - h_step)            a synchronous cycle beside an async plain step
//   tok/s_base = B / T_base,  tok/s_spec = B * tau / T_cycle,  break-even tau* = T_cycle / T_base
//
//   T_fwd(model, q, mode) = local(q, mode) + sum over its collectives [ count x T_op(bytes, mode) ]
//
// (the collectives of a forward: collectives.hpp; N_allreduce all-reduces of q * H * act_bytes
// under plain TP).
//
// With SGLang's sequencing the extend also yields the first draft token, so a cycle holds
// num_steps - 1 draft decode steps plus the extend (docs/references/models.md#sglang-cycle).
//
// Free parameters left open in the scenario are calibrated here from its measurements only:
// the eager per-collective overhead from the verify's all-reduce time, the bandwidth efficiency
// from the verify's compute time, and the decode host time from the plain tokens/s. The measured
// speculative tokens/s is never used.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "specsim/acceptance.hpp"
#include "specsim/collectives.hpp"
#include "specsim/comm_model.hpp"
#include "specsim/compute_model.hpp"
#include "specsim/scenario.hpp"

namespace specsim {

struct CalibratedValue {
  double value = 0.0;
  std::string origin;  // "calibrated: ..." or "scenario" or "prior: ..."
  // A prior's value (priors.hpp, or an engine's models/engines file) that nothing replaced.
  [[nodiscard]] bool is_prior() const { return origin.rfind("prior", 0) == 0; }
};

// The origin of Calibration::expert_bandwidth_efficiency where nothing states it: the experts stream
// at the bandwidth efficiency, whatever calibration makes of it.
inline constexpr std::string_view kExpertsFollowDense = "follows the bandwidth efficiency";

struct Calibration {
  CalibratedValue bandwidth_efficiency;
  CalibratedValue routing_skew;
  // How fast routed experts stream: set, a compute profile's, the engine's expert-kernel prior
  // (with_expert_kernel_prior), or not stated (origin kExpertsFollowDense, value 0).
  CalibratedValue expert_bandwidth_efficiency;
  CalibratedValue eager_overhead_per_op_s;
  CalibratedValue host_decode_s;
  // The part of host_decode_s paid per output token (an end-to-end measurement: prefill and batch
  // tails): a speculative cycle pays it once per token it emits (x tau), the rest once per cycle.
  // The whole residual without a measured TPOT, the end-to-end step less the TPOT with one.
  double host_per_output_token_s = 0.0;
  // The part of host_per_output_token_s that rules.end_to_end_residual_per_request placed there: what
  // an end-to-end rate with no TPOT leaves beyond the forward and the priced prefill. Per-step host
  // work is its other reading (calibration_readings(), "end_to_end_residual"); 0 where nothing was
  // read that way.
  double end_to_end_unsplit_s = 0.0;
  // The part of host_per_output_token_s that is the priced prefill (the stated prompt's forward over
  // the output tokens) at calibrated_batch, where the measurements were taken. At another batch c a
  // model charges it c / calibrated_batch times (rules.prefill_scales_with_batch).
  double prefill_per_output_token_s = 0.0;
  int calibrated_batch = 1;
  bool batch_measured = false;  // calibrated_batch is a measured plain run's batch (else the default)
  // The engine's speculative overheads (HostSettings): set by the scenario or the engine's prior.
  CalibratedValue spec_extra_per_cycle_s;
  CalibratedValue draft_step_overhead_s;
  // Per request beyond the first, per cycle, as charged: 0 where async scheduling hides it or the
  // rule is off (the origin says which).
  CalibratedValue spec_per_request_s;
  // Eager launches (ComputeSettings): set, a compute profile's, calibrated (a measured eager verify
  // makes the overlap perfect) or the prior. The exponent is infinite for max(gpu, host).
  CalibratedValue eager_launch_per_kernel_s;
  CalibratedValue eager_overlap_exponent;
  // The GPU's own wait at each eager attention part of a piecewise forward: set, a compute
  // profile's, or the prior kPriorPiecewiseGpuPerAttentionS.
  CalibratedValue piecewise_gpu_per_attention_s;
  // Where the plain run was measured under async scheduling and the speculative run is synchronous
  // (AsyncScheduling::cycle_pays_hidden_host): the host time of a synchronous step, the engine's
  // plain_step_host prior, which the cycle pays in place of the plain step's calibrated host part
  // when it is larger; unhidden_host_s is that difference, per cycle (docs/model.md#async-scheduling).
  // Both 0 otherwise.
  CalibratedValue sync_step_host_s;
  double unhidden_host_s = 0.0;
  // Where a measured plain step has two readings (CycleModel::fit_forward_to_host_prior): the
  // bandwidth efficiency and host time per step of the host reading, then of the GPU reading. The
  // point takes one (its bandwidth_efficiency says which); the band draws both. Empty otherwise.
  struct PlainStepReading {
    double bandwidth_efficiency = 0.0;
    double host_s = 0.0;
  };
  std::vector<PlainStepReading> plain_step_readings;
  bool comm_calibrated = false;  // the all-reduce cost comes from a measured table
  std::string comm_source;       // which table or prior, and the what-ifs applied
  // The expert-parallel all-to-all (parallel.moe_a2a), where the target runs one: measured table or prior.
  bool all_to_all_calibrated = false;
  std::string all_to_all_source;  // "" when the deployment runs no all-to-all
  std::vector<std::string> warnings;
};

// One forward pass of one model in one phase, on one TP rank.
struct ForwardBreakdown {
  const char* phase = "";  // "decode", "verify", "draft step", "draft extend", "block draft"
  int step = 0;            // draft step number (1-based) for "draft step"
  double tokens = 0.0;  // tokens in the forward, all requests together
  LaunchMode mode = LaunchMode::kGraph;
  double compute_s = 0.0;  // GPU work and launches
  double comm_s = 0.0;     // all collectives
  int allreduce_count = 0;
  double message_bytes = 0.0;   // per all-reduce
  double allreduce_each_s = 0.0;
  // Every collective of the forward with the time of one operation, before overlap hides any of it:
  // comm_s = sum of count x each_s less what communication/compute overlap hides.
  struct PricedCollective {
    Collective collective;
    double each_s = 0.0;
  };
  std::vector<PricedCollective> collectives;
  [[nodiscard]] double total_s() const { return compute_s + comm_s; }
};

struct Prediction {
  // Plain decoding.
  ForwardBreakdown decode;
  double baseline_host_s = 0.0;
  double baseline_step_s = 0.0;
  double baseline_tokens_per_s = 0.0;
  // Speculative decoding, one cycle.
  ForwardBreakdown verify;
  std::vector<ForwardBreakdown> drafts;  // draft decode steps, then the draft extend
  double draft_s = 0.0;                  // all draft forwards, extend included
  double spec_host_s = 0.0;
  double cycle_s = 0.0;
  double tokens_per_cycle = 0.0;
  std::vector<double> conditional_rates;  // per draft position, when known
  double spec_tokens_per_s = 0.0;
  double speedup = 0.0;
  double breakeven_tokens_per_cycle = 0.0;
  std::string dominant;  // the largest part of the cycle
  double dominant_share = 0.0;
};

class CycleModel;

// Whether each run of a deployment schedules the engine's host work for step n+1 while the GPU runs
// step n (vLLM's async scheduling), with where that comes from: "set" (engine.async_scheduling) or
// the engine's default (models/engines/<name>.yaml `async_scheduling`).
struct AsyncScheduling {
  struct Run {
    bool on = false;
    std::string origin;
  };
  Run plain;
  Run speculative;
  bool stated = false;  // the scenario sets either run
  // The measured plain step hid host work that a synchronous speculative cycle pays.
  [[nodiscard]] bool cycle_pays_hidden_host() const { return plain.on && !speculative.on; }
  // Worth a line in predict: the runs differ, or the scenario said how they ran.
  [[nodiscard]] bool shown() const { return stated || plain.on != speculative.on; }
};
[[nodiscard]] AsyncScheduling async_scheduling_of(const Scenario& scenario);

// Whether a forward of `scenario` has kernels launched by the host: a target forward, or a draft
// forward where the method runs one, in eager or piecewise mode. Only then do the eager launch
// cost and overlap exponent enter the prediction.
[[nodiscard]] bool launches_eagerly(const Scenario& scenario);
// `scenario` with its routed experts at the prior compute.expert_bandwidth_efficiency where its
// engine's file names the GPU's compute-capability major and the experts' dtype
// (behaviour.expert_kernel), rule expert-kernel-prior is on, and nothing set the efficiency; a value
// the prior put there before and that no longer applies (another GPU, model or engine) is taken out.
// A value the prior put there is kept as it is, so a band's draw of it stays.
[[nodiscard]] Scenario with_expert_kernel_prior(Scenario scenario);
// The same for piecewise mode alone: only then does the GPU's wait per eager attention part enter.
[[nodiscard]] bool runs_piecewise(const Scenario& scenario);
// Whether a forward of `scenario` runs a collective (target or draft over more than one rank): only
// then does an all-reduce price, calibrated or not, enter the prediction.
[[nodiscard]] bool runs_collectives(const Scenario& scenario);

// The free parameters of `scenario` calibrated from its measurements, under the conditions they were
// taken in (Scenario::as_measured, Measurements::box), each with its origin; a calibrated key the
// scenario sets (file, --set, --vary) wins and says "set". CycleModel(s, calibrate(s)) is
// CycleModel(s); what-ifs that leave the calibrated keys and measurements alone share one.
// `without_overrides`, when given, is calibrate() of the same scenario with no calibrated key set
// (what a set value is shown beside): a sweep over a calibrated key makes it once, not per point.
[[nodiscard]] Calibration calibrate(const Scenario& scenario, const Calibration* without_overrides = nullptr);

class CycleModel {
 public:
  explicit CycleModel(Scenario scenario);  // validates and calibrates; throws specsim::Error
  // With a calibration already made (calibrate() of this scenario or of one that differs only in
  // keys calibration does not read): what sweeps use to skip calibrating every point.
  CycleModel(Scenario scenario, const Calibration& measured);
  // The compute models point into the scenario held here: not copyable.
  CycleModel(const CycleModel&) = delete;
  CycleModel& operator=(const CycleModel&) = delete;

  [[nodiscard]] Prediction predict() const;
  [[nodiscard]] Prediction predict(const Acceptance& acceptance) const;
  // Another draft shape on the same calibrated box (calibration does not depend on it): the fast
  // path of sweeps. Throws specsim::Error when the acceptance does not hold on that shape.
  [[nodiscard]] Prediction predict(const DraftShape& shape, const Acceptance& acceptance) const;
  // tau for the scenario's draft shape under `acceptance`; a chain's rates per position out
  // (empty for a tree or a measured tau).
  [[nodiscard]] double tokens_per_cycle(const Acceptance& acceptance,
                                        std::vector<double>* conditional = nullptr) const;
  [[nodiscard]] double tokens_per_cycle(const DraftShape& shape, const Acceptance& acceptance,
                                        std::vector<double>* conditional) const;
  [[nodiscard]] double baseline_step_s() const;
  // The calibrated host time of one plain step that a cycle pays once (not per output token).
  [[nodiscard]] double step_host_s() const;
  [[nodiscard]] double cycle_s(double tokens_per_cycle) const;
  [[nodiscard]] double cycle_s(const DraftShape& shape, double tokens_per_cycle) const;

  [[nodiscard]] const Scenario& scenario() const { return scenario_; }
  [[nodiscard]] const Calibration& calibration() const { return calibration_; }

 private:
  // One forward of `model` (the active scenario's target or draft, as `of` says) and its collectives.
  [[nodiscard]] ForwardBreakdown forward(const ComputeModel& compute, const TransformerSpec& model, ForwardOf of,
                                         double tokens, LaunchMode mode, const char* phase, int step = 0) const;
  [[nodiscard]] std::vector<Collective> collectives(const TransformerSpec& model, ForwardOf of, double tokens) const;
  // The forwards of one speculative cycle on `shape` at tau, assembled here once for every view
  // (predict, cycle_s and through them the band and the sweep): the verify, then each draft
  // forward in order, the extend last. `named`: with the phase names a report shows.
  struct CycleForwards {
    ForwardBreakdown verify;
    std::vector<ForwardBreakdown> drafts;
  };
  [[nodiscard]] CycleForwards cycle_forwards(const DraftShape& shape, double tau, bool named) const;
  // Says where the target's all-to-alls fall outside comm.all_to_all_profile's measured sizes.
  void note_all_to_all(const Scenario& s);
  friend Calibration calibrate(const Scenario& scenario, const Calibration* without_overrides);
  CycleModel(Scenario scenario, const Calibration* measured, bool finish,
             const Calibration* without_overrides = nullptr);
  // calibration_ from the scenario as measured, overrides applied.
  void calibrate_measured(const Calibration* without_overrides);
  void apply_calibration();   // the predicted box's models from calibration_, and its warnings
  void calibrate(const Scenario& basis);
  void calibrate_comm(const Scenario& s);     // eager all-reduce overhead, then the comm model
  void calibrate_compute(const Scenario& s);  // bandwidth efficiency or routing skew from the verify
  void calibrate_host(const Scenario& s);     // host time per plain step from the measured step
  // calibrate(basis) with the scenario's `--set` values of calibrated keys taking precedence.
  void calibrate_with_overrides(Scenario& basis, const Calibration* without_overrides);
  // Bandwidth efficiency from a measured plain step shorter than the modelled forward; host left.
  double fit_forward_to_step(const Scenario& s, double step, double modelled);
  double fit_forward_to_host_prior(const Scenario& s, double step, double host);
  void host_without_step(const Scenario& s);
  void charge_prefill_per_token(const Scenario& s, double host);
  [[nodiscard]] double prefill_s(const Scenario& s) const;
  void scale_prefill_to_batch(const Scenario& s);
  [[nodiscard]] std::string heaviest_part(const Scenario& s) const;
  // The plain decode forward at bandwidth efficiency `eta`, at the scenario's batch or at `batch`.
  [[nodiscard]] double decode_at_efficiency(const Scenario& s, double eta, int batch = 0) const;
  void use_efficiency(const Scenario& s, double eta);
  // host.spec_extra_per_cycle from measurements.speculative when it is not held out.
  void calibrate_engine_cycle();
  // calibration_.sync_step_host_s and unhidden_host_s from the runs' async scheduling.
  void price_sync_host();
  // Host and engine time of one speculative cycle: the plain step's host time (once, or tau times
  // when it is paid per output token), what async scheduling hid in it, the per-cycle overhead and
  // the per-draft-forward overhead.
  [[nodiscard]] double spec_host_s(double draft_forwards, double tau) const;

  // The scenario the helpers below read: the one predicted, or during calibration the one measured.
  [[nodiscard]] const Scenario& active() const { return *active_; }

  Scenario scenario_;
  const Scenario* active_ = &scenario_;
  Calibration calibration_;
  CommModel comm_;
  ComputeModel target_;
  ComputeModel draft_;
};

}  // namespace specsim
