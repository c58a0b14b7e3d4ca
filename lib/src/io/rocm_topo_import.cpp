// `rocm-smi --showtopo` import: the AMD counterpart of the nvidia-smi topo -m reader in
// topo_import.cpp. rocm-smi prints one GPU-by-GPU table per property, each under a banner line
// ("==== Link Type between two GPUs ===="), then a "Numa Nodes" block of `GPU[i] : (Topology) Numa
// Node: k` lines. How its numbers map to link classes (docs/references/hardware.md#rocm-smi-showtopo):
// - Link Type XGMI is an Infinity Fabric path; its weight is 15 per physical xGMI hop (ROCm/rocm-systems
//   PR #7372), while its hop count reads 1 even across two links (ROCm/rocm-systems issue #5763). So
//   a direct link is XGMI at weight 15 (kXgmi); a heavier XGMI pair is a multi-hop path specsim has no
//   class for, and is refused. Without a weight table the hop count is taken at its word.
// - Link Type PCIE takes the hops as AMD's MI200 tuning guide defines them: 2 through one CPU socket
//   (PHB), 3 across sockets (SYS); 1 (no CPU on the path) is taken as PXB, the slower of the two
//   switch-only classes.
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "specsim/error.hpp"
#include "specsim/topo_import.hpp"
#include "io/topo_import_common.hpp"

namespace specsim {

namespace {

constexpr int kXgmiWeightPerHop = 15;  // ROCm/rocm-systems PR #7372: each physical xGMI hop weighs 15

struct Cell {
  std::string text;
  int line = 0;
  int column = 0;
};

struct Table {
  int line = 0;                          // the banner's line
  std::vector<std::vector<Cell>> rows;   // gpus x gpus
};

struct ShowTopo {
  std::map<std::string, Table> tables;   // "Link Type", "Hops", "Weight"
  std::map<int, int> numa;               // GPU -> Numa Node
};

std::vector<Cell> cells_of(const std::string& line, int line_no) {
  std::vector<Cell> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    out.push_back({line.substr(start, i - start), line_no, static_cast<int>(start) + 1});
  }
  return out;
}

// "Link Type between two GPUs" from "=== Link Type between two GPUs ==="; "" for other lines.
std::string banner_title(const std::string& line) {
  if (!line.starts_with("=")) return "";
  const auto a = line.find_first_not_of('=');
  if (a == std::string::npos) return "";
  const auto b = line.find_last_not_of("= \t");
  std::string t = line.substr(a, b - a + 1);
  while (!t.empty() && t.front() == ' ') t.erase(t.begin());
  return t;
}

bool is_gpu_name(const std::string& s, int index) { return s == "GPU" + std::to_string(index); }

// The header line and the rows of one table, from line `at` (after the banner) up to a blank line
// or the next banner. `next` returns the following line; empty optional at the end of the text.
Table read_table(std::istringstream& in, int& line_no, int banner_line, const std::string& title,
                 const std::string& file) {
  Table t;
  t.line = banner_line;
  std::string line;
  int gpus = -1;
  std::streampos before = in.tellg();
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::vector<Cell> cells = cells_of(line, line_no);
    if (cells.empty() || line.starts_with("=")) {
      if (gpus < 0 && cells.empty()) continue;  // blank lines between banner and header
      if (line.starts_with("=")) {               // the next banner: leave it for the caller
        in.seekg(before);
        --line_no;
      }
      break;
    }
    if (gpus < 0) {
      for (std::size_t j = 0; j < cells.size(); ++j) {
        if (!is_gpu_name(cells[j].text, static_cast<int>(j))) {
          throw Error({file, line_no, cells[j].column}, "",
                      "'" + title + "' header: column " + std::to_string(j) + " is '" + cells[j].text +
                          "', expected GPU" + std::to_string(j) + " (GPU0 GPU1 ... as rocm-smi prints them)");
        }
      }
      gpus = static_cast<int>(cells.size());
    } else {
      const int i = static_cast<int>(t.rows.size());
      if (!is_gpu_name(cells[0].text, i)) {
        throw Error({file, line_no, cells[0].column}, "",
                    "'" + title + "': row '" + cells[0].text + "' where GPU" + std::to_string(i) + " was expected");
      }
      if (static_cast<int>(cells.size()) != gpus + 1) {
        throw Error({file, line_no, cells.back().column}, "",
                    "'" + title + "': row GPU" + std::to_string(i) + " has " + std::to_string(cells.size() - 1) +
                        " cells, the header names " + std::to_string(gpus) + " GPUs (a damaged or truncated copy?)");
      }
      t.rows.emplace_back(cells.begin() + 1, cells.end());
    }
    before = in.tellg();
  }
  if (gpus < 0) throw Error({file, banner_line, 0}, "", "'" + title + "': no header line of GPU columns after the banner");
  if (static_cast<int>(t.rows.size()) != gpus) {
    throw Error({file, line_no, 0}, "",
                "'" + title + "' (line " + std::to_string(banner_line) + ") names " + std::to_string(gpus) +
                    " GPUs but has " + std::to_string(t.rows.size()) + " rows (a truncated copy?)");
  }
  return t;
}

