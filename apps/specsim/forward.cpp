// specsim forward: the predicted compute time of one forward on one TP rank (batch 1, no
// communication) per token count, from the model's shape, the GPU's datasheet and either a compute
// profile (calibration/profiles, kind compute_profile) or one measured decode step (--decode-step:
// eta_bw solved so the 1-token forward takes that time).
#include <CLI/CLI.hpp>

#include <optional>
#include <ostream>

#include "choices.hpp"
#include "cli.hpp"
#include "format_option.hpp"
#include "specsim/compute_fit.hpp"
#include "specsim/error.hpp"
#include "specsim/load.hpp"
#include "specsim/report.hpp"
#include "specsim/units.hpp"

namespace specsim::cli {

namespace {

struct ForwardOptions {
  std::string model;
  std::string gpu;
  int tp = 1;
  std::vector<int> tokens;
  long long context = 0;
  LaunchMode mode = LaunchMode::kGraph;
  std::string profile;
  std::string decode_step;  // a duration with its unit, e.g. "6.1ms"
  std::string second_step;  // TOKENS:DURATION, a second measured width, e.g. "8:7.2ms"
  Format format = Format::kText;
};

double parse_step(const std::string& text, const std::string& option) {
  double step_s = 0;
  try {
    step_s = units::parse_duration_s(text);
  } catch (const Error& e) {
    throw Error(option + " '" + text + "': " + e.message());
  }
  if (!(step_s > 0)) throw Error(option + " '" + text + "': must be > 0");
  return step_s;
}

// "8:7.2ms" -> {8 tokens, 7.2e-3 s}.
std::pair<double, double> parse_width(const std::string& text) {
  const auto colon = text.find(':');
  int tokens = 0;
  try {
    if (colon == std::string::npos) throw std::invalid_argument("no ':'");
    std::size_t used = 0;
    tokens = std::stoi(text.substr(0, colon), &used);
    if (used != colon) throw std::invalid_argument("not a whole number");
  } catch (const std::exception&) {
    throw Error("--step '" + text + "': expected TOKENS:TIME, e.g. 8:7.2ms");
  }
  if (tokens < 2) throw Error("--step '" + text + "': the second width needs 2 or more tokens (1 is --decode-step)");
  return {double(tokens), parse_step(text.substr(colon + 1), "--step")};
}

void run_forward(const ForwardOptions& o, Io& io) {
  const DataDir data;
  const TransformerSpec model = load_model(data.resolve(DataKind::kModel, o.model));
  const GpuSpec gpu = load_gpu(data.resolve(DataKind::kGpu, o.gpu));
  std::string tp_note;
  try {
    tp_note = check_tensor_parallel(model, o.tp);
  } catch (const Error& e) {
    throw Error("--tp " + std::to_string(o.tp) + ": " + e.message());
  }
  ComputeSettings settings;
  std::string basis = "defaults (uncalibrated prior)";
  if (!o.profile.empty()) {
    const ComputeProfile p = load_compute_profile(data.resolve(DataKind::kCommProfile, o.profile));
    settings = p.settings;
    basis = "profile " + p.name + " (measured on " + p.gpu + ")";
  }
  if (!o.second_step.empty() && o.decode_step.empty()) {
    throw Error("--step '" + o.second_step + "': needs --decode-step (the one-token step it is read against)");
  }
  if (!o.decode_step.empty()) {
    const double step_s = parse_step(o.decode_step, "--decode-step");
    std::optional<std::pair<double, double>> second;
    if (!o.second_step.empty()) second = parse_width(o.second_step);
    const ForwardFit fit =
        fit_forward_steps({&model, &gpu, o.tp, double(o.context), o.mode}, settings, step_s, second);
    settings = fit.settings;
    basis += ", " + fit.solved + " (--decode-step " + units::format_duration(step_s) +
             (second ? ", --step " + o.second_step : "") + ")";
    for (const auto& n : fit.notes) basis += "; " + n;
  }
  ForwardTable table{model.name, gpu.name, o.tp, o.context, o.mode, basis,
                     settings.bandwidth_efficiency.value_or(0.84), tp_note, {}};
  for (int q : o.tokens) {
    table.points.push_back({q, predict_forward_s(model, gpu, o.tp, double(o.context), q, o.mode, settings)});
  }
  io.out << render_forward(table, o.format);
}

}  // namespace

void setup_forward(CLI::App& app, Io& io) {
  auto opts = std::make_shared<ForwardOptions>();
  CLI::App* sub = app.add_subcommand("forward", "Predicted compute time of one forward per token count (one TP rank)");
  sub->add_option("--model", opts->model, "Model name (models/llm) or file")->required();
  sub->add_option("--gpu", opts->gpu, "GPU name (models/gpu) or file")->required();
  sub->add_option("--tp", opts->tp, "Tensor-parallel ranks")->check(CLI::Range(1, 4096));
  sub->add_option("--tokens", opts->tokens, "Token counts per forward, e.g. 1,2,4,8")
      ->required()
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 20));
  sub->add_option("--ctx", opts->context, "Tokens already in the KV cache")->required()->check(CLI::Range(0LL, 100'000'000LL));
  sub->add_option("--mode", opts->mode, "Launch mode")
      ->transform(choices<LaunchMode>({{"graph", LaunchMode::kGraph}, {"eager", LaunchMode::kEager}}))
      ->type_name("MODE")
      ->default_str("graph");
  sub->add_option("--profile", opts->profile, "Compute profile (calibration/profiles, kind compute_profile)");
  sub->add_option("--decode-step", opts->decode_step,
                  "Measured compute time of one plain decode step (e.g. 6.1ms): solves the bandwidth efficiency");
  sub->add_option("--step", opts->second_step,
                  "A second measured width, TOKENS:TIME (e.g. 8:7.2ms), with --decode-step: solves the "
                  "multi-token step (dense) or the experts' streaming efficiency (MoE)");
  add_format_option(*sub, opts->format, {.json_help = "Print {\"points\":[{\"tokens\":..,\"time_s\":..}]} (--format json)"});
  sub->callback([opts, &io]() { run_forward(*opts, io); });
}

}  // namespace specsim::cli
