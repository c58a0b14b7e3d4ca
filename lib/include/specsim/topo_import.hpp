// Reads the GPU-to-GPU matrix that `nvidia-smi topo -m` (or `rocm-smi --showtopo`) prints and turns it into a Topology, and
// writes a Topology as a models/topology YAML file that load_topology reads back.
//
// topo -m gives the link class of every GPU pair and, in drivers since about 2019, the NUMA node
// nearest each GPU ("NUMA Affinity"). It does not say which GPU model the box holds, whether the
// driver grants PCIe P2P (that is `nvidia-smi topo -p2p r`), or the PCIe generation: the caller
// supplies those in TopoImportOptions.
#pragma once

#include <string>

#include "specsim/hardware.hpp"

namespace specsim {

struct TopoImportOptions {
  std::string name{};           // topology name; required (the CLI defaults it to the output file's stem)
  std::string gpu{};            // models/gpu name; required: topo -m never names the card
  bool p2p = true;              // NCCL's P2P transport between GPUs; off for GeForce on the stock
                                // driver (docs/references/hardware.md#consumer-p2p), which topo -m cannot show
  int pcie_generation = 0;      // required (3..7): topo -m does not say; the CLI takes the GPU file's
                                // pcie_generation (models/gpu) unless --pcie-generation overrides it
  std::string description{};    // empty: "imported from nvidia-smi topo -m (<file>)"
};

// Parses topo -m text. Accepted: the header line (GPU0..GPUn-1, then any NIC#/mlx* columns, then
// "CPU Affinity", "NUMA Affinity", "GPU NUMA ID" as the driver prints them), one row per GPU, any
// NIC/mlx rows (ignored), the legend (ignored), with tabs or spaces. Cells: X (diagonal), NV#, PIX,
// PXB, PHB, NODE, SYS, and SOC, the name drivers before NODE existed printed for SYS ("SOC =
// Connection traversing PCIe as well as the SMP link between CPU sockets(e.g. QPI)"). Lines before
// the header (a shell prompt, a title) are skipped. Errors name `file_name:line:column`.
// The result's `link` is the ring's slowest hop (ring_link: NVLink where a ring over NVLink pairs
// exists, e.g. a DGX-1V, otherwise the slower classes) and numa_nodes is filled when every GPU row
// gives a numeric NUMA Affinity. A one-GPU box parses to a 1x1 matrix and has no ring.
[[nodiscard]] Topology parse_nvidia_smi_topo(const std::string& text, const std::string& file_name,
                                             const TopoImportOptions& options);

// Reads the file and parses it as above.
[[nodiscard]] Topology import_nvidia_smi_topo(const std::string& path, const TopoImportOptions& options);

// Parses the text `rocm-smi --showtopo` prints on an AMD box: its "Link Type between two GPUs"
// table (cells 0 on the diagonal, XGMI or PCIE), checked against the "Hops between two GPUs" and
// "Weight between two GPUs" tables when present, and the "Numa Nodes" block. The link class of a
// pair: XGMI with one hop is a direct Infinity Fabric link (LinkClass::kXgmi); XGMI over more hops
// has no class of its own and is refused; PCIE takes its class from the hops as the MI200 guide
// defines them (1: PIX, 2: through one CPU socket, PHB; 3: across sockets, SYS).
// docs/references/hardware.md#rocm-smi-showtopo. Errors name `file_name:line:column`.
[[nodiscard]] Topology parse_rocm_smi_topo(const std::string& text, const std::string& file_name,
                                           const TopoImportOptions& options);

// Which tool printed `text`: "rocm-smi" when it holds rocm-smi's "between two GPUs" tables,
// else "nvidia-smi".
[[nodiscard]] const char* topo_format(const std::string& text);

// Reads the file and parses it with the parser topo_format picks.
[[nodiscard]] Topology import_topo(const std::string& path, const TopoImportOptions& options);

// The topology as YAML (schema_version 1, kind topology) with `links:` and `numa:` when known; `link`
// only with two or more GPUs.
// `comments` are written as leading `#` lines (provenance: where the matrix came from).
[[nodiscard]] std::string render_topology_yaml(const Topology& topology, const std::string& source,
                                               const std::string& comments);

}  // namespace specsim
