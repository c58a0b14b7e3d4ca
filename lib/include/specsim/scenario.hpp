// A Scenario is one deployment: target and draft models, the box, the engine's settings, the
// acceptance of the drafter, and the measurements that calibrate the free parameters. It is
// loaded (load.hpp) from models/scenarios/*.yaml with `--set key=value` patches applied to the
// text first, then validated as a whole; every value inside is SI.
//
// Free parameters are std::optional: empty means "calibrate from `measurements`" (calibrate.hpp).
#pragma once

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <string>
#include <vector>

#include "specsim/acceptance.hpp"
#include "specsim/origins.hpp"
#include "specsim/hardware.hpp"
#include "specsim/model_spec.hpp"
#include "specsim/priors.hpp"
#include "specsim/speculation_method.hpp"

namespace specsim {

// What an engine does that the cost model, the memory fit and the checks read: its file's
// `behaviour:` block (models/engines/<name>.yaml, docs/schema.md#engine-files), each key with its
// source there. Every scenario of the engine carries it, whether or not the file's priors apply to
// its method; an engine without a file does none of these.
struct EngineBehaviour {
  // The engine runs a custom all-reduce kernel of its own by default where its guards pass
  // (comm_model.hpp engine_custom_guard_refusal): vLLM's and SGLang's CustomAllreduce.
  bool custom_allreduce = false;
  // The compute-capability majors (12: sm_12x) on which that kernel aborts in CUDA graph capture.
  std::vector<int> custom_allreduce_aborts_in_capture;
  // How the engine sizes the memory it allocates (memory_fit.hpp): SGLang's mem_fraction_static
  // default from the GPU's memory and TP, or vLLM's gpu_memory_utilization with a profile run of
  // its activations. kUnknown: no rule stated, vLLM's assumed and said so.
  enum class MemoryRule { kUnknown, kStaticFraction, kProfileRun };
  MemoryRule memory_rule = MemoryRule::kUnknown;
  // The engine takes speculation.parallel_drafting (vLLM's speculative_config key).
  bool parallel_drafting = false;
  // Which runs the engine schedules asynchronously unless told otherwise: the plain run, and a
  // speculative run of these methods. Empty: no such default; both runs are taken as synchronous.
  struct AsyncDefault {
    bool plain = false;
    std::vector<std::string> methods;
  };
  std::optional<AsyncDefault> async_scheduling;
  // Where the engine's routed-expert kernel streams weights slower than its dense GEMMs: on these
  // compute-capability majors, for experts stored in these dtypes, the experts take the registry's
  // prior compute.expert_bandwidth_efficiency (priors.hpp) in place of the dense efficiency.
  struct ExpertKernel {
    std::vector<int> compute_capability_majors;
    std::vector<Dtype> experts;
    // The engine's names for the measured kernel (as its --moe-backend flag spells them): a
    // deployment that names another backend still takes the prior, with a warning that names the
    // kernel it was measured on; one that names none is taken to run it.
    std::vector<std::string> backends;
  };
  std::optional<ExpertKernel> expert_kernel;
};

struct EngineSettings {
  std::string name = "sglang";
  EngineBehaviour behaviour;  // from models/engines/<name>.yaml, at load
  // The MoE experts' kernel backend as launched (vLLM --moe-backend, SGLang --moe-runner-backend),
  // lower case with '_' for '-'; "" = not stated, the engine's own choice.
  std::string moe_backend;
  LaunchMode decode_mode = LaunchMode::kGraph;  // plain decoding step
  LaunchMode verify_mode = LaunchMode::kGraph;  // target forward over the draft tokens
  LaunchMode draft_mode = LaunchMode::kGraph;   // draft decode steps and draft extend
  // SGLang's draft extend over the accepted tokens also yields the first draft token, so one cycle
  // runs num_steps draft forwards in all, not num_steps + 1 (docs/references/models.md#sglang-cycle, eagle_worker.py).
  bool extend_yields_first_draft = true;
  std::optional<bool> embedding_allreduce;  // overrides the model file when set
  // The share of each GPU's memory the engine allocates from: vLLM's --gpu-memory-utilization or
  // SGLang's --mem-fraction-static. Empty = the engine's default (memory_fit.hpp).
  std::optional<double> memory_fraction;
  // vLLM's async scheduling (--async-scheduling / --no-async-scheduling): the host work of step n+1
  // overlapping the GPU's step n, for the plain run and the speculative run apart, as the deployment
  // ran them. Empty = the engine's default (EngineBehaviour::async_scheduling; async_scheduling_of in
  // cycle.hpp resolves both, docs/model.md#async-scheduling).
  std::optional<bool> async_plain;
  std::optional<bool> async_speculative;
  // The largest batch (requests) the engine captures a CUDA graph for, as launched: SGLang's
  // --cuda-graph-max-bs, TensorRT-LLM's cuda_graph_config.max_batch_size, vLLM's
  // --max-cudagraph-capture-size over the tokens one request verifies. Empty = the engine's own
  // default, which the scenario does not state. A batch above it runs without graphs: the check
  // before launch says so (launch_checks.hpp); the cost model does not read it.
  std::optional<int> cuda_graph_max_batch;
  // The engine's speculative worker version where its file prices versions apart (SGLang: v1, the
  // synchronous worker; v2, SGLANG_ENABLE_SPEC_V2's overlap scheduling). Empty = the file's default
  // version (EnginePrior::default_spec_version). docs/schema.md#engine.
  std::string spec_version;
  // The KV cache's dtype as launched: vLLM's and SGLang's --kv-cache-dtype, TensorRT-LLM's
  // kv_cache_config.dtype. Empty = "auto", the model's activation dtype. The scenario sets it on
  // the target and the draft (TransformerSpec::kv_cache_dtype): the engines cache both alike.
  std::optional<Dtype> kv_cache_dtype;
};

struct SpeculationSettings {
  // A row of speculation_methods() (speculation_method.hpp): eagle3, eagle, mtp, draft_model (a
  // draft forward per step), ngram (prompt lookup on the host) or dflash (a block drafter: one
  // forward per cycle over a block of block_size slots). kind() is its row.
  std::string method = "eagle3";
  DraftShape shape;  // steps, top-k and tokens verified: the one place the scenario holds them
  // Block drafting (vLLM's `parallel_drafting`, P-EAGLE): the drafter yields all num_steps tokens
  // in one forward over the accepted tokens plus num_steps - 1 mask slots per request, instead of
  // the extend and num_steps - 1 decode steps (docs/model.md#parallel-drafting). Default false:
  // what every engine does unless the head was trained for it and the flag is set.
  bool parallel_drafting = false;

