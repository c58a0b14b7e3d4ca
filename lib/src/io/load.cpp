#include "specsim/load.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

#include "specsim/acceptance.hpp"
#include "specsim/comm_model.hpp"
#include "specsim/compute_profile.hpp"
#include "specsim/launch_checks.hpp"
#include "specsim/nccl_prior.hpp"
#include "specsim/units.hpp"
#include "specsim/plausibility.hpp"
#include "specsim/scenario_fields.hpp"
#include "specsim/scenario_rules.hpp"
#include "io/hf_config.hpp"
#include "io/interventions.hpp"
#include "model/scenario_bounds.hpp"
#include "util/yaml_reader.hpp"

namespace specsim {

using detail::YamlReader;
using units::Quantity;
namespace fs = std::filesystem;

namespace {

// Counts in model and scenario files: plausibility.hpp's row, so the bound has one home.
const int kMaxCount = static_cast<int>(plausible_range(Magnitude::kCount).max);

// Parts of a measured verify step (all-reduce total + the rest) are read off a profiler and rounded
// to 1 ms in a step of ~30 ms (models/scenarios: 25 ms + 5 ms = 30 ms): 1/30 is 3.3%, so 5% of the
// step allows that rounding and catches a part copied wrong.
constexpr double kVerifyPartsTolerance = 0.05;
constexpr double kTpotTolerance = 0.01;  // rounding of a published TPOT against the rate
const std::vector<std::string>& kMethods = speculation_method_names();

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

const char* subdir(DataKind kind) {
  switch (kind) {
    case DataKind::kModel: return "models/llm";
    case DataKind::kGpu: return "models/gpu";
    case DataKind::kTopology: return "models/topology";
    case DataKind::kScenario: return "models/scenarios";
    case DataKind::kCommProfile: return "calibration/profiles";
    case DataKind::kInterventions: return "models/interventions";
    case DataKind::kEngine: return "models/engines";
  }
  return "";
}

const char* kind_word(DataKind kind) {
  switch (kind) {
    case DataKind::kModel: return "model";
    case DataKind::kGpu: return "GPU";
    case DataKind::kTopology: return "topology";
    case DataKind::kScenario: return "scenario";
    case DataKind::kCommProfile: return "comm profile";
    case DataKind::kInterventions: return "intervention catalogue";
    case DataKind::kEngine: return "engine";
  }
  return "";
}

Dtype read_dtype(YamlReader& r, const std::string& key, Dtype fallback) {
  if (!r.has(key)) {
    r.ignore(key);
    return fallback;
  }
  const std::string s = r.string(key);
  if (auto d = parse_dtype(s)) return *d;
  r.fail(key, "'" + s + "' is not one of: " + dtype_names());
}

LaunchMode read_mode(YamlReader& r, const std::string& key, LaunchMode fallback) {
  const std::string s = r.optional_choice(key, {"graph", "eager"}, fallback == LaunchMode::kGraph ? "graph" : "eager");
  return s == "graph" ? LaunchMode::kGraph : LaunchMode::kEager;
}

// An engine's launch mode may also be piecewise (CUDA graphs with attention launched eagerly);
// measured tables and profiles are graph or eager.
LaunchMode read_engine_mode(YamlReader& r, const std::string& key) {
  const std::string s = r.optional_choice(key, {"graph", "eager", "piecewise"}, "graph");
  return s == "graph" ? LaunchMode::kGraph : s == "eager" ? LaunchMode::kEager : LaunchMode::kPiecewise;
}

int count(YamlReader& r, const std::string& key, int min = 1) {
  return static_cast<int>(r.integer(key, min, kMaxCount));
}

// The problems of one scenario, gathered block by block so that one run reports them all: each
// block is read under run(), and a block that throws is recorded and keeps its defaults. A
// problem found twice (a bound checked up front and again where it is read) is kept once.
class Problems {
 public:
  // Runs `read`; false, with its problem recorded, when it throws.
  template <typename Read>
  bool run(Read&& read) {
    try {
      read();
      return true;
    } catch (const Error& e) {
      add(e);
      return false;
    }
  }
  void add(const Error& e) {
    const auto same = [&](const Error& p) { return std::string(p.what()) == e.what(); };
    if (std::none_of(list_.begin(), list_.end(), same)) list_.push_back(e);
  }
  // Records every problem a rule found; true when there were none.
  bool add_all(const std::vector<Error>& found) {
    for (const Error& e : found) add(e);
    return found.empty();
  }
  [[nodiscard]] bool empty() const { return list_.empty(); }
  std::vector<Error> take() { return std::move(list_); }

