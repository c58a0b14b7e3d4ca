// `specsim check`: each data file validated by its own loader, then printed back with every
// default filled in and every unit spelled out, so a person sees what specsim understood.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <sstream>

#include "specsim/compute_profile.hpp"
#include "specsim/interventions.hpp"
#include "specsim/load.hpp"
#include "specsim/preconditions.hpp"
#include "specsim/units.hpp"
#include "util/yaml_reader.hpp"

namespace specsim {

namespace {

using units::format_bandwidth;
using units::format_bytes;
using units::format_duration;
using units::format_flop_rate;

void emit_model(YAML::Emitter& e, const TransformerSpec& m) {
  e << YAML::Key << "name" << YAML::Value << m.name;
  e << YAML::Key << "layers" << YAML::Value << m.layers;
  e << YAML::Key << "dense_layers" << YAML::Value << m.dense_layers;
  e << YAML::Key << "hidden_size" << YAML::Value << m.hidden_size;
  e << YAML::Key << "vocab_size" << YAML::Value << m.vocab_size;
  if (m.tied_embeddings) e << YAML::Key << "tied_embeddings" << YAML::Value << true;
  e << YAML::Key << "attention" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "kind" << YAML::Value << (m.attention.kind == AttentionKind::kMla ? "mla" : "gqa");
  e << YAML::Key << "heads" << YAML::Value << m.attention.heads;
  e << YAML::Key << "kv_heads" << YAML::Value << m.attention.kv_heads;
  e << YAML::Key << "params_per_layer" << YAML::Value << m.attention_params();
  if (m.attention.output_gate) e << YAML::Key << "output_gate" << YAML::Value << true;
  if (m.attention.sinks) e << YAML::Key << "sinks" << YAML::Value << true;
  if (m.attention.sparse()) {
    e << YAML::Key << "sparse" << YAML::Value << YAML::Flow << YAML::BeginMap;
    e << YAML::Key << "index_topk" << YAML::Value << m.attention.index_topk;
    e << YAML::Key << "index_heads" << YAML::Value << m.attention.index_heads;
    e << YAML::Key << "index_head_dim" << YAML::Value << m.attention.index_head_dim;
    e << YAML::Key << "indexer_layers" << YAML::Value << m.indexer_layers();
    e << YAML::Key << "indexer_params_per_layer" << YAML::Value << m.indexer_params();
    e << YAML::Key << "indexer_bytes_per_token_layer" << YAML::Value << m.indexer_bytes_per_token_layer();
    e << YAML::EndMap;
  }
  const LayerAttention& la = m.layer_attention;
  if (la.windowed_layers > 0) {
    e << YAML::Key << "windowed_layers" << YAML::Value << la.windowed_layers;
    e << YAML::Key << "window_tokens" << YAML::Value << la.window;
  }
  if (la.linear_layers > 0) {
    e << YAML::Key << "linear_layers" << YAML::Value << la.linear_layers;
    e << YAML::Key << "linear" << YAML::Value << YAML::Flow << YAML::BeginMap;
    e << YAML::Key << "key_heads" << YAML::Value << la.linear.key_heads;
    e << YAML::Key << "value_heads" << YAML::Value << la.linear.value_heads;
    e << YAML::Key << "key_head_dim" << YAML::Value << la.linear.key_head_dim;
    e << YAML::Key << "value_head_dim" << YAML::Value << la.linear.value_head_dim;
    e << YAML::Key << "conv_kernel" << YAML::Value << la.linear.conv_kernel;
    e << YAML::Key << "params_per_layer" << YAML::Value << m.linear_attention_params();
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  if (m.moe) {
    e << YAML::Key << "moe" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "experts" << YAML::Value << m.moe->experts;
    e << YAML::Key << "experts_per_token" << YAML::Value << m.moe->experts_per_token;
    e << YAML::Key << "shared_experts" << YAML::Value << m.moe->shared_experts;
    e << YAML::Key << "expert_intermediate_size" << YAML::Value << m.moe->expert_intermediate_size;
    e << YAML::EndMap;
  }
  e << YAML::Key << "weights" << YAML::Value << YAML::Flow << YAML::BeginMap;
  e << YAML::Key << "attention" << YAML::Value << to_string(m.weights.attention);
  e << YAML::Key << "dense_mlp" << YAML::Value << to_string(m.weights.dense_mlp);
  e << YAML::Key << "experts" << YAML::Value << to_string(m.weights.experts);
  e << YAML::Key << "shared_experts" << YAML::Value << to_string(m.weights.shared_experts);
  e << YAML::Key << "lm_head" << YAML::Value << to_string(m.weights.lm_head);
  e << YAML::EndMap;
  e << YAML::Key << "total_params" << YAML::Value << m.total_params();
  e << YAML::Key << "active_params" << YAML::Value << m.active_params();
  e << YAML::Key << "allreduce_per_layer" << YAML::Value << m.collectives.allreduce_per_layer;
  e << YAML::Key << "mtp_layers" << YAML::Value << m.mtp_layers;
  if (m.eagle3) {
    e << YAML::Key << "eagle" << YAML::Value << YAML::Flow << YAML::BeginMap;
    e << YAML::Key << "version" << YAML::Value << m.eagle3->version;
    e << YAML::Key << "target" << YAML::Value << (m.eagle3->target.empty() ? "unnamed" : m.eagle3->target);
    e << YAML::Key << "aux_hidden_states" << YAML::Value << m.eagle3->aux_hidden_states;
    e << YAML::Key << "draft_vocab_size" << YAML::Value << m.eagle3->draft_vocab_size;
    e << YAML::EndMap;
  }
}

void emit_gpu(YAML::Emitter& e, const std::string& path, const DataDir&) {
  const GpuSpec g = load_gpu(path);
  e << YAML::Key << "name" << YAML::Value << g.name;
  e << YAML::Key << "memory" << YAML::Value << format_bytes(g.memory_bytes);
  e << YAML::Key << "memory_bandwidth" << YAML::Value << format_bandwidth(g.memory_bandwidth_bytes_per_s);
  e << YAML::Key << "bf16_dense" << YAML::Value << format_flop_rate(g.bf16_flop_per_s);
  if (g.fp8_flop_per_s) e << YAML::Key << "fp8_dense" << YAML::Value << format_flop_rate(*g.fp8_flop_per_s);
  e << YAML::Key << "pcie_generation" << YAML::Value << g.pcie_generation;
  e << YAML::Key << "architecture" << YAML::Value << to_string(g.architecture);
  if (g.nvlink_bandwidth_bytes_per_s) {
    e << YAML::Key << "nvlink_bandwidth" << YAML::Value << format_bandwidth(*g.nvlink_bandwidth_bytes_per_s);
  }
  if (g.xgmi_link_bandwidth_bytes_per_s) {
    e << YAML::Key << "xgmi_link_bandwidth" << YAML::Value << format_bandwidth(*g.xgmi_link_bandwidth_bytes_per_s);
    e << YAML::Key << "xgmi_links" << YAML::Value << g.xgmi_links;
  }
  e << YAML::Key << "p2p_supported" << YAML::Value << g.p2p_supported;
}

void emit_intervention_list(YAML::Emitter& e, const std::vector<Intervention>& list) {
  e << YAML::Key << "interventions" << YAML::Value << YAML::BeginSeq;
  for (const auto& i : list) {
    e << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << i.name << YAML::Key << "patches"
      << YAML::Value << i.patches;
    if (!i.when.always()) e << YAML::Key << "when" << YAML::Value << to_string(i.when);
    e << YAML::EndMap;
  }
  e << YAML::EndSeq;
}

void emit_topology(YAML::Emitter& e, const std::string& path, const DataDir&) {
  const Topology t = load_topology(path);
  e << YAML::Key << "name" << YAML::Value << t.name << YAML::Key << "gpu" << YAML::Value << t.gpu;
  e << YAML::Key << "gpus" << YAML::Value << t.gpus << YAML::Key << "p2p" << YAML::Value << t.p2p;
  e << YAML::Key << "pcie_generation" << YAML::Value << t.pcie_generation;
  e << YAML::Key << "link" << YAML::Value << link_name(t.link, t.nvlinks);
  if (!t.pair_links.empty()) {
    e << YAML::Key << "links" << YAML::Value << YAML::BeginSeq;
    for (std::size_t i = 0; i < t.pair_links.size(); ++i) {
      std::string row;
      for (std::size_t j = 0; j < t.pair_links[i].size(); ++j) {
        row += (j ? " " : "") + (i == j ? std::string("X") : link_name(t.pair_links[i][j], t.pair_nvlinks[i][j]));
      }
      e << row;
    }
    e << YAML::EndSeq;
  }
  if (!t.numa_nodes.empty()) e << YAML::Key << "numa" << YAML::Value << YAML::Flow << t.numa_nodes;
  if (t.cpu) e << YAML::Key << "cpu" << YAML::Value << to_string(*t.cpu);
  if (t.nodes > 1 && t.network) {
    e << YAML::Key << "nodes" << YAML::Value << t.nodes << YAML::Key << "gpus_per_node" << YAML::Value << t.gpus_per_node;
    e << YAML::Key << "network" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "kind" << YAML::Value << to_string(t.network->kind);
    e << YAML::Key << "nic_bandwidth" << YAML::Value << format_bandwidth(t.network->nic_bandwidth_bytes_per_s);
    e << YAML::Key << "latency" << YAML::Value << format_duration(t.network->latency_s);
    e << YAML::Key << "rails" << YAML::Value << t.network->rails << YAML::EndMap;
  }
  e << YAML::Key << "comm_profile" << YAML::Value << t.comm_profile;
  if (!t.failures_seen.empty()) {
    e << YAML::Key << "failures_seen" << YAML::Value << YAML::BeginSeq;
    for (const auto& f : t.failures_seen) {
      e << YAML::BeginMap << YAML::Key << "check" << YAML::Value << f.check << YAML::Key << "what" << YAML::Value << f.what
        << YAML::EndMap;
    }
    e << YAML::EndSeq;
  }
  if (!t.interventions.empty()) emit_intervention_list(e, t.interventions);
}

void emit_comm_profile(YAML::Emitter& e, const std::string& path, const DataDir&) {
  const CommProfile p = load_comm_profile(path);
  e << YAML::Key << "name" << YAML::Value << p.name << YAML::Key << "implementation" << YAML::Value
    << p.implementation << YAML::Key << "ranks" << YAML::Value << p.ranks;
  if (p.nodes > 1) e << YAML::Key << "nodes" << YAML::Value << p.nodes;
  e << YAML::Key << "mode" << YAML::Value << to_string(p.mode);
  if (!p.gpu.empty()) e << YAML::Key << "gpu" << YAML::Value << p.gpu;
  e << YAML::Key << "points" << YAML::Value << YAML::BeginSeq;
  for (const auto& pt : p.points) {
    e << YAML::Flow << YAML::BeginMap << YAML::Key << "size" << YAML::Value << format_bytes(pt.message_bytes)
      << YAML::Key << "time" << YAML::Value << format_duration(pt.time_s) << YAML::EndMap;
  }
  e << YAML::EndSeq;
}

void emit_compute_profile(YAML::Emitter& e, const std::string& path, const DataDir&) {
  const ComputeProfile p = load_compute_profile(path);
  const ComputeSettings& c = p.settings;
  e << YAML::Key << "name" << YAML::Value << p.name << YAML::Key << "gpu" << YAML::Value << p.gpu;
  e << YAML::Key << "bandwidth_efficiency" << YAML::Value << c.bandwidth_efficiency.value_or(0.0);
  e << YAML::Key << "flop_efficiency" << YAML::Value << c.flop_efficiency;
  e << YAML::Key << "kernel_floor" << YAML::Value << format_duration(c.kernel_floor_s);
  e << YAML::Key << "multi_token_step" << YAML::Value << format_duration(c.multi_token_step_s);
  e << YAML::Key << "eager_launch_per_kernel" << YAML::Value << format_duration(c.eager_launch_per_kernel_or_prior_s());
  if (c.eager_overlap_exponent) e << YAML::Key << "eager_overlap_exponent" << YAML::Value << *c.eager_overlap_exponent;
}

void emit_scenario(YAML::Emitter& e, const std::string& path, const DataDir& data) {
  const Scenario s = load_scenario(path, {}, data);
  e << YAML::Key << "name" << YAML::Value << s.name;
  e << YAML::Key << "model" << YAML::Value << s.model.name << YAML::Key << "draft" << YAML::Value << s.draft.name;
  e << YAML::Key << "topology" << YAML::Value << s.topology.name << YAML::Key << "gpu" << YAML::Value << s.gpu.name;
  e << YAML::Key << "tp" << YAML::Value << s.parallel.tp << YAML::Key << "batch" << YAML::Value << s.batch;
  e << YAML::Key << "context_tokens" << YAML::Value << s.context_tokens;
  if (!s.concurrency.empty()) e << YAML::Key << "concurrency" << YAML::Value << YAML::Flow << s.concurrency;
  e << YAML::Key << "modes" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "decode"
    << YAML::Value << to_string(s.engine.decode_mode) << YAML::Key << "verify" << YAML::Value
    << to_string(s.engine.verify_mode) << YAML::Key << "draft" << YAML::Value << to_string(s.engine.draft_mode)
    << YAML::EndMap;
  e << YAML::Key << "speculation" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "num_steps"
    << YAML::Value << s.speculation.shape.num_steps << YAML::Key << "eagle_topk" << YAML::Value
    << s.speculation.shape.eagle_topk << YAML::Key << "num_draft_tokens" << YAML::Value
    << s.speculation.shape.num_draft_tokens;
  if (s.speculation.parallel_drafting) e << YAML::Key << "parallel_drafting" << YAML::Value << true;
  if (s.speculation.drafts_block()) {
    e << YAML::Key << "method" << YAML::Value << s.speculation.method << YAML::Key << "block_size" << YAML::Value
      << s.speculation.shape.num_draft_tokens;
  }
  e << YAML::EndMap;
  e << YAML::Key << "comm_profile" << YAML::Value << (s.comm_profile ? s.comm_profile->name : "none");
  e << YAML::Key << "kernel_floor" << YAML::Value << format_duration(s.compute.kernel_floor_s);
  e << YAML::Key << "spec_extra_host_per_cycle" << YAML::Value << format_duration(s.host.spec_extra_per_cycle_s);
  e << YAML::Key << "draft_step_overhead" << YAML::Value << format_duration(s.host.draft_step_overhead_s);
  e << YAML::Key << "engine_prior" << YAML::Value << (s.engine_prior ? s.engine_prior->name : "none");
}

void emit_term(YAML::Emitter& e, const EnginePrior::Term& term) {
  e << YAML::Flow << YAML::BeginMap << YAML::Key << "value" << YAML::Value << format_duration(term.value_s)
    << YAML::Key << "p10" << YAML::Value << format_duration(term.p10_s) << YAML::Key << "p90" << YAML::Value
    << format_duration(term.p90_s) << YAML::EndMap;
}

void emit_engine(YAML::Emitter& e, const std::string& path, const DataDir&) {
  const EnginePrior p = load_engine_prior(path);
  e << YAML::Key << "name" << YAML::Value << p.name;
  for (const auto& [key, term] : {std::pair{"cycle_overhead", &p.cycle_overhead},
                                  std::pair{"draft_step_overhead", &p.draft_step_overhead}}) {
    e << YAML::Key << key << YAML::Value;
    emit_term(e, *term);
  }
  if (p.cycle_overhead_by_version.empty()) return;
  e << YAML::Key << "default_spec_version" << YAML::Value << p.default_spec_version;
  e << YAML::Key << "cycle_overhead_by_spec_version" << YAML::Value << YAML::BeginMap;
  for (const auto& [version, term] : p.cycle_overhead_by_version) {
    e << YAML::Key << version << YAML::Value;
    emit_term(e, term);
  }
  e << YAML::EndMap;
}

void emit_model_error(YAML::Emitter& e, const std::string& path, const DataDir&) {
  const ModelError m = load_model_error(path);
  e << YAML::Key << "rows" << YAML::Value << m.rows << YAML::Key << "sources" << YAML::Value << m.sources;
  e << YAML::Key << "sigma" << YAML::Value << m.sigma;
}

void emit_interventions(YAML::Emitter& e, const std::string& path, const DataDir&) {
  const InterventionCatalogue c = load_interventions(path);
  e << YAML::Key << "name" << YAML::Value << c.name;
  emit_intervention_list(e, c.interventions);
}

void emit_model_file(YAML::Emitter& e, const std::string& path, const DataDir&) { emit_model(e, load_model(path)); }

// Each data file kind with what `check` prints of it once its own loader has read it.
struct KindEmitter {
  std::string_view kind;
  void (*emit)(YAML::Emitter&, const std::string& path, const DataDir&);
};

constexpr KindEmitter kEmitters[] = {
    {"llm", emit_model_file},
    {"hf_config", emit_model_file},
    {"gpu", emit_gpu},
    {"topology", emit_topology},
    {"comm_profile", emit_comm_profile},
    {"compute_profile", emit_compute_profile},
    {"scenario", emit_scenario},
    {"engine", emit_engine},
    {"interventions", emit_interventions},
    {"model_error", emit_model_error},
};

// The file's `kind`, or hf_config for a Hugging Face config.json.
std::string data_file_kind(const std::string& path) {
  detail::YamlReader r = detail::YamlReader::load_file(path);
  if (r.node()["kind"] && r.node()["kind"].IsScalar()) return r.node()["kind"].Scalar();
  if (r.node()["model_type"] || r.node()["text_config"]) return "hf_config";
  throw Error(r.location(), "kind", "required key is missing (llm, gpu, topology, comm_profile, compute_profile, scenario, interventions)");
}

}  // namespace

std::string check_data_file(const std::string& path_or_dir, const DataDir& data) {
  // A Hugging Face checkpoint directory is checked through its config.json, as load_model reads it.
  const std::string path = std::filesystem::is_directory(path_or_dir)
                               ? (std::filesystem::path(path_or_dir) / "config.json").string()
                               : path_or_dir;
  const std::string kind = data_file_kind(path);
  const auto* emitter = std::find_if(std::begin(kEmitters), std::end(kEmitters),
                                     [&](const KindEmitter& k) { return k.kind == kind; });
  if (emitter == std::end(kEmitters)) {
    throw Error({path, 0, 0}, "kind", "'" + kind + "' is not a data file kind (llm, gpu, topology, comm_profile, compute_profile, scenario, engine, interventions, model_error)");
  }
  YAML::Emitter e;
  e << YAML::BeginMap << YAML::Key << "kind" << YAML::Value << kind;
  emitter->emit(e, path, data);
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace specsim
