// Every damaged input in tests/data/invalid/<format>/ fails with a specsim::Error that names the
// line it came from and says what is wrong. One table holds the expectation of every file: a file
// without an entry, or an entry without a file, fails the test, so the corpus and the assertions
// stay in step. Lines are 1-based; 0 means the error is about the whole file (an empty table, a
// log without any metrics line, a crasher that stops before any line).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "specsim/engine_log.hpp"
#include "specsim/error.hpp"
#include "specsim/interventions.hpp"
#include "specsim/load.hpp"
#include "specsim/nccl_tests.hpp"
#include "specsim/topo_import.hpp"
#include "specsim/validate_corpus.hpp"

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const std::string kInvalid = std::string(SPECSIM_TEST_DATA_DIR) + "/invalid/";
const specsim::DataDir kRoot(SPECSIM_SOURCE_DIR);

struct Expected {
  std::string message;  // a piece of Error::what()
  int line;             // Error::where().line
};

// Reads one file the way its format is read in use. fuzz/ files are named after the fuzz target
// that found them: <target>-<what>.<ext>.
void load(const std::string& format, const std::string& name) {
  const std::string path = kInvalid + format + "/" + name;
  std::string kind = format;
  if (format == "fuzz") kind = name.substr(0, name.find('-'));
  if (kind == "llm" || kind == "hf") {
    (void)specsim::load_model(path);
  } else if (kind == "gpu") {
    (void)specsim::load_gpu(path);
  } else if (kind == "topology") {
    (void)specsim::load_topology(path);
  } else if (kind == "comm_profile") {
    (void)specsim::load_comm_profile(path);
  } else if (kind == "scenario") {
    (void)specsim::load_scenario(path, {}, kRoot);
  } else if (kind == "nccl" || kind == "nccl_tests") {
    (void)specsim::parse_nccl_tests_file(path);
  } else if (kind == "logs" || kind == "engine_log") {
    (void)specsim::parse_engine_log_file(path);
  } else if (kind == "topo") {
    (void)specsim::import_topo(path, specsim::TopoImportOptions{"t", "rtx-4090", true, 4});
  } else if (kind == "validation") {
    (void)specsim::validate_row(path, kRoot);
  } else if (kind == "interventions") {
    (void)specsim::load_interventions(path);
  } else if (kind == "set_patch") {
    // One `--set` patch per line, on the default scenario (as fuzz_set_patch reads its input).
    std::ifstream in(path);
    std::vector<std::string> patches;
    for (std::string line; std::getline(in, line);) patches.push_back(line);
    (void)specsim::load_scenario(specsim::kDefaultScenario, patches, kRoot);
  } else {
    FAIL("no reader for format '" << kind << "' (" << path << ")");
  }
}