 private:
  std::vector<Error> list_;
};

// ---- models/llm/*.yaml ------------------------------------------------------------------------

// `attention:` of a models/llm file: GQA heads, or MLA's low-rank shapes.
AttentionSpec read_attention(YamlReader& a) {
  AttentionSpec at;
  const std::string kind = a.choice("kind", {"gqa", "mla"});
  at.kind = kind == "mla" ? AttentionKind::kMla : AttentionKind::kGqa;
  at.heads = count(a, "heads");
  at.kv_heads = count(a, "kv_heads");
  if (at.kind == AttentionKind::kGqa) {
    at.head_dim = count(a, "head_dim");
    if (at.heads % at.kv_heads != 0) {
      a.fail("kv_heads", "must divide heads (" + std::to_string(at.heads) + ")");
    }
  } else {
    at.head_dim = static_cast<int>(a.optional_integer("head_dim", 0, 0, kMaxCount));
    at.q_lora_rank = count(a, "q_lora_rank", 0);
    at.kv_lora_rank = count(a, "kv_lora_rank");
    at.qk_nope_head_dim = count(a, "qk_nope_head_dim");
    at.qk_rope_head_dim = count(a, "qk_rope_head_dim");
    at.v_head_dim = count(a, "v_head_dim");
  }
  a.finish();
  return at;
}

// One `weights:`-shaped block; each key missing falls back as `weights:` documents it.
WeightDtypes read_weight_dtypes(YamlReader& w, const WeightDtypes& fallback) {
  WeightDtypes d;
  d.attention = read_dtype(w, "attention", fallback.attention);
  d.dense_mlp = read_dtype(w, "dense_mlp", fallback.dense_mlp);
  d.experts = read_dtype(w, "experts", w.has("dense_mlp") ? d.dense_mlp : fallback.experts);
  d.shared_experts = read_dtype(w, "shared_experts", w.has("experts") ? d.experts : fallback.shared_experts);
  d.lm_head = read_dtype(w, "lm_head", fallback.lm_head);
  w.finish();
  return d;
}

// `weights:`, `mtp_weights:`, `activation_dtype`, `collectives:` and `kernels:`: how the model is
// stored and run.
void read_model_storage(YamlReader& r, TransformerSpec& m) {
  if (auto w = r.optional_child("weights")) m.weights = read_weight_dtypes(*w, WeightDtypes{});
  if (auto w = r.optional_child("mtp_weights")) {
    // The MTP module's own precisions where a checkpoint stores it apart (NVIDIA's NVFP4 DeepSeek-R1
    // keeps it BF16); unset keys follow `weights:`.
    if (m.mtp_layers < 1) r.fail("mtp_weights", "needs mtp_layers >= 1: the model has no MTP modules to store apart");
    m.mtp_weights = read_weight_dtypes(*w, m.weights);
  }
  m.activation_dtype = read_dtype(r, "activation_dtype", Dtype::kBf16);
  if (auto c = r.optional_child("collectives")) {
    m.collectives.allreduce_per_layer = static_cast<int>(c->optional_integer("allreduce_per_layer", 2, 0, 16));
    m.collectives.embedding_allreduce = c->optional_boolean("embedding_allreduce", true);
    m.collectives.lm_head_gather = c->optional_boolean("lm_head_gather", true);
    c->finish();
  }
  if (auto k = r.optional_child("kernels")) {
    m.kernels.per_dense_layer = static_cast<int>(k->optional_integer("per_dense_layer", 11, 1, 1000));
    m.kernels.per_moe_layer = static_cast<int>(k->optional_integer("per_moe_layer", 16, 1, 1000));
    m.kernels.per_forward = static_cast<int>(k->optional_integer("per_forward", 6, 0, 1000));
    k->finish();
  }
}

// A DFlash block drafter's `dflash:` block (docs/references/specdec.md#dflash): the target layers
// its fc reads (at least one), their width, the block it was trained on and its mask token.
DflashSpec read_dflash_block(YamlReader& d, const TransformerSpec& m) {
  DflashSpec s;
  s.target = d.optional_string("target", "");
  for (long long id : d.integers("target_layer_ids", 0, kMaxCount)) s.target_layer_ids.push_back(static_cast<int>(id));
  s.target_hidden_size = static_cast<int>(d.optional_integer("target_hidden_size", m.hidden_size, 1, kMaxCount));
  const auto& b = *detail::find_scenario_bound("speculation.block_size");
  s.block_size = static_cast<int>(d.integer("block_size", static_cast<long long>(b.min), static_cast<long long>(b.max)));
  s.mask_token_id = static_cast<int>(d.optional_integer("mask_token_id", -1, -1, kMaxCount));
  d.finish();
  return s;
}

TransformerSpec read_model_yaml(YamlReader& r) {
  r.expect_header("llm");
  TransformerSpec m;
  m.name = r.string("name");
  m.description = r.optional_string("description", "");
  r.ignore("source");
  m.layers = count(r, "layers");
  m.dense_layers = count(r, "dense_layers", 0);
  if (m.dense_layers > m.layers) r.fail("dense_layers", "must not exceed layers (" + std::to_string(m.layers) + ")");
  m.hidden_size = count(r, "hidden_size");
  m.vocab_size = count(r, "vocab_size");
  {
    YamlReader a = r.child("attention");
    m.attention = read_attention(a);
  }
  if (auto mlp = r.optional_child("mlp")) {
    m.intermediate_size = count(*mlp, "intermediate_size");
    mlp->finish();
  } else if (m.dense_layers > 0) {
    r.fail("mlp", "required when dense_layers > 0");
  }
  if (auto moe = r.optional_child("moe")) {
    MoeSpec e;
    e.experts = count(*moe, "experts");
    e.experts_per_token = count(*moe, "experts_per_token");
    if (e.experts_per_token > e.experts) moe->fail("experts_per_token", "must not exceed experts");
    e.shared_experts = count(*moe, "shared_experts", 0);
    e.expert_intermediate_size = count(*moe, "expert_intermediate_size");
    moe->finish();
    m.moe = e;
  } else if (m.dense_layers < m.layers) {
    r.fail("moe", "required when dense_layers < layers");
  }
  m.mtp_layers = static_cast<int>(r.optional_integer("mtp_layers", 0, 0, kMaxCount));
  read_model_storage(r, m);
  if (r.has("eagle3") && r.has("eagle")) r.fail("eagle", "a head is EAGLE-1/2 (eagle) or EAGLE-3 (eagle3), not both");
  if (r.has("dflash") && (r.has("eagle3") || r.has("eagle"))) {
    r.fail("dflash", "a drafter is a DFlash block drafter or an EAGLE head, not both");
  }
  if (auto d = r.optional_child("dflash")) m.dflash = read_dflash_block(*d, m);
  if (auto e = r.optional_child("eagle3")) {
    Eagle3Spec s;
    s.target = e->string("target");
    s.aux_hidden_states = static_cast<int>(e->optional_integer("aux_hidden_states", 3, 1, 16));
    s.draft_vocab_size = count(*e, "draft_vocab_size");
    e->finish();
    m.eagle3 = s;
  }
  // An EAGLE-1/2 head (docs/references/models.md#eagle1-structure): its fc fuses [embedding;
  // feature], two H-wide inputs, and it predicts over the target's whole vocabulary.
  if (auto e = r.optional_child("eagle")) {
    Eagle3Spec s;
    s.version = 1;
    s.target = e->string("target");
    s.aux_hidden_states = 2;
    s.draft_vocab_size = m.vocab_size;
    e->finish();
    m.eagle3 = s;
  }
  r.finish();
  return m;
}

// ---- GPU, topology, comm profile ----------------------------------------------------------------

GpuSpec read_gpu(YamlReader& r) {
  r.expect_header("gpu");
  GpuSpec g;
  g.name = r.string("name");
  g.description = r.optional_string("description", "");
  r.ignore("source");
  g.memory_bytes = r.quantity("memory", Quantity::kBytes);
  g.memory_bandwidth_bytes_per_s = r.quantity("memory_bandwidth", Quantity::kBandwidth);
  g.bf16_flop_per_s = r.quantity("bf16_dense", Quantity::kFlopRate);
  g.fp8_flop_per_s = r.optional_quantity("fp8_dense", Quantity::kFlopRate);
  r.optional_quantity("fp4_dense", Quantity::kFlopRate);
  r.optional_quantity("fp6_dense", Quantity::kFlopRate);  // stated for the record (CDNA4); no fp6 weights priced
  g.pcie_generation = static_cast<int>(r.integer("pcie_generation", 3, 7));
  g.architecture = *parse_gpu_arch(
      r.choice("architecture", {"volta", "ampere", "ada", "hopper", "blackwell", "cdna3", "cdna4"}));
  g.nvlink_bandwidth_bytes_per_s = r.optional_quantity("nvlink_bandwidth", Quantity::kBandwidth);
  g.xgmi_link_bandwidth_bytes_per_s = r.optional_quantity("xgmi_link_bandwidth", Quantity::kBandwidth);
  g.xgmi_links = static_cast<int>(r.optional_integer("xgmi_links", 0, 1, 64));
  g.p2p_supported = r.optional_boolean("p2p_supported", true);
  if (const std::string cc = r.optional_string("compute_capability", ""); !cc.empty()) {
    // "12.0": one or two digits, a dot, one digit (NVIDIA's CUDA GPUs list writes them so).
    const bool ok = cc.size() >= 3 && cc.size() <= 4 && cc[cc.size() - 2] == '.' &&
                    std::all_of(cc.begin(), cc.end() - 2, [](char c) { return c >= '0' && c <= '9'; }) &&
                    cc.back() >= '0' && cc.back() <= '9';
    if (!ok) r.fail("compute_capability", "'" + cc + "' is not a compute capability (MAJOR.MINOR, e.g. 12.0)");
    g.compute_capability = std::stoi(cc.substr(0, cc.size() - 2)) * 10 + (cc.back() - '0');
  }
  // Floors far below any GPU specsim can model (the smallest, a GeForce of the volta era, has
  // ~200 GB/s and ~30 TFLOP/s): a value below one is a unit typo or a denormal, never hardware.
  if (g.memory_bandwidth_bytes_per_s < 1e9) r.fail("memory_bandwidth", "must be at least 1 GB/s for a GPU");
  if (g.bf16_flop_per_s < 1e12) r.fail("bf16_dense", "must be at least 1 TFLOP/s for a GPU");
  if (g.fp8_flop_per_s && *g.fp8_flop_per_s < 1e12) r.fail("fp8_dense", "must be at least 1 TFLOP/s for a GPU");
  if (g.memory_bytes < 1073741824.0) r.fail("memory", "must be at least 1 GiB for a GPU");
  if (g.nvlink_bandwidth_bytes_per_s && *g.nvlink_bandwidth_bytes_per_s < 1e9) {
    r.fail("nvlink_bandwidth", "must be at least 1 GB/s (or left out)");
  }
  if (g.xgmi_link_bandwidth_bytes_per_s && *g.xgmi_link_bandwidth_bytes_per_s < 1e9) {
    r.fail("xgmi_link_bandwidth", "must be at least 1 GB/s (or left out)");
  }
  if (g.xgmi_link_bandwidth_bytes_per_s.has_value() != (g.xgmi_links > 0)) {
    r.fail(g.xgmi_links > 0 ? "xgmi_links" : "xgmi_link_bandwidth",
           "xgmi_link_bandwidth and xgmi_links go together: give both (an Infinity Fabric card) or neither");
  }
  r.finish();
  return g;
}

constexpr const char* kLinkClasses = "NV#, XGMI, PIX, PXB, PHB, NODE, SYS";

// `links:` one string per GPU, its classes to every GPU separated by spaces, "X" for itself:
//   links:
//     - "X PIX SYS"
//     - "PIX X SYS"
//     - "SYS SYS X"
// Square (gpus x gpus), X exactly on the diagonal, symmetric.
void read_pair_links(YamlReader& r, Topology& t) {
  std::vector<YamlReader> rows = r.sequence("links");
  const std::string per = t.nodes > 1 ? " of one node (gpus_per_node = " : " (gpus = ";
  if (static_cast<int>(rows.size()) != t.node_gpus()) {
    r.fail("links", "has " + std::to_string(rows.size()) + " rows: needs one per GPU" + per +
                        std::to_string(t.node_gpus()) + ")");
  }
  const auto n = static_cast<std::size_t>(t.node_gpus());
  t.pair_links.assign(n, std::vector<LinkClass>(n, LinkClass::kNvlink));
  t.pair_nvlinks.assign(n, std::vector<int>(n, 0));
  for (std::size_t i = 0; i < n; ++i) {
    YamlReader& row = rows[i];
    if (!row.node().IsScalar()) row.fail_here("expected a string of link classes such as \"X PIX SYS\"");
    std::vector<std::string> cells;
    for (const char ch : row.node().Scalar()) {
      if (ch == ' ' || ch == '\t') {
        if (!cells.empty() && !cells.back().empty()) cells.emplace_back();
      } else {
        if (cells.empty()) cells.emplace_back();
        cells.back() += ch;
      }
    }
    if (!cells.empty() && cells.back().empty()) cells.pop_back();
    if (cells.size() != n) {
      row.fail_here("has " + std::to_string(cells.size()) + " classes: needs one per GPU" + per +
                    std::to_string(t.node_gpus()) + ")");
    }
    for (std::size_t j = 0; j < n; ++j) {
      const std::string where = "entry " + std::to_string(j) + " (GPU" + std::to_string(i) + " to GPU" +
                                std::to_string(j) + ")";
      if (i == j) {
        if (cells[j] != "X") row.fail_here(where + " is '" + cells[j] + "': the diagonal must be X");
        continue;
      }
      if (cells[j] == "X") row.fail_here(where + " is 'X': X marks a GPU with itself, only on the diagonal");
      const auto cls = parse_link_class(cells[j]);
      if (!cls) row.fail_here(where + ": '" + cells[j] + "' is not a link class (X, " + kLinkClasses + ")");
      t.pair_links[i][j] = *cls;
      t.pair_nvlinks[i][j] = parse_nvlink_count(cells[j]);
      if (j < i && (t.pair_links[j][i] != *cls || t.pair_nvlinks[j][i] != t.pair_nvlinks[i][j])) {
        row.fail_here(where + " is " + cells[j] + " but links[" + std::to_string(j) + "] entry " +
                      std::to_string(i) + " is " + link_name(t.pair_links[j][i], t.pair_nvlinks[j][i]) +
                      ": the matrix must be symmetric");
      }
    }
  }
}

// `numa:` the NUMA node nearest each GPU, one integer per GPU.
void read_numa_nodes(YamlReader& r, Topology& t) {
  std::vector<YamlReader> items = r.sequence("numa");
  if (static_cast<int>(items.size()) != t.node_gpus()) {
    r.fail("numa", "has " + std::to_string(items.size()) + " entries: needs one per GPU" +
                       (t.nodes > 1 ? " of one node (gpus_per_node = " : " (gpus = ") + std::to_string(t.node_gpus()) + ")");
  }
  for (YamlReader& item : items) {
    const std::string text = item.node().IsScalar() ? item.node().Scalar() : "";
    const std::optional<int> node = parse_numa_node(text);
    if (!node) {
      item.fail_here("'" + text + "' is not a NUMA node number (an integer in [0, " + std::to_string(kMaxNumaNode) + "])");
    }
    t.numa_nodes.push_back(*node);
  }
}

// `network:` between the nodes: kind, one NIC's bandwidth, the one-way latency, NICs per node.
Network read_network(YamlReader& n, const Topology& t) {
  Network net;
  net.kind = *parse_network_kind(n.choice("kind", {"infiniband", "roce", "ethernet"}));
  net.nic_bandwidth_bytes_per_s = n.quantity("nic_bandwidth", units::Quantity::kBandwidth);
  net.latency_s = n.quantity("latency", units::Quantity::kDuration);
  net.rails = static_cast<int>(n.optional_integer("rails", t.node_gpus(), 1, t.node_gpus()));
  n.finish();
  // A NIC slower than 1 GB/s (8 Gb/s) is a unit typo, not a GPU cluster's network.
  if (net.nic_bandwidth_bytes_per_s < 1e9) {
    n.fail("nic_bandwidth", "must be at least 1 GB/s per NIC (a 400 Gb/s port is 50GB/s: bandwidths are in bytes)");
  }
  return net;
}

// `nodes`, `gpus_per_node` and `network`: gpus = nodes x gpus_per_node, and a network exactly when
// there are several nodes.
void read_nodes(YamlReader& r, Topology& t) {
  t.nodes = static_cast<int>(r.optional_integer("nodes", 1, 1, kMaxCount));
  const long long per = r.optional_integer("gpus_per_node", t.gpus / t.nodes, 1, kMaxCount);
  if (per * t.nodes != t.gpus) {
    r.fail(r.has("gpus_per_node") ? "gpus_per_node" : "nodes",
           "nodes (" + std::to_string(t.nodes) + ") x gpus_per_node (" + std::to_string(per) + ") = " +
               std::to_string(per * t.nodes) + ", but gpus = " + std::to_string(t.gpus) + ": every node holds the same GPUs");
  }
  t.gpus_per_node = static_cast<int>(per);
  if (t.nodes > 1 && !r.has("network")) {
    r.fail("nodes", "= " + std::to_string(t.nodes) + ": a multi-node topology needs `network:` (kind, nic_bandwidth, "
                    "latency, rails) to price what crosses between nodes");
  }
  if (t.nodes == 1 && r.has("network")) r.fail("network", "joins nodes, and this topology has one (set nodes: N)");
  if (auto n = r.optional_child("network")) t.network = read_network(*n, t);
}

// What was measured on this box alone: launch checks seen failing here (`failures_seen:`) and the
// interventions whose figures come from this box (`interventions:`, as a catalogue's entries).
void read_box_facts(YamlReader& r, Topology& t) {
  if (r.has("failures_seen")) {
    const std::vector<std::string> checks = launch_check_names();
    for (YamlReader f : r.sequence("failures_seen")) {
      FailureSeen seen{f.choice("check", checks), f.string("what")};
      f.finish();
      t.failures_seen.push_back(std::move(seen));
    }
  }
  if (r.has("interventions")) t.interventions = detail::read_interventions(r, "interventions");
}

// The keys of a topology, in a models/topology file or inline under a scenario's `topology:`.
Topology read_topology_keys(YamlReader& r) {
  Topology t;
  t.name = r.string("name");
  t.description = r.optional_string("description", "");
  r.ignore("source");
  t.gpu = r.string("gpu");
  t.gpus = count(r, "gpus");
  t.p2p = r.optional_boolean("p2p", true);
  t.pcie_generation = static_cast<int>(r.optional_integer("pcie_generation", 5, 3, 7));
  read_nodes(r, t);
  if (r.has("links")) read_pair_links(r, t);
  if (r.has("numa")) read_numa_nodes(r, t);
  if (r.has("link") || t.pair_links.empty()) {
    const std::string link = r.string("link");
    auto cls = parse_link_class(link);
    if (!cls) r.fail("link", "'" + link + "' is not a link class (" + kLinkClasses + ")");
    t.link = *cls;
    t.nvlinks = parse_nvlink_count(link);
    // A ring may avoid the slowest pair (e.g. NVLink rings on a hybrid cube mesh), so `link` need not
    // be the slowest class, but its slowest hop is some pair: the class must occur in the matrix.
    bool occurs = t.node_gpus() == 1;
    for (std::size_t i = 0; i < t.pair_links.size(); ++i) {
      for (std::size_t j = 0; j < t.pair_links.size(); ++j) {
        if (i != j && t.pair_links[i][j] == t.link && t.pair_nvlinks[i][j] == t.nvlinks) occurs = true;
      }
    }
    if (!t.pair_links.empty() && !occurs) {
      r.fail("link", "'" + link + "' is not the class of any GPU pair in links (a ring's slowest hop is one of them)");
    }
  } else {
    r.ignore("link");
    const auto [ring, nvlinks] = ring_link(t);
    t.link = ring;
    t.nvlinks = nvlinks;
  }
  t.comm_profile = r.optional_string("comm_profile", "");
  read_box_facts(r, t);
  if (r.has("cpu")) {
    const std::string cpu = r.string("cpu");
    t.cpu = parse_host_cpu(cpu);
    if (!t.cpu) r.fail("cpu", "'" + cpu + "' is not a host CPU NCCL tells apart (" + host_cpu_names() + ")");
  }
  r.finish();
  return t;
}

Topology read_topology(YamlReader& r) {
  r.expect_header("topology");
  return read_topology_keys(r);
}

// An NCCL release under `key` ("2.29.7"); "" when absent or "unknown".
std::string read_nccl_version(YamlReader& r, const char* key) {
  const std::string text = r.optional_string(key, "");
  if (text.empty() || text == "unknown") return "";
  if (!parse_nccl_version(text)) r.fail(key, "'" + text + "' is not an NCCL release (MAJOR.MINOR[.PATCH], e.g. 2.29.7)");
  return text;
}

// The largest fall of time between consecutive sizes a measured comm table may show.
constexpr double kMaxMeasuredFall = 0.25;

CommProfile read_comm_profile(YamlReader& r) {
  r.expect_header("comm_profile");
  CommProfile p;
  p.name = r.string("name");
  p.description = r.optional_string("description", "");
  p.source = r.optional_string("source", "");
  p.collective = r.choice("collective", {"all_reduce", "all_to_all"});
  p.implementation = p.collective == "all_reduce" ? r.choice("implementation", {"nccl", "custom_oneshot", "fp8"})
                                                  : r.choice("implementation", {"nccl", "deepep", "pplx"});
  p.ranks = static_cast<int>(r.integer("ranks", 1, 4096));
  p.nodes = static_cast<int>(r.optional_integer("nodes", 1, 1, 4096));
  if (p.ranks % p.nodes != 0) {
    r.fail("nodes", "= " + std::to_string(p.nodes) + ": the ranks (" + std::to_string(p.ranks) + ") must split evenly over the nodes");
  }
  p.gpu = r.optional_string("gpu", "");
  p.mode = read_mode(r, "mode", LaunchMode::kGraph);
  p.nccl_version = read_nccl_version(r, "nccl_version");
  if (!p.nccl_version.empty() && p.implementation != "nccl") {
    r.fail("nccl_version", "a '" + p.implementation + "' table does not run NCCL: only an nccl table has a release");
  }
  // A profile written by `specsim calibrate` (it has provenance) keeps the measured rows, whose
  // small sizes scatter by a few percent (the shipped 2x 2080 Ti log: 12.25 us at 8 B, 11.77 us at
  // 16 B); the curve treats such drops as noise. A hand-written curve has no such excuse: its time
  // must not fall as the size grows (docs/calibration.md: monotone curves).
  const bool measured = r.has("provenance");
  for (YamlReader pt : r.sequence("points")) {
    CommProfile::Point point;
    point.message_bytes = pt.quantity("size", Quantity::kBytes);
    point.time_s = pt.quantity("time", Quantity::kDuration);
    if (point.time_s <= 0) pt.fail("time", "must be > 0");
    if (!p.points.empty() && point.message_bytes <= p.points.back().message_bytes) {
      pt.fail("size", "sizes must rise strictly from one point to the next");
    }
    // Measured rows scatter by a few percent (the shipped tables fall at most 9.7% between sizes);
    // a fall past kMaxMeasuredFall is a damaged or hand-edited row, not noise (32 MiB at 100 us
    // after 16 MiB at 1973 us).
    if (measured && !p.points.empty() && point.time_s < (1.0 - kMaxMeasuredFall) * p.points.back().time_s) {
      pt.fail("time", units::format_duration(point.time_s) + " at " + units::format_bytes(point.message_bytes) +
                          " is " + units::format_fixed(100.0 * (1.0 - point.time_s / p.points.back().time_s), 0) +
                          "% below " + units::format_duration(p.points.back().time_s) + " at " +
                          units::format_bytes(p.points.back().message_bytes) +
                          ": more than a measurement's scatter (25%); the table is damaged or was edited");
    }
    if (!measured && !p.points.empty() && point.time_s < p.points.back().time_s) {
      pt.fail("time", units::format_duration(point.time_s) + " at " + units::format_bytes(point.message_bytes) +
                          " is less than " + units::format_duration(p.points.back().time_s) + " at " +
                          units::format_bytes(p.points.back().message_bytes) +
                          ": a hand-written profile's time must not fall as the size grows");
    }
    pt.finish();
    p.points.push_back(point);
  }
  if (p.points.empty()) r.fail("points", "needs at least one point");
  // Written by `specsim calibrate` (source files and hashes, fit residuals); a record for people,
  // not an input to the model.
  r.ignore("provenance");
  r.finish();
  return p;
}

// The keys of a scenario's `compute:` block and of a compute profile's; absent keys keep `s`'s values.
void read_compute_keys(YamlReader& c, ComputeSettings& s) {
  // The ranges are kScenarioBounds' rows (scenario_bounds.hpp); a profile's `compute:` has the same keys.
  const auto in = [](const char* key) { return *detail::find_scenario_bound(std::string("compute.") + key); };
  const auto number = [&](const char* key) { return c.number(key, in(key).min, in(key).max); };
  const auto number_or_calibrate = [&](const char* key) { return c.number_or_calibrate(key, in(key).min, in(key).max); };
  if (c.has("bandwidth_efficiency")) s.bandwidth_efficiency = number_or_calibrate("bandwidth_efficiency");
  c.ignore("bandwidth_efficiency");
  if (c.has("flop_efficiency")) s.flop_efficiency = number("flop_efficiency");
  c.ignore("flop_efficiency");
  if (auto v = c.optional_quantity("kernel_floor", Quantity::kDuration)) s.kernel_floor_s = *v;
  if (auto v = c.optional_quantity("eager_launch_per_kernel", Quantity::kDuration)) s.eager_launch_per_kernel_s = *v;
  if (auto v = c.optional_quantity("graph_launch", Quantity::kDuration)) s.graph_launch_s = *v;
  if (auto v = c.optional_quantity("eager_multi_token_step", Quantity::kDuration)) s.eager_multi_token_step_s = *v;
  if (c.has("eager_overlap_exponent")) s.eager_overlap_exponent = number("eager_overlap_exponent");
  c.ignore("eager_overlap_exponent");
  if (c.has("routing_skew")) s.routing_skew = number_or_calibrate("routing_skew");
  c.ignore("routing_skew");
  // Fitted terms (compute_model.hpp).
  for (auto [key, field] : {std::pair{"expert_bandwidth_efficiency", &s.expert_bandwidth_efficiency},
                            std::pair{"kv_efficiency_decode", &s.kv_efficiency_decode},
                            std::pair{"kv_efficiency_verify", &s.kv_efficiency_verify}}) {
    if (c.has(key)) *field = number(key);
    c.ignore(key);
  }
  if (c.has("kv_verify_ratio")) s.kv_verify_ratio = number("kv_verify_ratio");
  c.ignore("kv_verify_ratio");
  if (auto v = c.optional_quantity("multi_token_step", Quantity::kDuration)) s.multi_token_step_s = *v;
  if (auto v = c.optional_quantity("per_token_layer", Quantity::kDuration)) s.per_token_layer_s = *v;
  if (c.has("kernels_per_dense_layer")) s.kernels_per_dense_layer = static_cast<int>(c.integer("kernels_per_dense_layer", 0, 100000));
  c.ignore("kernels_per_dense_layer");
  if (c.has("kernels_per_moe_layer")) s.kernels_per_moe_layer = static_cast<int>(c.integer("kernels_per_moe_layer", 0, 100000));
  c.ignore("kernels_per_moe_layer");
  if (c.has("piecewise_attention_kernels")) {
    s.piecewise_attention_kernels = static_cast<int>(c.integer("piecewise_attention_kernels", 1, 100));
  }
  c.ignore("piecewise_attention_kernels");
  if (auto v = c.optional_quantity("piecewise_gpu_per_attention", Quantity::kDuration)) s.piecewise_gpu_per_attention_s = *v;
}

ComputeProfile read_compute_profile(YamlReader& r) {
  r.expect_header("compute_profile");
  ComputeProfile p;
  p.name = r.string("name");
  p.description = r.optional_string("description", "");
  p.source = r.optional_string("source", "");
  p.gpu = r.string("gpu");
  YamlReader c = r.child("compute");
  read_compute_keys(c, p.settings);
  if (!p.settings.bandwidth_efficiency) c.fail("bandwidth_efficiency", "a profile holds values, not 'calibrate'");
  c.finish();
  // Written by `specsim calibrate compute` (source file and hash, residuals, held-out errors); a
  // record for people, not an input to the model.
  r.ignore("provenance");
  r.finish();
  return p;
}

}  // namespace

// ---- data directory -------------------------------------------------------------------------------

std::string default_data_dir() {
  if (const char* env = std::getenv("SPECSIM_DATA_DIR"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "specsim";
    if (fs::exists(installed / "models" / "scenarios", ec)) return installed.string();
  }
  return SPECSIM_SOURCE_DATA_DIR;
}

DataDir::DataDir(std::string root) : root_(std::move(root)) {}

std::vector<std::string> DataDir::names(DataKind kind) const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(root_) / subdir(kind), ec)) {
    if (entry.path().extension() == ".yaml") out.push_back(entry.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> DataDir::files() const {
  std::vector<std::string> out;
  for (const char* folder : {"models", "calibration"}) {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(fs::path(root_) / folder, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec)) out.push_back(it->path().string());
    }
  }
  return out;
}

