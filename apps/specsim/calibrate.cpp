// specsim calibrate nccl: nccl-tests all_reduce_perf logs -> a comm profile (calibration/profiles)
// with provenance, the fit's per-regime residuals and, with --holdout-every, the error on sizes
// the fit did not see. The pipeline is the library's (calibrate_nccl.hpp); this file reads the
// options, writes the profile and prints the report.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <optional>
#include <ostream>

#include "cli.hpp"
#include "specsim/calibrate_nccl.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/output_file.hpp"
#include "specsim/profile_writer.hpp"

namespace specsim::cli {

namespace {

struct CalibrateNcclOptions {
  std::vector<std::string> logs;
  std::string output;
  std::optional<int> holdout_every;
  std::optional<int> ranks;
  bool lenient = false;
  bool in_place = false;
  bool force = false;
  bool allow_mixed = false;
  std::string collective = "all_reduce";  // all_reduce | all_to_all: which tables make the profile
};

std::string command_line(const CalibrateNcclOptions& o) {
  std::string cmd = "specsim calibrate nccl";
  for (const auto& l : o.logs) cmd += " " + l;
  cmd += " -o " + o.output;
  if (o.holdout_every) cmd += " --holdout-every " + std::to_string(*o.holdout_every);
  if (o.ranks) cmd += " --ranks " + std::to_string(*o.ranks);
  if (o.lenient) cmd += " --lenient";
  if (o.in_place) cmd += " --in-place";
  if (o.force) cmd += " --force";
  if (o.allow_mixed) cmd += " --allow-mixed";
  if (o.collective != "all_reduce") cmd += " --collective " + o.collective;
  return cmd;
}

void run_calibrate_nccl(const CalibrateNcclOptions& o, Io& io) {
  OutputOptions output;
  output.inputs = o.logs;
  output.force = o.force;
  check_output_target(o.output, output);
  NcclCalibrationRequest request;
  request.logs = o.logs;
  request.profile_name = std::filesystem::path(o.output).stem().string();
  request.collective = o.collective;
  request.ranks = o.ranks;
  request.holdout_every = o.holdout_every;
  request.lenient = o.lenient;
  request.in_place = o.in_place;
  request.allow_mixed = o.allow_mixed;
  request.warn = [&io](const std::string& w) { io.err << "specsim: warning: " << w << "\n"; };
  NcclCalibration c = calibrate_nccl(request);
  c.provenance.tool = std::string("specsim ") + SPECSIM_CLI_VERSION;
  c.provenance.command = command_line(o);
  c.provenance.date_utc = utc_now_iso8601();
  // Read the temporary file back with the loader, so a profile that is written is one that loads.
  write_file_atomically(o.output, render_comm_profile_yaml(c.profile, c.provenance), output,
                        [](const std::string& tmp) { (void)load_comm_profile(tmp); });
  io.out << render_nccl_calibration(c, o.output);
}

}  // namespace

void setup_calibrate(CLI::App& app, Io& io) {
  CLI::App* calibrate = app.add_subcommand("calibrate", "Fit measurement files into calibration profiles");
  calibrate->require_subcommand(1);
  auto opts = std::make_shared<CalibrateNcclOptions>();
  CLI::App* nccl = calibrate->add_subcommand("nccl", "nccl-tests all_reduce_perf (or alltoall_perf) logs -> comm profile YAML");
  nccl->add_option("logs", opts->logs, "nccl-tests output files (all one rank count and launch mode)")
      ->required()
      ->check(CLI::ExistingFile);
  nccl->add_option("-o,--output", opts->output, "Profile to write (PROFILE.yaml; its stem is the profile name)")
      ->required();
  nccl->add_option("--holdout-every", opts->holdout_every,
                   "Also fit without every K-th size and report the error on those sizes")
      ->check(CLI::Range(2, 1000));
  nccl->add_option("--ranks", opts->ranks, "Rank count, overriding the logs' headers")->check(CLI::Range(1, 4096));
  nccl->add_flag("--lenient", opts->lenient, "Skip malformed rows (with a warning) instead of failing");
  nccl->add_flag("--in-place", opts->in_place, "Use the in-place time column instead of out-of-place");
  nccl->add_flag("--allow-mixed", opts->allow_mixed,
                 "Pool logs of different GPU models or rank counts into one profile (with a warning)");
  nccl->add_option("--collective", opts->collective,
                   "Which tables make the profile: all_reduce (all_reduce_perf) or all_to_all (alltoall_perf)")
      ->check(CLI::IsMember({"all_reduce", "all_to_all"}));
  nccl->add_flag("--force", opts->force, "Replace a read-only output, or write into a device or FIFO in place");
  nccl->callback([opts, &io]() { run_calibrate_nccl(*opts, io); });
  setup_calibrate_compute(*calibrate, io);
}

}  // namespace specsim::cli