  [[nodiscard]] const SpeculationMethod& kind() const { return speculation_method(method); }
  // False for prompt lookup (ngram), whose proposals cost host time but no forward.
  [[nodiscard]] bool runs_draft_forwards() const { return kind().runs_draft_forwards(); }
  // A block drafter (DFlash): speculation.block_size states the shape, a chain of block_size
  // verified tokens (num_steps = block_size - 1), drafted by one forward over the block's slots
  // whatever was accepted (docs/model.md#block-drafters).
  [[nodiscard]] bool drafts_block() const { return kind().drafts_block; }
};

// The exponent of perfect overlap, T = max(gpu, host): what a measured eager verify is priced at,
// its measured compute already holding the launches that ran beside the GPU.
inline constexpr double kPerfectOverlapExponent = std::numeric_limits<double>::infinity();

// The range a calibrated weight-streaming efficiency may take (share of datasheet bandwidth):
// from the lowest kernel class in AIConfigurator's small-M GEMM data (FP8 at 74%) to the datasheet
// itself (docs/references/measured-compute.md#gemm-efficiency). A measured step that the range
// cannot explain is host time (below) or a model whose bytes are wrong (above), never an
// efficiency outside it.
inline constexpr double kMinPlausibleBandwidthEfficiency = 0.74;
inline constexpr double kMaxPlausibleBandwidthEfficiency = 1.0;

// Rules of calibration that `specsim validate --ablate` turns off one at a time, to show what each
// does on sources it was not derived from (docs/validation.md#ablation). Every rule is on unless an
// ablation says otherwise; no data file sets them.
struct ModelRules {
  // An end-to-end plain rate (includes_prefill) charges per output token what prefill of the stated
  // prompt costs (priced from the target's forward), the rest of its residual per step.
  bool prefill_per_output_token = true;
  // What an end-to-end plain rate leaves beyond the forward and the priced prefill, when no TPOT
  // separates them: on, all of it is per-request time (batch tails, unpriced prefill), paid per
  // output token; off, per-step host work up to the engine's host prior p90, the rest per request.
  bool end_to_end_residual_per_request = true;
  // Where that rule read a residual as per-request time, the band draws the other reading (per-step
  // host work) in half its draws (calibration_readings(), priors.hpp); off, the point's reading alone.
  bool end_to_end_band_readings = true;
  // A plain step shorter than the modelled forward raises a prior efficiency, at most to 100%.
  bool efficiency_to_short_step = true;
  // A plain step leaving more than the engine's host prior p90 lowers a prior efficiency, at
  // least to kMinPlausibleBandwidthEfficiency (batch 1, CUDA graphs); off: the excess is host time.
  bool efficiency_to_long_step = true;
  // No measured plain step: host time per step from the engine's plain_step_host prior (else 0).
  bool host_prior_without_step = true;
  // An engine prior whose file names its methods (models/engines/*.yaml `methods:`) applies to those
  // only; off, to every method of the engine. Applied where the scenario is loaded for validation
  // (the loader scopes it for every other command).
  bool engine_prior_scoped_to_method = true;
  // The engine's per-request prior (spec_per_request) charged per request beyond the first where the
  // speculative run is synchronous; off, the cycle's engine terms do not grow with the batch.
  bool spec_per_request = true;
  // The model error's residual quantiles weight each fit-set row 1 / its source's rows, so that
  // every source counts once (the next deployment is a new source); off, every row counts once.
  bool model_error_per_source = true;
  // The model error's spread, estimated from n sources, is widened by t_0.9(n - 1) / z_0.9 (Student's
  // t for one more source); off, the normal's z_0.9 as if the spread were known.
  bool model_error_small_sample = true;
  // Routed experts on a GPU and dtype the engine's file names (behaviour.expert_kernel) stream at
  // the prior compute.expert_bandwidth_efficiency; off, at the dense bandwidth efficiency.
  bool expert_kernel_prior = true;
  // The band draws the routing skew of an MoE target between Cohere's measured correlation (0.54)
  // and independent routing (1, the point); off, the skew is the point's 1 in every draw.
  bool routing_skew_spread = true;
  // Carried to another batch (predict --concurrency), the prefill an end-to-end plain rate holds and
  // its stated lengths price grows with the batch: each step of c requests carries c / O prefills of
  // a prompt, so the priced share per output token scales by c / B; off, it stays as read at B.
  bool prefill_scales_with_batch = true;
  // Carried to another batch than the one its plain run was measured at, a prediction's band also
  // draws the fit set's batch-transfer error (ModelError::transfer_sigma_per_ln_batch) times
  // |ln(batch / measured batch)|; off, the band is the measured batch's.
  bool batch_transfer_error = true;
  [[nodiscard]] bool operator==(const ModelRules&) const = default;
};
[[nodiscard]] std::vector<std::pair<std::string, bool ModelRules::*>> model_rule_names();

struct ComputeSettings {
  // Fraction of datasheet memory bandwidth reached. Default: 84%, BF16 GEMV at M <= 64 on every GPU
  // in NVIDIA AIConfigurator's kernel data (docs/references/measured-compute.md#gemm-efficiency). Empty = calibrate.
  std::optional<double> bandwidth_efficiency = kPriorBandwidthEfficiency.value;
  double flop_efficiency = 0.5;                // fraction of dense tensor FLOP/s reached
  double kernel_floor_s = 3e-6;                // GPU-side fixed cost per kernel
  // Host launch cost per kernel in eager mode. Empty = the prior kPriorEagerLaunchPerKernelS.
  std::optional<double> eager_launch_per_kernel_s;
  // Eager host cost per layer once a request has > 1 query token (a different attention path on
  // the host: h200-forward-interleaved.csv shows ~45 us per layer more from q = 2 on).
  double eager_multi_token_step_s = 0.0;
  // How eager host launches and GPU work overlap: T = (gpu^p + host^p)^(1/p); a finite p adds the
  // queueing loss where the two are close, kPerfectOverlapExponent is max(gpu, host). Empty = the
  // prior kPriorEagerOverlapExponent (a measured eager verify makes it kPerfectOverlapExponent).
  std::optional<double> eager_overlap_exponent;
  double graph_launch_s = 5e-6;                // one CUDA-graph replay launch per forward
  // 1 = uniform routing; < 1 = the tokens of one forward share experts more than uniform routing
  // says (E_touched uses 1 + (q - 1) * skew tokens). Default: the prior's point, independent
  // routing (kPriorRoutingSkew; the band draws its spread). Empty = calibrate.
  std::optional<double> routing_skew = kPriorRoutingSkew.value;