std::string DataDir::resolve(DataKind kind, const std::string& name) const {
  const bool path_like = name.find('/') != std::string::npos ||
                         name.ends_with(".yaml") || name.ends_with(".json") || name.ends_with(".yml");
  // The error_code overloads: a name the file system refuses (too long, bad bytes) is a name that
  // does not exist, not a std::filesystem exception (found by fuzz_load).
  std::error_code ec;
  if (path_like) {
    if (!fs::exists(name, ec)) throw Error({name, 0, 0}, "", std::string("no such ") + kind_word(kind) + " file");
    return name;
  }
  const fs::path p = fs::path(root_) / subdir(kind) / (name + ".yaml");
  if (fs::exists(p, ec)) return p.string();
  throw Error(std::string("unknown ") + kind_word(kind) + " '" + name + "' (known in " + root_ + "/" +
              subdir(kind) + ": " + join(names(kind)) + ")");
}

// ---- public loaders -----------------------------------------------------------------------------

static TransformerSpec load_model_file(const std::string& path) {
  // A Hugging Face checkpoint directory is read through its config.json.
  std::error_code ec;
  const std::string file = fs::is_directory(path, ec) ? (fs::path(path) / "config.json").string() : path;
  YamlReader r = YamlReader::load_file(file);
  TransformerSpec m = detail::looks_like_hf_config(r) ? detail::read_hf_config(r) : read_model_yaml(r);
  m.file = file;
  return m;
}

