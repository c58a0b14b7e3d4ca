#include "specsim/topo_import.hpp"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "specsim/error.hpp"
#include "io/topo_import_common.hpp"

namespace specsim {

namespace {

struct Token {
  std::string text;
  int column = 0;  // 1-based
};

std::vector<Token> tokens_of(const std::string& line) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i == line.size()) break;
    const std::size_t start = i;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    out.push_back({line.substr(start, i - start), static_cast<int>(start) + 1});
  }
  return out;
}

// "GPU12" -> 12; nullopt for anything else (including "GPU" of "GPU NUMA ID").
std::optional<int> gpu_index(const std::string& s) {
  if (s.size() < 4 || s.size() > 7 || !s.starts_with("GPU")) return std::nullopt;
  int n = 0;
  for (std::size_t i = 3; i < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return std::nullopt;
    n = n * 10 + (s[i] - '0');
  }
  return n;
}

// The cell as a link class; SOC is the pre-NODE drivers' name for SYS.
std::optional<LinkClass> cell_class(const std::string& s) {
  if (s == "SOC") return LinkClass::kSys;
  return parse_link_class(s);
}

bool is_cell(const std::string& s) { return s == "X" || cell_class(s).has_value(); }

// The columns that follow the device columns, as the driver names them; a row has one value each.
const std::vector<std::string> kTrailingColumns = {"CPU Affinity", "NUMA Affinity", "GPU NUMA ID"};

struct Header {
  int line = 0;
  int gpus = 0;
  int other_devices = 0;                  // NIC#, mlx5_#, ... columns
  std::vector<std::string> trailing;      // of kTrailingColumns, in order of appearance
  [[nodiscard]] int row_fields() const { return 1 + gpus + other_devices + static_cast<int>(trailing.size()); }
  [[nodiscard]] std::string describe() const {
    std::string s = "GPU0..GPU" + std::to_string(gpus - 1);
    if (other_devices > 0) s += ", " + std::to_string(other_devices) + " NIC column" + (other_devices > 1 ? "s" : "");
    for (const auto& t : trailing) s += ", " + t;
    return s;
  }
};

Header read_header(const std::string& line, const std::vector<Token>& tok, int line_no, const std::string& file) {
  Header h;
  h.line = line_no;
  std::size_t k = 0;
  for (; k < tok.size(); ++k) {
    const auto idx = gpu_index(tok[k].text);
    if (!idx) break;
    if (*idx != static_cast<int>(k)) {
      throw Error({file, line_no, tok[k].column}, "",
                  "header column " + std::to_string(k + 1) + " is '" + tok[k].text + "', expected 'GPU" +
                      std::to_string(k) + "' (GPU columns come first, numbered from 0)");
    }
  }
  h.gpus = static_cast<int>(k);
  // The trailing labels contain spaces, so find them in the line, then count device columns up to
  // the first of them.
  std::size_t trailing_at = line.size();
  for (const auto& label : kTrailingColumns) {
    const auto at = line.find(label);
    if (at == std::string::npos) continue;
    h.trailing.push_back(label);
    trailing_at = std::min(trailing_at, at);
  }
  for (; k < tok.size() && static_cast<std::size_t>(tok[k].column - 1) < trailing_at; ++k) ++h.other_devices;
  return h;
}

// The GPU rows of a topo -m matrix as printed, after its header.
struct Matrix {
  std::optional<Header> header;
  std::vector<std::vector<std::string>> cells;  // cells[i][j] as printed, GPU rows in order
  std::vector<int> row_lines;
  std::vector<std::optional<int>> numa;          // each row's NUMA Affinity, when it is a number
};

// The NUMA Affinity value, counted from the row's end (the trailing columns come last).
std::optional<int> numa_affinity(const std::vector<Token>& tok, const Header& header) {
  std::optional<int> node;
  for (std::size_t t = 0; t < header.trailing.size(); ++t) {
    if (header.trailing[t] != "NUMA Affinity") continue;
    const std::string& v = tok[tok.size() - header.trailing.size() + t].text;
    node = parse_numa_node(v);  // "N/A", a range or a number past kMaxNumaNode: unknown
  }
  return node;
}

