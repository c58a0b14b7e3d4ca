// Typo hints: the Levenshtein distance between two words, and the closest of a list of known
// words, so a misspelt key, name or subcommand can be answered with "did you mean ...?".
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace specsim {

[[nodiscard]] std::size_t edit_distance(const std::string& a, const std::string& b);

// The known word nearest to `word`, if one is within `max_distance` edits (ties: the first).
[[nodiscard]] std::optional<std::string> closest(const std::string& word, const std::vector<std::string>& known,
                                                 std::size_t max_distance = 2);

}  // namespace specsim
