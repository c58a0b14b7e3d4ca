// specsim calibrate compute: a CSV of measured forward times -> a compute profile
// (calibration/profiles, kind compute_profile) with the fitted terms of compute_model.hpp, the
// residuals per model and mode, the error on a held-out half of the grid, and provenance
// (source file and SHA-256, model files, command). docs/compute-calibration.md explains the fit.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>

#include "cli.hpp"
#include "specsim/compute_fit.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/output_file.hpp"
#include "specsim/profile_writer.hpp"
#include "specsim/sha256.hpp"
#include "specsim/units.hpp"

namespace specsim::cli {

namespace {

namespace fs = std::filesystem;

struct CalibrateComputeOptions {
  std::string steps;
  std::string output;
  std::string models_dir;  // empty: the CSV's directory
  std::optional<int> kernels_per_dense_layer;
  std::optional<int> kernels_per_moe_layer;
  std::optional<double> bandwidth_efficiency;
  std::string description;
  bool force = false;
};

std::string command_line(const CalibrateComputeOptions& o) {
  std::string cmd = "specsim calibrate compute " + o.steps + " -o " + o.output;
  if (!o.models_dir.empty()) cmd += " --models-dir " + o.models_dir;
  if (o.kernels_per_dense_layer) cmd += " --kernels-per-dense-layer " + std::to_string(*o.kernels_per_dense_layer);
  if (o.kernels_per_moe_layer) cmd += " --kernels-per-moe-layer " + std::to_string(*o.kernels_per_moe_layer);
  if (o.bandwidth_efficiency) cmd += " --bandwidth-efficiency " + std::to_string(*o.bandwidth_efficiency).substr(0, 6);
  return cmd;
}

std::string percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * f);
  return buf;
}

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

std::string error_table(const std::vector<ComputeErrorSummary>& list) {
  std::string t = "  " + pad("model", 26) + pad("mode", 7) + pad("rows", 6) + pad("median", 9) + "worst\n";
  for (const auto& e : list) {
    t += "  " + pad(e.model, 26) + pad(to_string(e.mode), 7) + pad(std::to_string(e.rows), 6) +
         pad(percent(e.median_abs_error), 9) + percent(e.worst_abs_error) + "\n";
  }
  return t;
}

std::string describe(const ComputeSettings& s) {
  auto eff = [](const std::optional<double>& v) { return v ? percent(*v) : std::string("(= eta_bw)"); };
  std::string t;
  t += "  bandwidth_efficiency         " + eff(s.bandwidth_efficiency) + "   weights stream at this share of datasheet BW\n";
  t += "  expert_bandwidth_efficiency  " + eff(s.expert_bandwidth_efficiency) + "   routed experts (grouped GEMM)\n";
  t += "  kv_efficiency_decode         " + eff(s.kv_efficiency_decode) + "   KV cache read, 1 query token\n";
  t += "  kv_efficiency_verify         " + eff(s.kv_efficiency_verify) + "   KV cache read, > 1 query token\n";
  t += "  flop_efficiency              " + percent(s.flop_efficiency) + "\n";
  t += "  kernel_floor                 " + units::format_duration(s.kernel_floor_s) + " per kernel (graph)\n";
  t += "  multi_token_step             " + units::format_duration(s.multi_token_step_s) + " per layer once q > 1\n";
  t += "  per_token_layer              " + units::format_duration(s.per_token_layer_s) + " per token per layer\n";
  t += "  graph_launch                 " + units::format_duration(s.graph_launch_s) + " per forward\n";
  t += "  eager_launch_per_kernel      " + units::format_duration(s.eager_launch_per_kernel_or_prior_s()) + " host, per kernel\n";
  t += "  eager_multi_token_step       " + units::format_duration(s.eager_multi_token_step_s) + " host, per layer once q > 1\n";
  if (s.eager_overlap_exponent) {
    char p[32];
    std::snprintf(p, sizeof p, "%.2f", *s.eager_overlap_exponent);
    t += std::string("  eager_overlap_exponent       ") + p + "   (gpu^p + host^p)^(1/p)\n";
  }
  return t;
}

// The file describing what a CSV model name timed, in `dir`: NAME.yaml (specsim's model file),
// NAME.json (a Hugging Face config.json saved under the name) or NAME/config.json (a checkpoint
// directory), in that order: load_model reads all three, as everywhere a model is named
// (docs/schema.md). Empty when there is none.
std::optional<std::string> model_file_for(const std::string& name, const fs::path& dir) {
  std::error_code ec;  // a model name the file system refuses (too long) is not found, not a throw
  for (const fs::path& candidate : {dir / (name + ".yaml"), dir / (name + ".json"), dir / name / "config.json"}) {
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
  }
  return std::nullopt;
}

