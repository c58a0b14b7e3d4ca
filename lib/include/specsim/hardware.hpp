// GPUs, boxes and measured collective tables: what the hardware offers, from datasheets
// (models/gpu), topology files (models/topology) and calibration profiles (calibration/profiles).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace specsim {

struct GpuSpec {
  std::string name;
  std::string description;
  double memory_bytes = 0.0;
  double memory_bandwidth_bytes_per_s = 0.0;
  double bf16_flop_per_s = 0.0;             // dense tensor rate
  std::optional<double> fp8_flop_per_s;     // dense; absent without FP8 tensor cores
  int pcie_generation = 4;
  std::optional<double> nvlink_bandwidth_bytes_per_s;  // per direction
  bool p2p_supported = true;
};

// NCCL's link classes as `nvidia-smi topo -m` prints them (NCCL_P2P_LEVEL names).
enum class LinkClass { kNvlink, kPix, kPxb, kPhb, kNode, kSys };
[[nodiscard]] const char* to_string(LinkClass c);
[[nodiscard]] std::optional<LinkClass> parse_link_class(const std::string& text);

struct Topology {
  std::string name;
  std::string description;
  std::string gpu;  // models/gpu name
  int gpus = 0;
  bool p2p = true;
  int pcie_generation = 5;
  LinkClass link = LinkClass::kPxb;  // the class between GPU pairs (the slowest pair rules a ring)
  int nvlinks = 0;                   // NV# count when link is NVLink
  std::string comm_profile;          // calibration/profiles name; empty when none
};

enum class LaunchMode { kGraph, kEager };
[[nodiscard]] const char* to_string(LaunchMode m);

// One measured all-reduce latency table: time per op by message size, at one rank count,
// implementation and launch mode.
struct CommProfile {
  struct Point {
    double message_bytes = 0.0;
    double time_s = 0.0;
  };
  std::string name;
  std::string description;
  std::string source;
  std::string implementation = "nccl";  // nccl | custom_oneshot | fp8
  int ranks = 0;
  LaunchMode mode = LaunchMode::kGraph;
  std::vector<Point> points;  // sorted by size, sizes distinct
};

}  // namespace specsim
