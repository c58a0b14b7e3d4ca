// What a person is about to launch, read back into scenario settings (`specsim init
// --from-command`, `--env`): a `vllm serve ...`, `python -m sglang.launch_server ...` or
// `trtllm-serve ...` line (with the shell's quoting, `\` continuations, `export K=V` lines and a
// `cat > FILE <<'EOF'` heredoc for TensorRT-LLM's options YAML, as `--emit` writes them), and the
// environment it runs in (an env file, a shell export list, or a sitecustomize.py that sets
// os.environ). Flags are looked up in engine_flags.hpp's table, the one `--emit` writes from.
//
// Every flag, config key and variable is either mapped to a scenario key (with the word it came
// from, for the scenario's comments) or listed in `unmodelled`: nothing is dropped silently.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "specsim/engine_flags.hpp"

namespace specsim {

struct LaunchReading {
  Engine engine = Engine::kSglang;
  std::string model;  // as given: a path, a Hugging Face id, or `<path-to-NAME>`
  std::string draft;  // "" when the command names none
  // The scenario's values the launch states, by dotted key ("parallel.tp", "speculation.num_steps",
  // "engine.decode_mode", "comm.nccl_algo", ...), as YAML scalars.
  std::map<std::string, std::string> values;
  // Where each came from: "--tp-size 8", "NCCL_ALGO=Tree (sitecustomize.py:3)".
  std::map<std::string, std::string> origins;
  // Flags, config keys and variables read that no scenario key holds, each as given with why.
  std::vector<std::string> unmodelled;
  // Settings the engine changes from what the launch says, each as given with what the engine runs
  // (SGLang's chain draft tokens); the values above hold what it runs.
  std::vector<std::string> adjusted;
  // How a name of the launch was read where no file has it (init_from_launch: weights read as a known
  // model's file), each with why.
  std::vector<std::string> read_as;
  std::string command;  // the launch command, one line, as the shell would split it
};

// The launch command of `text` (one command; see the header). Throws specsim::Error at
// `--from-command` (with the line) for unbalanced quoting, a flag missing its value, a value that
// is not a number where one is needed, an engine specsim does not read (the known ones listed),
// a method it does not model, two launch commands, and a TensorRT-LLM options file it cannot read.
[[nodiscard]] LaunchReading read_launch_command(const std::string& text);

// KEY=VALUE pairs of an environment file: `KEY=VALUE` or `export KEY=VALUE` lines (shell quoting,
// `#` comments), or, for a file ending in .py, `os.environ["KEY"] = "VALUE"` and
// `os.environ.setdefault("KEY", "VALUE")` lines. Throws specsim::Error at file:line for a line of a
// shell file that is no assignment, and for a .py file that sets none.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> read_env_file(const std::string& path);

// The variables of `env` applied to `r`: NCCL's (NCCL_ALGO, NCCL_PROTO, NCCL_P2P_LEVEL,
// NCCL_MIN/MAX_NCHANNELS) to comm keys, SGLang's SGLANG_ENABLE_SPEC_V2 to engine.spec_version; every
// other variable listed in `unmodelled`, each origin `where` ("sitecustomize.py"). A later call wins
// over an earlier one.
void apply_environment(LaunchReading& r, const std::vector<std::pair<std::string, std::string>>& env,
                       const std::string& where);

}  // namespace specsim
