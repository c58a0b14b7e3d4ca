// What `specsim calibrate compute` prints once the profile is written (calibrate_compute.hpp).
#include <string>

#include "specsim/calibrate_compute.hpp"
#include "report/text.hpp"
#include "specsim/units.hpp"

namespace specsim {

namespace {

std::string percent(double f) { return text::percent(f, 1); }

using text::pad;

std::string error_table(const std::vector<ComputeErrorSummary>& list) {
  std::string t = "  " + pad("model", 26) + pad("mode", 7) + pad("rows", 6) + pad("median", 9) + "worst\n";
  for (const auto& e : list) {
    t += "  " + pad(e.model, 26) + pad(to_string(e.mode), 7) + pad(std::to_string(e.rows), 6) +
         pad(percent(e.median_abs_error), 9) + percent(e.worst_abs_error) + "\n";
  }
  return t;
}

std::string describe(const ComputeSettings& s) {
  auto eff = [](const std::optional<double>& v) { return v ? percent(*v) : std::string("(= eta_bw)"); };
  std::string t;
  t += "  bandwidth_efficiency         " + eff(s.bandwidth_efficiency) + "   weights stream at this share of datasheet BW\n";
  t += "  expert_bandwidth_efficiency  " + eff(s.expert_bandwidth_efficiency) + "   routed experts (grouped GEMM)\n";
  t += "  kv_efficiency_decode         " + eff(s.kv_efficiency_decode) + "   KV cache read, 1 query token\n";
  t += "  kv_efficiency_verify         " + eff(s.kv_efficiency_verify) + "   KV cache read, > 1 query token\n";
  t += "  flop_efficiency              " + percent(s.flop_efficiency) + "\n";
  t += "  kernel_floor                 " + units::format_duration(s.kernel_floor_s) + " per kernel (graph)\n";
  t += "  multi_token_step             " + units::format_duration(s.multi_token_step_s) + " per layer once q > 1\n";
  t += "  per_token_layer              " + units::format_duration(s.per_token_layer_s) + " per token per layer\n";
  t += "  graph_launch                 " + units::format_duration(s.graph_launch_s) + " per forward\n";
  t += "  eager_launch_per_kernel      " + units::format_duration(s.eager_launch_per_kernel_or_prior_s()) + " host, per kernel\n";
  t += "  eager_multi_token_step       " + units::format_duration(s.eager_multi_token_step_s) + " host, per layer once q > 1\n";
  if (s.eager_overlap_exponent) {
    t += "  eager_overlap_exponent       " + units::format_fixed(*s.eager_overlap_exponent, 2) +
         "   (gpu^p + host^p)^(1/p)\n";
  }
  return t;
}

}  // namespace

std::string render_compute_calibration(const ComputeCalibration& c, const std::string& output) {
  const ComputeProfileProvenance& prov = c.provenance;
  std::string report = "wrote " + output + ": " + std::to_string(prov.rows_used) + " rows of " + prov.source_path +
                       " (sha256 " + prov.source_sha256.substr(0, 12) + "...)\n";
  for (const auto& s : prov.skipped) report += "  skipped " + s + "\n";
  report += "fitted on all rows:\n" + describe(c.fit.settings);
  report += "fit residuals, tokens <= " + std::to_string(kMemoryBoundMaxTokens) + " (|predicted / measured - 1|):\n" +
            error_table(c.fit.residuals);
  report += "held out: " + c.fit.split + "\nheld-out error, tokens <= " + std::to_string(kMemoryBoundMaxTokens) +
            ", fitted on the other half:\n" + error_table(c.fit.holdout);
  return report;
}

}  // namespace specsim