// "format/file" -> what its error must say.
const std::map<std::string, Expected>& corpus() {
  static const std::map<std::string, Expected> table{
      // Crashers found by fuzz/ (fuzz/README.md), kept as regressions.
      // fuzz_load: a `numa:` entry of 120 'x' then '0' overflowed int while being read (UBSan).
      // fuzz_interventions: yaml-cpp 0.7's LoadAll never returned on these 25 bytes (the reader now walks
      // documents itself and stops); the first document is a null, not a mapping.
      {"fuzz/interventions-loadall-hang.yaml", {"byte 0xFF is not UTF-8", 1}},
      {"fuzz/topology-numa-overflow.yaml", {"is not a NUMA node number (an integer in [0, 4095])", 20}},
      {"fuzz/scenario-draft-name-too-long.yaml", {"draft: unknown model 'xxxxxxxxxx", 6}},
      // fuzz_metrics: a running-request gauge of 1.9e99 was cast to int (UBSan float-cast-overflow).
      {"fuzz/engine_log-running-reqs-overflow.prom", {"outside the plausible count range", 21}},
      // fuzz_metrics: a llama-server statistics count of 6.9e18, summed with another (signed overflow).
      {"fuzz/engine_log-statistics-overflow.log", {"#gen tokens: 6.89235e+18: outside the plausible token count range", 4}},
      // Validation rows: the source header and the held-out measurement are required.
      {"validation/bad-date.yaml", {"validation.published: expected a date YYYY-MM or YYYY-MM-DD, got '15/01/2026'", 8}},
      {"validation/bad-url.yaml", {"validation.url: expected a public address starting with https://", 7}},
      {"validation/missing-header.yaml", {"validation: a validation row needs a `validation:` source header", 0}},
      {"validation/no-assumptions.yaml", {"validation.assumptions: required key is missing", 6}},
      {"validation/no-spec.yaml", {"measurements.speculative.tokens_per_s: a validation row needs the measured speculative rate", 0}},
      {"validation/source-with-space.yaml", {"validation.source: expected a short id without spaces", 6}},
      {"comm_profile/bad-mode.yaml", {"mode: 'cudagraph' is not one of: graph, eager", 8}},
      {"comm_profile/empty-points.yaml", {"points: needs at least one point", 9}},
      {"comm_profile/missing-unit.yaml", {"points[1].size: expected a size with unit (e.g. '14KiB'), got '16384': the unit is missing", 11}},
      {"comm_profile/nan-time.yaml", {"points[3].time: expected a duration with unit (e.g. '2.5us'), got 'nanus': not a finite number", 13}},
      {"comm_profile/time-falls.yaml", {"points[2].time: 7.1 us at 32 KiB is less than 7.4 us at 16 KiB: a hand-written profile's time must not fall as the size grows", 12}},
      {"comm_profile/unsorted-sizes.yaml", {"points[2].size: sizes must rise strictly from one point to the next", 12}},
      {"comm_profile/unsupported-collective.yaml", {"collective: 'all_gather' is not one of: all_reduce, all_to_all", 5}},
      {"comm_profile/all-to-all-custom-oneshot.yaml", {"implementation: 'custom_oneshot' is not one of: nccl, deepep, pplx", 6}},
      {"comm_profile/zero-time.yaml", {"points[2].time: must be > 0", 12}},
      {"comm_profile/nccl-version-not-a-release.yaml",
       {"nccl_version: '2.29-rc1' is not an NCCL release (MAJOR.MINOR[.PATCH], e.g. 2.29.7)", 7}},
      {"comm_profile/nccl-version-on-deepep.yaml",
       {"nccl_version: a 'deepep' table does not run NCCL: only an nccl table has a release", 7}},
      {"gpu/compute-capability-sm-name.yaml",
       {"compute_capability: 'sm_120' is not a compute capability (MAJOR.MINOR, e.g. 12.0)", 10}},
      {"gpu/missing-architecture.yaml", {"architecture: required key is missing", 1}},
      {"gpu/xgmi-bandwidth-without-links.yaml",
       {"xgmi_link_bandwidth: xgmi_link_bandwidth and xgmi_links go together: give both (an Infinity Fabric card) or neither", 11}},
      {"gpu/duplicate-key.yaml", {"memory_bandwidth: duplicate key: the mapping already has 'memory_bandwidth' (one value per key)", 12}},
      {"gpu/implausible-flops.yaml", {"bf16_dense: '989000000TFLOP/s' = 9.89e+20: outside the plausible FLOP rate range [0, 1e+18]", 7}},
      {"gpu/bits-unit.yaml", {"unknown unit 'Gb/s' (bits are not read: divide by 8 and write bytes", 6}},
      {"gpu/inf-nvlink-bandwidth.yaml", {"nvlink_bandwidth: expected a bandwidth with unit (e.g. '48GB/s'), got '.infGB/s': no number", 10}},
      {"gpu/overflow-bandwidth.yaml", {"memory_bandwidth: '1e300TB/s' is not a finite bandwidth once its unit is applied", 6}},
      {"gpu/missing-unit.yaml", {"memory_bandwidth: expected a bandwidth with unit (e.g. '48GB/s'), got '4800': the unit is missing", 5}},
      {"gpu/nan-memory.yaml", {"memory: expected a size with unit (e.g. '14KiB'), got 'nanGB': not a finite number", 5}},
      {"gpu/negative-flops.yaml", {"bf16_dense: expected a FLOP rate with unit (e.g. '989TFLOP/s'), got '-989TFLOP/s': must not be negative", 7}},
      {"gpu/no-schema-version.yaml", {"schema_version: required key is missing (add 'schema_version: 1')", 1}},
      {"gpu/p2p-not-boolean.yaml", {"p2p_supported: expected true or false, got 'yes'", 11}},
      {"gpu/second-document.yaml", {"a second YAML document starts here: a data file holds exactly one", 14}},
      {"gpu/pcie-generation-out-of-range.yaml", {"pcie_generation: = 2: must be in [3, 7]", 9}},
      {"gpu/unknown-key.yaml", {"memory_bandwidth: required key is missing; is 'memory_bandwith' here a misspelling of it?", 5}},
      {"gpu/zero-bandwidth.yaml", {"memory_bandwidth: must be at least 1 GB/s for a GPU", 6}},
      {"gpu/denormal-bandwidth.yaml", {"memory_bandwidth: must be at least 1 GB/s for a GPU", 6}},
      {"gpu/latin1-byte.yaml", {"byte 0xE9 is not UTF-8: data files are UTF-8 text", 4}},
      // Sparse attention (hf_config.cpp read_deepseek_sparse, read_model.cpp read_attention).
      {"hf/glm-5.2-shared-topk.config.json", {"index_topk_freq: layers sharing another layer's top-k picks by frequency (GLM-5.2) are not modelled", 33}},
      {"hf/glm-5.1-short-topk-pattern.config.json", {"index_topk_pattern: must be one letter per layer (78)", 33}},
      {"hf/deepseek-v32-missing-index-topk.config.json", {"index_topk: required key is missing", 1}},
      {"llm/sparse-attention-partial.yaml", {"attention.index_topk: required key is missing", 11}},
      {"hf/duplicate-key.config.json", {"num_attention_heads: duplicate key: the mapping already has 'num_attention_heads'", 18}},
      {"hf/float-vocab-size.config.json", {"vocab_size: expected an integer, got '1.5e5'", 33}},
      {"hf/kv-heads-not-dividing.config.json", {"num_key_value_heads: must divide num_attention_heads (64)", 18}},
      {"hf/malformed-missing-comma.config.json", {"invalid YAML/JSON: end of map flow not found", 11}},
      {"hf/missing-num-hidden-layers.config.json", {"num_hidden_layers: required key is missing", 1}},
      {"hf/truncated.config.json", {"invalid YAML/JSON: illegal EOF in scalar", 13}},
      {"hf/bad-ignore-regex.config.json",
       {"quantization_config.ignore: 're:.*mlp\\.(g[te|up|gate_up|down)_proj.*' is not a regular expression specsim can read (", 16}},
      {"hf/unknown-compressed-tensors-scheme.config.json", {"quantization_config.config_groups.group_0.weights.num_bits: = 3 with type int, group_size 128, strategy group is not a scheme specsim models", 13}},
      {"hf/unknown-quant-method.config.json", {"quantization_config.quant_method: 'bitsandbytes' is not supported (known: compressed-tensors, modelopt, fp8, mxfp4, awq, gptq)", 12}},
      // DFlash drafters (hf_config.cpp read_dflash): taps required, DFlash 2 refused.
      {"hf/dflash-no-taps.config.json", {"dflash_config: a DFlash drafter needs target_layer_ids", 6}},
      {"hf/dflash2-draft.config.json", {"'DFlash2DraftModel' is a DFlash 2 drafter", 2}},
      {"hf/unsupported-model-type.config.json", {"model_type: 'gpt2' is not supported (known: llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, mimo, qwen3_moe, qwen3_next, qwen3_5_text, qwen3_5_moe_text, deepseek_v2, deepseek_v3, kimi_k2, glm4_moe, glm4_moe_lite, deepseek_v32, glm_moe_dsa, gpt_oss, llama4_text, minimax_m2)", 15}},
      {"hf/zero-kv-heads.config.json", {"num_key_value_heads: = 0: must be in [1, 10000000]", 18}},
      {"hf/unknown-torch-dtype.config.json", {"torch_dtype: 'bfloat17' is not a weight dtype specsim reads", 30}},
      {"llm/dense-layers-exceed-layers.yaml", {"dense_layers: must not exceed layers (32)", 6}},
      {"llm/inf-layers.yaml", {"layers: expected an integer, got '.inf'", 5}},
      {"llm/launches-before-weights-exceed-kernels.yaml",
       {"kernels.launches_before_weights: is 359, more than the 358 kernels the forward launches in all", 24}},
      {"llm/kv-heads-not-dividing.yaml", {"attention.kv_heads: must divide heads (32)", 12}},
      {"llm/malformed-yaml.yaml", {"invalid YAML/JSON: end of map not found", 7}},
      {"llm/missing-hidden-size.yaml", {"hidden_size: required key is missing", 1}},
      {"llm/nan-vocab-size.yaml", {"vocab_size: expected an integer, got '.nan'", 8}},
      {"llm/negative-hidden-size.yaml", {"hidden_size: = -4096: must be in [1, 10000000]", 7}},
      {"llm/string-for-integer.yaml", {"attention.heads: expected an integer, got 'thirty-two'", 11}},
      {"llm/unknown-attention-kind.yaml", {"attention.kind: 'mha' is not one of: gqa, mla", 10}},
      {"llm/unknown-dtype.yaml", {"weights.dense_mlp: 'bf17' is not one of: fp32, bf16", 18}},
      {"llm/dflash-no-taps.yaml", {"dflash.target_layer_ids: expected at least one integer", 18}},
      {"llm/unknown-key-typo.yaml", {"mlp.intermediate_sise: unknown key (known keys here: intermediate_size)", 16}},
      {"llm/wrong-kind.yaml", {"kind: expected 'llm', got 'gpu'", 2}},
      {"llm/zero-head-dim.yaml", {"attention.head_dim: = 0: must be in [1, 10000000]", 13}},
      {"logs/llama_speculative_accept_exceeds.log", {"n_accept = 147 exceeds n_drafted = 132", 3}},
      {"logs/sglang_metrics_implausible.prom", {"sglang:spec_accept_length", 1}},
      {"logs/vllm_metrics_counter_fell.prom", {"counter fell from 500 (line 7) to 495", 16}},
      {"logs/vllm_metrics_missing_accepted.prom",
       {"vllm:spec_decode_num_accepted_tokens_total: missing for {engine=\"0\",model_name=\"Qwen/Qwen3.6-35B-A3B-FP8\"}", 0}},
      {"logs/vllm_metrics_two_models.prom",
       {"the scrape holds metrics of 2 models: 'facebook/opt-125m' (line 3), 'facebook/opt-350m' (line 22)", 0}},
      {"logs/llamacpp_missing_slash.log", {"llama.cpp draft acceptance line: expected '/', got '259 generated)", 2}},
      {"logs/llamacpp_rate_mismatch.log", {"draft acceptance: expected accepted/generated = 0.644788, got 0.74479", 2}},
      {"logs/llamacpp_unclosed_list.log", {"expected ')', got the end of the line", 2}},
      {"logs/sglang_accept_len_below_one.log", {"accept len: expected a value >= 1 (accept len counts the bonus token), got '0.95'", 2}},
      {"logs/sglang_accept_len_implausible.log", {"accept len: '1e308' = 1e+308: outside the plausible acceptance length range [1, 65]", 2}},
      {"logs/sglang_accept_len_not_number.log", {"accept len: expected a number (non-negative), got '1.9x5'", 2}},
      {"logs/sglang_missing_throughput.log", {"SGLang decode line: missing field 'gen throughput (token/s): <number>'", 2}},
      {"logs/sglang_no_speculation.log", {"no speculative-decoding metrics line found", 0}},
      {"logs/vllm_v0_efficiency_mismatch.log", {"System efficiency: expected emitted/(steps*(K+1)) = 10616/17748 = 0.598152, got '0.698'", 2}},
      {"logs/vllm_v0_truncated.log", {"vLLM Speculative metrics line: expected 'key: value', got 'Numb'", 2}},
      {"logs/vllm_v1_count_without_unit.log", {"Accepted: expected a number followed by 'tokens', got '0'", 2}},
      {"logs/vllm_v1_drafted_not_multiple.log", {"Drafted: expected a multiple of the 5 per-position rates (drafts * K), got 296", 2}},
      {"logs/vllm_v1_mean_mismatch.log", {"Mean acceptance length: expected 1 + Accepted/drafts = 1 + 262/59 = 5.44068, got '4.44'", 2}},
      {"logs/vllm_v1_per_position_garbled.log", {"Per-position acceptance rate: expected a number (non-negative), got '0.9x49'", 2}},
      {"logs/vllm_v1_rate_without_percent.log", {"Avg Draft acceptance rate: expected a number followed by '%', got '0.0'", 2}},
      {"nccl/count_overflow.log", {"count: 84000000000000000000000000000000000000000000000000000000000 elements is more than 2^40", 31}},
      {"nccl/extra_column.log", {"row: row has 14 fields, expected 13", 39}},
      {"nccl/missing_header.log", {"header: table row before any column header", 22}},
      {"nccl/no_rank_count.log", {"ranks: cannot tell the rank count of this table", 16}},
      {"nccl/non_numeric_time.log", {"out-of-place time: expected a number, got '11.7.9'", 28}},
      // Found by fuzz_nccl_tests: std::stoi threw std::out_of_range past every handler.
      {"nccl/rank_out_of_range.log", {"ranks: device line's rank number 99999999999 is out of range", 13}},
      {"nccl/size_too_large.log", {"size: 2199023255552 B is more than 1 TiB", 35}},
      {"nccl/time_too_long.log", {"out-of-place time: 1e300 us is more than an hour per collective", 34}},
      {"nccl/truncated_row.log", {"row: row has 8 fields, expected 13", 43}},
      {"nccl/unnamed_alltoall.log",
       {"collective: the log does not name this table's collective and its rows reduce with 'none', so it is not all_reduce", 22}},
      {"nccl/wrong_nonzero.log", {"out-of-place #wrong: '3': nccl-tests found wrong results in this row", 30}},
      {"scenario/accept-nan.yaml", {"acceptance.accept: expected a finite number, got '.nan'", 23}},
      {"scenario/accept-out-of-range.yaml", {"acceptance.accept: = 1.2: must be in [0, 1]", 49}},
      {"scenario/acceptance-two-forms.yaml", {"acceptance: give exactly one of accept, per_position, unconditional, tokens_per_cycle, draft_acceptance_rate (found 2)", 23}},
      {"scenario/bad-mode-name.yaml", {"engine.verify_mode: 'cuda-graph' is not one of: graph, eager", 16}},
      {"scenario/batch-zero.yaml", {"workload.batch: = 0: must be in [1, 1000000]", 11}},
      // workload.concurrency: the list's key and line; one rule per file (read_scenario.cpp, read_concurrency).
      {"scenario/concurrency-duplicate.yaml", {"workload.concurrency: item 4 = 4 repeats item 2: list each level once", 13}},
      {"scenario/concurrency-empty.yaml", {"workload.concurrency: expected at least one integer", 13}},
      {"scenario/concurrency-negative.yaml", {"workload.concurrency: item 1 = -4: must be in [1, 1000000]", 13}},
      {"scenario/concurrency-not-integer.yaml", {"workload.concurrency: item 2: expected an integer, got '2.5'", 13}},
      {"scenario/concurrency-zero.yaml", {"workload.concurrency: item 2 = 0: must be in [1, 1000000]", 13}},
      {"scenario/depth-profile-with-per-position.yaml", {"acceptance.depth_profile: scales acceptance.accept only, and acceptance.per_position has no accept to scale", 25}},
      {"scenario/draft-as-model.yaml", {"model: 'llama-3.1-8b-eagle3' is an EAGLE-3 draft head (it has an eagle3 block)", 5}},
      {"scenario/draft-for-another-model.yaml", {"draft: 'kimi-k2.5-eagle3' (built for kimi-k2.5) does not fit the model 'llama-3.1-8b': hidden_size 7168 vs the model's 4096", 6}},
      {"scenario/draft-not-eagle3.yaml", {"draft: 'llama-3.1-8b' is not an EAGLE draft head", 6}},
      {"scenario/eagle1-head-as-eagle3.yaml", {"speculation.method: eagle3 needs an EAGLE-3 head, but the draft 'llama-3.1-8b-eagle1'", 19}},
      {"scenario/eagle3-head-as-eagle.yaml", {"speculation.method: eagle needs an EAGLE-1/2 head, but the draft 'llama-3.1-8b-eagle3'", 19}},
      {"scenario/ngram-with-draft.yaml", {"draft: speculation.method ngram proposes tokens by prompt lookup on the host, with no draft model; leave 'draft' out", 6}},
      {"scenario/draft-model-eagle-head.yaml", {"speculation.method: draft_model needs a full language model under 'draft', but 'llama-3.1-8b-eagle3'", 16}},
      {"scenario/draft-model-other-tokenizer.yaml", {"draft: 'qwen3-8b-fp8' has vocab_size 151936 but the model 'llama-3.1-8b' has 128256: a draft model must share the target's tokenizer", 6}},
      {"scenario/mtp-with-draft.yaml", {"draft: speculation.method mtp drafts with the model's own multi-token-prediction layers; leave 'draft' out", 6}},
      {"scenario/mtp-without-mtp-layers.yaml", {"speculation.method: mtp needs a model with multi-token-prediction layers, but 'llama-3.1-8b'", 18}},
      // speculation.parallel_drafting: each refusal at the key (read_scenario.cpp, read_parallel_drafting).
      // speculation.method dflash: the block, its acceptance and the drafter (read_scenario.cpp read_block_shape,
      // check_block_acceptance, check_dflash).
      {"scenario/dflash-block-size-zero.yaml", {"speculation.block_size: = 0: must be in [2, 65]", 17}},
      {"scenario/draft-acceptance-rate-past-tree.yaml", {"acceptance.draft_acceptance_rate: = 0.9 gives tau 14.5 at 16 draft tokens, which the draft cannot emit", 26}},
      {"scenario/dflash-tau-above-block.yaml", {"acceptance.tokens_per_cycle: = 9.50: a DFlash block of 8 (speculation.block_size) verifies 8 tokens, so a cycle emits at most 8", 19}},
      {"scenario/dflash-num-steps.yaml", {"speculation.num_steps: speculation.method dflash drafts one block per cycle: state speculation.block_size", 17}},
      {"scenario/dflash-eagle-head.yaml", {"draft: 'qwen3-8b-eagle3' is not a DFlash drafter", 6}},
      {"scenario/eagle3-with-dflash-draft.yaml", {"is a DFlash block drafter: set speculation.method: dflash", 16}},
      {"scenario/block-size-on-eagle3.yaml", {"speculation.block_size: is a block drafter's key (speculation.method dflash)", 18}},
      {"scenario/dflash-per-position-past-block.yaml", {"acceptance.per_position: lists 5 positions, but a DFlash block of 4 (speculation.block_size) drafts 3", 19}},
      {"scenario/parallel-drafting-mtp.yaml", {"speculation.parallel_drafting: true needs a drafter trained to draft several tokens in one forward (an EAGLE head such as P-EAGLE, or a draft model): vLLM allows it with eagle, eagle3 and draft_model only, not with speculation.method mtp", 21}},
      {"scenario/parallel-drafting-ngram.yaml", {"speculation.parallel_drafting: true needs a drafter trained to draft several tokens in one forward", 22}},
      {"scenario/parallel-drafting-sglang.yaml", {"speculation.parallel_drafting: true is vLLM's speculative_config flag", 22}},
      {"scenario/parallel-drafting-tree.yaml", {"speculation.parallel_drafting: true drafts one chain of num_steps tokens in one forward, but speculation.eagle_topk = 2 asks for a tree", 22}},
      {"scenario/missing-kind.yaml", {"kind: required key is missing", 1}},
      {"scenario/prompt-tokens-without-prefill.yaml",
       {"measurements.baseline.prompt_tokens: is read only beside an end-to-end rate (includes_prefill: true)", 92}},
      {"scenario/prompt-tokens-without-output.yaml",
       {"measurements.baseline.prompt_tokens: is given without output_tokens", 93}},
      {"scenario/missing-unit.yaml", {"compute.kernel_floor: expected a duration with unit (e.g. '2.5us'), got '1.3': the unit is missing", 68}},
      {"scenario/num-steps-65.yaml", {"speculation.num_steps: = 65: must be in [1, 64]", 20}},
      {"scenario/num-steps-zero.yaml", {"speculation.num_steps: = 0: must be in [1, 64]", 20}},
      // Two broken bounds: both reported in one error, each with its own line (11 and 20).
      {"scenario/two-problems.yaml", {"2 problems:\n  " + kInvalid + "scenario/two-problems.yaml:11:10: workload.batch: = 0", 0}},
      // Three rules of three blocks (the method, tp against the heads, a bound): one error.
      {"scenario/three-problems.yaml", {"3 problems:\n  " + kInvalid + "scenario/three-problems.yaml:11:10: workload.batch: = 0", 0}},
      {"scenario/per-position-negative.yaml", {"acceptance.per_position: item 2 = -0.1: must be in [0, 1]", 23}},
      {"scenario/schema-version-2.yaml", {"schema_version: unsupported schema version 2 (this specsim reads 1)", 1}},
      {"scenario/ep-on-dense-model.yaml",
       {"parallel.ep: = 2: expert parallelism needs an MoE target; 'llama-3.1-8b' has no routed experts", 10}},
      {"scenario/ep-not-dividing-experts.yaml", {"parallel.ep: = 3: must divide the 128 routed experts of 'qwen3-30b-a3b'", 10}},
      {"scenario/ep-not-tp.yaml", {"parallel.ep: = 8: must divide parallel.tp (4)", 10}},
      {"scenario/a2a-profile-without-backend.yaml",
       {"comm.all_to_all_profile: profile 'pplx-h100-8x-ep8-a2a' times an all-to-all, but the scenario runs none", 23}},
      {"scenario/a2a-profile-as-allreduce-table.yaml",
       {"comm.profile: profile 'pplx-h100-8x-ep8-a2a' times all_to_all, this key takes an all_reduce table", 23}},
      {"scenario/allreduce-profile-as-a2a-table.yaml",
       {"comm.all_to_all_profile: profile 'h200-8x-nvswitch-aic-nccl' times all_reduce, this key takes an all_to_all table", 23}},
      {"scenario/comm-nccl-version-not-a-release.yaml",
       {"comm.nccl_version: 'v2.29' is not an NCCL release (MAJOR.MINOR[.PATCH], e.g. 2.29.7)", 22}},
      {"scenario/comm-nccl-p2p-level-node.yaml",
       {"comm.nccl_p2p_level: 'node' is nvidia-smi's class; NCCL has no such level and counts that path as PHB: use phb", 22}},
      {"scenario/deepep-on-pcie.yaml", {"parallel.moe_a2a: = deepep: DeepEP needs NVLink with full peer access", 11}},
      {"scenario/moe-a2a-without-ep.yaml",
       {"parallel.moe_a2a: = deepep: an all-to-all backend moves tokens between expert-parallel ranks", 10}},
      {"scenario/attention-dp-on-dense-model.yaml",
       {"parallel.attention_dp: = true: data-parallel attention needs an MoE target, whose MoE layers stay split over "
        "the ranks; 'llama-3.1-8b' has no routed experts", 10}},
      {"scenario/attention-dp-at-tp1.yaml", {"parallel.attention_dp: = true: needs parallel.tp > 1", 10}},
      {"scenario/tp-exceeds-gpus.yaml", {"parallel.tp: = 4: the topology '2x-rtx-pro-6000-pcie5' has only 2 GPUs", 9}},
      {"scenario/tp-not-dividing-heads.yaml", {"parallel.tp: tp = 3 on llama-3.1-8b: tp must divide the 32 attention heads", 9}},
      {"scenario/verify-allreduce-count-zero.yaml", {"measurements.verify.allreduce_count: = 0: must be in [1, 10000000]", 27}},
      {"scenario/verify-step-below-parts.yaml", {"measurements.verify.step: = 4 ms, but its parts allreduce_total + compute = 1.5 ms + 4 ms = 5.5 ms, more than the step", 26}},
      {"scenario/unknown-key.yaml", {"speculation.num_stepz: unknown key (known keys here:", 44}},
      {"scenario/unknown-model-name.yaml", {"model: unknown model 'llama-3.1-9b' (known in", 5}},
      {"scenario/unknown-topology.yaml", {"topology: unknown topology '8x-rtx-pro-9000' (known in", 9}},
      {"topo/asymmetric.txt", {"GPU5 to GPU0 is PIX but GPU0 to GPU5 (line 2) is SYS: the matrix must be symmetric", 7}},
      {"topo/missing-header.txt", {"row GPU0 before the header line", 1}},
      {"topo/ragged-row.txt", {"row GPU3 has 11 fields, the header (line 1) has 12 columns", 5}},
      {"topo/unknown-class.txt", {"GPU6 to GPU2: 'PXN' is not a link class", 8}},
      {"topo/rocm-smi-truncated.txt",
       {"'Link Type between two GPUs' (line 26) names 8 GPUs but has 6 rows (a truncated copy?)", 33}},
      {"topo/rocm-smi-ragged-row.txt",
       {"'Link Type between two GPUs': row GPU3 has 7 cells, the header names 8 GPUs", 31}},
      {"topo/rocm-smi-unknown-link.txt",
       {"'Link Type between two GPUs': GPU2-GPU6 is 'PCIX'; valid: XGMI, PCIE (0 on the diagonal)", 30}},
      {"topo/rocm-smi-xgmi-two-hops.txt",
       {"GPU0-GPU5: XGMI at weight 30 (2 xGMI hops at 15 each): not a direct link", 6}},
      {"topology/gpus-as-list.yaml", {"gpus: expected a single value, not a list or mapping", 6}},
      {"topology/missing-gpu.yaml", {"gpu: required key is missing; is 'gpus' here a misspelling of it?", 5}},
      {"topology/network-without-bandwidth.yaml", {"network.nic_bandwidth: required key is missing", 9}},
      {"topology/nic-bandwidth-in-bits.yaml", {"400Gb/s = 50GB/s", 10}},
      {"topology/nodes-times-per-node.yaml", {"gpus_per_node: nodes (2) x gpus_per_node (4) = 8, but gpus = 16", 7}},
      {"topology/nodes-without-network.yaml", {"nodes: = 2: a multi-node topology needs `network:`", 6}},
      {"topology/nvlink-count-overflow.yaml", {"link: 'NV99999999999' is not a link class", 9}},
      {"topology/cpu-by-marketing-name.yaml",
       {"cpu: 'EPYC 7542' is not a host CPU NCCL tells apart (amd, intel-broadwell, intel-skylake, intel-sapphire-rapids, "
        "intel-emerald-rapids, arm)", 10}},
      {"topology/unknown-link-class.yaml", {"link: 'PCIE' is not a link class (NV#, XGMI, PIX, PXB, PHB, NODE, SYS)", 9}},
      {"topology/zero-gpus.yaml", {"gpus: = 0: must be in [1, 10000000]", 6}},
      {"topology/unknown-failure-check.yaml",
       {"failures_seen[0].check: 'tree-under-graphs' is not one of: nccl-tree-under-graphs, custom-allreduce-sm12x-capture", 10}},
      // Intervention catalogues: preconditions name scenario facts (preconditions.hpp) and their values.
      {"interventions/unknown-precondition.yaml",
       {"interventions[0].when.linkk: not a scenario fact a precondition can test (did you mean 'link'?); the facts: link, p2p", 8}},
      {"interventions/precondition-value.yaml",
       {"interventions[0].when[0].link: 'nvswitch' is not one of: pcie, nvlink, xgmi, network", 9}},
      {"interventions/not-a-field.yaml",
       {"interventions[0].patches[0]: 'parallel.ep' is not a key an intervention can set on a loaded scenario; the keys: workload.batch", 9}},
      {"interventions/constraint-without-condition.yaml",
       {"interventions[0].constraints[0].when: a constraint needs the condition under which the intervention fails", 10}},
  };
  return table;
}

