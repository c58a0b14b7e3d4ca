// The launch that runs a scenario's setting on a serving engine (`specsim predict|sweep|rank
// --emit vllm|sglang|trtllm`): the environment (NCCL_* variables), the command line and, for
// TensorRT-LLM, its extra LLM API options YAML, written with the flags of engine_flags.hpp only. The
// model and draft are the checkpoint directories the scenario names, or placeholders
// (`<path-to-NAME>`) where it names a models/llm file; `init --from-command` reads the placeholders
// back as those names.
//
// A sweep over concurrency levels emits the best setting per level: as TensorRT-LLM's own
// draft_len_schedule when only the draft length changes and the method takes a schedule, else one
// command per level. A setting the engine cannot run (a method it lacks, a tree where specsim
// checked no tree flag) is an error naming the setting and the engine, never a silent wrong flag.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "specsim/concurrency.hpp"
#include "specsim/engine_flags.hpp"
#include "specsim/launch_checks.hpp"
#include "specsim/load.hpp"
#include "specsim/scenario.hpp"
#include "specsim/whatif.hpp"

namespace specsim {

// One command of an emitted launch.
struct LaunchCommand {
  std::optional<int> concurrency;  // the level it is for; empty for a single setting
  std::vector<std::pair<std::string, std::string>> env;  // NCCL_ALGO=Tree, in order
  std::vector<std::string> argv;                          // the command, one word each (unquoted)
  std::string config_name;  // TensorRT-LLM: the YAML file the command reads; "" otherwise
  std::string config_text;  // its text
};

struct EmittedLaunch {
  Engine engine = Engine::kSglang;
  std::string scenario;  // the scenario's name
  std::vector<LaunchCommand> commands;
  // TensorRT-LLM's draft_len_schedule, {largest batch, draft length} ascending; empty when none.
  std::vector<std::pair<int, int>> schedule;
  std::vector<std::string> notes;        // what the scenario says that no emitted flag carries
  std::vector<LaunchProblem> problems;   // launch_problems() of the scenario(s)
  std::vector<std::string> checked_against;  // flag_sources(engine)
  std::string script;  // the whole launch as a shell snippet (comments, exports, heredoc, command)
};

// The launch of `s` as it stands, its CUDA graphs covering s.batch (and s.concurrency's largest).
// Throws specsim::Error at `--emit` naming the setting the engine cannot run.
[[nodiscard]] EmittedLaunch emit_launch(const Scenario& s, Engine engine);

// The best setting per concurrency level (ascending). `speculate` false: plain decoding pays
// better at that level (the command leaves speculation off, a schedule gives draft length 0).
struct EmitLevel {
  int concurrency = 1;
  Scenario scenario;
  bool speculate = true;
};
[[nodiscard]] EmittedLaunch emit_launch(const std::vector<EmitLevel>& levels, Engine engine);

// What to emit for a sweep or a ranking, as scenarios: `--set` patches that give a sweep point's
// values (key=value per axis); each level's best point of a concurrency sweep, loaded with
// `patches` at batch = its concurrency (infeasible levels left out; speculate = the point pays);
// the scenario with rank's top pick applied (the feasible intervention of the largest gain; the
// scenario as it stands when none gains).
[[nodiscard]] std::vector<std::string> point_patches(const std::vector<std::string>& keys, const SweepPoint& point);
[[nodiscard]] std::vector<EmitLevel> emit_levels(const std::string& scenario, const std::vector<std::string>& patches,
                                                 const ConcurrencySweep& sweep, const DataDir& data = DataDir());
[[nodiscard]] Scenario top_pick(const std::string& scenario, const std::vector<std::string>& patches,
                                const RankReport& report, const DataDir& data = DataDir());

// One command as a shell line: words quoted where the shell would split or expand them.
[[nodiscard]] std::string shell_line(const std::vector<std::string>& argv);

// The launch as a JSON object (`launch` in predict, sweep and rank --json): engine, scenario,
// checked_against, script, commands[{concurrency, env{}, argv[], command, config_file{name, text}}],
// schedule[{max_batch, draft_len}] or null, notes[], problems[{setting, reason, fix, fails}].
[[nodiscard]] std::string launch_json(const EmittedLaunch& launch);
// `document` (one JSON object) with `launch` added under "launch"; throws when it is no object.
[[nodiscard]] std::string with_launch(const std::string& document, const EmittedLaunch& launch);
// `document` with the problems under "launch_problems" ([{setting, reason, fix, fails}]).
[[nodiscard]] std::string with_launch_problems(const std::string& document, const std::vector<LaunchProblem>& problems);

}  // namespace specsim