static GpuSpec load_gpu_file(const std::string& path) {
  YamlReader r = YamlReader::load_file(path);
  return read_gpu(r);
}

static Topology load_topology_file(const std::string& path) {
  YamlReader r = YamlReader::load_file(path);
  return read_topology(r);
}

static CommProfile load_comm_profile_file(const std::string& path) {
  YamlReader r = YamlReader::load_file(path);
  return read_comm_profile(r);
}

namespace {

EnginePrior::Term read_prior_term(YamlReader& t) {
  EnginePrior::Term out;
  out.value_s = t.quantity("value", Quantity::kDuration);
  out.p10_s = t.quantity("p10", Quantity::kDuration);
  out.p90_s = t.quantity("p90", Quantity::kDuration);
  if (out.value_s < 0 || out.p10_s < 0) t.fail("p10", "overheads cannot be negative");
  if (!(out.p10_s <= out.value_s && out.value_s <= out.p90_s)) t.fail("value", "must lie within [p10, p90]");
  t.ignore("source");
  t.finish();
  return out;
}

// A list of speculation methods at `key`, each one specsim knows.
std::vector<std::string> read_methods(YamlReader& r, const std::string& key) {
  std::vector<std::string> methods = r.optional_names(key);
  for (const auto& m : methods) {
    if (std::find(kMethods.begin(), kMethods.end(), m) == kMethods.end()) {
      r.fail(key, "'" + m + "' is not a speculation method (" + join(kMethods) + ")");
    }
  }
  return methods;
}

// `behaviour.async_scheduling:` of an engine file: whether the plain run is asynchronous by default,
// and the methods whose speculative run is (docs/model.md#async-scheduling).
EngineBehaviour::AsyncDefault read_async_default(YamlReader& a) {
  EngineBehaviour::AsyncDefault out;
  out.plain = a.boolean("plain");
  out.methods = read_methods(a, "methods");
  a.string("source");
  a.finish();
  return out;
}

// `behaviour.custom_allreduce:` whether the engine runs a custom all-reduce kernel of its own, and
// the compute-capability majors where it aborts in CUDA graph capture.
void read_custom_allreduce(YamlReader& c, EngineBehaviour& b) {
  b.custom_allreduce = c.boolean("runs_by_default");
  if (c.has("aborts_in_graph_capture_on")) {
    for (long long major : c.integers("aborts_in_graph_capture_on", 1, 99)) {
      b.custom_allreduce_aborts_in_capture.push_back(static_cast<int>(major));
    }
  }
  if (!b.custom_allreduce && !b.custom_allreduce_aborts_in_capture.empty()) {
    c.fail("aborts_in_graph_capture_on", "needs runs_by_default: true (a kernel the engine does not run cannot abort)");
  }
  c.string("source");
  c.finish();
}

// `behaviour:` what the engine does whatever the method (EngineBehaviour; docs/schema.md#engine-files).
// Every key is optional; each block states its `source:`.
EngineBehaviour read_engine_behaviour(YamlReader& r) {
  EngineBehaviour b;
  if (auto c = r.optional_child("custom_allreduce")) read_custom_allreduce(*c, b);
  if (auto m = r.optional_child("memory_rule")) {
    const std::string kind = m->choice("kind", {"static_fraction", "profile_run"});
    b.memory_rule = kind == "static_fraction" ? EngineBehaviour::MemoryRule::kStaticFraction
                                              : EngineBehaviour::MemoryRule::kProfileRun;
    m->string("source");
    m->finish();
  }
  if (auto p = r.optional_child("parallel_drafting")) {
    b.parallel_drafting = p->boolean("supported");
    p->string("source");
    p->finish();
  }
  if (auto a = r.optional_child("async_scheduling")) b.async_scheduling = read_async_default(*a);
  r.finish();
  return b;
}

// `default_spec_version:` the worker version the top-level cycle_overhead was measured on, and
// `spec_versions:` the other versions' per-cycle priors, each `{version, cycle_overhead, source}`.
void read_spec_versions(YamlReader& r, EnginePrior& e) {
  e.default_spec_version = r.optional_string("default_spec_version", "");
  if (!r.has("spec_versions")) return;
  if (e.default_spec_version.empty()) r.fail("spec_versions", "needs default_spec_version: the version cycle_overhead holds");
  for (YamlReader& v : r.sequence("spec_versions")) {
    const std::string name = v.string("version");
    if (name == e.default_spec_version) v.fail("version", "'" + name + "' is default_spec_version: its prior is cycle_overhead");
    for (const auto& [known, term] : e.cycle_overhead_by_version) {
      if (known == name) v.fail("version", "'" + name + "' is listed twice");
    }
    YamlReader c = v.child("cycle_overhead");
    e.cycle_overhead_by_version.emplace_back(name, read_prior_term(c));
    v.ignore("source");
    v.finish();
  }
}

}  // namespace

static EnginePrior load_engine_prior_file(const std::string& path) {
  YamlReader r = YamlReader::load_file(path);
  r.expect_header("engine");
  EnginePrior e;
  e.name = r.string("name");
  r.optional_string("description", "");
  e.source = r.string("source");
  {
    YamlReader c = r.child("cycle_overhead");
    e.cycle_overhead = read_prior_term(c);
  }
  {
    YamlReader d = r.child("draft_step_overhead");
    e.draft_step_overhead = read_prior_term(d);
  }
  if (auto h = r.optional_child("plain_step_host")) e.plain_step_host = read_prior_term(*h);
  if (auto q = r.optional_child("spec_per_request")) e.spec_per_request = read_prior_term(*q);
  read_spec_versions(r, e);
  e.methods = read_methods(r, "methods");
  if (auto b = r.optional_child("behaviour")) e.behaviour = read_engine_behaviour(*b);
  r.finish();
  const auto name = [&e](EnginePrior::Term& t) {
    t.origin = "prior: engine " + e.name + ", p10-p90 " + units::format_duration(t.p10_s) + " to " +
               units::format_duration(t.p90_s) + " (models/engines/" + e.name + ".yaml)";
  };
  for (EnginePrior::Term* t : {&e.cycle_overhead, &e.draft_step_overhead}) name(*t);
  if (e.plain_step_host) name(*e.plain_step_host);
  if (e.spec_per_request) name(*e.spec_per_request);
  for (auto& [version, term] : e.cycle_overhead_by_version) name(term);
  return e;
}

// The engine's behaviour (its file's `behaviour:`), whatever the method: read with the engine's
// name, before the rules that depend on it (parallel drafting, the custom all-reduce's notes).
static void read_engine_file_behaviour(Scenario& s, const DataDir& data) {
  const auto engines = data.names(DataKind::kEngine);
  if (std::find(engines.begin(), engines.end(), s.engine.name) == engines.end()) return;
  s.engine.behaviour = load_engine_prior(data.resolve(DataKind::kEngine, s.engine.name)).behaviour;
}

static ModelError load_model_error_file(const std::string& path) {
  YamlReader r = YamlReader::load_file(path);
  r.expect_header("model_error");
  r.optional_string("description", "");
  r.string("source");
  ModelError e;
  e.origin = path;
  e.rows = int(r.integer("rows", 1, 100000));
  e.sources = int(r.integer("sources", 1, e.rows));
  {
    YamlReader q = r.child("residual_ln");
    e.residual_p10 = q.number("p10", -5.0, 5.0);
    e.residual_p50 = q.number("p50", -5.0, 5.0);
    e.residual_p90 = q.number("p90", -5.0, 5.0);
    if (!(e.residual_p10 <= e.residual_p50 && e.residual_p50 <= e.residual_p90)) q.fail("p50", "must lie within [p10, p90]");
    q.finish();
  }
  // ln units: a sigma of 1 would put the model's own p90 at 13x its p10, not an error a prediction can carry.
  e.prior_sigma_rms = r.number("prior_sigma_rms", 0.0, 1.0);
  e.sigma = r.number("sigma", 0.0, 1.0);
  e.sigma_below = r.optional_number("sigma_below", e.sigma, 0.0, 1.0);
  e.sigma_above = r.optional_number("sigma_above", e.sigma, 0.0, 1.0);
  if (auto g = r.optional_child("gain_residual_ln")) {
    e.gain_pairs = int(g->integer("pairs", 1, 1000000));
    e.gain_residual_p10 = g->number("p10", -5.0, 5.0);
    e.gain_residual_p90 = g->number("p90", -5.0, 5.0);
    if (e.gain_residual_p10 > e.gain_residual_p90) g->fail("p10", "must not exceed p90");
    g->finish();
  }
  r.finish();
  return e;
}

// ---- what a data file gives, kept -------------------------------------------------------------

namespace {

// A regular file's size and modification time: a file edited since it was read reads again.
struct FileStamp {
  std::uintmax_t bytes = 0;
  fs::file_time_type written;
  bool operator==(const FileStamp&) const = default;
};

std::optional<FileStamp> stamp_of(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;  // a pipe reads once; its text is kept elsewhere
  FileStamp s;
  s.bytes = fs::file_size(path, ec);
  if (ec) return std::nullopt;
  s.written = fs::last_write_time(path, ec);
  if (ec) return std::nullopt;
  return s;
}

// What `read` gives for `path`, kept by path and stamp: what-ifs (rank's interventions, sweep
// points off the fast path) load the same model, GPU, topology, profiles and engine file for every
// scenario they build, and the value a file gives is a function of its bytes. A file that fails is
// not kept (it fails again, with the same message).
template <class T>
T remembered(const std::string& path, T (*read)(const std::string&)) {
  static std::mutex mutex;
  static std::map<std::string, std::pair<FileStamp, T>> kept;
  const std::optional<FileStamp> stamp = stamp_of(path);
  if (!stamp) return read(path);
  {
    const std::lock_guard<std::mutex> lock(mutex);
    const auto it = kept.find(path);
    if (it != kept.end() && it->second.first == *stamp) return it->second.second;
  }
  T value = read(path);
  const std::lock_guard<std::mutex> lock(mutex);
  kept.insert_or_assign(path, std::pair<FileStamp, T>{*stamp, value});
  return value;
}

}  // namespace

TransformerSpec load_model(const std::string& path) {
  std::error_code ec;
  // A Hugging Face checkpoint directory is kept as its config.json, which is what is read.
  if (fs::is_directory(path, ec)) return remembered((fs::path(path) / "config.json").string(), load_model_file);
  return remembered(path, load_model_file);
}
GpuSpec load_gpu(const std::string& path) { return remembered(path, load_gpu_file); }
Topology load_topology(const std::string& path) { return remembered(path, load_topology_file); }
CommProfile load_comm_profile(const std::string& path) { return remembered(path, load_comm_profile_file); }
EnginePrior load_engine_prior(const std::string& path) { return remembered(path, load_engine_prior_file); }
ModelError load_model_error(const std::string& path) { return remembered(path, load_model_error_file); }


ValidationSplit load_validation_split(const std::string& path) {
  YamlReader r = YamlReader::load_file(path);
  r.expect_header("validation_split");
  r.optional_string("description", "");
  r.string("rule");
  r.string("salt");
  ValidationSplit split;
  split.file = path;
  const auto read_sources = [&](const std::string& key, bool frozen) {
    if (!r.has(key)) return;
    YamlReader sources = r.child(key);
    if (!sources.node().IsMap()) sources.fail_here("expected a map of source id -> {group, set, ...}");
    for (const auto& kv : sources.node()) {
      const std::string id = kv.first.Scalar();
      YamlReader entry = sources.child(id);
      const std::string set = entry.choice("set", {"fit", "check"});
      if (!frozen && set != "check") entry.fail("set", "a source found after the split was frozen goes to the check set");
      entry.optional_string("group", "");
      entry.optional_string("added", "");
      entry.optional_names("engines");
      entry.optional_names("interconnects");
      entry.finish();
      if (!split.set_of.emplace(id, set).second) sources.fail(id, "lists a source twice");
    }
  };
  read_sources("sources", true);
  read_sources("added", false);
  for (const auto& id : r.optional_names("not_scored")) {
    if (split.set_of.count(id)) r.fail("not_scored", "'" + id + "' is also in a set");
    split.not_scored.insert(id);
  }
  r.finish();
  return split;
}

