// `--format text|json|csv` on a subcommand, with the flags that say the same in one word: `--json`
// on every command that prints a result, `--csv` where it was there before (sweep, validate).
// They exclude each other, so a command line never asks for two formats.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <utility>
#include <vector>

#include "choices.hpp"
#include "specsim/report.hpp"

namespace specsim::cli {

struct FormatFlags {
  const char* json_help = "Print one JSON object (--format json)";
  bool csv_flag = false;
};

inline void add_format_option(CLI::App& sub, Format& format, const FormatFlags& flags = {}) {
  std::vector<std::pair<std::string, Format>> names;
  for (Format f : kFormats) names.emplace_back(to_string(f), f);
  CLI::Option* option = sub.add_option("--format", format, "Output format: text (a table), json or csv")
                            ->transform(choices<Format>(names))
                            ->type_name("FORMAT")
                            ->default_str(to_string(format));
  CLI::Option* json = sub.add_flag_callback("--json", [&format] { format = Format::kJson; }, flags.json_help);
  json->excludes(option);
  if (flags.csv_flag) {
    CLI::Option* csv = sub.add_flag_callback("--csv", [&format] { format = Format::kCsv; }, "Print CSV (--format csv)");
    csv->excludes(option)->excludes(json);
  }
}

}  // namespace specsim::cli
