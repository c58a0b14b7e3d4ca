// specsim comm: predicted all-reduce time per message size from a comm profile, through the
// measured curve (MeasuredCurve: piecewise regimes, exact at measured sizes), as text or JSON.
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <ostream>

#include "cli.hpp"
#include "specsim/comm_curve.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/units.hpp"

namespace specsim::cli {

namespace {

struct CommOptions {
  std::string profile;
  int ranks = 0;
  std::vector<std::string> sizes;
  std::optional<std::string> mode;
  bool json = false;
};

// "14KiB", "2MB", or a plain byte count "4096".
double parse_size_bytes(const std::string& text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
  try {
    return plain ? std::stod(text) : units::parse_bytes(text);
  } catch (const Error& e) {
    throw Error({"--size", 0, 0}, "", "'" + text + "': " + e.message());
  }
}

void run_comm(const CommOptions& o, Io& io) {
  std::vector<double> sizes;
  for (const auto& s : o.sizes) sizes.push_back(parse_size_bytes(s));
  const CommProfile profile = load_comm_profile(DataDir().resolve(DataKind::kCommProfile, o.profile));
  if (o.ranks != profile.ranks) {
    throw Error({"--ranks", 0, 0}, "",
                std::to_string(o.ranks) + " does not match profile '" + profile.name + "', measured at " +
                    std::to_string(profile.ranks) + " ranks");
  }
  // A profile is one launch mode; converting between modes needs a scenario's eager overhead.
  if (o.mode && *o.mode != to_string(profile.mode)) {
    throw Error({"--mode", 0, 0}, "",
                *o.mode + " does not match profile '" + profile.name + "', measured in " + to_string(profile.mode) +
                    " mode");
  }
  std::vector<CurvePoint> points;
  for (const auto& p : profile.points) points.push_back({p.message_bytes, p.time_s});
  CurveOptions options;
  options.ranks = profile.ranks;
  const MeasuredCurve curve = MeasuredCurve::fit(points, options);

  std::string text;
  if (o.json) {
    nlohmann::json j;
    j["points"] = nlohmann::json::array();
    for (double b : sizes) {
      // Whole byte counts print as JSON integers.
      nlohmann::json bytes = b == std::floor(b) && b < 9e15 ? nlohmann::json(static_cast<std::int64_t>(b)) : nlohmann::json(b);
      j["points"].push_back({{"bytes", bytes}, {"time_s", curve.time_s(b)}});
    }
    text = j.dump(2) + "\n";
  } else {
    text = "all_reduce, profile " + profile.name + " (" + std::to_string(profile.ranks) + " ranks, " +
           to_string(profile.mode) + ")\n";
    for (double b : sizes) {
      char line[128];
      std::snprintf(line, sizeof line, "  %-12s %12.3f us%s\n", units::format_bytes(b).c_str(), curve.time_s(b) * 1e6,
                    curve.in_measured_range(b) ? "" : "  (outside measured range: extrapolated)");
      text += line;
    }
  }
  io.out << text;
}

}  // namespace

void setup_comm(CLI::App& app, Io& io) {
  auto opts = std::make_shared<CommOptions>();
  CLI::App* sub = app.add_subcommand("comm", "Predicted all-reduce time per message size from a comm profile");
  sub->add_option("--profile", opts->profile, "Comm profile name (calibration/profiles) or file")->required();
  sub->add_option("--ranks", opts->ranks, "Rank count; must match the profile's")->required()->check(CLI::Range(1, 4096));
  sub->add_option("--size", opts->sizes, "Message sizes, S1,S2,... (14KiB, 2MB, or a byte count)")
      ->required()
      ->delimiter(',');
  sub->add_option("--mode", opts->mode, "Launch mode; must match the profile's")
      ->check(CLI::IsMember({"graph", "eager"}));
  sub->add_flag("--json", opts->json, "Print {\"points\":[{\"bytes\":...,\"time_s\":...}]}");
  sub->callback([opts, &io]() { run_comm(*opts, io); });
}

}  // namespace specsim::cli
