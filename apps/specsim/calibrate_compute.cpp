// specsim calibrate compute: a CSV of measured forward times -> a compute profile
// (calibration/profiles, kind compute_profile) with the fitted terms of compute_model.hpp, the
// residuals per model and mode, the error on a held-out half of the grid, and provenance
// (source file and SHA-256, model files, command). docs/compute-calibration.md explains the fit.
// The pipeline is the library's (calibrate_compute.hpp); this file reads the options, writes the
// profile and prints the report.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <optional>
#include <ostream>

#include "cli.hpp"
#include "specsim/calibrate_compute.hpp"
#include "specsim/load.hpp"
#include "specsim/output_file.hpp"
#include "specsim/profile_writer.hpp"

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

void run_calibrate_compute(const CalibrateComputeOptions& o, Io& io) {
  OutputOptions output;
  output.inputs = {o.steps};
  output.force = o.force;
  check_output_target(o.output, output);
  ComputeCalibrationRequest request;
  request.steps = o.steps;
  request.profile_name = fs::path(o.output).stem().string();
  request.models_dir = o.models_dir;
  request.description = o.description;
  request.fit.kernels_per_dense_layer = o.kernels_per_dense_layer;
  request.fit.kernels_per_moe_layer = o.kernels_per_moe_layer;
  request.fit.bandwidth_efficiency = o.bandwidth_efficiency;
  ComputeCalibration c = calibrate_compute(request);
  c.provenance.tool = std::string("specsim ") + SPECSIM_CLI_VERSION;
  c.provenance.command = command_line(o);
  c.provenance.date_utc = utc_now_iso8601();
  // Every file the fit read is an input the output may not replace.
  output.inputs = c.files_read;
  write_file_atomically(o.output, render_compute_profile_yaml(c.profile, c.fit, c.provenance), output,
                        [](const std::string& tmp) { (void)load_compute_profile(tmp); });
  io.out << render_compute_calibration(c, o.output);
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