std::string validation_split_file(const DataDir& data) {
  return (std::filesystem::path(data.root()) / "validation" / "split.yaml").string();
}

std::string model_error_file(const DataDir& data) {
  return (std::filesystem::path(data.root()) / "models" / "model-error.yaml").string();
}

ComputeProfile load_compute_profile(const std::string& path) {
  YamlReader r = YamlReader::load_file(path);
  return read_compute_profile(r);
}

namespace {

// The file `name` stands for, or a failure at `key` of `r` listing the valid names.
std::string resolve_at(YamlReader& r, const std::string& key, DataKind kind, const std::string& name,
                       const DataDir& data) {
  try {
    return data.resolve(kind, name);
  } catch (const Error& e) {
    r.fail(key, e.message());
  }
}

// Reads a name field and resolves it, so an unknown name reports the scenario's file and line.
template <typename Loader>
auto load_named(YamlReader& r, const std::string& key, DataKind kind, const DataDir& data, Loader loader) {
  return loader(resolve_at(r, key, kind, r.string(key), data));
}

// The draft: a model file under `draft` (eagle3, eagle, draft_model), the target's own
// multi-token-prediction module (mtp), or none at all (ngram); the last two take no file.
TransformerSpec read_draft(YamlReader& r, const TransformerSpec& model, const SpeculationMethod& method,
                           const DataDir& data) {
  const std::string name = method.name;
  if (method.source == DraftSource::kPromptLookup) {
    if (r.has("draft")) {
      r.fail("draft", "speculation.method " + name + " proposes tokens by prompt lookup on the host, with no draft "
                      "model; leave 'draft' out");
    }
    return ngram_proposer();
  }
  if (method.needs_draft_file()) return load_named(r, "draft", DataKind::kModel, data, load_model);
  const std::string model_file = model.file.empty() ? "" : " (" + model.file + ")";
  if (r.has("draft")) {
    r.fail("draft", "speculation.method " + name + " drafts with the model's own multi-token-prediction layers; "
                    "leave 'draft' out");
  }
  if (model.mtp_layers < 1) {
    r.child("speculation").fail("method", name + " needs a model with multi-token-prediction layers, but '" +
                                              model.name + "'" + model_file +
                                              " has mtp_layers 0 (num_nextn_predict_layers in a HF config)");
  }
  return mtp_draft(model);
}

using detail::kScenarioBounds;
using Bound = detail::ScenarioBound;

// kScenarioBounds' row for `key` (scenario_bounds.hpp).
const Bound& bound(const std::string& key) {
  if (const Bound* b = detail::find_scenario_bound(key)) return *b;
  throw Error("internal: no bound for " + key);
}

// `r` reads the map at the key's parent; the leaf is the key's last part.
long long bounded_integer(YamlReader& r, const std::string& key) {
  const Bound& b = bound(key);
  return r.integer(key.substr(key.rfind('.') + 1), static_cast<long long>(b.min), static_cast<long long>(b.max));
}
long long bounded_integer(YamlReader& r, const std::string& key, long long fallback) {
  const Bound& b = bound(key);
  return r.optional_integer(key.substr(key.rfind('.') + 1), fallback, static_cast<long long>(b.min),
                            static_cast<long long>(b.max));
}
double bounded_number(YamlReader& r, const std::string& key) {
  const Bound& b = bound(key);
  return r.number(key.substr(key.rfind('.') + 1), b.min, b.max);
}
double bounded_number(YamlReader& r, const std::string& key, double fallback) {
  const Bound& b = bound(key);
  return r.optional_number(key.substr(key.rfind('.') + 1), fallback, b.min, b.max);
}
std::optional<double> bounded_number_or_calibrate(YamlReader& r, const std::string& key) {
  const Bound& b = bound(key);
  return r.number_or_calibrate(key.substr(key.rfind('.') + 1), b.min, b.max);
}
// Reads the bounded key as its row says: an integer, a number, or a number or 'calibrate'.
void read_bounded(YamlReader& r, const std::string& key) {
  const Bound& b = bound(key);
  if (b.integer) (void)bounded_integer(r, key);
  else if (b.calibrate) (void)bounded_number_or_calibrate(r, key);
  else (void)bounded_number(r, key);
}


// Every bound of kScenarioBounds that the document breaks, each with its file:line or `--set`.
std::vector<Error> bound_problems(const YamlReader& root) {
  std::vector<Error> out;
  for (const Bound& b : kScenarioBounds) {
    const std::string key = b.key;
    // Readers are rebuilt, never assigned: assigning a YAML::Node rebinds the document it points into.
    std::optional<YamlReader> at(std::in_place, root);
    std::size_t start = 0;
    bool present = true;
    for (std::size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', start)) {
      const std::string part = key.substr(start, dot - start);
      if (!at->has(part) || !at->node()[part].IsMap()) {
        present = false;
        break;
      }
      YamlReader next = at->child(part);
      at.reset();
      at.emplace(std::move(next));
      start = dot + 1;
    }
    if (!present || !at->has(key.substr(start))) continue;
    try {
      read_bounded(*at, key);
    } catch (const Error& e) {
      out.push_back(e);
    }
  }
  return out;
}

// workload.concurrency: the batches to predict at, within workload.batch's bounds, each once.
// `workload.batch` stays the batch the measurements describe, where calibration runs
// (docs/model.md#concurrency); a key written with no value is an error, not an absent list.
std::vector<int> read_concurrency(YamlReader& w) {
  if (!w.node().IsMap() || !w.node()["concurrency"].IsDefined()) return {};
  const Bound& b = bound("workload.batch");
  const auto levels = w.integers("concurrency", static_cast<long long>(b.min), static_cast<long long>(b.max));
  std::vector<int> out;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (levels[j] == levels[i]) {
        w.fail("concurrency", "item " + std::to_string(i + 1) + " = " + std::to_string(levels[i]) +
                                  " repeats item " + std::to_string(j + 1) + ": list each level once");
      }
    }
    out.push_back(static_cast<int>(levels[i]));
  }
  return out;
}

// `acceptance:` exactly one form, each a kind of Acceptance; `tree_positional` measures a tree's
// siblings beside any of them.
Acceptance read_acceptance(YamlReader& a) {
  Acceptance s;
  const bool has_accept = a.has("accept");
  const int forms = (has_accept ? 1 : 0) + (a.has("per_position") ? 1 : 0) +
                    (a.has("unconditional") ? 1 : 0) + (a.has("tokens_per_cycle") ? 1 : 0);
  if (forms != 1) {
    a.fail_here("give exactly one of accept, per_position, unconditional, tokens_per_cycle (found " +
                std::to_string(forms) + ")");
  }
  if (has_accept) {
    ConstantChain c;
    c.accept = bounded_number(a, "acceptance.accept");
    if (a.has("depth_profile")) c.depth_profile = a.numbers("depth_profile", 0.0, 1.0);
    s.kind = std::move(c);
  } else if (a.has("depth_profile")) {
    const std::string form = a.has("per_position") ? "per_position" : a.has("unconditional") ? "unconditional" : "tokens_per_cycle";
    a.fail("depth_profile", "scales acceptance.accept only, and acceptance." + form +
                                " has no accept to scale: leave depth_profile out (" + form +
                                " states every position itself)");
  } else if (a.has("per_position")) {
    s.kind = ConditionalChain{a.numbers("per_position", 0.0, 1.0)};
  } else if (a.has("unconditional")) {
    s.kind = UnconditionalChain{a.numbers("unconditional", 0.0, 1.0)};
  } else {
    s.kind = MeasuredTau{bounded_number(a, "acceptance.tokens_per_cycle")};
  }
  if (a.has("tree_positional")) s.siblings.positional = a.numbers("tree_positional", 0.0, 1.0);
  a.ignore("tree_positional");
  a.ignore("depth_profile");
  a.ignore("source");
  a.finish();
  return s;
}

// The dotted paths of every scalar or list under `node` ("compute.kernel_floor").
void collect_leaf_keys(const YAML::Node& node, const std::string& prefix, std::set<std::string>& out) {
  if (!node.IsMap()) {
    if (!prefix.empty()) out.insert(prefix);
    return;
  }
  for (const auto& kv : node) {
    collect_leaf_keys(kv.second, prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar(), out);
  }
}

// A validation row's source header (docs/validation.md). Every key is required: a row whose origin
// a reader cannot trace is not evidence.
ValidationSource read_validation_source(YamlReader& v) {
  ValidationSource out;
  out.source = v.string("source");
  if (out.source.empty() || out.source.find_first_of(" /\t") != std::string::npos) {
    v.fail("source", "expected a short id without spaces or '/' (rows of one source share it)");
  }
  out.url = v.string("url");
  if (out.url.rfind("https://", 0) != 0 && out.url.rfind("http://", 0) != 0) {
    v.fail("url", "expected a public address starting with https://, got '" + out.url + "'");
  }
  out.published = v.string("published");
  const auto digits = [&](std::size_t from, std::size_t n) {
    for (std::size_t i = from; i < from + n; ++i) {
      if (i >= out.published.size() || out.published[i] < '0' || out.published[i] > '9') return false;
    }
    return true;
  };
  const std::size_t len = out.published.size();
  const bool date_ok = (len == 7 || len == 10) && digits(0, 4) && out.published[4] == '-' && digits(5, 2) &&
                       (len == 7 || (out.published[7] == '-' && digits(8, 2)));
  if (!date_ok) v.fail("published", "expected a date YYYY-MM or YYYY-MM-DD, got '" + out.published + "'");
  out.engine_version = v.string("engine_version");
  out.measured = v.string("measured");
  out.acceptance_published = v.string("acceptance_published");
  out.assumptions = v.texts("assumptions");  // `[]` when the source states everything
  out.inputs_from_speculative_run = v.optional_string("inputs_from_speculative_run", "");
  if (v.has("applied")) {
    out.applied = v.texts("applied");
    for (const std::string& patch : out.applied) {
      const std::size_t eq = patch.find('=');
      const std::string key = patch.substr(0, eq);
      if (eq == std::string::npos || eq == 0) {
        v.fail("applied", "expected key=value (a setting the speculative run changed), got '" + patch + "'");
      } else if (key.rfind("measurements.", 0) == 0 || key.rfind("validation.", 0) == 0) {
        v.fail("applied", "'" + key + "' is what was measured, not a setting the speculative run changed");
      }
    }
  }
  v.finish();
  return out;
}