// Row GPU<i>: in order, as wide as the header, X on the diagonal only, link classes elsewhere,
// and the same link as its mirror above the diagonal.
void read_gpu_row(const std::vector<Token>& tok, int line_no, const std::string& file, Matrix& m) {
  const Header& header = *m.header;
  const int i = static_cast<int>(m.cells.size());
  if (*gpu_index(tok[0].text) != i) {
    throw Error({file, line_no, tok[0].column}, "",
                "row '" + tok[0].text + "', expected 'GPU" + std::to_string(i) + "' (rows follow the header's order)");
  }
  if (i >= header.gpus) {
    throw Error({file, line_no, tok[0].column}, "",
                "row " + tok[0].text + " but the header (line " + std::to_string(header.line) + ") has only " +
                    std::to_string(header.gpus) + " GPU columns");
  }
  if (static_cast<int>(tok.size()) != header.row_fields()) {
    throw Error({file, line_no, 0}, "",
                "row " + tok[0].text + " has " + std::to_string(tok.size() - 1) + " fields, the header (line " +
                    std::to_string(header.line) + ") has " + std::to_string(header.row_fields() - 1) +
                    " columns (" + header.describe() + ")");
  }
  std::vector<std::string> row;
  for (int j = 0; j < header.gpus; ++j) {
    const Token& c = tok[1 + j];
    const std::string pair = "GPU" + std::to_string(i) + " to GPU" + std::to_string(j);
    if (i == j && c.text != "X") {
      throw Error({file, line_no, c.column}, "", pair + " is '" + c.text + "': the diagonal must be X");
    }
    if (i != j && c.text == "X") {
      throw Error({file, line_no, c.column}, "", pair + " is 'X': X marks a GPU with itself, only on the diagonal");
    }
    if (!is_cell(c.text)) {
      throw Error({file, line_no, c.column}, "",
                  pair + ": '" + c.text + "' is not a link class (X, NV#, PIX, PXB, PHB, NODE, SYS, or SOC from old drivers)");
    }
    if (j < i && (cell_class(c.text) != cell_class(m.cells[j][i]) ||
                  parse_nvlink_count(c.text) != parse_nvlink_count(m.cells[j][i]))) {
      throw Error({file, line_no, c.column}, "",
                  pair + " is " + c.text + " but GPU" + std::to_string(j) + " to GPU" + std::to_string(i) +
                      " (line " + std::to_string(m.row_lines[j]) + ") is " + m.cells[j][i] +
                      ": the matrix must be symmetric");
    }
    row.push_back(c.text);
  }
  m.numa.push_back(numa_affinity(tok, header));
  m.cells.push_back(std::move(row));
  m.row_lines.push_back(line_no);
}

// The header and GPU rows, up to the legend; text before the header (a prompt, a title) and
// NIC rows are passed over.
Matrix read_matrix(const std::string& text, const std::string& file) {
  Matrix m;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::vector<Token> tok = tokens_of(line);
    if (tok.empty()) continue;
    if (tok[0].text == "Legend:") break;  // the legend and NIC legend follow the matrix
    const bool names_gpu = gpu_index(tok[0].text).has_value();
    const bool is_row = names_gpu && tok.size() > 1 && is_cell(tok[1].text);
    if (!m.header) {
      if (tok[0].text == "GPU0" && !is_row) {
        m.header = read_header(line, tok, line_no, file);
      } else if (is_row) {
        throw Error({file, line_no, tok[0].column}, "",
                    "row " + tok[0].text + " before the header line: expected the header first "
                    "(GPU0 GPU1 ... CPU Affinity, as nvidia-smi topo -m prints it)");
      }
      continue;
    }
    if (!names_gpu) continue;  // NIC#/mlx* rows: links to NICs are not GPU pairs
    read_gpu_row(tok, line_no, file, m);
  }
  if (!m.header) {
    throw Error({file, 0, 0}, "",
                "no nvidia-smi topo -m matrix: no header line starting with GPU0 (run `nvidia-smi topo -m` and save its output)");
  }
  if (m.header->gpus == 0) {
    throw Error({file, m.header->line, 0}, "", "the header names no GPU columns");
  }
  if (static_cast<int>(m.cells.size()) != m.header->gpus) {
    throw Error({file, m.row_lines.empty() ? m.header->line : m.row_lines.back(), 0}, "",
                "the header (line " + std::to_string(m.header->line) + ") has " + std::to_string(m.header->gpus) +
                    " GPU columns but there are " + std::to_string(m.cells.size()) + " GPU rows");
  }
  return m;
}

