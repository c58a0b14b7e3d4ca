#include "specsim/launch_checks.hpp"

#include <algorithm>

#include "specsim/comm_model.hpp"

namespace specsim {

namespace {

bool any_graph(const EngineSettings& e) {
  return e.decode_mode == LaunchMode::kGraph || e.verify_mode == LaunchMode::kGraph ||
         e.draft_mode == LaunchMode::kGraph;
}

constexpr const char* kTreeUnderGraphs = "nccl-tree-under-graphs";
constexpr const char* kCustomSm12xCapture = "custom-allreduce-sm12x-capture";
constexpr const char* kCustomWithoutP2p = "custom-allreduce-without-p2p";
constexpr const char* kGraphSize = "graph-size-below-batch";
constexpr const char* kNodes = "nodes";

// NCCL_ALGO=Tree applied to every collective: the engines capture an all-gather in their graphs
// too, and all-gather has no Tree, so NCCL has no algorithm for it and capture fails
// (docs/references/nccl.md#tree-under-graph-capture). The box where it was seen failing says so in
// its topology file (the home case's 8x RTX PRO 6000, failures_seen).
void check_tree_under_graphs(const Scenario& s, std::vector<LaunchProblem>& out) {
  if (s.comm.nccl_algo != "tree" || s.parallel.tp < 2 || !any_graph(s.engine)) return;
  const std::string library = collective_library(s.gpu.architecture);
  out.push_back({kTreeUnderGraphs, "comm.nccl_algo = tree (NCCL_ALGO=Tree) with CUDA graphs",
                 "a global NCCL_ALGO=Tree leaves the all-gather the engines capture in their graphs without an "
                 "algorithm (all-gather has no Tree): " + library + " returns ncclInvalidUsage during CUDA graph capture "
                 "(docs/references/nccl.md#tree-under-graph-capture)",
                 "drop NCCL_ALGO, or on NCCL 2.24 and later scope it to the all-reduce: NCCL_ALGO=allreduce:tree",
                 true});
}

// A custom all-reduce kernel the GPU or the box cannot run.
void check_custom_allreduce(const Scenario& s, std::vector<LaunchProblem>& out) {
  if (s.parallel.tp < 2) return;
  const std::string& impl = s.comm.implementation;
  const bool vllm_default = impl == "engine" && engine_custom_guard_refusal(s).empty();
  if ((vllm_default || impl == "custom_oneshot") && vllm_custom_aborts_in_capture(s)) {
    out.push_back({kCustomSm12xCapture, "vLLM's custom all-reduce (no --disable-custom-all-reduce) on " + s.gpu.name + " (sm_12x)",
                   "vLLM's custom all-reduce kernel aborts with 'invalid argument' during CUDA graph capture on "
                   "compute capability 12.x (vllm#47266 item 9a; docs/references/nccl.md#engine-custom-allreduce)",
                   "pass --disable-custom-all-reduce (comm.implementation: nccl)", true});
  }
  const bool p2p = s.topology.p2p && s.gpu.p2p_supported;
  if ((impl == "custom_oneshot" || impl == "custom_twoshot") && !p2p) {
    out.push_back({kCustomWithoutP2p, "comm.implementation = " + impl + " without peer-to-peer access",
                   "the one-shot and two-shot kernels read and write the other GPUs' buffers over P2P, which " +
                       s.topology.name + " with " + s.gpu.name + " does not grant "
                       "(docs/references/hardware.md#consumer-p2p)",
                   "use NCCL (comm.implementation: nccl)", true});
  }
}

// A batch above the largest captured CUDA graph runs eagerly (the engines fall back to eager
// launches for a shape they did not capture; docs/references/specdec.md#verify-graph-capture).
void check_graph_sizes(const Scenario& s, std::vector<LaunchProblem>& out) {
  if (!s.engine.cuda_graph_max_batch || s.engine.decode_mode != LaunchMode::kGraph) return;
  int largest = s.batch;
  for (int c : s.concurrency) largest = std::max(largest, c);
  const int captured = *s.engine.cuda_graph_max_batch;
  if (largest <= captured) return;
  out.push_back({kGraphSize, "engine.cuda_graph_max_batch = " + std::to_string(captured) + " below the batch " + std::to_string(largest),
                 "batches above " + std::to_string(captured) + " requests have no captured CUDA graph and run "
                 "eagerly, several times slower per step than the graphs this scenario prices "
                 "(docs/references/specdec.md#verify-graph-capture)",
                 "capture graphs up to " + std::to_string(largest) + " requests (SGLang --cuda-graph-max-bs, "
                 "TensorRT-LLM cuda_graph_config.max_batch_size, vLLM --max-cudagraph-capture-size in tokens)",
                 false});
}

// A deployment over several nodes (docs/model.md#multi-node): one engine command on one node cannot
// start it; each node runs its own with the engine's multi-node options, which specsim does not emit.
void check_nodes(const Scenario& s, std::vector<LaunchProblem>& out) {
  const int nodes = s.topology.nodes_spanned(s.parallel.tp * s.parallel.pp);
  if (nodes <= 1) return;
  out.push_back({kNodes, "tp " + std::to_string(s.parallel.tp) + (s.parallel.pp > 1 ? " x pp " + std::to_string(s.parallel.pp) : "") +
                     " over " + std::to_string(nodes) + " nodes of " + s.topology.name,
                 "the command below is one node's: the deployment's ranks span " + std::to_string(nodes) +
                     " nodes, and each node starts its share of them",
                 "run it on every node with the engine's multi-node options (SGLang: --nnodes " + std::to_string(nodes) +
                     " --node-rank R --dist-init-addr HEAD:PORT, docs.sglang.io references/multi_node_deployment; "
                     "vLLM and TensorRT-LLM: their multi-node launchers)",
                 true});
}

}  // namespace

std::vector<std::string> launch_check_names() {
  return {kTreeUnderGraphs, kCustomSm12xCapture, kCustomWithoutP2p, kGraphSize, kNodes};
}

std::vector<LaunchProblem> launch_problems(const Scenario& s) {
  std::vector<LaunchProblem> out;
  check_tree_under_graphs(s, out);
  check_custom_allreduce(s, out);
  check_graph_sizes(s, out);
  check_nodes(s, out);
  // What the box's own file says it saw of a check: a fact of this box, said here only.
  for (LaunchProblem& p : out) {
    for (const FailureSeen& seen : s.topology.failures_seen) {
      if (seen.check == p.check) p.reason += "; seen on " + s.topology.name + ": " + seen.what;
    }
  }
  return out;
}

std::string describe(const LaunchProblem& p) {
  return std::string(p.fails ? "known to fail at launch: " : "runs slower than priced: ") + p.setting + ": " +
         p.reason + "; fix: " + p.fix;
}

}  // namespace specsim
