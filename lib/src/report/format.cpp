#include "specsim/report.hpp"

namespace specsim {

const char* to_string(Format format) {
  switch (format) {
    case Format::kText: return "text";
    case Format::kJson: return "json";
    case Format::kCsv: return "csv";
  }
  return "?";
}

std::optional<Format> parse_format(std::string_view name) {
  for (Format f : kFormats) {
    if (name == to_string(f)) return f;
  }
  return std::nullopt;
}

}  // namespace specsim
