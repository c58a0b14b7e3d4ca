// The priors: the figures specsim uses where a scenario neither sets nor measures them, one row each
// in one registry (priors(), lib/src/model/priors.cpp): the value with the p10-p90 spread of its
// public evidence, its unit, where that evidence is written down (docs/references/) and what the
// value feeds. A row a prediction's band draws (prior_band.hpp) also says when it is open on a
// calibrated scenario (no file, patch, profile or measurement replaced it), how a drawn value is set
// on a scenario, and where a draw is cut; the band reads the rows in order, one dimension of its
// Latin hypercube each (two for a row with a second reading).
//
// The engines' speculative overheads are priors too, but each engine's own, in models/engines/*.yaml
// (EnginePrior in scenario.hpp); the band reads them through engine_terms() (prior_band.hpp).
#pragma once

#include <limits>
#include <optional>
#include <span>
#include <string_view>

namespace specsim {

struct Scenario;
struct Calibration;

// A prior's value with the p10-p90 spread of its evidence, in its row's unit.
struct PriorValue {
  double value;
  double p10;
  double p90;
};

enum class PriorUnit { kSeconds, kDimensionless };
// "s", "dimensionless"
[[nodiscard]] const char* to_string(PriorUnit unit);

// A measured value the calibration may hold beside a prior (a plain step read as host time or as GPU
// time, Calibration::plain_step_readings). Where it holds one, the band draws which reading stands on
// a dimension of its own: a share `weight` of the draws take `reading` in place of the prior's draw.
struct PriorReading {
  std::string_view label;  // as the band lists it after the prior's own label
  double weight;
  std::optional<double> (*reading)(const Calibration&);
};

struct Prior {
  std::string_view key;       // the scenario key whose default it is, e.g. "compute.bandwidth_efficiency"
  std::string_view label;     // how a band lists it among its terms, e.g. "bandwidth efficiency"
  PriorValue estimate;        // in `unit`
  PriorUnit unit;
  std::string_view source;    // the evidence in full: a page of docs/references and its anchor
  std::string_view evidence;  // the evidence in a sentence
  std::string_view feeds;     // what the value prices, and where the band draws it
  // For a row the band draws (null: it never does): whether the prior is open on a scenario and its
  // calibration, and how a drawn value is set on a scenario.
  bool (*open)(const Scenario&, const Calibration&) = nullptr;
  void (*set)(Scenario&, double) = nullptr;
  // Where the log-normal through p10 and p90 passes what the prior describes, a draw is cut there.
  double draw_min = -std::numeric_limits<double>::infinity();
  double draw_max = std::numeric_limits<double>::infinity();
  std::optional<PriorReading> second_reading = std::nullopt;

  [[nodiscard]] bool drawn() const { return open != nullptr; }
};

// Every prior. The rows the band draws take its hypercube's dimensions in this order: a new one
// goes after them, so that it moves no other row's dimension.
[[nodiscard]] std::span<const Prior> priors();

// A measurement with two readings that no prior describes: the calibration takes one for the point
// (a ModelRules switch as shipped), and the band draws the other in a share `weight` of its draws,
// on a dimension of the hypercube after the priors' (one per reading open on the scenario, so that a
// scenario without it keeps its draws). `set` switches a scenario to the other reading.
struct CalibrationReading {
  std::string_view key;       // a name for reports and tests, e.g. "end_to_end_residual"
  std::string_view label;     // how a band lists it among its terms
  std::string_view point;     // the reading the point takes
  std::string_view other;     // the reading `set` switches to
  std::string_view settles;   // the measurement that would tell the two apart
  std::string_view source;    // the page of docs/ that states both readings, with its anchor
  double weight;              // the share of the band's draws that take the other reading
  bool (*open)(const Scenario&, const Calibration&) = nullptr;
  void (*set)(Scenario&) = nullptr;
};

// Every reading, in the order the band takes their dimensions.
[[nodiscard]] std::span<const CalibrationReading> calibration_readings();

// The registry's values by name, for the code that prices with them (each refers to its row).
extern const PriorValue& kPriorBandwidthEfficiency;        // compute.bandwidth_efficiency
extern const PriorValue& kPriorKvVerifyRatio;              // compute.kv_verify_ratio
extern const PriorValue& kPriorMultiTokenStepS;            // compute.multi_token_step
extern const PriorValue& kPriorEagerLaunchPerKernelS;      // compute.eager_launch_per_kernel
extern const PriorValue& kPriorEagerOverlapExponent;       // compute.eager_overlap_exponent
extern const PriorValue& kPriorAllReduceRatio;             // comm.scale, over NCCL's model
extern const PriorValue& kPriorPiecewiseGpuPerAttentionS;  // compute.piecewise_gpu_per_attention
extern const PriorValue& kPriorAllToAllLatencyS;           // comm.all_to_all_latency
extern const PriorValue& kPriorNgramLookupPerTokenS;       // host.ngram_lookup_per_token
extern const PriorValue& kPriorExpertBandwidthEfficiency;  // compute.expert_bandwidth_efficiency
extern const PriorValue& kPriorRoutingSkew;                 // compute.routing_skew

}  // namespace specsim
