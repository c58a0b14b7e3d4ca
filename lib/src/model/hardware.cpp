#include "specsim/hardware.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdint>
#include <string>
#include <utility>

namespace specsim {

namespace {
constexpr std::pair<GpuArch, const char*> kArchNames[] = {{GpuArch::kVolta, "volta"},   {GpuArch::kAmpere, "ampere"},
                                                          {GpuArch::kAda, "ada"},       {GpuArch::kHopper, "hopper"},
                                                          {GpuArch::kBlackwell, "blackwell"}, {GpuArch::kCdna3, "cdna3"},
                                                          {GpuArch::kCdna4, "cdna4"}};
}  // namespace

bool is_amd(GpuArch a) { return a == GpuArch::kCdna3 || a == GpuArch::kCdna4; }

const char* collective_library(GpuArch a) { return is_amd(a) ? "RCCL" : "NCCL"; }

const char* to_string(GpuArch a) {
  for (const auto& [arch, name] : kArchNames) {
    if (arch == a) return name;
  }
  return "?";
}

std::vector<std::string> gpu_arch_names() {
  std::vector<std::string> names;
  for (const auto& [arch, name] : kArchNames) names.emplace_back(name);
  return names;
}

std::optional<GpuArch> parse_gpu_arch(const std::string& text) {
  for (const auto& [arch, name] : kArchNames) {
    if (text == name) return arch;
  }
  return std::nullopt;
}

const char* to_string(LinkClass c) {
  switch (c) {
    case LinkClass::kNvlink: return "NV";
    case LinkClass::kXgmi: return "XGMI";
    case LinkClass::kPix: return "PIX";
    case LinkClass::kPxb: return "PXB";
    case LinkClass::kPhb: return "PHB";
    case LinkClass::kNode: return "NODE";
    case LinkClass::kSys: return "SYS";
  }
  return "?";
}

namespace {
constexpr std::pair<HostCpu, const char*> kHostCpuNames[] = {
    {HostCpu::kAmd, "amd"},
    {HostCpu::kIntelBroadwell, "intel-broadwell"},
    {HostCpu::kIntelSkylake, "intel-skylake"},
    {HostCpu::kIntelSapphireRapids, "intel-sapphire-rapids"},
    {HostCpu::kIntelEmeraldRapids, "intel-emerald-rapids"},
    {HostCpu::kArm, "arm"}};
}  // namespace

const char* to_string(HostCpu c) {
  for (const auto& [cpu, name] : kHostCpuNames) {
    if (cpu == c) return name;
  }
  return "?";
}

std::optional<HostCpu> parse_host_cpu(const std::string& text) {
  for (const auto& [cpu, name] : kHostCpuNames) {
    if (text == name) return cpu;
  }
  return std::nullopt;
}

std::string host_cpu_names() {
  std::string out;
  for (const auto& [cpu, name] : kHostCpuNames) out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

namespace {
constexpr std::pair<NetworkKind, const char*> kNetworkKindNames[] = {
    {NetworkKind::kInfiniband, "infiniband"}, {NetworkKind::kRoce, "roce"}, {NetworkKind::kEthernet, "ethernet"}};
}  // namespace

const char* to_string(NetworkKind k) {
  for (const auto& [kind, name] : kNetworkKindNames) {
    if (kind == k) return name;
  }
  return "infiniband";
}

std::optional<NetworkKind> parse_network_kind(const std::string& text) {
  for (const auto& [kind, name] : kNetworkKindNames) {
    if (text == name) return kind;
  }
  return std::nullopt;
}

std::optional<LinkClass> parse_link_class(const std::string& text) {
  if (text == "XGMI") return LinkClass::kXgmi;
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

std::optional<int> parse_numa_node(std::string_view text) {
  if (text.empty() || text.size() > 4) return std::nullopt;
  int node = 0;
  for (const char ch : text) {
    if (ch < '0' || ch > '9') return std::nullopt;
    node = node * 10 + (ch - '0');
  }
  if (node > kMaxNumaNode) return std::nullopt;
  return node;
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

namespace {

// True when the graph `adjacent` (bit j of adjacent[i]: GPUs i and j may be neighbours on the ring)
// has a cycle through all n GPUs. Held-Karp style: reach[mask] holds the GPUs a path from GPU 0
// through exactly the GPUs of mask can end at.
bool has_ring(const std::vector<std::uint32_t>& adjacent) {
  const auto n = adjacent.size();
  if (n == 2) return (adjacent[0] & 2u) != 0;
  std::vector<std::uint32_t> reach(std::size_t{1} << n, 0);
  reach[1] = 1;
  for (std::uint32_t mask = 1; mask < reach.size(); mask += 2) {  // paths always hold GPU 0
    for (std::size_t v = 0; v < n; ++v) {
      if (!(reach[mask] >> v & 1u)) continue;
      std::uint32_t next = adjacent[v] & ~mask;
      while (next) {
        const auto w = static_cast<std::size_t>(std::countr_zero(next));
        next &= next - 1;
        reach[mask | (1u << w)] |= 1u << w;
      }
    }
  }
  const std::uint32_t full = static_cast<std::uint32_t>(reach.size() - 1);
  return (reach[full] & adjacent[0]) != 0;
}

}  // namespace

std::pair<LinkClass, int> ring_link(const Topology& t) {
  const std::size_t n = t.pair_links.size();
  if (n < 2) return {t.link, t.nvlinks};
  if (n > static_cast<std::size_t>(kMaxRingSearchGpus)) return slowest_pair_link(t);
  const auto nvlinks = [&](std::size_t i, std::size_t j) {
    return i < t.pair_nvlinks.size() && j < t.pair_nvlinks[i].size() ? t.pair_nvlinks[i][j] : 0;
  };
  // Candidate classes, fastest first.
  std::vector<std::pair<LinkClass, int>> classes;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      const std::pair<LinkClass, int> c{t.pair_links[i][j], nvlinks(i, j)};
      if (std::find(classes.begin(), classes.end(), c) == classes.end()) classes.push_back(c);
    }
  }
  std::sort(classes.begin(), classes.end(), [](const auto& a, const auto& b) {
    return slower_link(b.first, b.second, a.first, a.second);
  });
  for (const auto& c : classes) {
    std::vector<std::uint32_t> adjacent(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        if (i != j && !slower_link(t.pair_links[i][j], nvlinks(i, j), c.first, c.second)) adjacent[i] |= 1u << j;
      }
    }
    if (has_ring(adjacent)) return c;
  }
  return slowest_pair_link(t);  // unreachable: with every pair allowed the complete graph has a ring
}

const char* to_string(LaunchMode m) {
  switch (m) {
    case LaunchMode::kGraph: return "graph";
    case LaunchMode::kEager: return "eager";
    case LaunchMode::kPiecewise: return "piecewise";
  }
  return "graph";
}

}  // namespace specsim
