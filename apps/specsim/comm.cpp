// specsim comm: predicted all-reduce (or all-to-all) time per message size from a comm profile, through the
// measured curve (MeasuredCurve: piecewise regimes, exact at measured sizes), as text, JSON or CSV.
// Profiles of the same box at other rank counts estimate an unmeasured one (comm_scaling.hpp).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <optional>
#include <ostream>

#include "cli.hpp"
#include "format_option.hpp"
#include "specsim/error.hpp"
#include "specsim/comm_table.hpp"
#include "specsim/report.hpp"
#include "specsim/units.hpp"

namespace specsim::cli {

namespace {

struct CommOptions {
  std::vector<std::string> profiles;
  std::optional<std::string> topology;
  std::optional<std::string> rank_scaling;
  int ranks = 0;
  std::vector<std::string> sizes;
  std::optional<std::string> mode;
  Format format = Format::kText;
};

// "14KiB", "2MB", or a plain byte count "4096".
double parse_size_bytes(const std::string& text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
  try {
    // A plain count is bytes: read through units so the plausibility bound applies to it too.
    return units::parse_bytes(plain ? text + "B" : text);
  } catch (const Error& e) {
    throw Error({"--size", 0, 0}, "", "'" + text + "': " + e.message());
  }
}

void run_comm(const CommOptions& o, Io& io) {
  CommTableRequest request;
  request.profiles = o.profiles;
  request.topology = o.topology;
  request.rank_scaling = o.rank_scaling;
  request.mode = o.mode;
  request.ranks = o.ranks;
  for (const auto& s : o.sizes) request.sizes_bytes.push_back(parse_size_bytes(s));
  request.warn = [&io](const std::string& w) { io.err << "warning: " << w << "\n"; };
  io.out << render_comm(comm_table(request), o.format);
}

}  // namespace

void setup_comm(CLI::App& app, Io& io) {
  auto opts = std::make_shared<CommOptions>();
  CLI::App* sub = app.add_subcommand("comm", "Predicted all-reduce (or all-to-all) time per message size from a comm profile");
  sub->add_option("--profile", opts->profiles,
                  "Comm profile name (calibration/profiles) or file; several (P1,P2 or repeated) at other rank "
                  "counts of one box estimate an unmeasured --ranks")
      ->required()
      ->delimiter(',');
  sub->add_option("--ranks", opts->ranks, "Rank count: a profile's, or one to estimate")->required()->check(CLI::Range(1, 4096));
  sub->add_option("--rank-scaling", opts->rank_scaling,
                  "How to estimate an unmeasured rank count: power (per size, through two measured counts; the "
                  "default with two or more) or nccl (NCCL's model ratio from the nearest; needs --topology)")
      ->check(CLI::IsMember({"power", "nccl"}));
  sub->add_option("--topology", opts->topology, "Topology the profiles were measured on (models/topology)");
  sub->add_option("--size", opts->sizes, "Message sizes, S1,S2,... (14KiB, 2MB, or a byte count)")
      ->required()
      ->delimiter(',');
  sub->add_option("--mode", opts->mode, "Launch mode; must match the profile's")
      ->check(CLI::IsMember({"graph", "eager"}));
  add_format_option(*sub, opts->format, {.json_help = "Print {\"points\":[{\"bytes\":...,\"time_s\":...}]} (--format json)"});
  sub->callback([opts, &io]() { run_comm(*opts, io); });
}

}  // namespace specsim::cli
