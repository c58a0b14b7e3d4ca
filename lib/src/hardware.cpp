#include "specsim/hardware.hpp"

#include <cctype>

namespace specsim {

const char* to_string(LinkClass c) {
  switch (c) {
    case LinkClass::kNvlink: return "NV";
    case LinkClass::kPix: return "PIX";
    case LinkClass::kPxb: return "PXB";
    case LinkClass::kPhb: return "PHB";
    case LinkClass::kNode: return "NODE";
    case LinkClass::kSys: return "SYS";
  }
  return "?";
}

std::optional<LinkClass> parse_link_class(const std::string& text) {
  if (text == "PIX") return LinkClass::kPix;
  if (text == "PXB") return LinkClass::kPxb;
  if (text == "PHB") return LinkClass::kPhb;
  if (text == "NODE") return LinkClass::kNode;
  if (text == "SYS") return LinkClass::kSys;
  if (text.size() > 2 && text.starts_with("NV")) {
    for (std::size_t i = 2; i < text.size(); ++i) {
      if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
    }
    return LinkClass::kNvlink;
  }
  return std::nullopt;
}

const char* to_string(LaunchMode m) { return m == LaunchMode::kGraph ? "graph" : "eager"; }

}  // namespace specsim
