// The specsim command line, callable in-process (tests run it without spawning a process).
// One file per subcommand: an options struct, setup_x(CLI::App&, Io&) and run_x(options, io).
#pragma once

#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace specsim::cli {

struct Io {
  std::ostream& out;
  std::ostream& err;
};

// Exit codes: 0 success, 1 bad input or a failed computation (the message names file, line and
// key, or the option), 2 a malformed command line, 130 stopped by SIGINT after printing what was
// done (128 + signal number, the shell's convention).
inline constexpr int kExitOk = 0;
inline constexpr int kExitInput = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInterrupted = 130;

// Thrown by a subcommand that stopped early on SIGINT, after it printed its partial result.
struct Interrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int run(const std::vector<std::string>& args, Io io);

void setup_predict(CLI::App& app, Io& io);
void setup_check(CLI::App& app, Io& io);
void setup_calibrate(CLI::App& app, Io& io);
void setup_comm(CLI::App& app, Io& io);
void setup_forward(CLI::App& app, Io& io);
// `calibrate compute`, registered by setup_calibrate on its `calibrate` subcommand.
void setup_calibrate_compute(CLI::App& calibrate, Io& io);
void setup_topology(CLI::App& app, Io& io);
void setup_acceptance(CLI::App& app, Io& io);
void setup_breakeven(CLI::App& app, Io& io);
void setup_rank(CLI::App& app, Io& io);
void setup_sweep(CLI::App& app, Io& io);
void setup_validate(CLI::App& app, Io& io);
void setup_init(CLI::App& app, Io& io);
void setup_priors(CLI::App& app, Io& io);

}  // namespace specsim::cli