// What the scenario's NCCL release (comm.nccl_version) says about the tables and the prior it uses:
// notes, never errors, since a table from another release is still the best measurement at hand.
void note_nccl_release(Scenario& s) {
  const std::optional<NcclVersion> runs = parse_nccl_version(s.comm.nccl_version);
  if (!runs) return;
  const std::string here = "the scenario runs NCCL " + s.comm.nccl_version;
  const auto check = [&](const CommProfile& p, const std::string& key) {
    if (p.implementation != "nccl") return;
    const std::string what = key + " '" + p.name + "'";
    if (p.nccl_version.empty()) {
      s.notes.push_back(what + " does not say which NCCL release it was measured under and " + here +
                        ": whether the table holds for it is not known (a profile states it in nccl_version)");
    } else if (!parse_nccl_version(p.nccl_version)->same_minor(*runs)) {
      s.notes.push_back(what + " was measured under NCCL " + p.nccl_version + " and " + here +
                        ": NCCL's algorithm, protocol and transport choices change between releases (small "
                        "all-reduces moved from 2.28 to 2.29 on 8x H100, NVIDIA/nccl#2094), so measure it again "
                        "under " + s.comm.nccl_version + " (docs/references/nccl.md#versions)");
    }
  };
  if (s.comm_profile) check(*s.comm_profile, "comm.profile");
  for (const auto& p : s.comm_rank_profiles) check(p, "comm.rank_profiles");
  if (s.all_to_all_profile) check(*s.all_to_all_profile, "comm.all_to_all_profile");
  if (s.parallel.tp < 2) return;
  const bool runs_nccl = s.comm.implementation == "nccl" || s.comm.implementation == "engine" ||
                         s.comm.implementation == "fp8";
  if (!s.comm_profile && runs_nccl && *runs < kNcclPriorTablesSince) {
    s.notes.push_back("the NCCL all-reduce prior holds the latency tables of NCCL " + to_string(kNcclPriorTablesSince) +
                      " and later, and " + here + ", whose tables differ (28 us per Tree/Simple step in 2.18-2.22, "
                      "docs/references/nccl.md#latency-tables): the prior is less sure than its band says");
  }
  if (s.comm.nccl_algo == "tree" && *runs < kNcclAlgoPerCollectiveSince) {
    s.notes.push_back("comm.nccl_algo = tree under NCCL " + s.comm.nccl_version + ": before " +
                      to_string(kNcclAlgoPerCollectiveSince) + " NCCL_ALGO has no per-collective form "
                      "('allreduce:tree'), so Tree applies to every collective, and all-gather, which has no Tree, "
                      "fails with ncclInvalidUsage (at capture under CUDA graphs; "
                      "docs/references/nccl.md#tree-under-graph-capture)");
  }
}

// What is wrong with `p` as the table of comm.`key` (it times another collective); "" when nothing.
std::string table_kind_problem(const CommProfile& p, const std::string& key) {
  const std::string wanted = key == "all_to_all_profile" ? "all_to_all" : "all_reduce";
  if (p.collective == wanted) return "";
  return "profile '" + p.name + "' times " + p.collective + ", this key takes an " + wanted + " table" +
         (wanted == "all_reduce" ? " (an all-to-all table goes in comm.all_to_all_profile)"
                                 : " (an all-reduce table goes in comm.profile)");
}

// The comm profiles the scenario names (comm.profile, custom_profile, rank_profiles,
// all_to_all_profile), each checked against the box and tp; `r` is the scenario's root, for locations.
void load_comm_profiles(YamlReader& r, Scenario& s, const DataDir& data) {
  auto load_profile = [&](const std::string& name, const char* key) -> std::optional<CommProfile> {
    if (name.empty()) return std::nullopt;
    std::string path;
    try {
      path = data.resolve(DataKind::kCommProfile, name);
    } catch (const Error& e) {
      throw Error(r.location_of("comm"), std::string("comm.") + key, e.message());
    }
    CommProfile p = load_comm_profile(path);
    if (std::string why = table_kind_problem(p, key); !why.empty()) throw Error(r.location_of("comm"), std::string("comm.") + key, why);
    // The box the profile was measured on should be this one; another box's table is a what-if
    // worth seeing, not an error.
    if (!p.gpu.empty() && p.gpu != s.gpu.name) {
      s.notes.push_back("comm." + std::string(key) + " '" + p.name + "' was measured on " + p.gpu +
                        " GPUs; the scenario runs " + s.gpu.name);
    }
    // A table measured across nodes holds their network; on a box whose ranks span another number of
    // nodes it is another box's table (a what-if, as above).
    if ((p.nodes > 1 || s.topology.nodes > 1) && p.nodes != s.topology.nodes_spanned(p.ranks)) {
      s.notes.push_back("comm." + std::string(key) + " '" + p.name + "' was measured at " + std::to_string(p.ranks) +
                        " ranks on " + std::to_string(p.nodes) + " node(s); on " + s.topology.name + " they span " +
                        std::to_string(s.topology.nodes_spanned(p.ranks)));
    }
    if (p.ranks > s.topology.gpus) {
      s.notes.push_back("comm." + std::string(key) + " '" + p.name + "' was measured at " + std::to_string(p.ranks) +
                        " ranks, more than the " + std::to_string(s.topology.gpus) + " GPUs of " + s.topology.name +
                        ": it comes from another box");
    }
    return p;
  };
  // Whether each table fits tp and ep is comm_profile_problems'.
  s.comm_profile = load_profile(s.comm.profile, "profile");
  s.custom_profile = load_profile(s.comm.custom_profile, "custom_profile");
  s.all_to_all_profile = load_profile(s.comm.all_to_all_profile, "all_to_all_profile");
  for (const auto& name : s.comm.rank_profiles) {
    CommProfile p = *load_profile(name, "rank_profiles");
    if (!s.comm_profile) throw Error(r.location_of("comm"), "comm.rank_profiles", "needs comm.profile as well");
    if (p.mode != s.comm_profile->mode) {
      throw Error(r.location_of("comm"), "comm.rank_profiles",
                  "'" + p.name + "' was measured in " + to_string(p.mode) + " mode, comm.profile '" +
                      s.comm_profile->name + "' in " + to_string(s.comm_profile->mode));
    }
    bool repeated = p.ranks == s.comm_profile->ranks;
    for (const auto& q : s.comm_rank_profiles) repeated = repeated || q.ranks == p.ranks;
    if (repeated) {
      throw Error(r.location_of("comm"), "comm.rank_profiles",
                  "'" + p.name + "': a second profile at " + std::to_string(p.ranks) + " ranks (one per rank count)");
    }
    s.comm_rank_profiles.push_back(std::move(p));
  }
  note_nccl_release(s);
  if (s.comm.implementation == "custom_oneshot" && vllm_custom_aborts_in_capture(s)) {
    s.notes.push_back("comm.implementation = custom_oneshot under vLLM on sm_12x GPUs: vLLM's custom all-reduce aborts "
                      "during CUDA graph capture there (vllm#47266 item 9a), so this prices a kernel the deployment "
                      "cannot run with graphs; comm.implementation: engine prices what vLLM runs");
  }
}

// A measured decode rate below one token per 100 s is a unit typo or a denormal, not a deployment:
// the host time calibrated from it would be hours per step.
constexpr double kMinMeasuredTokensPerS = 0.01;
constexpr const char* kMinMeasuredRateReason =
    "must be at least 0.01 tok/s: a measured decode rate below one token per 100 s is a typo, not a deployment";

// `measurements.baseline:` the plain run: its rate, whether that rate holds prefill, and beside an
// end-to-end rate its TPOT and the benchmark's prompt and output lengths.
void read_baseline(YamlReader& b, const Scenario& s, Measurements& out) {
  out.baseline_tokens_per_s = b.quantity("tokens_per_s", Quantity::kRate);
  if (*out.baseline_tokens_per_s < kMinMeasuredTokensPerS) b.fail("tokens_per_s", kMinMeasuredRateReason);
  out.baseline_includes_prefill = b.optional_boolean("includes_prefill", false);
  if (b.has("tpot")) {
    const double tpot = b.quantity("tpot", Quantity::kDuration);
    if (!out.baseline_includes_prefill) {
      b.fail("tpot", "is read only beside an end-to-end rate (includes_prefill: true): a decode-only "
                     "tokens_per_s already is the step, and the two would disagree");
    }
    // One step emits one token per request: the end-to-end step (prefill and tails included)
    // cannot be shorter than the decode step. kTpotTolerance allows for rounding of published figures.
    const double end_to_end = s.batch / out.baseline_tokens_per_s.value();
    if (tpot > end_to_end * (1.0 + kTpotTolerance)) {
      b.fail("tpot", "= " + units::format_duration(tpot) + " is longer than the end-to-end step batch / tokens_per_s = " +
                          units::format_duration(end_to_end) + ": the decode step cannot take more than the whole run per token");
    }
    out.baseline_tpot_s = std::min(tpot, end_to_end);
  }
  for (const auto& [key, field] : {std::pair{"prompt_tokens", &out.baseline_prompt_tokens},
                                   std::pair{"output_tokens", &out.baseline_output_tokens}}) {
    if (!b.has(key)) continue;
    if (!out.baseline_includes_prefill) {
      b.fail(key, "is read only beside an end-to-end rate (includes_prefill: true): it prices the prefill "
                  "that rate holds");
    }
    *field = static_cast<double>(b.integer(key, 1, kMaxCount));
  }
  if ((out.baseline_prompt_tokens > 0) != (out.baseline_output_tokens > 0)) {
    // Named at the key that is there: prefill per output token needs both.
    const bool prompt = out.baseline_prompt_tokens > 0;
    b.fail(prompt ? "prompt_tokens" : "output_tokens",
           std::string("is given without ") + (prompt ? "output_tokens" : "prompt_tokens") +
               ": prefill per output token needs both");
  }
  b.ignore("source");
  b.finish();
}

// `measurements:`: what was measured, and where (a box or model other than the one predicted).
Measurements read_measurements(YamlReader& m, const Scenario& s, const DataDir& data) {
  Measurements out;
  if (m.has("topology")) {
    // Where the measurements come from. A what-if that moved the scenario keeps calibrating here.
    Measurements::Box box;
    box.topology = load_named(m, "topology", DataKind::kTopology, data, load_topology);
    box.gpu = load_gpu(resolve_at(m, "gpu", DataKind::kGpu, m.optional_string("gpu", box.topology.gpu), data));
    if (box.topology.name != s.topology.name || box.gpu.name != s.gpu.name) {
      if (!box.topology.comm_profile.empty() && s.parallel.tp > 1) {
        CommProfile p = load_comm_profile(data.resolve(DataKind::kCommProfile, box.topology.comm_profile));
        if (p.collective != "all_reduce") {
          m.fail("topology", "topology '" + box.topology.name + "' names comm_profile '" + p.name + "', which times " +
                                 p.collective + ": a topology's comm_profile is its all-reduce table");
        }
        if (p.ranks == s.parallel.tp) box.comm_profile = p;
      }
      out.box = box;
    }
  }
  m.ignore("topology");
  m.ignore("gpu");
  if (m.has("model")) {
    // The model they were measured on, when the file predicts another (calibration runs on it).
    TransformerSpec measured = load_named(m, "model", DataKind::kModel, data, load_model);
    if (measured.name != s.model.name) out.model = std::move(measured);
  }
  m.ignore("model");
  if (auto b = m.optional_child("baseline")) read_baseline(*b, s, out);
  if (auto v = m.optional_child("verify")) {
    Measurements::Verify mv;
    mv.step_s = v->quantity("step", Quantity::kDuration);
    mv.allreduce_count = static_cast<int>(v->integer("allreduce_count", 1, kMaxCount));
    mv.allreduce_total_s = v->quantity("allreduce_total", Quantity::kDuration);
    mv.compute_s = v->quantity("compute", Quantity::kDuration);
    const double parts_s = mv.allreduce_total_s + mv.compute_s;
    if (std::abs(parts_s - mv.step_s) > kVerifyPartsTolerance * mv.step_s) {
      v->fail("step", "= " + units::format_duration(mv.step_s) + ", but its parts allreduce_total + compute = " +
                          units::format_duration(mv.allreduce_total_s) + " + " + units::format_duration(mv.compute_s) +
                          " = " + units::format_duration(parts_s) + (parts_s > mv.step_s ? ", more than the step" : "") +
                          ": they must add up to it within " + units::format_fixed(100 * kVerifyPartsTolerance, 0) +
                          "% (kVerifyPartsTolerance: rounding of profiler figures)");
    }
    mv.tokens_per_request = static_cast<int>(bounded_integer(*v, "measurements.verify.tokens_per_request"));
    mv.mode = read_mode(*v, "mode", LaunchMode::kEager);
    v->ignore("source");
    v->finish();
    out.verify = mv;
  }
  if (auto sp = m.optional_child("speculative")) {
    out.speculative_tokens_per_s = sp->quantity("tokens_per_s", Quantity::kRate);
    if (*out.speculative_tokens_per_s < kMinMeasuredTokensPerS) sp->fail("tokens_per_s", kMinMeasuredRateReason);
    out.speculative_held_out = sp->optional_boolean("held_out", true);
    sp->ignore("source");
    sp->finish();
  }
  m.finish();
  return out;
}

