// What is known to go wrong when a server is launched with a scenario's settings, found on the
// values before anyone spends a launch: the settings a server fails with (a global NCCL_ALGO=Tree
// under CUDA graph capture, a custom all-reduce kernel the GPU or box cannot run) and those it runs
// with slower than priced (a batch above the largest captured CUDA graph). predict, rank and
// `--emit` print the same list; the cost model does not read it.
#pragma once

#include <string>
#include <vector>

#include "specsim/scenario.hpp"

namespace specsim {

struct LaunchProblem {
  std::string setting;  // what in the scenario causes it: "comm.nccl_algo = tree (NCCL_ALGO=Tree) with CUDA graphs"
  std::string reason;   // what happens and where that is known from
  std::string fix;      // what to change
  bool fails = true;    // true: the launch fails; false: it runs, slower than priced
};

// Every problem of `s`, in a fixed order (NCCL, all-reduce kernel, CUDA graph sizes, nodes).
[[nodiscard]] std::vector<LaunchProblem> launch_problems(const Scenario& s);

// One line: "known to fail at launch: SETTING: REASON; FIX" (or "runs slower than priced: ...").
[[nodiscard]] std::string describe(const LaunchProblem& p);

}  // namespace specsim