// `GPU[3]          : (Topology) Numa Node: 1`
void read_numa_line(const std::string& line, int line_no, const std::string& file, ShowTopo& topo) {
  const std::string key = "(Topology) Numa Node:";
  const auto at = line.find(key);
  if (!line.starts_with("GPU[") || at == std::string::npos) return;
  const auto close = line.find(']');
  const std::optional<int> gpu = parse_numa_node(line.substr(4, close == std::string::npos ? 0 : close - 4));
  std::string value = line.substr(at + key.size());
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(value.begin());
  while (!value.empty() && (value.back() == ' ' || value.back() == '\r')) value.pop_back();
  const std::optional<int> node = parse_numa_node(value);
  if (!gpu || !node) {
    throw Error({file, line_no, static_cast<int>(at + key.size()) + 1}, "",
                "'" + line + "': expected GPU[i] ... Numa Node: k with k a NUMA node number (0.." +
                    std::to_string(kMaxNumaNode) + ")");
  }
  topo.numa[*gpu] = *node;
}

ShowTopo read_show_topo(const std::string& text, const std::string& file) {
  ShowTopo topo;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  bool in_numa = false;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string title = banner_title(line);
    if (!title.empty()) {
      in_numa = title == "Numa Nodes";
      for (const char* name : {"Link Type", "Hops", "Weight"}) {
        if (title == std::string(name) + " between two GPUs") {
          topo.tables[name] = read_table(in, line_no, line_no, title, file);
        }
      }
      continue;
    }
    if (in_numa) read_numa_line(line, line_no, file, topo);
  }
  if (!topo.tables.count("Link Type")) {
    throw Error({file, 0, 0}, "",
                "no 'Link Type between two GPUs' table: run `rocm-smi --showtopo` and save all of its output");
  }
  return topo;
}

// The cell as a non-negative integer; throws naming the table and cell otherwise.
int number_cell(const Cell& c, const std::string& table, const std::string& file) {
  int v = 0;
  bool ok = !c.text.empty() && c.text.size() <= 6;
  for (const char ch : c.text) ok = ok && ch >= '0' && ch <= '9';
  if (ok) v = std::stoi(c.text);
  if (!ok) throw Error({file, c.line, c.column}, "", "'" + table + "': '" + c.text + "' is not a whole number");
  return v;
}

}  // namespace

