// `--emit vllm|sglang|trtllm` on predict, sweep and rank: the command prints the launch of the
// setting it found (emit.hpp) instead of its table, or adds it to its --json under "launch"; and
// the problems a launch of the scenario is known to hit (launch_checks.hpp), as warnings.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "choices.hpp"
#include "specsim/emit.hpp"
#include "specsim/report.hpp"

namespace specsim::cli {

inline CLI::Option* add_emit_option(CLI::App& sub, std::optional<Engine>& engine, const char* what) {
  std::vector<std::pair<std::string, Engine>> names;
  for (const auto& n : engine_names()) names.emplace_back(n, *parse_engine(n));
  return sub.add_option("--emit", engine,
                        std::string("Print the launch that runs ") + what +
                            " on this engine (flags checked at a stated version: docs/references/engine-flags.md); "
                            "with --json, add it under \"launch\"")
      ->transform(choices<Engine>(names))
      ->type_name("ENGINE");
}

// --emit prints a shell snippet or adds to JSON; a CSV row has no place for it.
inline void check_emit_format(const std::optional<Engine>& engine, Format format) {
  if (engine && format == Format::kCsv) {
    throw CLI::ValidationError("--emit", "prints a launch script (text) or adds it to --json; not with CSV");
  }
}

// What the command prints: its own output, or with --emit the launch (text) / its JSON with "launch".
inline std::string emitted(const std::string& rendered, Format format, const std::optional<EmittedLaunch>& launch) {
  if (!launch) return rendered;
  return format == Format::kJson ? with_launch(rendered, *launch) : launch->script;
}

// The rendered output with the launch problems: `warning:` lines after a text, a "launch_problems"
// array in JSON; a CSV stays as it is (the caller says them on stderr).
inline std::string with_problems(const std::string& rendered, Format format, const std::vector<LaunchProblem>& problems) {
  if (problems.empty() || format == Format::kCsv) return rendered;
  if (format == Format::kJson) return with_launch_problems(rendered, problems);
  std::string out = rendered;
  for (const auto& p : problems) out += "warning: " + describe(p) + "\n";
  return out;
}

}  // namespace specsim::cli