void check_file(const std::string& file, const Expected& want) {
  const auto slash = file.find('/');
  const std::string format = file.substr(0, slash);
  const std::string name = file.substr(slash + 1);
  INFO(file);
  try {
    load(format, name);
    FAIL_CHECK("no error for " << file);
  } catch (const specsim::Error& e) {
    INFO(e.what());
    CHECK_THAT(e.what(), Contains(name));
    CHECK_THAT(e.what(), Contains(want.message));
    // Several problems come as one error listing each with its own place (throw_problems).
    if (want.line > 0 && std::string(e.what()).find(" problems:\n") != std::string::npos) {
      CHECK_THAT(e.what(), Contains(name + ":" + std::to_string(want.line) + ":"));
    } else {
      CHECK(e.where().line == want.line);
    }
  }
}

}  // namespace

TEST_CASE("invalid corpus: every file has an entry and every entry a file", "[invalid]") {
  std::set<std::string> files;
  for (const auto& dir : fs::directory_iterator(kInvalid)) {
    if (!dir.is_directory()) continue;
    for (const auto& entry : fs::directory_iterator(dir.path())) {
      if (!entry.is_regular_file() || entry.path().extension() == ".md") continue;
      files.insert(dir.path().filename().string() + "/" + entry.path().filename().string());
    }
  }
  for (const auto& f : files) {
    INFO("tests/data/invalid/" << f << " has no entry in test_invalid_corpus.cpp");
    CHECK(corpus().count(f) == 1);
  }
  for (const auto& [f, want] : corpus()) {
    INFO("entry " << f << " has no file in tests/data/invalid/");
    CHECK(files.count(f) == 1);
  }
  CHECK(files.size() >= 40);
}

