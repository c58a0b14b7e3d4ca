// Fuzzes the `rocm-smi --showtopo` reader (topology import on an AMD box). Bad text must end in
// specsim::Error; text it accepts must be text the import's auto-detection (topo_format) sends to
// this reader, and must render to a topology file that load_topology reads back unchanged in its
// GPU count, pair classes and NUMA nodes (what `specsim topology import` writes, the scenario loader
// reads).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "scratch_file.hpp"
#include "topo_round_trip.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/topo_import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = specsim::fuzz::scratch_path("fuzz_rocm_topo", ".yaml");
  const std::string text(reinterpret_cast<const char*>(data), size);
  specsim::TopoImportOptions options;
  options.name = "fuzz";
  options.gpu = "mi300x";
  options.pcie_generation = 5;
  specsim::Topology imported;
  try {
    imported = specsim::parse_rocm_smi_topo(text, "<fuzz>", options);
  } catch (const specsim::Error&) {
    return 0;
  }
  SPECSIM_FUZZ_ASSERT(std::string(specsim::topo_format(text)) == "rocm-smi");
  SPECSIM_FUZZ_ASSERT(imported.gpus >= 1);
  SPECSIM_FUZZ_ASSERT(imported.numa_nodes.empty() ||
                      static_cast<int>(imported.numa_nodes.size()) == imported.gpus);
  specsim::fuzz::check_round_trip(imported, path);
  return 0;
}
