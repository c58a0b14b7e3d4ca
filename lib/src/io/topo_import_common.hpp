// What the two topology importers (nvidia-smi topo -m, rocm-smi --showtopo) share.
#pragma once

#include <string>

#include "specsim/hardware.hpp"
#include "specsim/topo_import.hpp"

namespace specsim::detail {

// A topology of `gpus` GPUs read by `tool` from `file`: the options' name, description, GPU, P2P
// and PCIe generation, every pair's link still to be read (NVLink, no links counted).
[[nodiscard]] Topology imported_topology(const TopoImportOptions& options, const std::string& tool,
                                         const std::string& file, int gpus);

// `t`'s ring link and link count from its pairs (ring_link), once every pair is read.
void set_ring_link(Topology& t);

}  // namespace specsim::detail