  // Compute profile (calibration/profiles/*.yaml, kind compute_profile) whose fitted values replaced
  // the defaults above and below; the scenario's own keys still win. Empty = none.
  std::string profile;
  // Terms fitted from measured step times (docs/compute-calibration.md). Their defaults leave the
  // plain roofline above unchanged: empty efficiencies follow bandwidth_efficiency, zero costs.
  // Fraction of datasheet bandwidth at which routed-expert weights stream (grouped GEMM, a few rows
  // per expert).
  std::optional<double> expert_bandwidth_efficiency;
  // expert_bandwidth_efficiency holds the engine's expert-kernel prior (with_expert_kernel_prior in
  // cycle.hpp), not a value the file, a patch or a compute profile stated.
  bool expert_efficiency_from_engine = false;
  // Fraction of datasheet bandwidth at which attention reads the KV cache: one query token per
  // request (a decode kernel that splits the KV length), and several (verify: a prefill-style kernel).
  std::optional<double> kv_efficiency_decode;
  std::optional<double> kv_efficiency_verify;
  // Without kv_efficiency_verify: the verify's KV efficiency is the decode one times this ratio. A
  // prior: with several query tokens per request the engines' attention runs a prefill-style kernel
  // that splits the KV length less (docs/references/measured-compute.md#verify-attention).
  double kv_verify_ratio = kPriorKvVerifyRatio.value;
  double multi_token_step_s = kPriorMultiTokenStepS.value;  // per layer, once a forward has > 1 token (GEMV -> GEMM)
  double per_token_layer_s = 0.0;    // per token per layer (activations through ~30 elementwise kernels)
  // Kernels of the engine the profile was measured on; override the model file's counts when set.
  std::optional<int> kernels_per_dense_layer;
  std::optional<int> kernels_per_moe_layer;
  // Piecewise graphs: kernels each full-attention layer launches from the host between the pieces
  // (empty = kPiecewiseAttentionKernels), and the GPU-side cost of each such part (empty = the prior
  // kPriorPiecewiseGpuPerAttentionS).
  std::optional<int> piecewise_attention_kernels;
  std::optional<double> piecewise_gpu_per_attention_s;