void run_calibrate_compute(const CalibrateComputeOptions& o, Io& io) {
  OutputOptions output;
  output.inputs = {o.steps};
  output.force = o.force;
  check_output_target(o.output, output);
  const DataDir data;
  const std::vector<ComputeStep> steps = read_compute_steps_csv(o.steps);
  const fs::path models_dir = o.models_dir.empty() ? fs::path(o.steps).parent_path() : fs::path(o.models_dir);

  ComputeProfileProvenance prov;
  prov.tool = std::string("specsim ") + SPECSIM_CLI_VERSION;
  prov.command = command_line(o);
  prov.date_utc = utc_now_iso8601();
  prov.source_path = o.steps;
  prov.source_sha256 = sha256_file_hex(o.steps);

  // A CSV model name resolves to a model file in <models-dir> (model_file_for), else to the data
  // directory's models/llm/<name>.yaml; rows of a name neither holds are skipped.
  std::map<std::string, std::optional<TransformerSpec>> models;
  std::map<std::string, GpuSpec> gpus;
  std::map<std::string, int> skipped;
  std::vector<ComputeFitInput> rows;
  std::string gpu_name;
  for (const ComputeStep& s : steps) {
    if (!models.count(s.model)) {
      std::optional<std::string> path = model_file_for(s.model, models_dir);
      std::error_code ec;  // a model name the file system refuses (too long) is not found, not a throw
      if (!path && fs::exists(fs::path(data.root()) / "models" / "llm" / (s.model + ".yaml"), ec)) {
        path = data.resolve(DataKind::kModel, s.model);
      }
      // Named by where it sits in the data directory when it sits there, not by this machine's path.
      std::string shown = path ? *path : "";
      if (path && path->starts_with(data.root() + "/")) shown = path->substr(data.root().size() + 1);
      if (path) {
        models[s.model] = load_model(*path);
        output.inputs.push_back(*path);
        prov.model_files.push_back(s.model + " -> " + shown + " (sha256 " + sha256_file_hex(*path) + ")");
      } else {
        models[s.model] = std::nullopt;
      }
    }
    if (!models[s.model]) {
      ++skipped[s.model];
      continue;
    }
    const TransformerSpec& m = *models[s.model];
    if (s.layers_timed && *s.layers_timed != m.layers) {
      throw Error({o.steps, s.line, 0}, "layers_timed",
                  std::to_string(*s.layers_timed) + " layers timed, but the model file for '" + s.model + "' has " +
                      std::to_string(m.layers) + " (describe the timed stack in " + (models_dir / (s.model + ".yaml")).string() + ")");
    }
    const std::string g = lower(s.gpu);
    if (!gpus.count(g)) {
      const std::string gpu_path = data.resolve(DataKind::kGpu, g);
      gpus.emplace(g, load_gpu(gpu_path));
      output.inputs.push_back(gpu_path);
    }
    if (gpu_name.empty()) gpu_name = g;
    if (g != gpu_name) {
      throw Error({o.steps, s.line, 0}, "gpu", "'" + s.gpu + "': one profile is one GPU (first rows: " + gpu_name + ")");
    }
    rows.push_back({s, m, gpus.at(g)});
  }
  for (const auto& [name, n] : skipped) {
    prov.skipped.push_back(name + ": " + std::to_string(n) + " rows (no model file " + name + ".yaml, " + name +
                           ".json or " + name + "/config.json in " + models_dir.string() + ", nor " + name +
                           ".yaml in models/llm)");
  }
  prov.rows_used = int(rows.size());
  if (rows.empty()) throw Error({o.steps, 0, 0}, "model", "no row names a model with a model file");

  ComputeFitOptions fit_options;
  fit_options.kernels_per_dense_layer = o.kernels_per_dense_layer;
  fit_options.kernels_per_moe_layer = o.kernels_per_moe_layer;
  fit_options.bandwidth_efficiency = o.bandwidth_efficiency;
  const ComputeFitResult fit = fit_compute(rows, fit_options);

  ComputeProfile profile;
  profile.name = fs::path(o.output).stem().string();
  profile.gpu = gpu_name;
  profile.description = o.description.empty() ? "compute terms fitted on " + fs::path(o.steps).filename().string()
                                              : o.description;
  profile.source = o.steps + " (see its .conditions.yaml)";
  profile.settings = fit.settings;
  write_file_atomically(o.output, render_compute_profile_yaml(profile, fit, prov), output,
                        [](const std::string& tmp) { (void)load_compute_profile(tmp); });

  std::string report = "wrote " + o.output + ": " + std::to_string(rows.size()) + " rows of " + o.steps +
                       " (sha256 " + prov.source_sha256.substr(0, 12) + "...)\n";
  for (const auto& s : prov.skipped) report += "  skipped " + s + "\n";
  report += "fitted on all rows:\n" + describe(fit.settings);
  report += "fit residuals, tokens <= " + std::to_string(kMemoryBoundMaxTokens) + " (|predicted / measured - 1|):\n" +
            error_table(fit.residuals);
  report += "held out: " + fit.split + "\nheld-out error, tokens <= " + std::to_string(kMemoryBoundMaxTokens) +
            ", fitted on the other half:\n" + error_table(fit.holdout);
  io.out << report;
}

}  // namespace

void setup_calibrate_compute(CLI::App& calibrate, Io& io) {
  auto opts = std::make_shared<CalibrateComputeOptions>();
  CLI::App* sub = calibrate.add_subcommand("compute", "Measured forward times (CSV) -> compute profile YAML");
  sub->add_option("steps", opts->steps, "CSV: model,gpu,tp,[layers_timed,]tokens,context,mode,time_<unit>")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("-o,--output", opts->output, "Profile to write (PROFILE.yaml; its stem is the profile name)")
      ->required();
  sub->add_option("--models-dir", opts->models_dir,
                  "Where model files named like the CSV's models are looked for first (default: the CSV's directory)")
      ->check(CLI::ExistingDirectory);
  sub->add_option("--kernels-per-dense-layer", opts->kernels_per_dense_layer,
                  "Kernels per dense layer of the measured engine (overrides the model files; kept in the profile)")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--kernels-per-moe-layer", opts->kernels_per_moe_layer,
                  "Kernels per MoE layer of the measured engine (overrides the model files; kept in the profile)")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--bandwidth-efficiency", opts->bandwidth_efficiency,
                  "Fix eta_bw (measured on the GEMM kernels) instead of fitting it")
      ->check(CLI::Range(0.01, 1.0));
  sub->add_option("--description", opts->description, "The profile's description");
  sub->add_flag("--force", opts->force, "Replace a read-only output, or write into a device or FIFO in place");
  sub->callback([opts, &io]() { run_calibrate_compute(*opts, io); });
}

}  // namespace specsim::cli
