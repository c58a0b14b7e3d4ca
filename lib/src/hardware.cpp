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
  if (parse_nvlink_count(text) > 0) return LinkClass::kNvlink;
  return std::nullopt;
}

int parse_nvlink_count(const std::string& text) {
  // At most three digits: no box bonds 1000 links, and it keeps the number clear of overflow.
  if (text.size() < 3 || text.size() > 5 || !text.starts_with("NV")) return 0;
  int n = 0;
  for (std::size_t i = 2; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return 0;
    n = n * 10 + (text[i] - '0');
  }
  return n;
}

std::string link_name(LinkClass c, int nvlinks) {
  return c == LinkClass::kNvlink ? "NV" + std::to_string(nvlinks) : std::string(to_string(c));
}

bool slower_link(LinkClass a, int a_nvlinks, LinkClass b, int b_nvlinks) {
  if (a != b) return static_cast<int>(a) > static_cast<int>(b);  // enum order is fastest first
  return a == LinkClass::kNvlink && a_nvlinks < b_nvlinks;
}

std::pair<LinkClass, int> slowest_pair_link(const Topology& t) {
  std::optional<std::pair<LinkClass, int>> slowest;
  for (std::size_t i = 0; i < t.pair_links.size(); ++i) {
    for (std::size_t j = 0; j < t.pair_links[i].size(); ++j) {
      if (i == j) continue;
      const LinkClass c = t.pair_links[i][j];
      const int n = i < t.pair_nvlinks.size() && j < t.pair_nvlinks[i].size() ? t.pair_nvlinks[i][j] : 0;
      if (!slowest || slower_link(c, n, slowest->first, slowest->second)) slowest = {c, n};
    }
  }
  return slowest ? *slowest : std::make_pair(t.link, t.nvlinks);
}

const char* to_string(LaunchMode m) { return m == LaunchMode::kGraph ? "graph" : "eager"; }

}  // namespace specsim
