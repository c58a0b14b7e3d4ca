#include "cli.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <ostream>
#include <utility>
#include <vector>

#include "specsim/error.hpp"
#include "specsim/suggest.hpp"

namespace specsim::cli {

int run(const std::vector<std::string>& args, Io io) {
  CLI::App app{"specsim: predicts speculative-decoding throughput on multi-GPU boxes", "specsim"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("specsim ") + SPECSIM_CLI_VERSION);
  setup_predict(app, io);
  setup_check(app, io);
  setup_calibrate(app, io);
  setup_comm(app, io);
  setup_forward(app, io);
  setup_topology(app, io);
  setup_acceptance(app, io);
  setup_breakeven(app, io);
  setup_rank(app, io);
  setup_sweep(app, io);
  setup_validate(app, io);
  setup_init(app, io);
  setup_priors(app, io);
  // One example per help page, run from the repository or an installed data directory.
  const std::pair<const char*, const char*> examples[] = {
      {"predict", "specsim predict --accept 0.747 --set engine.verify_mode=graph"},
      {"check", "specsim check models/gpu/h200.yaml"},
      {"calibrate", "specsim calibrate nccl calibration/nccl/chlc-8x4090-nop2p-sys.log -o my-profile.yaml"},
      {"comm", "specsim comm --profile rtx-pro-6000-8x-pcie5-aic-nccl --ranks 8 --size 14KiB"},
      {"forward", "specsim forward --model llama-3.1-8b --gpu h200 --tokens 1,4,16 --ctx 4096"},
      {"topology", "specsim topology import tests/data/valid/topo/club-3090-46-5gpu-sys-phb-node.txt --gpu rtx-4090 --name my-box -o my-box.yaml"},
      {"acceptance", "specsim acceptance tests/data/valid/logs/sglang_issue11948.log"},
      {"breakeven", "specsim breakeven --set speculation.num_steps=2"},
      {"rank", "specsim rank --accept 0.7"},
      {"sweep", "specsim sweep --vary speculation.num_steps=1..6 --vary acceptance.accept=0.5,0.7,0.9"},
      {"validate", "specsim validate validation/specforge-issue-339-2xh100 --calibrate-on all"},
      {"init", "specsim init --model llama-3.1-8b --draft llama-3.1-8b-eagle3 --topology 8x-h200-nvswitch --engine sglang --tp 1 -o my.yaml"},
      {"priors", "specsim priors --json"},
  };
  for (const auto& [name, example] : examples) {
    for (CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == name) sub->footer(std::string("Example:\n  ") + example);
    }
  }
  app.footer("Example:\n  specsim predict --accept 0.747\nSee `specsim SUBCOMMAND --help` for each subcommand.");
  // A first word that is no subcommand is a typo more often than not: name the nearest one.
  if (!args.empty() && !args.front().empty() && args.front().front() != '-') {
    std::vector<std::string> names;
    for (CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), args.front()) == names.end()) {
      const auto near = closest(args.front(), names);
      io.err << "specsim: error: '" << args.front() << "' is not a subcommand"
             << (near ? "; did you mean '" + *near + "'?" : "") << " (subcommands:";
      for (const auto& n : names) io.err << " " << n;
      io.err << ")\n";
      return kExitUsage;
    }
  }
  // CLI11 parses argv-style input in reverse order.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    io.out << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp& e) {
    io.out << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::CallForVersion& e) {
    io.out << e.what() << "\n";
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    io.err << "specsim: error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const Interrupted& e) {
    io.err << "specsim: " << e.what() << "\n";
    return kExitInterrupted;
  } catch (const specsim::Error& e) {
    io.err << "specsim: error: " << e.what() << "\n";
    return kExitInput;
  } catch (const std::exception& e) {
    io.err << "specsim: error: " << e.what() << "\n";
    return kExitInput;
  }
  return kExitOk;
}

}  // namespace specsim::cli
