#include "specsim/priors.hpp"

#include <array>

#include "specsim/cycle.hpp"

namespace specsim {

namespace {

// The registry: a row per prior, each with the evidence behind its numbers above it.
constexpr std::array kPriors = std::to_array<Prior>({
    // Weight streaming efficiency of small-M GEMMs: 79-86% of datasheet bandwidth over the GPUs and
    // kernels of AIConfigurator's data (docs/references/measured-compute.md#gemm-efficiency).
    {.key = "compute.bandwidth_efficiency",
     .label = "bandwidth efficiency",
     .estimate = {0.84, 0.79, 0.86},
     .unit = PriorUnit::kDimensionless,
     .source = "docs/references/measured-compute.md#gemm-efficiency",
     .evidence = "BF16 GEMV at M <= 64 reaches 79-86% of datasheet bandwidth on every GPU in AIConfigurator's "
                  "kernel data",
     .feeds = "every forward's weight and KV streaming; drawn where no compute profile or measurement set it",
     // Only the built-in prior: a compute profile's value was fitted to measured steps.
     .open = [](const Scenario& s, const Calibration& cal) {
       return s.compute.profile.empty() && cal.bandwidth_efficiency.is_prior();
     },
     .set = [](Scenario& s, double eta) { s.compute.bandwidth_efficiency = eta; },
     // A plain step with two readings (host or GPU time, Calibration::plain_step_readings): half the
     // draws take the GPU reading's efficiency; no public measurement favours either on a given
     // engine, so they weigh the same.
     .second_reading = PriorReading{"plain step read as host or GPU time", 0.5,
                                    [](const Calibration& cal) -> std::optional<double> {
                                      if (cal.plain_step_readings.empty()) return std::nullopt;
                                      return cal.plain_step_readings.back().bandwidth_efficiency;
                                    }}},
    // Verify-over-decode KV streaming efficiency, measured on one H200 (PyTorch's attention kernels,
    // docs/references/measured-compute.md#verify-attention): 0.30, 0.21 and 0.14 on three GQA shapes;
    // kernels that split the KV length for several query tokens (FlashInfer, FlashMLA) approach 1.
    // Value: the log-normal median of p10 and p90.
    {.key = "compute.kv_verify_ratio",
     .label = "verify KV efficiency",
     .estimate = {0.5, 0.3, 0.85},
     .unit = PriorUnit::kDimensionless,
     .source = "docs/references/measured-compute.md#verify-attention",
     .evidence = "verify over decode KV efficiency 0.14-0.30 with PyTorch's kernels on one H200; split-KV "
                  "kernels approach 1",
     .feeds = "the verify's KV reads (the decode efficiency times this); drawn where no compute profile, "
              "compute.kv_efficiency_verify or compute.kv_verify_ratio set it",
     .open = [](const Scenario& s, const Calibration&) {
       return s.compute.profile.empty() && !s.compute.kv_efficiency_verify &&
              !s.explicit_keys.count("compute.kv_verify_ratio");
     },
     .set = [](Scenario& s, double ratio) { s.compute.kv_verify_ratio = ratio; },
     // The ratio's log-normal passes 1 in ~5% of draws; verify reading its KV faster than decode does
     // is not what the prior describes (split-KV kernels reach ~1), so it is cut there.
     .draw_max = 1.0},
    // GPU time per layer that a forward of 2+ tokens pays over a 1-token one beyond its attention
    // (GEMV kernels give way to GEMM kernels), measured on one H200 under CUDA graphs for two dense
    // shapes at four contexts (docs/references/measured-compute.md#multi-token-step): median 5 us,
    // p10 2 us, p90 10 us over the eight points.
    {.key = "compute.multi_token_step",
     .label = "multi-token step",
     .estimate = {5e-6, 2e-6, 10e-6},
     .unit = PriorUnit::kSeconds,
     .source = "docs/references/measured-compute.md#multi-token-step",
     .evidence = "a 2+ token forward over a 1-token one, per layer, two dense shapes at four contexts on one H200",
     .feeds = "per layer of every forward of more than one token; drawn where no compute profile or "
              "compute.multi_token_step set it",
     .open = [](const Scenario& s, const Calibration&) {
       return s.compute.profile.empty() && !s.explicit_keys.count("compute.multi_token_step");
     },
     .set = [](Scenario& s, double step_s) { s.compute.multi_token_step_s = step_s; }},
    // Host cost of launching one kernel of an eager forward (Python module call, ATen dispatch,
    // cudaLaunchKernel): 17.39 us, fitted to plain PyTorch forwards on one H200
    // (calibration/profiles/h200-torch-compute.yaml). Spread: a bare kernel submission costs 4-6 us,
    // about what a C++ engine's graphs save per kernel (p10); a PyTorch op's CPU path is put at 5-25
    // us, and vLLM's eager decode of a 7B model ran ~10 ms a token slower than its graphs, 30-56 us per
    // kernel at 11-20 kernels a layer (p90 40 us) (docs/references/specdec.md#eager-launch).
    {.key = "compute.eager_launch_per_kernel",
     .label = "eager launch per kernel",
     .estimate = {17.39e-6, 5e-6, 40e-6},
     .unit = PriorUnit::kSeconds,
     .source = "docs/references/specdec.md#eager-launch",
     .evidence = "fitted to plain PyTorch forwards on one H200; a bare submission 4-6 us, vLLM's eager decode "
                  "30-56 us a kernel",
     .feeds = "the host's launches of an eager or piecewise forward; drawn where such a forward runs and "
              "nothing set or fitted it",
     .open = [](const Scenario& s, const Calibration& cal) {
       return launches_eagerly(s) && cal.eager_launch_per_kernel_s.is_prior();
     },
     .set = [](Scenario& s, double launch_s) { s.compute.eager_launch_per_kernel_s = launch_s; }},
    // How eager launches and GPU work overlap, T = (gpu^p + host^p)^(1/p): 2.91, fitted with the launch
    // cost above. No public figure; the spread is an estimate, from p = 2 (41% over the larger side
    // when the two are equal) to p = 5 (15%) (docs/references/specdec.md#eager-launch).
    {.key = "compute.eager_overlap_exponent",
     .label = "eager overlap exponent",
     .estimate = {2.91, 2.0, 5.0},
     .unit = PriorUnit::kDimensionless,
     .source = "docs/references/specdec.md#eager-launch",
     .evidence = "fitted with the eager launch cost; the spread an estimate, p = 2 (41% over the larger side) "
                  "to p = 5 (15%)",
     .feeds = "how an eager forward's host launches and GPU work overlap; drawn where such a forward runs "
              "and nothing set, fitted or measured it",
     .open = [](const Scenario& s, const Calibration& cal) {
       return launches_eagerly(s) && cal.eager_overlap_exponent.is_prior();
     },
     .set = [](Scenario& s, double p) { s.compute.eager_overlap_exponent = p; },
     // p < 1 would price overlap as worse than none: the log-normal's tail is cut at 1 (~0.5% of draws).
     .draw_min = 1.0},
    // Measured / NCCL's analytic model (the all-reduce prior) over 4 KiB - 1 MiB, the decode and verify
    // sizes, on the graph-mode NCCL tables of four shipped boxes (2x, 4x, 8x RTX PRO 6000 PCIe, 8x H200
    // NVSwitch; AIConfigurator's data): pooled p10 0.66, median 0.99, p90 1.23 over 32 points
    // (scripts/allreduce_prior_spread.py; docs/references/nccl.md#prior-spread). The prior's time is
    // used as it is (value 1); the spread enters a prediction's band where no table was measured.
    {.key = "comm.scale",
     .label = "all-reduce prior",
     .estimate = {1.0, 0.66, 1.23},
     .unit = PriorUnit::kDimensionless,
     .source = "docs/references/nccl.md#prior-spread",
     .evidence = "measured over NCCL's model at 4 KiB - 1 MiB on four boxes' graph-mode tables, 32 points",
     .feeds = "every collective NCCL's model (or an engine kernel's) prices, as a factor on comm.scale; "
              "drawn where collectives run and no table was measured",
     .open = [](const Scenario& s, const Calibration& cal) { return runs_collectives(s) && !cal.comm_calibrated; },
     .set = [](Scenario& s, double ratio) { s.comm.scale *= ratio; }},
    // GPU-side cost of each eager attention part between the graph pieces of a piecewise forward (the
    // device waits on a graph replay's start and on kernels launched one by one): measured on one
    // H200 with the forward queued behind a sleep kernel, so that the host never held it up, 0.238-
    // 0.279 ms (median 0.262) over 32 attention parts of 5 kernels each, 8.2 us per part
    // (calibration/compute/h200-piecewise.csv, docs/references/measured-compute.md#piecewise). Whether
    // it is paid per replay or per eager kernel that run cannot tell: vLLM's 2-kernel part is 3.3 us
    // if per kernel, 8.2 us if per replay; value their log-midpoint, p10 and p90 the two readings.
    {.key = "compute.piecewise_gpu_per_attention",
     .label = "piecewise GPU wait per attention part",
     .estimate = {5.2e-6, 3.3e-6, 8.2e-6},
     .unit = PriorUnit::kSeconds,
     .source = "docs/references/measured-compute.md#piecewise",
     .evidence = "8.2 us per 5-kernel part on one H200; vLLM's 2-kernel part 3.3 us if paid per kernel, 8.2 us "
                  "if per replay",
     .feeds = "the GPU's wait at each eager attention part of a piecewise forward; drawn where one runs "
              "and nothing set or fitted it",
     .open = [](const Scenario& s, const Calibration& cal) {
       return runs_piecewise(s) && cal.piecewise_gpu_per_attention_s.is_prior();
     },
     .set = [](Scenario& s, double wait_s) { s.compute.piecewise_gpu_per_attention_s = wait_s; }},
    // The fixed latency of one expert-parallel all-to-all kernel (a dispatch or a combine among the ep
    // ranks) before its bytes, in the prior t = L + (r-1)/r S / B_p2p: published EP8 kernel benchmarks
    // at decode sizes, where the bytes take well under a microsecond over NVLink, measure 18.9 and
    // 31.0 us (TensorRT-LLM's NVLinkOneSided dispatch and combine, 1 token per rank, GB200), 41.6 and
    // 41.7 us (pplx-kernels, 1 token per GPU, H100), and DeepEP's low-latency EP8 at 128 tokens on H800
    // leaves 45 and 50 us once its bytes at 200 GB/s are taken off (docs/references/models.md#all-to-all-measured).
    // p10 and p90 are the lowest and the highest; the value is their log-midpoint. A measured table
    // (comm.all_to_all_profile) or a set comm.all_to_all_latency replaces it.
    {.key = "comm.all_to_all_latency",
     .label = "all-to-all latency",
     .estimate = {30e-6, 18e-6, 50e-6},
     .unit = PriorUnit::kSeconds,
     .source = "docs/references/models.md#all-to-all-measured",
     .evidence = "published EP8 dispatch and combine kernels at decode sizes: 18.9-50 us (TensorRT-LLM, "
                  "pplx-kernels, DeepEP)",
     .feeds = "each expert-parallel dispatch and combine (parallel.moe_a2a) before its bytes; drawn where "
              "one runs with no measured table and no set latency",
     .open = [](const Scenario& s, const Calibration& cal) {
       return !cal.all_to_all_source.empty() && !cal.all_to_all_calibrated && !s.comm.all_to_all_latency_s;
     },
     .set = [](Scenario& s, double latency_s) { s.comm.all_to_all_latency_s = latency_s; }},
    // n-gram prompt lookup on the host, per context token scanned per request per cycle: vLLM's
    // single-threaded Numba proposer scanned 66.3M tokens in 70.28 ms (1.06 ns each); the spread is an
    // estimate (docs/references/specdec.md#ngram).
    {.key = "host.ngram_lookup_per_token",
     .label = "n-gram lookup per context token",
     .estimate = {1.06e-9, 0.5e-9, 2.5e-9},
     .unit = PriorUnit::kSeconds,
     .source = "docs/references/specdec.md#ngram",
     .evidence = "vLLM's single-threaded Numba proposer scanned 66.3M tokens in 70.28 ms; the spread an estimate",
     .feeds = "the host's prompt lookup per cycle (speculation.method ngram); not drawn by the band"},
    // How fast an engine's grouped-GEMM expert kernel streams routed experts where it is slower than
    // its dense GEMMs: NVFP4 experts on the RTX PRO 6000 under FlashInfer's CUTLASS MoE kernel, in
    // AIConfigurator's measured tables for vLLM 0.24.0 and SGLang 0.5.14, at 16-128 tokens when every
    // touched expert's bytes are counted (docs/references/nvfp4-moe-sm120.md#prior). Over the deployed
    // shapes both tables hold (GLM-5 TP8, Kimi-K2 TP8, MiniMax-M2 TP2, Qwen3.5-397B TP4, Qwen3-30B-A3B
    // TP1; 56 points) the rate's p10, median and p90 are 58%, 64% and 73% of datasheet bandwidth. A
    // DeepSeek-V3 shape reads 98-118%, above what its bytes allow: a kernel tuned for that shape, left
    // out. Which engine, GPU and dtype it applies to, the engine's file says (behaviour.expert_kernel).
    {.key = "compute.expert_bandwidth_efficiency",
     .label = "expert bandwidth efficiency",
     .estimate = {0.64, 0.58, 0.73},
     .unit = PriorUnit::kDimensionless,
     .source = "docs/references/nvfp4-moe-sm120.md#prior",
     .evidence = "FlashInfer's NVFP4 MoE kernel on the RTX PRO 6000 streams experts at 58-73% of datasheet over "
                  "five deployed shapes in AIConfigurator's vLLM and SGLang tables",
     .feeds = "the routed experts' weights where the engine's file names the GPU and the experts' dtype "
              "(behaviour.expert_kernel); drawn where it applies and nothing set it",
     .open = [](const Scenario& s, const Calibration&) { return s.compute.expert_efficiency_from_engine; },
     // A draw stands in for the prior: where the engine's kernel does not apply (the box the plain
     // rate was measured on, another GPU) with_expert_kernel_prior takes it out again.
     .set =
         [](Scenario& s, double eta) {
           s.compute.expert_bandwidth_efficiency = eta;
           s.compute.expert_efficiency_from_engine = true;
         },
     // An efficiency above 100% is never drawn: there the model's bytes would be wrong.
     .draw_max = 1.0},
    // How much the tokens of one request share experts (compute.routing_skew: each further token
    // counts as `skew` independent draws). The point is 1, independent routing, the upper bound on
    // experts read; Cohere measured that four verified tokens load ~2.5x one token's experts and
    // two ~1.62x, a skew of 0.54 and 0.65 on a 128-expert, top-8 layer
    // (docs/references/models.md#distinct-experts). p10 0.54, p90 the point.
    {.key = "compute.routing_skew",
     .label = "routing skew",
     .estimate = {1.0, 0.54, 1.0},
     .unit = PriorUnit::kDimensionless,
     .source = "docs/references/models.md#distinct-experts",
     .evidence = "four verified tokens of one request load ~2.5x one token's experts, not 4x (Cohere, production MoE "
                  "models): a skew of 0.54; independent routing is 1",
     .feeds = "the distinct experts a forward of several tokens per request reads (MoE targets); drawn where "
              "nothing set, fitted or measured it",
     .open = [](const Scenario& s, const Calibration& cal) {
       return s.rules.routing_skew_spread && s.model.moe.has_value() && s.compute.profile.empty() &&
              cal.routing_skew.is_prior();
     },
     .set = [](Scenario& s, double skew) { s.compute.routing_skew = skew; },
     .draw_max = 1.0},
});

// An end-to-end plain rate with no TPOT leaves a residual beyond the forward (and the priced prefill)
// that is either per-request time (prefill, batch tails: paid per output token, x tau per cycle) or
// per-step host work (paid once per cycle). No public measurement favours either on a given engine,
// so they weigh the same (docs/model.md#end-to-end-readings).
constexpr std::array kReadings = std::to_array<CalibrationReading>({
    {.key = "end_to_end_residual",
     .label = "end-to-end residual read as per-step host work",
     .point = "per-request time (prefill, batch tails), paid per output token",
     .other = "per-step host work up to the engine's plain_step_host p90, the rest per request",
     .settles = "the plain benchmark's mean TPOT",
     .source = "docs/model.md#end-to-end-readings",
     .weight = 0.5,
     .open = [](const Scenario& s, const Calibration& cal) {
       return s.rules.end_to_end_band_readings && s.rules.end_to_end_residual_per_request &&
              cal.end_to_end_unsplit_s > 0.0;
     },
     .set = [](Scenario& s) { s.rules.end_to_end_residual_per_request = false; }},
});

// The row of `key`, found while compiling: a key no row has does not compile.
consteval const PriorValue& estimate_of(std::string_view key) {
  for (const Prior& p : kPriors) {
    if (p.key == key) return p.estimate;
  }
  throw "no prior with this key";
}

}  // namespace

const char* to_string(PriorUnit unit) {
  switch (unit) {
    case PriorUnit::kSeconds: return "s";
    case PriorUnit::kDimensionless: return "dimensionless";
  }
  return "?";
}

std::span<const Prior> priors() { return kPriors; }

std::span<const CalibrationReading> calibration_readings() { return kReadings; }

constinit const PriorValue& kPriorBandwidthEfficiency = estimate_of("compute.bandwidth_efficiency");
constinit const PriorValue& kPriorKvVerifyRatio = estimate_of("compute.kv_verify_ratio");
constinit const PriorValue& kPriorMultiTokenStepS = estimate_of("compute.multi_token_step");
constinit const PriorValue& kPriorEagerLaunchPerKernelS = estimate_of("compute.eager_launch_per_kernel");
constinit const PriorValue& kPriorEagerOverlapExponent = estimate_of("compute.eager_overlap_exponent");
constinit const PriorValue& kPriorAllReduceRatio = estimate_of("comm.scale");
constinit const PriorValue& kPriorPiecewiseGpuPerAttentionS = estimate_of("compute.piecewise_gpu_per_attention");
constinit const PriorValue& kPriorAllToAllLatencyS = estimate_of("comm.all_to_all_latency");
constinit const PriorValue& kPriorNgramLookupPerTokenS = estimate_of("host.ngram_lookup_per_token");
constinit const PriorValue& kPriorExpertBandwidthEfficiency = estimate_of("compute.expert_bandwidth_efficiency");
constinit const PriorValue& kPriorRoutingSkew = estimate_of("compute.routing_skew");

}  // namespace specsim