TEST_CASE("invalid corpus: each file fails with its message and line", "[invalid]") {
  for (const auto& [file, want] : corpus()) check_file(file, want);
}

TEST_CASE("fuzz crashers end in a clean specsim::Error", "[invalid][fuzz]") {
  int crashers = 0;
  for (const auto& [file, want] : corpus()) {
    if (!file.starts_with("fuzz/")) continue;
    ++crashers;
    check_file(file, want);
  }
  CHECK(crashers >= 1);
}


TEST_CASE("scenario_problems: every independent problem, each with its file and line (issue 14)", "[invalid]") {
  const std::string file = kInvalid + "scenario/three-problems.yaml";
  const auto problems = specsim::scenario_problems(file, {}, kRoot);
  // The bounds are checked first (workload.batch), then the blocks in reading order: the method
  // with the draft, then tp against llama-3.1-8b's 32 heads (the topology has 4 GPUs, so 3 fits).
  REQUIRE(problems.size() == 3);
  CHECK(problems[0].key_path() == "workload.batch");
  CHECK(problems[0].where().to_string() == file + ":11:10");
  CHECK(problems[1].key_path() == "speculation.method");
  CHECK(problems[1].where().to_string() == file + ":19:11");
  CHECK_THAT(problems[1].message(), Contains("'medusa' is not one of"));
  CHECK(problems[2].key_path() == "parallel.tp");
  CHECK(problems[2].where().to_string() == file + ":9:7");
  CHECK_THAT(problems[2].message(), Contains("tp must divide the 32 attention heads"));
  // load_scenario throws them as one error, one line each.
  CHECK_THROWS_WITH(specsim::load_scenario(file, {}, kRoot),
                    Contains("3 problems:\n  " + file + ":11:10: workload.batch") &&
                        Contains("\n  " + file + ":19:11: speculation.method") &&
                        Contains("\n  " + file + ":9:7: parallel.tp"));
  // A scenario that loads has none.
  CHECK(specsim::scenario_problems(specsim::kDefaultScenario, {}, kRoot).empty());
}

TEST_CASE("scenario_problems: the keys of one block are checked one by one (issue 14)", "[invalid]") {
  // Two keys of workload and two of engine: four problems, each naming its --set option.
  const std::map<std::string, std::string> option{{"workload.batch", "--set workload.batch=0"},
                                                  {"workload.concurrency", "--set workload.concurrency=4,4"},
                                                  {"engine.decode_mode", "--set engine.decode_mode=cuda"},
                                                  {"engine.verify_mode", "--set engine.verify_mode=cuda"}};
  std::vector<std::string> patches;
  for (const auto& [key, set] : option) patches.push_back(set.substr(std::string("--set ").size()));
  const auto problems = specsim::scenario_problems(specsim::kDefaultScenario, patches, kRoot);
  REQUIRE(problems.size() == 4);
  for (const auto& p : problems) {
    REQUIRE(option.count(p.key_path()) == 1);
    CHECK(p.where().file == option.at(p.key_path()));
  }
}