  [[nodiscard]] double eager_launch_per_kernel_or_prior_s() const {
    return eager_launch_per_kernel_s.value_or(kPriorEagerLaunchPerKernelS.value);
  }
  [[nodiscard]] double eager_overlap_exponent_or_prior() const {
    return eager_overlap_exponent.value_or(kPriorEagerOverlapExponent.value);
  }
};

// How the all-reduces run. Everything but `profile` and the eager overhead is a what-if knob that
// the intervention catalogue patches (models/interventions).
struct CommSettings {
  std::string profile;                          // measured NCCL table (calibration/profiles name)
  std::optional<double> eager_overhead_per_op_s;  // host launch + rank skew seen in an eager collective
  // nccl | custom_oneshot | custom_twoshot | fp8 | engine (CommModel::implementations()).
  std::string implementation = "nccl";
  // engine: the custom kernel runs below this size; empty = the engines' 8 MiB.
  std::optional<double> custom_max_bytes;
  std::string custom_profile;                   // measured table of the custom one-shot kernel, if any
  // Measured all-to-all table (collective: all_to_all) for the expert-parallel dispatch and combine
  // of parallel.moe_a2a; "" = the all-to-all prior (CommModel::all_to_all_s).
  std::string all_to_all_profile;
  std::optional<double> all_to_all_latency_s;  // L of the all-to-all prior; empty = kPriorAllToAllLatencyS
  // The NCCL release the deployment runs ("2.29.7"); "" = not stated. Checked against the measured
  // tables' releases and the prior's (docs/references/nccl.md#versions).
  std::string nccl_version;
  std::string nccl_algo = "auto";               // auto | ring | tree (NCCL_ALGO)
  std::string nccl_proto = "auto";              // auto | ll | ll128 | simple (NCCL_PROTO)
  // NCCL_P2P_LEVEL: the farthest path class over which NCCL uses P2P between GPUs; auto = NCCL's own
  // rule by release and host CPU (comm_model.hpp nccl_transport). loc is NCCL_P2P_DISABLE=1.
  std::string nccl_p2p_level = "auto";          // auto | loc | nvl | pix | pxb | phb | sys
  int min_channels = 0;                         // NCCL_MIN_NCHANNELS; 0 = unset
  int max_channels = 0;                         // NCCL_MAX_NCHANNELS; 0 = unset
  double scale = 1.0;                           // multiplies every all-reduce (what-if: `comm.scale*=0.5`)
  double overlap = 0.0;                         // fraction of the smaller of compute and comm hidden by overlap
  bool fuse_residual_norm = false;              // all-reduce fused with residual add + RMSNorm
  // A profile measured at another rank count than tp: off = an error; nccl = NCCL's model ratio
  // from the nearest measured count; power = power law in ranks through two (comm_scaling.hpp).
  std::string rank_scaling = "off";
  std::vector<std::string> rank_profiles;       // the box's profiles at other rank counts (for power)
};

struct HostSettings {
  std::optional<double> decode_per_step_s;  // scheduler + sampling per plain step
  // The engine's own work around speculation that no forward prices: per cycle (acceptance,
  // bookkeeping, synchronisation) and per draft forward (input preparation, attention metadata,
  // sampling). Unset in the scenario, they come from the engine's prior (EnginePrior).
  double spec_extra_per_cycle_s = 0.0;
  double draft_step_overhead_s = 0.0;
  // Per request beyond the first, per cycle: the speculative path's work that grows with the batch
  // (sampling and the accept walk, draft KV slots, tree masks, per-request state). Unset in the
  // scenario, the engine's prior (EnginePrior::spec_per_request); hidden under async scheduling.
  double spec_per_request_s = 0.0;
  // speculation.method ngram: the host's lookup, per context token of each request per cycle.
  double ngram_lookup_per_token_s = kPriorNgramLookupPerTokenS.value;
};

// An engine's speculative overheads measured in public (models/engines/<engine.name>.yaml), each
// with its central value and the p10-p90 spread of the evidence: a prior, which a value the
// scenario sets always replaces.
struct EnginePrior {
  struct Term {
    double value_s = 0.0;
    double p10_s = 0.0;
    double p90_s = 0.0;
    // How a report names it: "prior: engine NAME, p10-p90 A to B (models/engines/NAME.yaml)".
    std::string origin;
  };
  std::string name;
  std::string source;
  Term cycle_overhead;       // per speculative cycle (of default_spec_version where versions are given)
  Term draft_step_overhead;  // per draft forward (the draft extend included)
  // Per request beyond the first, per cycle (HostSettings::spec_per_request_s): the evidence's
  // per-cycle terms were measured at batch 1, so they hold one request's share.
  std::optional<Term> spec_per_request;
  // The per-cycle prior of each speculative worker version the file prices apart (`spec_versions:`),
  // e.g. SGLang's v1 and v2; empty = one worker. engine.spec_version picks one at load.
  std::vector<std::pair<std::string, Term>> cycle_overhead_by_version;
  std::string default_spec_version;  // the version cycle_overhead holds; "" without versions
  // Host time of one plain decode step at batch 1 under CUDA graphs (scheduling, input
  // preparation, sampling): what a measured step may hold beyond the forward (CycleModel::calibrate_host).
  std::optional<Term> plain_step_host;
  // The speculation methods its evidence covers; empty = all. A scenario of another method gets no
  // prior from the file (0, said so), rather than another path's overheads.
  std::vector<std::string> methods;
  // What the engine does (the file's `behaviour:`), which applies whatever the method.
  EngineBehaviour behaviour;
  // What `specsim init` writes beside the engine's defaults (the file's `init:`), each with its
  // source; "" where the file says nothing, and init then writes a wording that names no engine.
  struct InitWording {
    std::string launch_modes;  // why CUDA graphs are assumed for every forward, and how to check
    std::string first_draft;   // why the draft extend yields the first draft token
    std::string chain;         // why a chain of 3 draft tokens is the assumed depth
    std::string block;         // how the engine sets a block drafter's block ("... from ...")
  };
  InitWording init;
};

// specsim's own error on deployments it was not fitted to (models/model-error.yaml, written by
// `specsim validate --write-model-error`): the spread of ln(measured / predicted) speculative
// tokens/s over the validation corpus that the rows' prior bands do not explain. A prediction's
// band draws it on top of the priors' spread (prediction_band in prior_band.hpp).
struct ModelError {
  double sigma = 0.0;  // ln(tok/s), centred on 0: the band widens, the prediction stays
  // The same spread side by side, matched to the residuals' own tails: a band draws its error from
  // a normal whose lower half has sigma_below and upper half sigma_above (docs/validation.md#model-error).
  // A file or scenario that states sigma alone has both equal to it.
  double sigma_below = 0.0;
  double sigma_above = 0.0;
  // ln(measured / predicted) over the rows, by nearest rank; p50 is the corpus's bias (not applied).
  double residual_p10 = 0.0;
  double residual_p50 = 0.0;
  double residual_p90 = 0.0;
  double prior_sigma_rms = 0.0;  // the rows' own prior bands as a ln sigma, root mean square
  // The same, each tail apart: ln(point / priors' p10) / z_0.9 and ln(priors' p90 / point) / z_0.9
  // (a prior spread that only raises a prediction, such as a second reading, widens the upper one).
  double prior_sigma_below_rms = 0.0;
  double prior_sigma_above_rms = 0.0;
  // t_0.9(sources - 1) / z_0.9: the residuals' spread is estimated from `sources` sources, and a band
  // for one more takes Student's t where a known spread would take the normal. 1 = not applied.
  double small_sample_factor = 1.0;
  int rows = 0;
  int sources = 0;
  std::string origin;  // the file, or the rows it was computed on
  // The error of a predicted gain (docs/validation.md#pairs): ln((1 + measured gain) / (1 +
  // predicted gain)) over the fit set's pairs, by nearest rank. 0 pairs: none known.
  int gain_pairs = 0;
  double gain_residual_p10 = 0.0;
  double gain_residual_p90 = 0.0;
  // The error of a rate carried from the batch its plain run was measured at to another
  // (docs/validation.md#batch-transfer): a ln sigma per unit |ln(batch / measured batch)|, beyond
  // the band a prediction at the measured batch carries, over the fit set's speculative batch
  // transfers (each source counted once). 0 points: none known, and the band is not widened.
  int transfer_points = 0;
  int transfer_sources = 0;
  double transfer_sigma_per_ln_batch = 0.0;
};

// A change whose predicted after / before ratio is `ratio`, under a gain error whose ln residuals
// are p10 and p90 (ModelError::gain_residual_*): the relative gain's p10-p90, ratio exp(p) - 1.
// rank draws its bands with it and validate checks them the same way (docs/validation.md#pairs).
[[nodiscard]] inline std::pair<double, double> relative_gain_band(double ratio, double ln_p10, double ln_p90) {
  return {ratio * std::exp(ln_p10) - 1.0, ratio * std::exp(ln_p90) - 1.0};
}
// A gain band holds 0: whether the change helps at all is within specsim's error on gains.
[[nodiscard]] inline bool holds_zero(const std::pair<double, double>& band) {
  return band.first <= 0.0 && band.second >= 0.0;
}

// Measurements of the deployment. Those marked `held_out` are never inputs: tests compare
// predictions with them.
struct Measurements {
  std::optional<double> baseline_tokens_per_s;
  // The plain rate was measured end to end (output tokens / wall time, prefill included): what the
  // modelled step leaves is then spread over output tokens, not paid once per step.
  bool baseline_includes_prefill = false;
  // The same plain run's decode time per output token of one request (vllm bench serve's Mean
  // TPOT): the step without prefill and batch tails. Beside an end-to-end rate it splits the rate's
  // residual into per-step host work and a per-output-token part (CycleModel::calibrate_host).
  std::optional<double> baseline_tpot_s;
  // The plain benchmark's mean prompt and output tokens per request, beside an end-to-end rate:
  // they price what prefill can cost per output token (CycleModel::calibrate_host). 0 = not stated.
  double baseline_prompt_tokens = 0.0;
  double baseline_output_tokens = 0.0;
  struct Verify {
    double step_s = 0.0;
    int allreduce_count = 0;
    double allreduce_total_s = 0.0;
    double compute_s = 0.0;
    int tokens_per_request = 0;
    LaunchMode mode = LaunchMode::kEager;
  };
  std::optional<Verify> verify;
  std::optional<double> speculative_tokens_per_s;
  // true (the default): compared with, never an input. false: the speculative run calibrates the
  // engine's per-cycle overhead (host.spec_extra_per_cycle) unless the scenario sets it.
  bool speculative_held_out = true;
  // The box the measurements were taken on, kept only when a what-if (`--set topology=...`,
  // `--set gpu=...`) moved the scenario to another one: calibration runs on this box and its
  // values (engine efficiency, eager overhead, host time) carry over to the other.
  struct Box {
    Topology topology;
    GpuSpec gpu;
    std::optional<CommProfile> comm_profile;
  };
  std::optional<Box> box;
  // The target model the measurements were taken on (`measurements.model`), kept only when it is not
  // the scenario's: calibration then runs on it, and only its values that belong to the engine and the
  // box carry over (docs/model.md, "Measurements of another deployment").
  std::optional<TransformerSpec> model;
};

// Where a validation row's measurements come from (validation/*/*.yaml, docs/validation.md): a
// record for people and for `specsim validate`'s summaries, never an input to the model.
struct ValidationSource {
  std::string source;                // id shared by the rows one source measured in one run
  std::string url;                   // the public page a reader can open
  std::string published;             // date of the source: YYYY-MM or YYYY-MM-DD
  std::string engine_version;        // as the source states it, or "unknown"
  std::string measured;              // what the measured numbers are, in the source's terms
  std::string acceptance_published;  // the acceptance figure exactly as published
  std::vector<std::string> assumptions;  // what the row assumes where the source is silent
  // What of the row's inputs was derived from its held-out speculative run (e.g. a tau computed
  // from that run's ITL / TPOT), or "" when none was. Such a row is reported apart, never scored:
  // its prediction is partly computable from the measurement it is compared with.
  std::string inputs_from_speculative_run;
  // `key=value` settings the measured speculative run changed from the deployment the file
  // describes, whose plain run it shares (a before/after pair where the source measured the plain
  // run once): the row is predicted as `rank` predicts an intervention, calibrated on the file as
  // written and then patched (docs/validation.md#pairs). Empty for an ordinary row.
  std::vector<std::string> applied;
};

// The corpus's fit and check sets (validation/split.yaml, docs/validation.md#fit-and-check-sets):
// each scored source's set, fixed by a rule before any error was looked at. Priors, rules and the
// model error come from the fit set; the check set only judges them.
struct ValidationSplit {
  std::string file;
  std::map<std::string, std::string> set_of;  // source -> "fit" or "check"
  std::set<std::string> not_scored;           // sources none of whose rows is scored
  std::set<std::string> added;                // found after the freeze (`added:`): check, not the rule's
  // The set of a source: the listed one, or "check" for one found after the split was frozen.
  [[nodiscard]] std::string set_of_source(const std::string& source) const {
    const auto it = set_of.find(source);
    return it == set_of.end() ? "check" : it->second;
  }
};

// A set of dotted keys ("compute.bandwidth_efficiency"). Copies share one set until one of them
// changes it: what-ifs copy a scenario per point and add a key or two.
class KeySet {
 public:
  KeySet() = default;
  explicit KeySet(std::set<std::string> keys) : keys_(std::make_shared<std::set<std::string>>(std::move(keys))) {}
  [[nodiscard]] std::size_t count(const std::string& key) const { return keys_ ? keys_->count(key) : 0; }
  [[nodiscard]] bool empty() const { return !keys_ || keys_->empty(); }
  void insert(const std::string& key) {
    if (!count(key)) own().insert(key);
  }
  void erase(const std::string& key) {
    if (count(key)) own().erase(key);
  }
  [[nodiscard]] std::set<std::string>::const_iterator begin() const { return keys().begin(); }
  [[nodiscard]] std::set<std::string>::const_iterator end() const { return keys().end(); }

