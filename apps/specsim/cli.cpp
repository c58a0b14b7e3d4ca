#include "cli.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <ostream>

#include "specsim/error.hpp"

namespace specsim::cli {

int run(const std::vector<std::string>& args, Io io) {
  CLI::App app{"specsim: predicts speculative-decoding throughput on multi-GPU boxes"};
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
