// specsim init: a new, commented scenario from the models, the box, the engine and TP
// (render_scenario_init in scenario_writer.hpp), printed or written with -o.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <optional>
#include <ostream>

#include "choices.hpp"
#include "cli.hpp"
#include "specsim/error.hpp"
#include "specsim/launch_command.hpp"
#include "specsim/load.hpp"
#include "specsim/output_file.hpp"
#include "specsim/scenario_writer.hpp"
#include "specsim/units.hpp"

namespace specsim::cli {

namespace {

struct InitOptions {
  ScenarioInit init;
  std::optional<int> batch;
  std::optional<long long> context;
  std::optional<double> accept;
  std::string output;  // "" = stdout
  bool force = false;
  std::string from_command;  // a launch line (and its exports) to read the settings from
  std::string env_file;      // its environment: env file, export list or sitecustomize.py
};

// The command as typed, for the file's `source:` (paths and names only; nothing secret goes in).
std::string command_line(const InitOptions& o) {
  const ScenarioInit& i = o.init;
  std::string cmd = "specsim init";
  if (!o.from_command.empty()) cmd += " --from-command '...'";
  if (!o.env_file.empty()) cmd += " --env " + o.env_file;
  if (!i.model.empty()) cmd += " --model " + i.model;
  if (!i.draft.empty()) cmd += " --draft " + i.draft;
  if (!i.method.empty()) cmd += " --method " + i.method;
  cmd += " --topology " + i.topology;
  if (!i.gpu.empty()) cmd += " --gpu " + i.gpu;
  if (o.from_command.empty()) cmd += " --engine " + i.engine;
  if (i.tp > 0) cmd += " --tp " + std::to_string(i.tp);
  if (o.batch) cmd += " --batch " + std::to_string(*o.batch);
  if (o.context) cmd += " --context " + std::to_string(*o.context);
  if (o.accept) cmd += " --accept " + units::format_fixed(*o.accept, 3);
  if (i.accept_length) cmd += " --accept-length " + units::format_fixed(*i.accept_length, 3);
  if (i.draft_acceptance_rate) cmd += " --draft-acceptance-rate " + units::format_fixed(*i.draft_acceptance_rate, 3);
  if (!i.plain_rate.empty()) cmd += " --plain-rate " + i.plain_rate;
  if (i.plain_end_to_end) cmd += " --plain-end-to-end";
  if (i.prompt_tokens) cmd += " --prompt-tokens " + std::to_string(*i.prompt_tokens);
  if (i.output_tokens) cmd += " --output-tokens " + std::to_string(*i.output_tokens);
  if (!i.plain_tpot.empty()) cmd += " --plain-tpot " + i.plain_tpot;
  if (i.num_steps) cmd += " --num-steps " + std::to_string(*i.num_steps);
  if (i.eagle_topk) cmd += " --topk " + std::to_string(*i.eagle_topk);
  if (i.num_draft_tokens) cmd += " --num-draft-tokens " + std::to_string(*i.num_draft_tokens);
  if (!i.spec_version.empty()) cmd += " --spec-version " + i.spec_version;
  if (!i.name.empty()) cmd += " --name " + i.name;
  return cmd;
}

// The files init reads for its --model, --draft, --topology and --gpu (names resolved in the data
// directory, paths and checkpoint config.json files as given): the output may never be one of them,
// --force or not.
std::vector<std::string> files_read(const ScenarioInit& i) {
  const DataDir data;
  std::vector<std::string> read;
  const auto add = [&](DataKind kind, const std::string& name) {
    if (name.empty()) return;
    read.push_back(name);
    read.push_back((std::filesystem::path(name) / "config.json").string());
    try {
      read.push_back(data.resolve(kind, name));
    } catch (const Error&) {
      // Not a data-directory name: the path itself is the input, added above.
    }
  };
  add(DataKind::kModel, i.model);
  add(DataKind::kModel, i.draft);
  add(DataKind::kTopology, i.topology);
  add(DataKind::kGpu, i.gpu);
  return read;
}

// --from-command and --env read into the init (library: launch_command.hpp, scenario_writer.hpp);
// what no scenario key holds is printed as a warning too.
ScenarioInit read_launch(const InitOptions& o, Io& io) {
  ScenarioInit init = o.init;
  // The options CLI11 would call required, in their order, where a launch cannot give them.
  if (o.from_command.empty()) {
    if (!o.env_file.empty()) throw CLI::ValidationError("--env", "reads the environment of a --from-command launch; give one");
    if (init.model.empty()) throw CLI::RequiredError("--model");
  }
  if (init.topology.empty()) throw CLI::RequiredError("--topology");
  if (o.from_command.empty()) {
    if (init.tp == 0) throw CLI::RequiredError("--tp");
    return init;
  }
  LaunchReading reading = read_launch_command(o.from_command);
  if (!o.env_file.empty()) apply_environment(reading, read_env_file(o.env_file), o.env_file);
  init = init_from_launch(init, reading);
  for (const auto& u : init.launch->unmodelled) io.err << "specsim: warning: not modelled: " << u << "\n";
  for (const auto& a : reading.adjusted) io.err << "specsim: warning: the engine adjusts " << a << "\n";
  for (const auto& r : init.launch->read_as) io.err << "specsim: note: " << r << "\n";
  return init;
}

void run_init(const InitOptions& o, Io& io) {
  ScenarioInit init = read_launch(o, io);
  OutputOptions output;
  output.force = o.force;
  output.inputs = files_read(init);
  if (!o.env_file.empty()) output.inputs.push_back(o.env_file);
  output.exclusive = !o.force;  // without --force init creates, and of two at once one wins
  if (!o.output.empty()) {
    // A scenario is edited by hand after init: replacing one silently would lose that work.
    std::error_code ec;
    if (std::filesystem::exists(o.output, ec) && !o.force) {
      throw Error({"-o", 0, 0}, o.output, "already exists; pass --force to replace it");
    }
    check_output_target(o.output, output);
  }
  init.batch = o.batch;
  init.context = o.context;
  init.accept = o.accept;
  if (init.name.empty() && !o.output.empty()) init.name = std::filesystem::path(o.output).stem().string();
  init.command = command_line(o);
  const std::string text = render_scenario_init(init);
  if (o.output.empty()) {
    io.out << text;
    return;
  }
  // Read the temporary file back with the loader, so a file that is written is one that loads.
  write_file_atomically(o.output, text, output, [](const std::string& tmp) { (void)load_scenario(tmp); });
  io.out << "wrote " << o.output << "; next: specsim predict --scenario " << o.output << "\n";
}

// What a published run states beside the deployment: its acceptance (at most one form), its plain
// rate with the benchmark's lengths, and the draft's shape.
void add_published_run_options(CLI::App* sub, InitOptions* opts) {
  auto* accept = sub->add_option("--accept", opts->accept, "First draft position's acceptance (default 0.7, an assumption)")
                     ->check(CLI::Range(0.0, 1.0));
  auto* length = sub->add_option("--accept-length", opts->init.accept_length,
                                 "Measured tokens per cycle (tau, bonus token included), in place of --accept")
                     ->check(CLI::Range(1.0, 1e6));
  auto* rate = sub->add_option("--draft-acceptance-rate", opts->init.draft_acceptance_rate,
                               "Accepted over drafted tokens at the written draft shape (vLLM's 'Avg Draft "
                               "acceptance rate'; SGLang's 'accept rate' is tau / num_draft_tokens), in place of --accept")
                   ->check(CLI::Range(0.0, 1.0));
  accept->excludes(length)->excludes(rate);
  length->excludes(rate);
  auto* plain = sub->add_option("--plain-rate", opts->init.plain_rate,
                                "Measured plain-decoding rate over the batch, units as in files (82tok/s): "
                                "measurements.baseline, which calibrates the host time per step")
                    ->check(non_empty());
  auto* end_to_end =
      sub->add_flag("--plain-end-to-end", opts->init.plain_end_to_end,
                    "The plain rate is output tokens over wall time, prefill included (a benchmark's output throughput)")
          ->needs(plain);
  auto* prompt = sub->add_option("--prompt-tokens", opts->init.prompt_tokens,
                                 "That benchmark's mean prompt tokens per request (with --output-tokens): prices the "
                                 "prefill the end-to-end rate holds")
                     ->check(CLI::Range(1LL, 100'000'000LL))
                     ->needs(end_to_end);
  sub->add_option("--output-tokens", opts->init.output_tokens,
                  "That benchmark's mean output tokens per request (with --prompt-tokens)")
      ->check(CLI::Range(1LL, 100'000'000LL))
      ->needs(end_to_end)
      ->needs(prompt);
  prompt->needs("--output-tokens");
  sub->add_option("--plain-tpot", opts->init.plain_tpot,
                  "That benchmark's mean time per output token of one request (vllm bench serve's Mean TPOT, "
                  "7.1ms): splits the end-to-end residual into host per step and prefill")
      ->check(non_empty())
      ->needs(end_to_end);
  sub->add_option("--num-steps", opts->init.num_steps,
                  "Draft steps per cycle as published (K, num_speculative_tokens; default 3, an assumption)")
      ->check(CLI::Range(1, 64));
  sub->add_option("--topk", opts->init.eagle_topk, "Tree branching per step (default 1: a chain)")->check(CLI::Range(1, 64));
  sub->add_option("--num-draft-tokens", opts->init.num_draft_tokens,
                  "Draft tokens verified per cycle (a tree's; a chain's is num_steps + 1)")
      ->check(CLI::Range(1, 4096));
  sub->add_option("--spec-version", opts->init.spec_version,
                  "The engine's speculative worker where its file prices versions apart: SGLang v1, or v2 "
                  "(SGLANG_ENABLE_SPEC_V2, the default of its 2026 builds); default: the launch's environment, else "
                  "the engine file's default (engine.spec_version, docs/schema.md#engine)")
      ->check(CLI::IsMember({"v1", "v2"}));
}

}  // namespace

void setup_init(CLI::App& app, Io& io) {
  auto opts = std::make_shared<InitOptions>();
  CLI::App* sub = app.add_subcommand(
      "init", "Write a new scenario, every value commented as an input, a prior with its source, or an assumption");
  sub->add_option("--model", opts->init.model,
                  "Target model: models/llm name, model file, or checkpoint directory holding config.json "
                  "(default with --from-command: the launch's weights, when they name a known model)");
  sub->add_option("--draft", opts->init.draft,
                  "The drafter, named the same ways: an EAGLE-3 or EAGLE head, a DFlash drafter or a small full model "
                  "(none for --method mtp or ngram; with --from-command, needed when the launch's draft path is no "
                  "known name)");
  sub->add_option("--method", opts->init.method,
                  "Speculation method (default: the launch's with --from-command, else what --draft is, or mtp for a "
                  "model with MTP layers)")
      ->check(CLI::IsMember(init_methods()));
  sub->add_option("--topology", opts->init.topology,
                  "The box: models/topology name or file, or saved `nvidia-smi topo -m` output (then --gpu is "
                  "required); required");
  sub->add_option("--gpu", opts->init.gpu,
                  "GPU model (models/gpu name or file): required with topo -m output; otherwise replaces the "
                  "topology's card");
  auto* engine = sub->add_option("--engine", opts->init.engine,
                                 "Engine whose defaults (launch modes, the method's depth or block) and speculative "
                                 "overheads are the priors (models/engines)")
                     ->capture_default_str();
  opts->init.tp = 0;  // 0: not given (required without --from-command, which can state it)
  sub->add_option("--tp", opts->init.tp, "Tensor-parallel ranks (default: the launch's with --from-command)")
      ->check(CLI::Range(1, 1024));
  sub->add_option("--from-command", opts->from_command,
                  "A launch to read the settings from: `vllm serve ...` (or `python -m vllm.entrypoints.openai.api_server ...`), `python -m sglang.launch_server ...` or "
                  "`trtllm-serve ...` with its exports (what --emit prints); unmodelled flags are listed")
      ->check(non_empty())
      ->excludes(engine);
  sub->add_option("--env", opts->env_file,
                  "The launch's environment: KEY=VALUE lines, `export` lines, or a sitecustomize.py setting os.environ")
      ->check(CLI::ExistingFile);
  sub->add_option("--batch", opts->batch, "Requests decoded together (default 1, marked as an assumption)")
      ->check(CLI::Range(1, 1'000'000));
  sub->add_option("--context", opts->context, "Tokens in each request's KV cache (default 2048, an assumption)")
      ->check(CLI::Range(0LL, 100'000'000LL));
  add_published_run_options(sub, opts.get());
  sub->add_option("--name", opts->init.name, "Scenario name (default: the output file's stem, else from the inputs)");
  sub->add_option("-o,--output", opts->output, "Scenario file to write (default: print it); never replaces a file "
                                               "without --force");
  sub->add_flag("--force", opts->force, "Replace an existing (or read-only) output file");
  sub->callback([opts, &io]() { run_init(*opts, io); });
}

}  // namespace specsim::cli