// `attention_dp: true` is dp = tp (the DeepSeek command), `false` off, a number the dp groups.
void read_attention_dp(YamlReader& p, Parallelism& parallel) {
  if (!p.has("attention_dp")) return;
  const std::string text = p.optional_string("attention_dp", "");
  if (text == "false") return;
  if (text == "true") {
    parallel.attention_dp = parallel.tp;
    parallel.attention_dp_all = true;
    return;
  }
  // Not in kScenarioBounds: that table's integers do not take `true`.
  parallel.attention_dp = static_cast<int>(p.optional_integer("attention_dp", 1, 1, 1024));
}

// `parallel:` tp, pp, draft_tp, ep, moe_a2a and attention_dp; parallel_problems checks them against
// the box, both models' heads and the target's experts.
void read_parallel(YamlReader& r, Scenario& s) {
  YamlReader p = r.child("parallel");
  s.parallel.tp = static_cast<int>(bounded_integer(p, "parallel.tp"));
  s.parallel.pp = static_cast<int>(bounded_integer(p, "parallel.pp", 1));
  if (p.has("draft_tp")) s.parallel.draft_tp = static_cast<int>(bounded_integer(p, "parallel.draft_tp"));
  s.parallel.ep = static_cast<int>(bounded_integer(p, "parallel.ep", 1));
  s.parallel.moe_a2a = *parse_moe_a2a_backend(p.optional_choice("moe_a2a", moe_a2a_backend_names(), "none"));
  read_attention_dp(p, s.parallel);
  p.finish();
}

// `workload:` the measured batch, the context and the concurrency levels; each key's problem is
// recorded on its own.
void read_workload(YamlReader& r, Scenario& s, Problems& problems) {
  YamlReader w = r.child("workload");
  problems.run([&] { s.batch = static_cast<int>(bounded_integer(w, "workload.batch")); });
  problems.run([&] { s.context_tokens = static_cast<double>(bounded_integer(w, "workload.context")); });
  problems.run([&] { s.concurrency = read_concurrency(w); });
  w.finish();
}

// `engine.async_scheduling:` how the plain and the speculative run were scheduled; either left out
// takes the engine's default (docs/model.md#async-scheduling).
void read_async_scheduling(YamlReader& e, EngineSettings& engine) {
  auto a = e.optional_child("async_scheduling");
  if (!a) return;
  if (a->has("plain")) engine.async_plain = a->boolean("plain");
  if (a->has("speculative")) engine.async_speculative = a->boolean("speculative");
  // Both are known keys, so that a typo's error lists them whichever was given.
  a->ignore("plain");
  a->ignore("speculative");
  a->finish();
}

// `engine:` its name and launch modes; every key has a default, so the block may be left out.
// Each key's problem is recorded on its own; false when the name could not be read.
bool read_engine(YamlReader& r, Scenario& s, Problems& problems) {
  auto e = r.optional_child("engine");
  if (!e) return true;
  const bool name_ok = problems.run([&] { s.engine.name = e->optional_string("name", "sglang"); });
  problems.run([&] { s.engine.decode_mode = read_engine_mode(*e, "decode_mode"); });
  problems.run([&] { s.engine.verify_mode = read_engine_mode(*e, "verify_mode"); });
  problems.run([&] { s.engine.draft_mode = read_engine_mode(*e, "draft_mode"); });
  problems.run([&] { s.engine.extend_yields_first_draft = e->optional_boolean("extend_yields_first_draft", true); });
  problems.run([&] {
    if (e->has("embedding_allreduce")) s.engine.embedding_allreduce = e->boolean("embedding_allreduce");
  });
  problems.run([&] {
    if (e->has("memory_fraction")) s.engine.memory_fraction = bounded_number(*e, "engine.memory_fraction");
  });
  problems.run([&] { read_async_scheduling(*e, s.engine); });
  problems.run([&] {
    if (e->has("cuda_graph_max_batch")) {
      s.engine.cuda_graph_max_batch = static_cast<int>(bounded_integer(*e, "engine.cuda_graph_max_batch"));
    }
  });
  problems.run([&] { s.engine.spec_version = e->optional_choice("spec_version", {"v1", "v2"}, ""); });
  e->ignore("embedding_allreduce");
  e->finish();
  return name_ok;
}

// `speculation:` the draft's shape, without the unknown-key check (the method is read with the
// draft). A chain verifies num_steps + 1: SGLang forces num_draft_tokens = num_steps + 1 when
// topk == 1 (docs/references/specdec.md#sglang-flags); so does specsim, which keeps
// `--set speculation.num_steps=N` meaningful on a chain. Throws at the key, file:line or `--set`,
// when the tree cannot be drafted (draft_shape_problems).
DraftShape read_shape(YamlReader& sp) {
  DraftShape shape;
  shape.num_steps = static_cast<int>(bounded_integer(sp, "speculation.num_steps"));
  shape.eagle_topk = static_cast<int>(bounded_integer(sp, "speculation.eagle_topk", 1));
  const int chain_tokens = shape.num_steps + 1;
  shape.num_draft_tokens = static_cast<int>(bounded_integer(sp, "speculation.num_draft_tokens", chain_tokens));
  if (shape.eagle_topk == 1) shape.num_draft_tokens = chain_tokens;
  return shape;
}

// `speculation.parallel_drafting`: block drafting (speculation_problems says where it runs).
bool read_parallel_drafting(YamlReader& sp) { return sp.optional_boolean("parallel_drafting", false); }

// A block drafter's shape: `speculation.block_size` tokens verified per cycle as a chain, the first
// the last verified token and the rest drafted (num_steps = block_size - 1); the drafter's trained
// block when the key is left out. SGLang's --speculative-num-draft-tokens (alias
// --speculative-dflash-block-size) is this block; vLLM's num_speculative_tokens is block_size - 1
// (docs/references/specdec.md#dflash). A block larger than the drafter was trained on is noted.
DraftShape read_block_shape(YamlReader& sp, Scenario& s) {
  // A chain's or a tree's keys beside the block: speculation_problems refuses them.
  for (const char* key : {"num_steps", "eagle_topk", "num_draft_tokens"}) sp.ignore(key);
  const int trained = s.draft.dflash ? s.draft.dflash->block_size : 0;
  if (!sp.has("block_size") && trained == 0) sp.fail("block_size", "required: the drafter's block was not read");
  const int block = static_cast<int>(sp.has("block_size") ? bounded_integer(sp, "speculation.block_size") : trained);
  if (trained > 0 && block > trained) {
    s.notes.push_back("speculation.block_size " + std::to_string(block) + " is larger than the block '" + s.draft.name +
                      "' was trained on (" + std::to_string(trained) + "): positions past it were never trained");
  }
  DraftShape shape;
  shape.num_steps = block - 1;
  shape.eagle_topk = 1;
  shape.num_draft_tokens = block;
  return shape;
}

void read_speculation_shape(YamlReader& r, Scenario& s) {
  YamlReader sp = r.child("speculation");
  sp.ignore("method");  // read with the draft
  if (s.speculation.drafts_block()) {
    s.speculation.shape = read_block_shape(sp, s);
  } else {
    sp.ignore("block_size");  // a block drafter's key: speculation_problems refuses it here
    s.speculation.shape = read_shape(sp);
  }
  s.speculation.parallel_drafting = read_parallel_drafting(sp);
  sp.finish();
}

// `compute:` a named profile replaces the defaults, then the block's own keys win.
void read_compute_block(YamlReader& r, Scenario& s, const DataDir& data) {
  if (auto c = r.optional_child("compute")) {
    if (c->has("profile")) {
      const std::string name = c->string("profile");
      // calibration/profiles, shared with comm profiles
      s.compute = load_compute_profile(resolve_at(*c, "profile", DataKind::kCommProfile, name, data)).settings;
      s.compute.profile = name;
    }
    c->ignore("profile");
    read_compute_keys(*c, s.compute);
    c->finish();
  }
}

// `comm:` the all-reduce tables and what-if knobs; without the block, the topology's profile.
void read_comm_block(YamlReader& r, Scenario& s) {
  if (auto c = r.optional_child("comm")) {
    s.comm.profile = c->optional_string("profile", s.topology.comm_profile);
    if (c->has("eager_overhead_per_op")) {
      s.comm.eager_overhead_per_op_s = c->quantity_or_calibrate("eager_overhead_per_op", Quantity::kDuration);
    }
    c->ignore("eager_overhead_per_op");
    s.comm.implementation = c->optional_choice("implementation", allreduce_implementation_names(), "nccl");
    s.comm.custom_max_bytes = c->optional_quantity("custom_max_bytes", Quantity::kBytes);
    s.comm.custom_profile = c->optional_string("custom_profile", "");
    s.comm.all_to_all_profile = c->optional_string("all_to_all_profile", "");
    s.comm.all_to_all_latency_s = c->optional_quantity("all_to_all_latency", Quantity::kDuration);
    if (s.comm.all_to_all_latency_s && !(*s.comm.all_to_all_latency_s > 0)) c->fail("all_to_all_latency", "must be > 0");
    s.comm.nccl_version = read_nccl_version(*c, "nccl_version");
    s.comm.nccl_algo = c->optional_choice("nccl_algo", {"auto", "ring", "tree"}, "auto");
    s.comm.nccl_proto = c->optional_choice("nccl_proto", {"auto", "ll", "ll128", "simple"}, "auto");
    if (c->has("nccl_p2p_level") && c->string("nccl_p2p_level") == "node") {
      c->fail("nccl_p2p_level", "'node' is nvidia-smi's class; NCCL has no such level and counts that path as PHB: use phb");
    }
    s.comm.nccl_p2p_level =
        c->optional_choice("nccl_p2p_level", {"auto", "loc", "nvl", "pix", "pxb", "phb", "sys"}, "auto");
    s.comm.min_channels = static_cast<int>(bounded_integer(*c, "comm.min_channels", 0));
    s.comm.max_channels = static_cast<int>(bounded_integer(*c, "comm.max_channels", 0));
    s.comm.scale = bounded_number(*c, "comm.scale", 1.0);
    s.comm.overlap = bounded_number(*c, "comm.overlap", 0.0);
    s.comm.fuse_residual_norm = c->optional_boolean("fuse_residual_norm", false);
    s.comm.rank_scaling = c->optional_choice("rank_scaling", {"off", "nccl", "power"}, "off");
    // A YAML list or comma-separated names, so that `--set comm.rank_profiles=a,b` can patch them.
    s.comm.rank_profiles = c->optional_names("rank_profiles");
    c->finish();
  } else {
    s.comm.profile = s.topology.comm_profile;
  }
}

// engine.spec_version picks the per-cycle prior of that worker version (docs/schema.md#engine);
// "" or the file's default_spec_version keep cycle_overhead. The prior's name says which it holds.
void select_spec_version(EnginePrior& prior, const std::string& version, const YamlReader& r) {
  if (version.empty() || version == prior.default_spec_version) return;
  std::string valid = prior.default_spec_version;
  for (const auto& [name, term] : prior.cycle_overhead_by_version) {
    if (name == version) {
      prior.cycle_overhead = term;
      prior.source += "; spec " + version + " cycle prior";
      return;
    }
    valid += ", " + name;
  }
  r.fail("engine", "spec_version = " + version + ": models/engines/" + prior.name + ".yaml prices " +
                       (valid.empty() ? std::string("no worker versions apart") : "only " + valid));
}