namespace {

// The class of pair (i, j) from its link type, hops and weight (the file header's rules).
LinkClass pair_class(const ShowTopo& t, std::size_t i, std::size_t j, const std::string& file) {
  const Cell& type = t.tables.at("Link Type").rows[i][j];
  const auto number = [&](const char* table) -> std::optional<int> {
    const auto it = t.tables.find(table);
    if (it == t.tables.end()) return std::nullopt;
    return number_cell(it->second.rows[i][j], std::string(table) + " between two GPUs", file);
  };
  const std::optional<int> hops = number("Hops");
  const std::optional<int> weight = number("Weight");
  const std::string pair = "GPU" + std::to_string(i) + "-GPU" + std::to_string(j);
  if (type.text == "XGMI") {
    const bool direct = weight ? *weight <= kXgmiWeightPerHop : (!hops || *hops <= 1);
    if (!direct) {
      const auto w = t.tables.find("Weight");
      const Cell& at = w != t.tables.end() ? w->second.rows[i][j] : type;
      throw Error({file, at.line, at.column}, "",
                  pair + ": XGMI at weight " + (weight ? std::to_string(*weight) : "?") + " (" +
                      (weight ? std::to_string(*weight / kXgmiWeightPerHop) : "?") +
                      " xGMI hops at 15 each): not a direct link, and specsim has no class for a multi-hop "
                      "Infinity Fabric path (only fully connected xGMI boxes are modelled)");
    }
    return LinkClass::kXgmi;
  }
  if (type.text == "PCIE") {
    if (!hops) return LinkClass::kSys;  // nothing says the path avoids the CPUs: the slowest class
    return *hops >= 3 ? LinkClass::kSys : *hops == 2 ? LinkClass::kPhb : LinkClass::kPxb;
  }
  throw Error({file, type.line, type.column}, "",
              "'Link Type between two GPUs': " + pair + " is '" + type.text + "'; valid: XGMI, PCIE (0 on the diagonal)");
}

void check_tables(const ShowTopo& t, const std::string& file) {
  const std::size_t n = t.tables.at("Link Type").rows.size();
  for (const auto& [name, table] : t.tables) {
    if (table.rows.size() != n) {
      throw Error({file, table.line, 0}, "",
                  "'" + name + " between two GPUs' has " + std::to_string(table.rows.size()) + " GPUs, 'Link Type' " +
                      std::to_string(n));
    }
    for (std::size_t i = 0; i < n; ++i) {
      const Cell& d = table.rows[i][i];
      if (d.text != "0") {
        throw Error({file, d.line, d.column}, "",
                    "'" + name + " between two GPUs': GPU" + std::to_string(i) + " with itself is '" + d.text +
                        "', rocm-smi prints 0 on the diagonal");
      }
      for (std::size_t j = 0; j < i; ++j) {
        if (table.rows[i][j].text != table.rows[j][i].text) {
          const Cell& c = table.rows[i][j];
          throw Error({file, c.line, c.column}, "",
                      "'" + name + " between two GPUs': GPU" + std::to_string(i) + "-GPU" + std::to_string(j) + " is '" +
                          c.text + "' but GPU" + std::to_string(j) + "-GPU" + std::to_string(i) + " is '" +
                          table.rows[j][i].text + "' (the table must be symmetric)");
        }
      }
    }
  }
}

}  // namespace

Topology parse_rocm_smi_topo(const std::string& text, const std::string& file, const TopoImportOptions& options) {
  if (options.pcie_generation < 3 || options.pcie_generation > 7) {
    throw Error("topology import: pcie_generation = " + std::to_string(options.pcie_generation) +
                ": must lie in [3, 7] (rocm-smi --showtopo does not say it; take the GPU file's pcie_generation)");
  }
  const ShowTopo topo = read_show_topo(text, file);
  check_tables(topo, file);
  Topology t = detail::imported_topology(options, "rocm-smi --showtopo", file,
                                         static_cast<int>(topo.tables.at("Link Type").rows.size()));
  const auto n = static_cast<std::size_t>(t.gpus);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i != j) t.pair_links[i][j] = pair_class(topo, i, j, file);
    }
  }
  detail::set_ring_link(t);
  if (static_cast<int>(topo.numa.size()) == t.gpus && topo.numa.rbegin()->first == t.gpus - 1) {
    for (const auto& [gpu, node] : topo.numa) t.numa_nodes.push_back(node);
  }
  return t;
}

const char* topo_format(const std::string& text) {
  return text.find("between two GPUs") != std::string::npos ? "rocm-smi" : "nvidia-smi";
}

Topology import_topo(const std::string& path, const TopoImportOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error({path, 0, 0}, "", "cannot open file");
  std::ostringstream text;
  text << in.rdbuf();
  return std::string(topo_format(text.str())) == "rocm-smi" ? parse_rocm_smi_topo(text.str(), path, options)
                                                            : parse_nvidia_smi_topo(text.str(), path, options);
}

}  // namespace specsim
