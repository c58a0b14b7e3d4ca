// What both topology-import targets check on text their parser accepted: the topology renders to
// a file that load_topology reads back with the same GPU count, pair classes and NUMA nodes (what
// `specsim topology import` writes, the scenario loader reads).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "scratch_file.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/topo_import.hpp"

namespace specsim::fuzz {

inline void check_round_trip(const Topology& imported, const std::string& path) {
  const std::string yaml = render_topology_yaml(imported, "<fuzz>", "# fuzz");
  write_file(path, reinterpret_cast<const std::uint8_t*>(yaml.data()), yaml.size());
  Topology back;
  try {
    back = load_topology(path);
  } catch (const Error& e) {
    std::fprintf(stderr, "imported topology does not load back: %s\n%s\n", e.what(), yaml.c_str());
    std::abort();
  }
  SPECSIM_FUZZ_ASSERT(back.gpus == imported.gpus);
  SPECSIM_FUZZ_ASSERT(back.pair_links == imported.pair_links);
  SPECSIM_FUZZ_ASSERT(back.pair_nvlinks == imported.pair_nvlinks);
  SPECSIM_FUZZ_ASSERT(back.numa_nodes == imported.numa_nodes);
}

}  // namespace specsim::fuzz