Topology topology_from(const Matrix& m, const std::string& file, const TopoImportOptions& options) {
  Topology t = detail::imported_topology(options, "nvidia-smi topo -m", file, m.header->gpus);
  const auto n = static_cast<std::size_t>(t.gpus);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      t.pair_links[i][j] = *cell_class(m.cells[i][j]);
      t.pair_nvlinks[i][j] = parse_nvlink_count(m.cells[i][j]);
    }
  }
  detail::set_ring_link(t);
  bool all_numa = true;
  for (const auto& node : m.numa) all_numa = all_numa && node.has_value();
  if (all_numa) {
    for (const auto& node : m.numa) t.numa_nodes.push_back(*node);
  }
  return t;
}

}  // namespace

Topology parse_nvidia_smi_topo(const std::string& text, const std::string& file, const TopoImportOptions& options) {
  if (options.pcie_generation < 3 || options.pcie_generation > 7) {
    throw Error("topology import: pcie_generation = " + std::to_string(options.pcie_generation) +
                ": must lie in [3, 7] (topo -m does not say it; take the GPU file's pcie_generation)");
  }
  return topology_from(read_matrix(text, file), file, options);
}

Topology import_nvidia_smi_topo(const std::string& path, const TopoImportOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error({path, 0, 0}, "", "cannot open file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_nvidia_smi_topo(text.str(), path, options);
}

std::string render_topology_yaml(const Topology& t, const std::string& source, const std::string& comments) {
  if (t.gpu.empty()) throw Error("topology '" + t.name + "': no GPU model (models/gpu name) to write");
  if (t.name.empty()) throw Error("topology: no name to write");
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "schema_version" << YAML::Value << 1;
  y << YAML::Key << "kind" << YAML::Value << "topology";
  y << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << t.name;
  y << YAML::Key << "description" << YAML::Value << YAML::DoubleQuoted << t.description;
  if (!source.empty()) y << YAML::Key << "source" << YAML::Value << YAML::DoubleQuoted << source;
  y << YAML::Key << "gpu" << YAML::Value << YAML::DoubleQuoted << t.gpu;
  y << YAML::Key << "gpus" << YAML::Value << t.gpus;
  y << YAML::Key << "p2p" << YAML::Value << t.p2p;
  y << YAML::Key << "pcie_generation" << YAML::Value << t.pcie_generation;
  // One GPU has no ring: the file says so by its one-cell matrix and no `link`.
  if (t.gpus > 1) y << YAML::Key << "link" << YAML::Value << link_name(t.link, t.nvlinks);
  if (!t.pair_links.empty()) {
    y << YAML::Key << "links" << YAML::Value << YAML::BeginSeq;
    for (std::size_t i = 0; i < t.pair_links.size(); ++i) {
      std::string row;
      for (std::size_t j = 0; j < t.pair_links[i].size(); ++j) {
        if (j) row += ' ';
        row += i == j ? std::string("X") : link_name(t.pair_links[i][j], t.pair_nvlinks[i][j]);
      }
      y << YAML::DoubleQuoted << row;
    }
    y << YAML::EndSeq;
  }
  if (!t.numa_nodes.empty()) {
    y << YAML::Key << "numa" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const int node : t.numa_nodes) y << node;
    y << YAML::EndSeq;
  }
  if (!t.comm_profile.empty()) y << YAML::Key << "comm_profile" << YAML::Value << t.comm_profile;
  y << YAML::EndMap;
  std::string out;
  std::istringstream lines(comments);
  for (std::string c; std::getline(lines, c);) out += c.empty() ? "#\n" : "# " + c + "\n";
  return out + y.c_str() + "\n";
}

namespace detail {

Topology imported_topology(const TopoImportOptions& options, const std::string& tool, const std::string& file, int gpus) {
  Topology t;
  t.name = options.name;
  t.description = options.description.empty() ? "imported from " + tool + " (" + file + ")" : options.description;
  t.gpu = options.gpu;
  t.gpus = gpus;
  t.p2p = options.p2p;
  t.pcie_generation = options.pcie_generation;
  const auto n = static_cast<std::size_t>(gpus);
  t.pair_links.assign(n, std::vector<LinkClass>(n, LinkClass::kNvlink));
  t.pair_nvlinks.assign(n, std::vector<int>(n, 0));
  return t;
}

void set_ring_link(Topology& t) {
  const auto [ring, nvlinks] = ring_link(t);
  t.link = ring;
  t.nvlinks = nvlinks;
}

}  // namespace detail

}  // namespace specsim
