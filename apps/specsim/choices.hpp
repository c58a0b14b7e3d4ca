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

}  // namespace specsim::cli