 private:
  [[nodiscard]] const std::set<std::string>& keys() const {
    static const std::set<std::string> none;
    return keys_ ? *keys_ : none;
  }
  // A set this copy alone holds, copied from the shared one first when others hold it too.
  std::set<std::string>& own() {
    if (!keys_) {
      keys_ = std::make_shared<std::set<std::string>>();
    } else if (keys_.use_count() > 1) {
      keys_ = std::make_shared<std::set<std::string>>(*keys_);
    }
    return *keys_;
  }
  std::shared_ptr<std::set<std::string>> keys_;
};

// How an MoE layer's tokens reach experts held by other ranks under expert parallelism
// (`parallel.moe_a2a`, docs/references/models.md#expert-parallel). kNone: every rank sees every
// token and the MoE block ends in the TP all-reduce (the engines' default EP). kDeepep: DeepEP's
// all-to-all dispatch and combine (SGLang `--moe-a2a-backend deepep`), on full-NVLink boxes only.
enum class MoeA2aBackend { kNone, kDeepep };
[[nodiscard]] const char* to_string(MoeA2aBackend b);  // "none", "deepep"
[[nodiscard]] std::optional<MoeA2aBackend> parse_moe_a2a_backend(const std::string& text);
[[nodiscard]] std::vector<std::string> moe_a2a_backend_names();

// How the deployment spreads over the box: the `parallel:` block. A new dimension (attention data
// parallelism, as ep was added) is a field here, read in read_scenario.cpp's read_parallel, its collectives
// listed by forward_collectives (collectives.hpp) (docs/library.md#how-to-add).
struct Parallelism {
  int tp = 1;  // tensor-parallel ranks of the target
  int pp = 1;  // pipeline stages; a token crosses them one after another at batch 1
  // The draft's tensor-parallel ranks, 1 or tp (vLLM's draft_tensor_parallel_size takes the same
  // two, docs/references/specdec.md#draft-tp). 1 = replicated: every rank reads the whole draft and
  // drafts the same tokens, with no all-reduce. Empty = tp.
  std::optional<int> draft_tp;
  [[nodiscard]] int draft_ranks() const { return draft_tp.value_or(tp); }
  // Expert-parallel ranks of an MoE target, 1 or tp: 1 slices every routed expert over the TP
  // ranks; tp gives each rank experts / ep whole experts (SGLang `--ep 8` beside `--tp 8`,
  // docs/references/models.md#expert-parallel). The draft keeps TP slices.
  int ep = 1;
  MoeA2aBackend moe_a2a = MoeA2aBackend::kNone;  // with ep > 1: how tokens reach the experts' ranks
  // Data-parallel attention of an MoE target (SGLang `--enable-dp-attention --dp-size dp`,
  // docs/references/models.md#dp-attention): the tp ranks form dp groups of tp / dp; each group runs
  // attention for its own ceil(batch / dp) requests, its heads split over the group's ranks (all of
  // them on one rank when dp = tp), and holds only their KV cache; the MoE layers stay TP/EP over all
  // ranks, with every group's tokens gathered before them and scattered back after. 1 = off.
  int attention_dp = 1;
  // `attention_dp: true`: one group per rank, dp = tp, whatever tp a what-if sets.
  bool attention_dp_all = false;
  [[nodiscard]] bool data_parallel_attention() const { return attention_dp > 1; }
  // Experts reached through an all-to-all backend (dispatch and combine) rather than the all-reduce.
  [[nodiscard]] bool runs_all_to_all() const { return ep > 1 && moe_a2a != MoeA2aBackend::kNone; }
  // Ranks that split the requests for attention (1: every rank sees all).
  [[nodiscard]] int attention_dp_ranks() const { return attention_dp; }
  // Ranks that split one group's attention heads: tp / dp (tp without DP attention).
  [[nodiscard]] int attention_tp() const { return tp / std::max(1, attention_dp); }
  [[nodiscard]] int gpus() const { return tp * pp; }
};

struct Scenario {
  // The scenario as its file states it, before `--set` patches: the conditions the measurements
  // were taken under, where calibration runs. Empty when nothing was patched.
  std::shared_ptr<const Scenario> as_measured;
  std::string name;
  std::string description;
  std::string file;  // where it was loaded from
  // Where each key came from (file:line:col or a patch): what the rules on values
  // (scenario_rules.hpp) report against. Empty for a scenario built in code.
  std::shared_ptr<const Origins> origins;
  TransformerSpec model;
  TransformerSpec draft;
  GpuSpec gpu;
  Topology topology;
  std::optional<CommProfile> comm_profile;
  std::optional<CommProfile> custom_profile;  // comm.custom_profile, loaded
  std::optional<CommProfile> all_to_all_profile;  // comm.all_to_all_profile, loaded
  std::vector<CommProfile> comm_rank_profiles;  // comm.rank_profiles, loaded
  Parallelism parallel;
  std::string interventions;  // models/interventions catalogue for `rank`; empty = kDefaultCatalogue (any-box)
  int batch = 1;           // requests decoded together; the batch the measurements were taken at
  // workload.concurrency: batches to predict at, each the scenario at batch = c on the calibration
  // made at `batch` (concurrency.hpp). Empty = the single batch above.
  std::vector<int> concurrency;
  double context_tokens = 2048;  // tokens already in each request's KV cache
  EngineSettings engine;
  SpeculationSettings speculation;
  Acceptance acceptance;  // built from the `acceptance:` block at load
  ComputeSettings compute;
  CommSettings comm;
  HostSettings host;
  Measurements measurements;
  std::optional<ValidationSource> validation;  // validation rows only
  std::optional<EnginePrior> engine_prior;     // models/engines/<engine.name>.yaml, when there is one
  std::optional<ModelError> model_error;       // models/model-error.yaml, when the data directory has one
  ModelRules rules;                            // calibration rules (all on; validate --ablate turns one off)
  // Why the engine's prior file was not applied (its evidence covers other methods); "" otherwise.
  std::string engine_prior_skipped;
  // Dotted leaf keys the file or a `--set` patch states ("compute.bandwidth_efficiency"): a value
  // under one of them is "set"; any other value is a default, reported as a prior.
  KeySet explicit_keys;
  KeySet patched_keys;  // those a `--set` patch gave (a what-if)
  // What loading assumed or found odd but not wrong (KV heads replicated under TP, a draft trained
  // for another model, a comm profile from another box); reports print them as warnings.
  std::vector<std::string> notes;
};

}  // namespace specsim
