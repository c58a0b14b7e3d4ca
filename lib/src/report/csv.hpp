// The CSV view of a result, read off its JSON value (report.hpp says the rules): a column names a
// path of keys, so a cell is its JSON value spelled the same way and the two views cannot disagree.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace specsim {

// A column: its header and the keys that lead to its value in a row's JSON object. A key that
// meets an array picks an item: `low` / `high` the first and second of two bounds, a number counts
// from 1 (`per_position.1`, the first draft position).
struct CsvColumn {
  CsvColumn(const char* key_path);  // "speculative.tokens_per_s": the header is the path, split at dots
  CsvColumn(std::string header, std::vector<std::string> keys);
  std::string header;
  std::vector<std::string> keys;
};

// The header row, then a row per object of `rows` (a JSON array). A path that leads nowhere or to
// null is an empty field; a list of values is one field, "; " between them.
[[nodiscard]] std::string csv_table(const std::vector<CsvColumn>& columns, const nlohmann::json& rows);

}  // namespace specsim