// The engine's speculative overheads: its prior when models/engines has one, unless the scenario
// sets them (read_host, after this, lets the file win).
void apply_engine_prior(Scenario& s, const DataDir& data, const YamlReader& r) {
  const auto engines = data.names(DataKind::kEngine);
  if (std::find(engines.begin(), engines.end(), s.engine.name) != engines.end()) {
    EnginePrior prior = load_engine_prior(data.resolve(DataKind::kEngine, s.engine.name));
    const auto& m = prior.methods;
    if (!m.empty() && std::find(m.begin(), m.end(), s.speculation.method) == m.end()) {
      s.engine_prior_skipped = "models/engines/" + s.engine.name + ".yaml holds evidence for " + join(m) +
                               " only, not " + s.speculation.method;
      return;
    }
    select_spec_version(prior, s.engine.spec_version, r);
    s.engine_prior = std::move(prior);
    s.host.spec_extra_per_cycle_s = s.engine_prior->cycle_overhead.value_s;
    s.host.draft_step_overhead_s = s.engine_prior->draft_step_overhead.value_s;
    if (s.engine_prior->spec_per_request) s.host.spec_per_request_s = s.engine_prior->spec_per_request->value_s;
  } else if (!s.engine.spec_version.empty()) {
    r.fail("engine", "spec_version = " + s.engine.spec_version + ": engine '" + s.engine.name +
                         "' has no file in models/engines, so no worker versions to pick from");
  }
}

// `band:` what the prediction's p10-p90 band draws beyond the priors. `model_error`, a ln sigma,
// replaces models/model-error.yaml's (0: the priors' spread alone); set, it wins over the file.
void read_band(YamlReader& r, Scenario& s) {
  auto b = r.optional_child("band");
  if (!b) return;
  if (b->has("model_error")) {
    ModelError e;  // no rows: the sigma is the scenario's, not the corpus's
    e.sigma = b->number("model_error", 0.0, 1.0);
    e.sigma_below = e.sigma_above = e.sigma;
    e.origin = "set";
    s.model_error = e;
  }
  b->finish();
}

// `host:` host time per plain step and the engine's speculative overheads, when the file sets them.
void read_host(YamlReader& r, Scenario& s) {
  if (auto h = r.optional_child("host")) {
    if (h->has("decode_per_step")) s.host.decode_per_step_s = h->quantity_or_calibrate("decode_per_step", Quantity::kDuration);
    h->ignore("decode_per_step");
    if (auto v = h->optional_quantity("spec_extra_per_cycle", Quantity::kDuration)) s.host.spec_extra_per_cycle_s = *v;
    if (auto v = h->optional_quantity("draft_step_overhead", Quantity::kDuration)) s.host.draft_step_overhead_s = *v;
    if (auto v = h->optional_quantity("spec_per_request", Quantity::kDuration)) s.host.spec_per_request_s = *v;
    if (auto v = h->optional_quantity("ngram_lookup_per_token", Quantity::kDuration)) s.host.ngram_lookup_per_token_s = *v;
    h->finish();
  }
}

// The target, the draft and their roles; false when the target failed (what needs it is then
// skipped). A draft that failed stays an empty TransformerSpec, which no parallel rule refuses.
bool read_models(YamlReader& r, Scenario& s, const DataDir& data, Problems& problems) {
  const bool model_ok = problems.run([&] { s.model = load_named(r, "model", DataKind::kModel, data, load_model); }) &&
                        problems.add_all(target_problems(s, *s.origins));
  // The method says where the draft comes from, so it is read before the draft.
  const bool method_ok = problems.run(
      [&] { s.speculation.method = r.child("speculation").optional_choice("method", kMethods, "eagle3"); });
  const bool draft_ok = model_ok && method_ok &&
                        problems.run([&] { s.draft = read_draft(r, s.model, s.speculation.kind(), data); }) &&
                        problems.add_all(draft_problems(s, *s.origins));
  if (draft_ok) adopt_draft(s);
  if (!draft_ok) r.ignore("draft");
  return model_ok;
}

// The box: the topology, named or inline, and the GPU; the scenario's own `gpu` overrides the
// topology's (what-if: same box, other card).
bool read_box(YamlReader& r, Scenario& s, const DataDir& data, Problems& problems) {
  const bool ok = problems.run([&] {
    if (r.has("topology") && r.node()["topology"].IsMap()) {
      // Written inline (`specsim init` from `nvidia-smi topo -m` output): the keys of a topology file.
      YamlReader t = r.child("topology");
      s.topology = read_topology_keys(t);
    } else {
      s.topology = load_named(r, "topology", DataKind::kTopology, data, load_topology);
    }
  }) && problems.run([&] {
    s.gpu = load_gpu(resolve_at(r, "gpu", DataKind::kGpu, r.optional_string("gpu", s.topology.gpu), data));
  }) && problems.add_all(box_problems(s, *s.origins));
  r.ignore("topology");
  r.ignore("gpu");
  return ok;
}

// Reads a scenario, recording every problem in `problems` rather than stopping at the first. Only
// a document that is not a scenario at all (its header) throws. Blocks that need a failed one
// (parallel needs the target and the box; comm profiles and measurements need parallel) are
// skipped, so no problem is a knock-on of another.
Scenario read_scenario(YamlReader& r, const DataDir& data, Problems& problems) {
  r.expect_header("scenario");
  for (const Error& e : bound_problems(r)) problems.add(e);
  Scenario s;
  s.file = r.file();
  s.origins = std::make_shared<const Origins>(r.origins());
  const Origins& origins = *s.origins;
  {
    std::set<std::string> keys;
    collect_leaf_keys(r.node(), "", keys);
    s.explicit_keys = KeySet(std::move(keys));
  }
  problems.run([&] { s.name = r.string("name"); });
  problems.run([&] { s.description = r.optional_string("description", ""); });
  r.ignore("source");
  problems.run([&] {
    if (auto v = r.optional_child("validation")) s.validation = read_validation_source(*v);
  });
  problems.run([&] { s.interventions = r.optional_string("interventions", ""); });
  const bool model_ok = read_models(r, s, data, problems);
  const bool box_ok = read_box(r, s, data, problems);
  const bool parallel_ok = model_ok && box_ok && problems.run([&] { read_parallel(r, s); }) &&
                           problems.add_all(parallel_problems(s, origins, &s.notes));
  r.ignore("parallel");
  problems.run([&] { read_workload(r, s, problems); });
  bool engine_ok = false;
  problems.run([&] { engine_ok = read_engine(r, s, problems); });
  if (engine_ok) problems.run([&] { read_engine_file_behaviour(s, data); });
  const bool shape_ok = problems.run([&] { read_speculation_shape(r, s); }) && problems.add_all(speculation_problems(s, origins));
  const bool acceptance_ok = problems.run([&] {
    YamlReader a = r.child("acceptance");
    s.acceptance = read_acceptance(a);
  });
  if (shape_ok && acceptance_ok) problems.add_all(acceptance_fit_problems(s, origins));
  problems.run([&] { read_compute_block(r, s, data); });
  const bool comm_ok = problems.run([&] { read_comm_block(r, s); });
  if (comm_ok && parallel_ok && problems.run([&] { load_comm_profiles(r, s, data); })) {
    problems.add_all(comm_profile_problems(s, origins));
  }
  if (engine_ok) problems.run([&] { apply_engine_prior(s, data, r); });
  problems.run([&] {
    if (!std::filesystem::exists(model_error_file(data))) return;
    s.model_error = load_model_error(model_error_file(data));
    s.model_error->origin = "models/model-error.yaml";  // as a reader of the repository finds it
  });
  problems.run([&] { read_band(r, s); });
  problems.run([&] { read_host(r, s); });
  problems.add_all(setting_problems(s, origins));
  if (parallel_ok) {
    problems.run([&] {
      if (auto m = r.optional_child("measurements")) s.measurements = read_measurements(*m, s, data);
    });
  }
  r.ignore("measurements");
  problems.run([&] { r.finish(); });
  return s;
}

// The same, throwing every problem at once.
Scenario read_scenario(YamlReader& r, const DataDir& data) {
  Problems problems;
  Scenario s = read_scenario(r, data, problems);
  throw_problems(problems.take());
  return s;
}

// load_scenario's work, with the problems of the file and of its patches in `problems`; a file
// that cannot be found, parsed or is not a scenario throws.
Scenario read_patched_scenario(const std::string& name_or_path, const std::vector<std::string>& patches,
                               const DataDir& data, Problems& problems) {
  const std::string path = data.resolve(DataKind::kScenario, name_or_path);
  YamlReader r = YamlReader::load_file(path);
  if (patches.empty()) return read_scenario(r, data, problems);
  auto origin = std::make_shared<detail::YamlOrigin>();
  origin->file = path;
  YAML::Node root = YAML::Clone(r.node());
  for (const auto& p : patches) problems.run([&] { detail::apply_patch(root, p, *origin); });
  YamlReader patched(root, origin);
  Scenario s = read_scenario(patched, data, problems);
  for (const auto& [key, where] : origin->patches) s.patched_keys.insert(key);
  if (!problems.empty()) return s;
  // The run as it was measured: the file, with what the patches say about its measurements (a
  // speculative rate given as an input calibrates at the file's own draft setting and batch).
  YAML::Node measured = YAML::Clone(r.node());
  detail::YamlOrigin measured_origin;
  measured_origin.file = path;
  for (const auto& p : patches) {
    if (p.rfind("measurements.", 0) == 0) detail::apply_patch(measured, p, measured_origin);
  }
  YamlReader as_measured(measured, std::make_shared<detail::YamlOrigin>(measured_origin));
  s.as_measured = std::make_shared<const Scenario>(read_scenario(as_measured, data));
  return s;
}

}  // namespace

Scenario load_scenario(const std::string& name_or_path, const std::vector<std::string>& patches,
                       const DataDir& data) {
  Problems problems;
  Scenario s = read_patched_scenario(name_or_path, patches, data, problems);
  throw_problems(problems.take());
  return s;
}

std::vector<Error> scenario_problems(const std::string& name_or_path, const std::vector<std::string>& patches,
                                     const DataDir& data) {
  Problems problems;
  problems.run([&] { (void)read_patched_scenario(name_or_path, patches, data, problems); });
  return problems.take();
}

Scenario load_scenario_text(const std::string& text, const std::string& file_name, const DataDir& data) {
  YamlReader r = YamlReader::load_string(text, file_name);
  return read_scenario(r, data);
}

std::size_t data_files_read() { return YamlReader::files_read(); }

FieldValue load_field_value(const std::string& key, const std::string& text, const SourceLocation& where,
                            const DataDir& data) {
  FieldValue v = parse_field_value(key, text, where);
  if (!is_file_field(key) || text.empty()) return v;
  auto files = std::make_shared<FieldFiles>();
  try {
    if (key == "model") {
      files->model = load_model(data.resolve(DataKind::kModel, text));
    } else if (key == "gpu") {
      files->gpu = load_gpu(data.resolve(DataKind::kGpu, text));
    } else if (key == "topology") {
      // The box, its card and its all-reduce table: what a scenario naming it reads (read_box,
      // read_comm_block) where it states no GPU or table of its own.
      files->topology = load_topology(data.resolve(DataKind::kTopology, text));
      files->gpu = load_gpu(data.resolve(DataKind::kGpu, files->topology->gpu));
      if (!files->topology->comm_profile.empty()) {
        files->profile = load_comm_profile(data.resolve(DataKind::kCommProfile, files->topology->comm_profile));
      }
    } else {
      CommProfile p = load_comm_profile(data.resolve(DataKind::kCommProfile, text));
      if (std::string why = table_kind_problem(p, key.substr(key.find('.') + 1)); !why.empty()) throw Error(why);
      files->profile = std::move(p);
    }
  } catch (const Error& e) {
    throw Error(where, key, e.message());
  }
  v.files = std::move(files);
  return v;
}

}  // namespace specsim
