// An option whose value is one of a few names mapped to an enum (or bool): help and errors show
// the names, `{graph,eager}`, where CLI11's CheckedTransformer prints its map
// (`value in {graph->0,eager->1} OR {0,1}`) and accepts the numbers too.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <utility>
#include <vector>

namespace specsim::cli {

template <typename T>
CLI::Validator choices(std::vector<std::pair<std::string, T>> names) {
  std::string list = "{";
  for (const auto& [name, value] : names) list += (list.size() > 1 ? "," : "") + name;
  list += "}";
  return CLI::Validator(
      [names, list](std::string& input) -> std::string {
        for (const auto& [name, value] : names) {
          if (name == input) {
            // CLI11 then converts the text to T: an enum through its underlying integer.
            input = std::to_string(static_cast<long long>(value));
            return {};
          }
        }
        return "'" + input + "' is not one of " + list;
      },
      list, "choices");
}

// An option that, given, must say something: `--concurrency ""` is an error, not the default.
inline CLI::Validator non_empty() {
  return CLI::Validator([](std::string& input) -> std::string { return input.empty() ? "must not be empty" : ""; },
                        "TEXT", "non_empty");
}

// A seed: digits only, at most 2^64 - 1 (`-1`, `1e23` and `2^64` would otherwise wrap or saturate).
inline CLI::Validator seed_value() {
  return CLI::Validator(
      [](std::string& input) -> std::string {
        const std::string max = "18446744073709551615";
        const bool digits = !input.empty() && input.find_first_not_of("0123456789") == std::string::npos;
        const std::string trimmed = digits ? input.substr(std::min(input.find_first_not_of('0'), input.size() - 1)) : "";
        if (!digits || trimmed.size() > max.size() || (trimmed.size() == max.size() && trimmed > max)) {
          return "'" + input + "' is not a seed: a whole number from 0 to " + max;
        }
        return {};
      },
      "UINT64", "seed");
}

}  // namespace specsim::cli
