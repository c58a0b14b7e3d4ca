// Writes a new scenario from what a person knows about a deployment before measuring anything: the
// target and draft models, the box, the engine and the tensor-parallel degree (`specsim init`).
// Every other value is either written with a comment that says where it comes from ("prior: ..."
// for a default that has a source, "assumption: ..." for a guess nobody measured), or left to the
// loader's prior and named in a comment, so that `specsim predict` still reports it as a prior
// (a value written into the file would read as "set" and lose the spread of the engine's prior).
// The text is loaded back before it is returned: a scenario that is written is one that loads.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "specsim/launch_command.hpp"
#include "specsim/load.hpp"

namespace specsim {

struct ScenarioInit {
  std::string model;     // models/llm name, a model file, or a checkpoint directory holding config.json
  // The drafter, named the same ways: an EAGLE-3 or EAGLE-1/2 head, a DFlash drafter or a small full
  // model; none for mtp (the model's own MTP layers) and ngram (prompt lookup).
  std::string draft;
  // eagle3, eagle, mtp, draft_model, ngram or dflash; "" = what the draft is (an EAGLE head, a
  // DFlash drafter, a full model), or mtp without a draft when the model has MTP layers.
  std::string method;
  std::string topology;  // models/topology name or file, or a saved `nvidia-smi topo -m` output
  // models/gpu name or file. Required with topo -m output, which never names the card; with a
  // topology file it replaces the card the file names (the scenario's `gpu:` key).
  std::string gpu;
  std::string engine = "sglang";  // models/engines name: its speculative overheads are the priors
  int tp = 1;
  std::optional<int> batch;          // unset: 1 request, an assumption
  std::optional<long long> context;  // unset: 2048 tokens in each request's KV cache, an assumption
  std::optional<double> accept;      // first draft position's acceptance; unset: 0.7, an assumption
  // Or the acceptance as the engine measured it (at most one of the three): tau, or the average over
  // drafted tokens (vLLM's "Avg Draft acceptance rate", accepted / drafted; docs/acceptance.md#rates).
  std::optional<double> accept_length;
  std::optional<double> draft_acceptance_rate;
  // The draft's shape as published (a paper's or benchmark's K, top-k, draft tokens verified): each
  // replaces the launch's value and init's assumption (3 steps, a chain). Unset num_draft_tokens of a
  // chain is num_steps + 1. Block drafters (dflash) take none of them.
  std::optional<int> num_steps;
  std::optional<int> eagle_topk;
  std::optional<int> num_draft_tokens;
  // The measured plain rate over the batch, as a file writes it ("82tok/s"): measurements.baseline,
  // which calibrates the host time per step. "" = none yet.
  std::string plain_rate;
  // The plain rate is end to end (output tokens / wall time, prefill included: a benchmark's
  // output throughput): measurements.baseline.includes_prefill.
  bool plain_end_to_end = false;
  // That end-to-end benchmark's mean prompt and output tokens per request (both or neither):
  // measurements.baseline.prompt_tokens / output_tokens, which price the prefill the rate holds.
  std::optional<long long> prompt_tokens;
  std::optional<long long> output_tokens;
  // That benchmark's mean time per output token of one request (vllm bench serve's Mean TPOT), as a
  // file writes it ("7.1ms"): measurements.baseline.tpot, which splits the end-to-end residual into
  // host time per step and prefill per output token. "" = not given.
  std::string plain_tpot;
  // The engine's speculative worker version (engine.spec_version: SGLang v1, or v2 =
  // SGLANG_ENABLE_SPEC_V2, the default of its 2026 builds). "" = the launch's environment, else the
  // engine file's default_spec_version, which the file then names in a comment.
  std::string spec_version;
  std::string name;     // scenario name; "" = "<model>-<draft>-<topology>-tp<tp>"
  std::string command;  // the command line that asked for it, recorded in the file's `source:`
  // What a launch line and its environment state (`init --from-command`, `--env`): its values
  // replace the assumptions, each commented with the flag or variable it came from, and what no
  // scenario key holds is listed in a comment block. Empty: the assumptions stand.
  std::optional<LaunchReading> launch;
};

// `init` completed from a launch: the engine, tp and the model and draft names the command gives
// where `init` leaves them empty (`--model`, `--draft`, `--tp` win). A command's weights resolve to
// a models/llm name when they are a `<path-to-NAME>` placeholder or a path ending in a known name
// (`moonshotai/Kimi-K2.5` -> kimi-k2.5), else to a checkpoint directory that exists. Throws
// specsim::Error at `--from-command` naming the weights that resolve to nothing, with the fix
// (`--model NAME`, `--draft NAME`).
[[nodiscard]] ScenarioInit init_from_launch(ScenarioInit init, const LaunchReading& launch, const DataDir& data = DataDir());

// The scenario as commented YAML. Throws specsim::Error naming the option that carried a bad
// value (`--model`, `--draft`, `--method`, `--topology`, `--gpu`, `--engine`, `--tp`, ...) and the
// scenario key it feeds: an unknown name (the error lists the known ones), a draft that does not fit
// the model or the method, a tp the box or the model's heads cannot take, and a deployment that does
// not fit in GPU memory at that tp (memory_fit.hpp; the error names the smallest tp of the box that
// fits, if any), so that what init writes is what predict accepts.
[[nodiscard]] std::string render_scenario_init(const ScenarioInit& init, const DataDir& data = DataDir());

// The speculation methods init writes, in the order `--method` lists them.
[[nodiscard]] std::vector<std::string> init_methods();

}  // namespace specsim
