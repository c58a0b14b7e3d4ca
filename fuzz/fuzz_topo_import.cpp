// Fuzzes the `nvidia-smi topo -m` reader (topology import). Bad text must end in specsim::Error;
// text it accepts must render to a topology file that load_topology reads back unchanged in its
// GPU count, pair classes and NUMA nodes (what `specsim topology import` writes, the scenario
// loader reads).
#include <cstdio>
#include <cstdlib>

#include "scratch_file.hpp"
#include "topo_round_trip.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/topo_import.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = specsim::fuzz::scratch_path("fuzz_topo_import", ".yaml");
  const std::string text(reinterpret_cast<const char*>(data), size);
  specsim::TopoImportOptions options;
  options.name = "fuzz";
  options.gpu = "rtx-pro-6000-server";
  options.pcie_generation = 5;
  specsim::Topology imported;
  try {
    imported = specsim::parse_nvidia_smi_topo(text, "<fuzz>", options);
  } catch (const specsim::Error&) {
    return 0;
  }
  specsim::fuzz::check_round_trip(imported, path);
  return 0;
}
