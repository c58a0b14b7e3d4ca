// specsim topology import: `nvidia-smi topo -m` output -> a models/topology YAML file with the
// link class of every GPU pair, the ring's link (the slowest pair) and the GPUs' NUMA nodes.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>

#include "choices.hpp"
#include "cli.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/output_file.hpp"
#include "specsim/profile_writer.hpp"
#include "specsim/topo_import.hpp"

namespace specsim::cli {

namespace {

struct TopologyImportOptions {
  std::string input;
  std::string output;
  std::string gpu;              // required, but checked in run_ so the error can list the GPU names
  std::optional<bool> p2p;      // default: the GPU file's p2p_supported
  std::optional<int> pcie_generation;  // default: the GPU file's pcie_generation
  std::string name;             // default: the output file's stem
  bool force = false;
};

// What `topology import` prints after writing `output`: the ring NCCL would build, P2P and PCIe
// with where each came from, the pairs per link class, and the NUMA nodes.
std::string import_report(const Topology& t, const std::string& output, const std::string& tool,
                          const std::string& p2p_from, const std::string& pcie_from) {
  const auto [slowest, slowest_nvlinks] = slowest_pair_link(t);
  std::string ring = "1 GPU, no ring (no GPU-to-GPU link; TP1 only)";
  if (t.gpus > 1) {
    ring = std::to_string(t.gpus) + " GPUs, ring link " + link_name(t.link, t.nvlinks);
    ring += slowest == t.link && slowest_nvlinks == t.nvlinks
                ? " (slowest pair)"
                : " (a ring over " + link_name(t.link, t.nvlinks) + " pairs avoids the slowest pair, " +
                      link_name(slowest, slowest_nvlinks) + ", as NCCL's search does)";
  }
  std::string report = "wrote " + output + ": " + ring + ", p2p " + (t.p2p ? "on" : "off") + " (from " + p2p_from +
                       "), PCIe Gen" +
                       std::to_string(t.pcie_generation) + " (from " + pcie_from + ")\n";
  std::map<std::string, int> pairs;
  for (int i = 0; i < t.gpus; ++i) {
    for (int j = i + 1; j < t.gpus; ++j) ++pairs[link_name(t.pair_links[i][j], t.pair_nvlinks[i][j])];
  }
  report += "  pairs:";
  for (const auto& [cls, count] : pairs) report += " " + cls + " " + std::to_string(count);
  report += "\n";
  if (!t.numa_nodes.empty()) {
    report += "  numa:";
    for (const int n : t.numa_nodes) report += " " + std::to_string(n);
    report += "\n";
  } else {
    report += tool == "rocm-smi" ? "  numa: not in the output (no Numa Nodes block for every GPU)\n"
                                 : "  numa: not in the output (no numeric NUMA Affinity column)\n";
  }
  return report;
}

void run_topology_import(const TopologyImportOptions& o, Io& io) {
  OutputOptions output;
  output.inputs = {o.input, o.gpu};  // --gpu names an input too: as a path, or resolved below
  output.force = o.force;
  check_output_target(o.output, output);
  const DataDir data;
  if (o.gpu.empty()) {
    std::string known;
    for (const auto& n : data.names(DataKind::kGpu)) known += (known.empty() ? "" : ", ") + n;
    throw Error("--gpu: required: neither nvidia-smi topo -m nor rocm-smi --showtopo names the GPU model; pass --gpu NAME (known: " +
                known + ")");
  }
  std::string gpu_file;
  try {
    gpu_file = data.resolve(DataKind::kGpu, o.gpu);
  } catch (const Error& e) {
    throw Error("--gpu: " + e.message());
  }
  output.inputs.push_back(gpu_file);
  check_output_target(o.output, output);
  const GpuSpec gpu = load_gpu(gpu_file);
  TopoImportOptions options;
  options.gpu = o.gpu;
  // GeForce cards do not grant P2P on the stock driver (the GPU file says so); --p2p on is the
  // patched driver's case (docs/references/hardware.md#consumer-p2p).
  options.p2p = o.p2p.value_or(gpu.p2p_supported);
  const std::string p2p_from =
      o.p2p ? std::string("--p2p") : "the GPU file's p2p_supported";
  options.pcie_generation = o.pcie_generation.value_or(gpu.pcie_generation);
  const std::string pcie_from =
      o.pcie_generation ? std::string("--pcie-generation") : "the GPU file " + std::filesystem::path(gpu_file).filename().string();
  options.name = o.name.empty() ? std::filesystem::path(o.output).stem().string() : o.name;
  std::string text;
  {
    std::ifstream in(o.input, std::ios::binary);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    text = buffer.str();
  }
  const std::string tool = topo_format(text);  // auto-detected: rocm-smi --showtopo or nvidia-smi topo -m
  const std::string command = tool == "rocm-smi" ? "rocm-smi --showtopo" : "nvidia-smi topo -m";
  Topology t = tool == "rocm-smi" ? parse_rocm_smi_topo(text, o.input, options) : parse_nvidia_smi_topo(text, o.input, options);
  // NV# links in the output of a card with no NVLink: the output is another box's, or --gpu names
  // the wrong card; either way NVLink would be priced at a bandwidth the GPU file does not have.
  if (t.link == LinkClass::kNvlink && !gpu.nvlink_bandwidth_bytes_per_s) {
    throw Error("--gpu " + o.gpu + ": " + std::filesystem::path(gpu_file).filename().string() +
                " has no NVLink (no nvlink_bandwidth), but " + o.input +
                " shows NV# links between the GPUs: name the card this output was taken on");
  }
  if (t.link == LinkClass::kXgmi && !gpu.xgmi_link_bandwidth_bytes_per_s) {
    throw Error("--gpu " + o.gpu + ": " + std::filesystem::path(gpu_file).filename().string() +
                " has no Infinity Fabric (no xgmi_link_bandwidth), but " + o.input +
                " shows XGMI links between the GPUs: name the card this output was taken on");
  }

  const std::string file = std::filesystem::path(o.input).filename().string();
  const std::string comments =
      "Written by `specsim topology import` from " + file + " (" + command + ").\n"
      "links and numa come from that output; gpu from the command line, p2p from " + p2p_from +
      ",\npcie_generation from " + pcie_from + " (" + command + " shows none of them" +
      (tool == "rocm-smi" ? ")." : "; `nvidia-smi topo -p2p r` shows whether P2P is granted).");
  // Read the temporary file back with the loader, so a file that is written is one that loads.
  write_file_atomically(o.output, render_topology_yaml(t, command + ": " + file, comments), output,
                        [](const std::string& tmp) { (void)load_topology(tmp); });

  io.out << import_report(t, o.output, tool, p2p_from, pcie_from);
}

}  // namespace

void setup_topology(CLI::App& app, Io& io) {
  auto opts = std::make_shared<TopologyImportOptions>();
  CLI::App* topology = app.add_subcommand("topology", "Build topology files");
  topology->require_subcommand(1);
  CLI::App* import = topology->add_subcommand("import", "nvidia-smi topo -m or rocm-smi --showtopo output -> topology YAML");
  import->add_option("file", opts->input, "Saved output of `nvidia-smi topo -m` or `rocm-smi --showtopo` (detected)")
      ->required()
      ->check(CLI::ExistingFile);
  import->add_option("-o,--output", opts->output, "Topology file to write (TOPO.yaml)")->required();
  import->add_option("--gpu", opts->gpu,
                     "Required. GPU model (models/gpu name or file, e.g. rtx-4090, mi300x): neither tool's output says");
  import->add_option("--p2p", opts->p2p,
                     "Whether the driver grants PCIe P2P (topo -m does not say; default: the GPU file's p2p_supported, "
                     "off for GeForce cards)")
      ->transform(choices<bool>({{"on", true}, {"off", false}}))
      ->type_name("P2P");
  import->add_option("--pcie-generation", opts->pcie_generation,
                     "PCIe generation of the GPU links (default: the GPU file's pcie_generation)")
      ->check(CLI::Range(3, 7));
  import->add_option("--name", opts->name, "Topology name (default: the output file's stem)");
  import->add_flag("--force", opts->force, "Replace a read-only output, or write into a device or FIFO in place");
  import->callback([opts, &io]() { run_topology_import(*opts, io); });
}

}  // namespace specsim::cli
