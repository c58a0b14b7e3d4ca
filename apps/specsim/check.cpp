// specsim check: validates data files and prints them normalised, units spelled out.
#include <CLI/CLI.hpp>

#include <ostream>

#include "cli.hpp"
#include "specsim/load.hpp"

namespace specsim::cli {

namespace {

struct CheckOptions {
  std::vector<std::string> files;
};

void run_check(const CheckOptions& o, Io& io) {
  for (const auto& f : o.files) {
    const std::string normalised = check_data_file(f);
    io.out << "# " << f << ": ok\n" << normalised;
  }
}

}  // namespace

void setup_check(CLI::App& app, Io& io) {
  auto opts = std::make_shared<CheckOptions>();
  CLI::App* sub = app.add_subcommand("check", "Validate data files and print them normalised");
  sub->add_option("files", opts->files,
                  "Data files (model, GPU, topology, profile, scenario), or a Hugging Face checkpoint directory "
                  "holding config.json")
      ->required()
      ->check(CLI::ExistingPath);
  sub->callback([opts, &io]() { run_check(*opts, io); });
}

}  // namespace specsim::cli
