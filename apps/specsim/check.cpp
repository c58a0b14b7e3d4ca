// specsim check: validates data files and prints them normalised, units spelled out. A shipped
// name (a model, GPU, topology, scenario, comm profile, engine or intervention catalogue in the
// data directory) stands for its file, as it does after --scenario, --model or --gpu.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <ostream>

#include "cli.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/suggest.hpp"

namespace specsim::cli {

namespace {

struct CheckOptions {
  std::vector<std::string> files;
};

constexpr DataKind kNamedKinds[] = {DataKind::kModel,       DataKind::kGpu,    DataKind::kTopology,
                                    DataKind::kScenario,    DataKind::kCommProfile, DataKind::kEngine,
                                    DataKind::kInterventions};

// The files an argument stands for: itself when it exists, else every kind's file of that name
// (a scenario and its model may share one). None: an error naming the nearest shipped name.
std::vector<std::string> files_named(const std::string& arg, const DataDir& data) {
  std::error_code ec;
  if (std::filesystem::exists(arg, ec)) return {arg};
  std::vector<std::string> found, all;
  for (const DataKind kind : kNamedKinds) {
    for (const auto& name : data.names(kind)) {
      if (name == arg) found.push_back(data.resolve(kind, name));
      all.push_back(name);
    }
  }
  if (!found.empty()) return found;
  const auto near = closest(arg, all);
  throw Error({arg, 0, 0}, "",
              "no such file, nor a model, GPU, topology, scenario, comm profile, engine or intervention catalogue of "
              "that name in " + data.root() + "/models or calibration/profiles" +
                  (near ? "; did you mean '" + *near + "'?" : ""));
}

// Every file is checked, a bad one does not stop the rest: each good one is printed, each bad one's
// error goes to stderr, and the command fails when any was bad.
void run_check(const CheckOptions& o, Io& io) {
  const DataDir data;
  int bad = 0;
  for (const auto& arg : o.files) {
    try {
      for (const auto& f : files_named(arg, data)) {
        const std::string normalised = check_data_file(f);
        io.out << "# " << f << ": ok\n" << normalised;
      }
    } catch (const Error& e) {
      io.err << "specsim: error: " << e.what() << "\n";
      ++bad;
    }
  }
  if (bad > 0) {
    throw Error(std::to_string(bad) + " of " + std::to_string(o.files.size()) + " files failed the check (above)");
  }
}

}  // namespace

void setup_check(CLI::App& app, Io& io) {
  auto opts = std::make_shared<CheckOptions>();
  CLI::App* sub = app.add_subcommand("check", "Validate data files and print them normalised");
  sub->add_option("files", opts->files,
                  "Data files (model, GPU, topology, profile, scenario), a Hugging Face checkpoint directory "
                  "holding config.json, or shipped names (kimi-k2.5, h200, 8x-h200-nvswitch, ...)")
      ->required();
  sub->callback([opts, &io]() { run_check(*opts, io); });
}

}  // namespace specsim::cli
