#include "report/csv.hpp"

#include <algorithm>
#include <cctype>

namespace specsim {

namespace {

// RFC 4180: a field holding a comma, a quote or a line break is quoted, quotes doubled.
std::string quoted(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

// The item of `array` a path key names, or null.
const nlohmann::json* array_item(const nlohmann::json& array, const std::string& key) {
  std::size_t index = 0;
  if (key == "low" || key == "high") {
    index = key == "low" ? 0 : 1;
  } else if (!key.empty() && std::all_of(key.begin(), key.end(), [](unsigned char c) { return std::isdigit(c); })) {
    index = std::stoul(key);
    if (index == 0) return nullptr;
    --index;  // counted from 1
  } else {
    return nullptr;
  }
  return index < array.size() ? &array[index] : nullptr;
}

const nlohmann::json* find(const nlohmann::json& row, const std::vector<std::string>& keys) {
  const nlohmann::json* node = &row;
  for (const auto& key : keys) {
    if (node->is_object()) {
      const auto it = node->find(key);
      node = it == node->end() ? nullptr : &*it;
    } else if (node->is_array()) {
      node = array_item(*node, key);
    } else {
      node = nullptr;
    }
    if (!node) return nullptr;
  }
  return node;
}

// A value spelled as the JSON view spells it, without a string's quotes.
std::string spelled(const nlohmann::json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array()) {
    std::string out;
    for (const auto& item : value) out += (out.empty() ? "" : "; ") + spelled(item);
    return out;
  }
  return value.dump();
}

}  // namespace

CsvColumn::CsvColumn(const char* key_path) : header(key_path) {
  std::string key;
  for (const char* c = key_path; *c; ++c) {
    if (*c == '.') {
      keys.push_back(key);
      key.clear();
    } else {
      key += *c;
    }
  }
  keys.push_back(key);
}

CsvColumn::CsvColumn(std::string header, std::vector<std::string> keys)
    : header(std::move(header)), keys(std::move(keys)) {}

std::string csv_table(const std::vector<CsvColumn>& columns, const nlohmann::json& rows) {
  std::string out;
  for (std::size_t i = 0; i < columns.size(); ++i) out += (i ? "," : "") + quoted(columns[i].header);
  out += "\n";
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < columns.size(); ++i) {
      const nlohmann::json* value = find(row, columns[i].keys);
      out += (i ? "," : "") + quoted(value ? spelled(*value) : "");
    }
    out += "\n";
  }
  return out;
}

}  // namespace specsim
