// The readers of models/gpu/*.yaml (a card's memory, bandwidths, peak rates and links) and of
// models/topology/*.yaml (a box: its GPUs, the link between each pair, their NUMA nodes, the nodes
// and the network between them, and what was measured on this box alone).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "io/interventions.hpp"
#include "io/readers.hpp"
#include "specsim/hardware.hpp"
#include "specsim/launch_checks.hpp"
#include "specsim/units.hpp"
#include "util/yaml_reader.hpp"

namespace specsim {

using detail::count;
using detail::kMaxCount;
using detail::read_topology_keys;
using detail::YamlReader;
using units::Quantity;

namespace {

GpuSpec read_gpu(YamlReader& r) {
  r.expect_header("gpu");
  GpuSpec g;
  g.name = r.string("name");
  g.description = r.optional_string("description", "");
  r.ignore("source");
  g.memory_bytes = r.quantity("memory", Quantity::kBytes);
  g.memory_bandwidth_bytes_per_s = r.quantity("memory_bandwidth", Quantity::kBandwidth);
  g.bf16_flop_per_s = r.quantity("bf16_dense", Quantity::kFlopRate);
  g.fp8_flop_per_s = r.optional_quantity("fp8_dense", Quantity::kFlopRate);
  r.optional_quantity("fp4_dense", Quantity::kFlopRate);
  r.optional_quantity("fp6_dense", Quantity::kFlopRate);  // stated for the record (CDNA4); no fp6 weights priced
  g.pcie_generation = static_cast<int>(r.integer("pcie_generation", 3, 7));
  g.architecture = *parse_gpu_arch(
      r.choice("architecture", {"volta", "ampere", "ada", "hopper", "blackwell", "cdna3", "cdna4"}));
  g.nvlink_bandwidth_bytes_per_s = r.optional_quantity("nvlink_bandwidth", Quantity::kBandwidth);
  g.xgmi_link_bandwidth_bytes_per_s = r.optional_quantity("xgmi_link_bandwidth", Quantity::kBandwidth);
  g.xgmi_links = static_cast<int>(r.optional_integer("xgmi_links", 0, 1, 64));
  g.p2p_supported = r.optional_boolean("p2p_supported", true);
  if (const std::string cc = r.optional_string("compute_capability", ""); !cc.empty()) {
    // "12.0": one or two digits, a dot, one digit (NVIDIA's CUDA GPUs list writes them so).
    const bool ok = cc.size() >= 3 && cc.size() <= 4 && cc[cc.size() - 2] == '.' &&
                    std::all_of(cc.begin(), cc.end() - 2, [](char c) { return c >= '0' && c <= '9'; }) &&
                    cc.back() >= '0' && cc.back() <= '9';
    if (!ok) r.fail("compute_capability", "'" + cc + "' is not a compute capability (MAJOR.MINOR, e.g. 12.0)");
    g.compute_capability = std::stoi(cc.substr(0, cc.size() - 2)) * 10 + (cc.back() - '0');
  }
  // Floors far below any GPU specsim can model (the smallest, a GeForce of the volta era, has
  // ~200 GB/s and ~30 TFLOP/s): a value below one is a unit typo or a denormal, never hardware.
  if (g.memory_bandwidth_bytes_per_s < 1e9) r.fail("memory_bandwidth", "must be at least 1 GB/s for a GPU");
  if (g.bf16_flop_per_s < 1e12) r.fail("bf16_dense", "must be at least 1 TFLOP/s for a GPU");
  if (g.fp8_flop_per_s && *g.fp8_flop_per_s < 1e12) r.fail("fp8_dense", "must be at least 1 TFLOP/s for a GPU");
  if (g.memory_bytes < 1073741824.0) r.fail("memory", "must be at least 1 GiB for a GPU");
  if (g.nvlink_bandwidth_bytes_per_s && *g.nvlink_bandwidth_bytes_per_s < 1e9) {
    r.fail("nvlink_bandwidth", "must be at least 1 GB/s (or left out)");
  }
  if (g.xgmi_link_bandwidth_bytes_per_s && *g.xgmi_link_bandwidth_bytes_per_s < 1e9) {
    r.fail("xgmi_link_bandwidth", "must be at least 1 GB/s (or left out)");
  }
  if (g.xgmi_link_bandwidth_bytes_per_s.has_value() != (g.xgmi_links > 0)) {
    r.fail(g.xgmi_links > 0 ? "xgmi_links" : "xgmi_link_bandwidth",
           "xgmi_link_bandwidth and xgmi_links go together: give both (an Infinity Fabric card) or neither");
  }
  r.finish();
  return g;
}

constexpr const char* kLinkClasses = "NV#, XGMI, PIX, PXB, PHB, NODE, SYS";

// `links:` one string per GPU, its classes to every GPU separated by spaces, "X" for itself:
//   links:
//     - "X PIX SYS"
//     - "PIX X SYS"
//     - "SYS SYS X"
// Square (gpus x gpus), X exactly on the diagonal, symmetric.
void read_pair_links(YamlReader& r, Topology& t) {
  std::vector<YamlReader> rows = r.sequence("links");
  const std::string per = t.nodes > 1 ? " of one node (gpus_per_node = " : " (gpus = ";
  if (static_cast<int>(rows.size()) != t.node_gpus()) {
    r.fail("links", "has " + std::to_string(rows.size()) + " rows: needs one per GPU" + per +
                        std::to_string(t.node_gpus()) + ")");
  }
  const auto n = static_cast<std::size_t>(t.node_gpus());
  t.pair_links.assign(n, std::vector<LinkClass>(n, LinkClass::kNvlink));
  t.pair_nvlinks.assign(n, std::vector<int>(n, 0));
  for (std::size_t i = 0; i < n; ++i) {
    YamlReader& row = rows[i];
    if (!row.node().IsScalar()) row.fail_here("expected a string of link classes such as \"X PIX SYS\"");
    std::vector<std::string> cells;
    for (const char ch : row.node().Scalar()) {
      if (ch == ' ' || ch == '\t') {
        if (!cells.empty() && !cells.back().empty()) cells.emplace_back();
      } else {
        if (cells.empty()) cells.emplace_back();
        cells.back() += ch;
      }
    }
    if (!cells.empty() && cells.back().empty()) cells.pop_back();
    if (cells.size() != n) {
      row.fail_here("has " + std::to_string(cells.size()) + " classes: needs one per GPU" + per +
                    std::to_string(t.node_gpus()) + ")");
    }
    for (std::size_t j = 0; j < n; ++j) {
      const std::string where = "entry " + std::to_string(j) + " (GPU" + std::to_string(i) + " to GPU" +
                                std::to_string(j) + ")";
      if (i == j) {
        if (cells[j] != "X") row.fail_here(where + " is '" + cells[j] + "': the diagonal must be X");
        continue;
      }
      if (cells[j] == "X") row.fail_here(where + " is 'X': X marks a GPU with itself, only on the diagonal");
      const auto cls = parse_link_class(cells[j]);
      if (!cls) row.fail_here(where + ": '" + cells[j] + "' is not a link class (X, " + kLinkClasses + ")");
      t.pair_links[i][j] = *cls;
      t.pair_nvlinks[i][j] = parse_nvlink_count(cells[j]);
      if (j < i && (t.pair_links[j][i] != *cls || t.pair_nvlinks[j][i] != t.pair_nvlinks[i][j])) {
        row.fail_here(where + " is " + cells[j] + " but links[" + std::to_string(j) + "] entry " +
                      std::to_string(i) + " is " + link_name(t.pair_links[j][i], t.pair_nvlinks[j][i]) +
                      ": the matrix must be symmetric");
      }
    }
  }
}

// `numa:` the NUMA node nearest each GPU, one integer per GPU.
void read_numa_nodes(YamlReader& r, Topology& t) {
  std::vector<YamlReader> items = r.sequence("numa");
  if (static_cast<int>(items.size()) != t.node_gpus()) {
    r.fail("numa", "has " + std::to_string(items.size()) + " entries: needs one per GPU" +
                       (t.nodes > 1 ? " of one node (gpus_per_node = " : " (gpus = ") + std::to_string(t.node_gpus()) + ")");
  }
  for (YamlReader& item : items) {
    const std::string text = item.node().IsScalar() ? item.node().Scalar() : "";
    const std::optional<int> node = parse_numa_node(text);
    if (!node) {
      item.fail_here("'" + text + "' is not a NUMA node number (an integer in [0, " + std::to_string(kMaxNumaNode) + "])");
    }
    t.numa_nodes.push_back(*node);
  }
}

// `network:` between the nodes: kind, one NIC's bandwidth, the one-way latency, NICs per node.
Network read_network(YamlReader& n, const Topology& t) {
  Network net;
  net.kind = *parse_network_kind(n.choice("kind", {"infiniband", "roce", "ethernet"}));
  net.nic_bandwidth_bytes_per_s = n.quantity("nic_bandwidth", units::Quantity::kBandwidth);
  net.latency_s = n.quantity("latency", units::Quantity::kDuration);
  net.rails = static_cast<int>(n.optional_integer("rails", t.node_gpus(), 1, t.node_gpus()));
  n.finish();
  // A NIC slower than 1 GB/s (8 Gb/s) is a unit typo, not a GPU cluster's network.
  if (net.nic_bandwidth_bytes_per_s < 1e9) {
    n.fail("nic_bandwidth", "must be at least 1 GB/s per NIC (a 400 Gb/s port is 50GB/s: bandwidths are in bytes)");
  }
  return net;
}

// `nodes`, `gpus_per_node` and `network`: gpus = nodes x gpus_per_node, and a network exactly when
// there are several nodes.
void read_nodes(YamlReader& r, Topology& t) {
  t.nodes = static_cast<int>(r.optional_integer("nodes", 1, 1, kMaxCount));
  const long long per = r.optional_integer("gpus_per_node", t.gpus / t.nodes, 1, kMaxCount);
  if (per * t.nodes != t.gpus) {
    r.fail(r.has("gpus_per_node") ? "gpus_per_node" : "nodes",
           "nodes (" + std::to_string(t.nodes) + ") x gpus_per_node (" + std::to_string(per) + ") = " +
               std::to_string(per * t.nodes) + ", but gpus = " + std::to_string(t.gpus) + ": every node holds the same GPUs");
  }
  t.gpus_per_node = static_cast<int>(per);
  if (t.nodes > 1 && !r.has("network")) {
    r.fail("nodes", "= " + std::to_string(t.nodes) + ": a multi-node topology needs `network:` (kind, nic_bandwidth, "
                    "latency, rails) to price what crosses between nodes");
  }
  if (t.nodes == 1 && r.has("network")) r.fail("network", "joins nodes, and this topology has one (set nodes: N)");
  if (auto n = r.optional_child("network")) t.network = read_network(*n, t);
}

// What was measured on this box alone: launch checks seen failing here (`failures_seen:`) and the
// interventions whose figures come from this box (`interventions:`, as a catalogue's entries).
void read_box_facts(YamlReader& r, Topology& t) {
  if (r.has("failures_seen")) {
    const std::vector<std::string> checks = launch_check_names();
    for (YamlReader f : r.sequence("failures_seen")) {
      FailureSeen seen{f.choice("check", checks), f.string("what")};
      f.finish();
      t.failures_seen.push_back(std::move(seen));
    }
  }
  if (r.has("interventions")) t.interventions = detail::read_interventions(r, "interventions");
}

}  // namespace

// The keys of a topology, in a models/topology file or inline under a scenario's `topology:`.
Topology detail::read_topology_keys(YamlReader& r) {
  Topology t;
  t.name = r.string("name");
  t.description = r.optional_string("description", "");
  r.ignore("source");
  t.gpu = r.string("gpu");
  t.gpus = count(r, "gpus");
  t.p2p = r.optional_boolean("p2p", true);
  t.pcie_generation = static_cast<int>(r.optional_integer("pcie_generation", 5, 3, 7));
  read_nodes(r, t);
  if (r.has("links")) read_pair_links(r, t);
  if (r.has("numa")) read_numa_nodes(r, t);
  if (r.has("link") || t.pair_links.empty()) {
    const std::string link = r.string("link");
    auto cls = parse_link_class(link);
    if (!cls) r.fail("link", "'" + link + "' is not a link class (" + kLinkClasses + ")");
    t.link = *cls;
    t.nvlinks = parse_nvlink_count(link);
    // A ring may avoid the slowest pair (e.g. NVLink rings on a hybrid cube mesh), so `link` need not
    // be the slowest class, but its slowest hop is some pair: the class must occur in the matrix.
    bool occurs = t.node_gpus() == 1;
    for (std::size_t i = 0; i < t.pair_links.size(); ++i) {
      for (std::size_t j = 0; j < t.pair_links.size(); ++j) {
        if (i != j && t.pair_links[i][j] == t.link && t.pair_nvlinks[i][j] == t.nvlinks) occurs = true;
      }
    }
    if (!t.pair_links.empty() && !occurs) {
      r.fail("link", "'" + link + "' is not the class of any GPU pair in links (a ring's slowest hop is one of them)");
    }
  } else {
    r.ignore("link");
    const auto [ring, nvlinks] = ring_link(t);
    t.link = ring;
    t.nvlinks = nvlinks;
  }
  t.comm_profile = r.optional_string("comm_profile", "");
  read_box_facts(r, t);
  if (r.has("cpu")) {
    const std::string cpu = r.string("cpu");
    t.cpu = parse_host_cpu(cpu);
    if (!t.cpu) r.fail("cpu", "'" + cpu + "' is not a host CPU NCCL tells apart (" + host_cpu_names() + ")");
  }
  r.finish();
  return t;
}

namespace {

Topology read_topology(YamlReader& r) {
  r.expect_header("topology");
  return read_topology_keys(r);
}

}  // namespace

GpuSpec detail::load_gpu_file(const std::string& path) {
  YamlReader r = YamlReader::load_file(path);
  return read_gpu(r);
}

Topology detail::load_topology_file(const std::string& path) {
  YamlReader r = YamlReader::load_file(path);
  return read_topology(r);
}

}  // namespace specsim
