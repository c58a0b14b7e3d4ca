// What is known to go wrong when a server is launched with a scenario's settings, found on the
// values before anyone spends a launch: the settings a server fails with (a global NCCL_ALGO=Tree
// under CUDA graph capture, a custom all-reduce kernel the GPU or box cannot run) and those it runs
// with slower than priced (a batch above the largest captured CUDA graph). predict, rank and
// `--emit` print the same list, and rank refuses an intervention whose launch one of them fails;
// the cost model does not read it. Each check holds on every box; a box whose topology file says
// the check was seen failing there (`failures_seen:`) adds that fact to the reason, on that box only.
#pragma once

#include <string>
#include <vector>

#include "specsim/scenario.hpp"

namespace specsim {

struct LaunchProblem {
  std::string check;    // which check found it (launch_check_names())
  std::string setting;  // what in the scenario causes it: "comm.nccl_algo = tree (NCCL_ALGO=Tree) with CUDA graphs"
  std::string reason;   // what happens and where that is known from
  std::string fix;      // what to change
  bool fails = true;    // true: the launch fails; false: it runs, slower than priced
};

// The checks, in the order they run: nccl-tree-under-graphs, custom-allreduce-sm12x-capture,
// custom-allreduce-without-p2p, graph-size-below-batch, nodes. A topology's `failures_seen` names them.
[[nodiscard]] std::vector<std::string> launch_check_names();

// Every problem of `s`, in a fixed order (NCCL, all-reduce kernel, CUDA graph sizes, nodes).
[[nodiscard]] std::vector<LaunchProblem> launch_problems(const Scenario& s);

// One line: "known to fail at launch: SETTING: REASON; FIX" (or "runs slower than priced: ...").
[[nodiscard]] std::string describe(const LaunchProblem& p);

}  // namespace specsim
