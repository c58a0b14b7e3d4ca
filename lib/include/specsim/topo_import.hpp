// Reads the GPU-to-GPU matrix that `nvidia-smi topo -m` prints and turns it into a Topology, and
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

// The topology as YAML (schema_version 1, kind topology) with `links:` and `numa:` when known; `link`
// only with two or more GPUs.
// `comments` are written as leading `#` lines (provenance: where the matrix came from).
[[nodiscard]] std::string render_topology_yaml(const Topology& topology, const std::string& source,
                                               const std::string& comments);

}  // namespace specsim
