// The readers of calibration/profiles/*.yaml: a comm profile (one collective's time by message
// size, measured by nccl-tests or written by hand) and a compute profile (a `compute:` block that
// `specsim calibrate compute` fitted).
#include <string>

#include "io/readers.hpp"
#include "model/scenario_bounds.hpp"
#include "specsim/compute_profile.hpp"
#include "specsim/hardware.hpp"
#include "specsim/nccl_prior.hpp"
#include "specsim/units.hpp"
#include "util/yaml_reader.hpp"

namespace specsim {

using detail::read_compute_keys;
using detail::read_mode;
using detail::read_nccl_version;
using detail::YamlReader;
using units::Quantity;

// An NCCL release under `key` ("2.29.7"); "" when absent or "unknown".
std::string detail::read_nccl_version(YamlReader& r, const char* key) {
  const std::string text = r.optional_string(key, "");
  if (text.empty() || text == "unknown") return "";
  if (!parse_nccl_version(text)) r.fail(key, "'" + text + "' is not an NCCL release (MAJOR.MINOR[.PATCH], e.g. 2.29.7)");
  return text;
}

namespace {

// The largest fall of time between consecutive sizes a measured comm table may show.
constexpr double kMaxMeasuredFall = 0.25;

CommProfile read_comm_profile(YamlReader& r) {
  r.expect_header("comm_profile");
  CommProfile p;
  p.name = r.string("name");
  p.description = r.optional_string("description", "");
  p.source = r.optional_string("source", "");
  p.collective = r.choice("collective", {"all_reduce", "all_to_all"});
  p.implementation = p.collective == "all_reduce" ? r.choice("implementation", {"nccl", "custom_oneshot", "fp8"})
                                                  : r.choice("implementation", {"nccl", "deepep", "pplx"});
  p.ranks = static_cast<int>(r.integer("ranks", 1, 4096));
  p.nodes = static_cast<int>(r.optional_integer("nodes", 1, 1, 4096));
  if (p.ranks % p.nodes != 0) {
    r.fail("nodes", "= " + std::to_string(p.nodes) + ": the ranks (" + std::to_string(p.ranks) + ") must split evenly over the nodes");
  }
  p.gpu = r.optional_string("gpu", "");
  p.mode = read_mode(r, "mode", LaunchMode::kGraph);
  p.nccl_version = read_nccl_version(r, "nccl_version");
  if (!p.nccl_version.empty() && p.implementation != "nccl") {
    r.fail("nccl_version", "a '" + p.implementation + "' table does not run NCCL: only an nccl table has a release");
  }
  // A profile written by `specsim calibrate` (it has provenance) keeps the measured rows, whose
  // small sizes scatter by a few percent (the shipped 2x 2080 Ti log: 12.25 us at 8 B, 11.77 us at
  // 16 B); the curve treats such drops as noise. A hand-written curve has no such excuse: its time
  // must not fall as the size grows (docs/calibration.md: monotone curves).
  const bool measured = r.has("provenance");
  for (YamlReader pt : r.sequence("points")) {
    CommProfile::Point point;
    point.message_bytes = pt.quantity("size", Quantity::kBytes);
    point.time_s = pt.quantity("time", Quantity::kDuration);
    if (point.time_s <= 0) pt.fail("time", "must be > 0");
    if (!p.points.empty() && point.message_bytes <= p.points.back().message_bytes) {
      pt.fail("size", "sizes must rise strictly from one point to the next");
    }
    // Measured rows scatter by a few percent (the shipped tables fall at most 9.7% between sizes);
    // a fall past kMaxMeasuredFall is a damaged or hand-edited row, not noise (32 MiB at 100 us
    // after 16 MiB at 1973 us).
    if (measured && !p.points.empty() && point.time_s < (1.0 - kMaxMeasuredFall) * p.points.back().time_s) {
      pt.fail("time", units::format_duration(point.time_s) + " at " + units::format_bytes(point.message_bytes) +
                          " is " + units::format_fixed(100.0 * (1.0 - point.time_s / p.points.back().time_s), 0) +
                          "% below " + units::format_duration(p.points.back().time_s) + " at " +
                          units::format_bytes(p.points.back().message_bytes) +
                          ": more than a measurement's scatter (25%); the table is damaged or was edited");
    }
    if (!measured && !p.points.empty() && point.time_s < p.points.back().time_s) {
      pt.fail("time", units::format_duration(point.time_s) + " at " + units::format_bytes(point.message_bytes) +
                          " is less than " + units::format_duration(p.points.back().time_s) + " at " +
                          units::format_bytes(p.points.back().message_bytes) +
                          ": a hand-written profile's time must not fall as the size grows");
    }
    pt.finish();
    p.points.push_back(point);
  }
  if (p.points.empty()) r.fail("points", "needs at least one point");
  // Written by `specsim calibrate` (source files and hashes, fit residuals); a record for people,
  // not an input to the model.
  r.ignore("provenance");
  r.finish();
  return p;
}

}  // namespace

// The keys of a scenario's `compute:` block and of a compute profile's; absent keys keep `s`'s values.
void detail::read_compute_keys(YamlReader& c, ComputeSettings& s) {
  // The ranges are kScenarioBounds' rows (scenario_bounds.hpp); a profile's `compute:` has the same keys.
  const auto in = [](const char* key) { return *detail::find_scenario_bound(std::string("compute.") + key); };
  const auto number = [&](const char* key) { return c.number(key, in(key).min, in(key).max); };
  const auto number_or_calibrate = [&](const char* key) { return c.number_or_calibrate(key, in(key).min, in(key).max); };
  if (c.has("bandwidth_efficiency")) s.bandwidth_efficiency = number_or_calibrate("bandwidth_efficiency");
  c.ignore("bandwidth_efficiency");
  if (c.has("flop_efficiency")) s.flop_efficiency = number("flop_efficiency");
  c.ignore("flop_efficiency");
  if (auto v = c.optional_quantity("kernel_floor", Quantity::kDuration)) s.kernel_floor_s = *v;
  if (auto v = c.optional_quantity("eager_launch_per_kernel", Quantity::kDuration)) s.eager_launch_per_kernel_s = *v;
  if (auto v = c.optional_quantity("graph_launch", Quantity::kDuration)) s.graph_launch_s = *v;
  if (auto v = c.optional_quantity("eager_multi_token_step", Quantity::kDuration)) s.eager_multi_token_step_s = *v;
  if (c.has("eager_overlap_exponent")) s.eager_overlap_exponent = number("eager_overlap_exponent");
  c.ignore("eager_overlap_exponent");
  if (c.has("routing_skew")) s.routing_skew = number_or_calibrate("routing_skew");
  c.ignore("routing_skew");
  // Fitted terms (compute_model.hpp).
  for (auto [key, field] : {std::pair{"expert_bandwidth_efficiency", &s.expert_bandwidth_efficiency},
                            std::pair{"kv_efficiency_decode", &s.kv_efficiency_decode},
                            std::pair{"kv_efficiency_verify", &s.kv_efficiency_verify}}) {
    if (c.has(key)) *field = number(key);
    c.ignore(key);
  }
  if (c.has("kv_verify_ratio")) s.kv_verify_ratio = number("kv_verify_ratio");
  c.ignore("kv_verify_ratio");
  if (auto v = c.optional_quantity("multi_token_step", Quantity::kDuration)) s.multi_token_step_s = *v;
  if (auto v = c.optional_quantity("per_token_layer", Quantity::kDuration)) s.per_token_layer_s = *v;
  if (c.has("kernels_per_dense_layer")) s.kernels_per_dense_layer = static_cast<int>(c.integer("kernels_per_dense_layer", 0, 100000));
  c.ignore("kernels_per_dense_layer");
  if (c.has("kernels_per_moe_layer")) s.kernels_per_moe_layer = static_cast<int>(c.integer("kernels_per_moe_layer", 0, 100000));
  c.ignore("kernels_per_moe_layer");
  if (c.has("piecewise_attention_kernels")) {
    s.piecewise_attention_kernels = static_cast<int>(c.integer("piecewise_attention_kernels", 1, 100));
  }
  c.ignore("piecewise_attention_kernels");
  if (auto v = c.optional_quantity("piecewise_gpu_per_attention", Quantity::kDuration)) s.piecewise_gpu_per_attention_s = *v;
}

namespace {

ComputeProfile read_compute_profile(YamlReader& r) {
  r.expect_header("compute_profile");
  ComputeProfile p;
  p.name = r.string("name");
  p.description = r.optional_string("description", "");
  p.source = r.optional_string("source", "");
  p.gpu = r.string("gpu");
  YamlReader c = r.child("compute");
  read_compute_keys(c, p.settings);
  if (!p.settings.bandwidth_efficiency) c.fail("bandwidth_efficiency", "a profile holds values, not 'calibrate'");
  c.finish();
  // Written by `specsim calibrate compute` (source file and hash, residuals, held-out errors); a
  // record for people, not an input to the model.
  r.ignore("provenance");
  r.finish();
  return p;
}

}  // namespace

CommProfile detail::load_comm_profile_file(const std::string& path) {
  YamlReader r = YamlReader::load_file(path);
  return read_comm_profile(r);
}

ComputeProfile load_compute_profile(const std::string& path) {
  YamlReader r = YamlReader::load_file(path);
  return read_compute_profile(r);
}

}  // namespace specsim
