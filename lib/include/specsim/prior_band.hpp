// The spread of a prediction from the spread of the priors it used: every figure that is a prior
// (not measured, calibrated or set) carries its public evidence's p10-p90, and the prediction's
// p10-p90 band follows by Monte Carlo over them.
//
// The terms with a spread: the rows of the priors' registry that a scenario leaves open (priors.hpp:
// the bandwidth efficiency, the verify's KV efficiency ratio, the multi-token step, the eager
// launch terms and the piecewise GPU wait where a forward is launched from the host, the all-reduce
// prior's ratio where no table was measured, the all-to-all latency, an MoE target's routing skew),
// the calibration's readings of a measurement with two (priors.hpp's calibration_readings(): an
// end-to-end plain rate's residual per request or per step, each in its share of the draws; and
// the plain step's host or GPU reading beside the bandwidth efficiency), and the engine's speculative
// overheads (engine_terms() below, read from models/engines): the cycle overhead c and the
// per-draft-forward overhead d, the per-request term q at a batch over one, and a synchronous step's
// host time h where a synchronous cycle follows an async plain step (adding max(0, h - h_step),
// docs/model.md#async-scheduling). A term the scenario sets, a profile fits or a measurement
// calibrates has none. Each is drawn from the log-normal through its p10 and p90:
//
//   ln X ~ N(mu, sigma),  mu = (ln p10 + ln p90) / 2,  sigma = (ln p90 - ln p10) / (2 z_0.9)
//
// (z_0.9 = 1.2816, the standard normal's 90th percentile; a p10 of 0 is floored at 1 ns). The
// cycle is linear in the engine terms, T = T_0 + c + n d with n draft forwards, so each draw of
// them alone costs a division: tok/s = B tau / (T_0 + c + n d). A draw of a compute prior changes
// T_0 through a recalibrated model (the host time is what the measured plain step leaves), so
// those are drawn on the kComputeBandStrata points of a Latin hypercube (each prior's range cut
// into that many equally likely strata, one point in each), each point crossed with an equal share
// of the engine terms' draws.
//
// On top of the priors, specsim's own error on deployments it was not fitted to (models/model-error.yaml,
// scenario.hpp's ModelError): the priors describe the inputs the model leaves open, not what the model
// leaves out, and the validation corpus measures that: with the priors alone far fewer held-out
// measurements fall inside their p10-p90 than the 80% the band claims (docs/validation.md#model-error).
// Determinism as in monte_carlo.hpp: std::mt19937_64, uniforms from its 53 high bits, normals by
// Boost.Math's inverse CDF, percentiles by nearest rank.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "specsim/cycle.hpp"
#include "specsim/priors.hpp"

namespace specsim {

struct PredictionBand {
  double p10_tokens_per_s = 0.0;
  double p50_tokens_per_s = 0.0;
  double p90_tokens_per_s = 0.0;
  int samples = 0;
  std::vector<std::string> terms;  // the priors drawn ("engine cycle overhead", ...); empty = no spread
  // The priors' spread alone (equal to p10/p90 above until a model error widens the band).
  double priors_p10_tokens_per_s = 0.0;
  double priors_p90_tokens_per_s = 0.0;
  std::optional<ModelError> model_error;  // drawn on top of the priors (with_model_error)
  // Where the prediction is at another batch than its plain run's (prediction_band): the batch
  // measured, and the ln sigma its transfer adds to each tail of model_error in quadrature (already
  // inside model_error's sigmas). 0: no transfer.
  int transfer_from_batch = 0;
  double transfer_sigma = 0.0;
  std::vector<double> draws;              // the sampled tokens/s, sorted; empty = no spread
  // A single acceptance rate's second reading (averaged_rate_reading, acceptance.hpp): the tau the
  // band draws in kAveragedRateReadingWeight of its samples; empty where the rate has one reading.
  std::optional<double> averaged_rate_tokens_per_cycle;
};

inline constexpr int kDefaultBandSamples = 4000;
// Points of the compute priors' Latin hypercube when one is among the terms: each recalibrates a
// model (about 10 us in Release) and is crossed with samples / kComputeBandStrata engine draws.
inline constexpr int kComputeBandStrata = 64;

// What an engine term's draw is charged against in one cycle.
struct CycleCounts {
  double draft_forwards = 0.0;
  double other_requests = 0.0;  // requests beyond the first
  double step_host_s = 0.0;     // the plain step's host time the (drawn) model leaves
};

// One of an engine's speculative overheads (EnginePrior, models/engines/NAME.yaml) as the band
// draws it. The rows of engine_terms() are in the order a draw takes them from the generator and
// adds them to the cycle, so that order is part of every band.
struct EngineTerm {
  std::string_view label;    // how the band lists it
  std::string_view key;      // its key in models/engines/NAME.yaml
  std::string_view charged;  // how a cycle pays it
  int listed;                // its place among the engine terms in PredictionBand::terms
  // Drawn where the engine's file gives it and the scenario leaves it that prior.
  bool (*open)(const Scenario&, const Calibration&);
  const EnginePrior::Term& (*prior)(const EnginePrior&);  // asked only where open
  // Seconds per cycle the model charges for it now, and what a drawn value charges.
  double (*held_s)(const Calibration&, const CycleCounts&);
  double (*charge_s)(double drawn_s, const CycleCounts&);
  // Not drawn, the held charge is taken out of the cycle and added back beside the draws (true), or
  // left inside the cycle's own part (false). The cycle is the same either way; the band's draws
  // are compared bit for bit, and this is the order of operations they were made with.
  bool taken_out_when_held = true;
};
[[nodiscard]] std::span<const EngineTerm> engine_terms();

// The band of `p` (a prediction of `model`'s scenario) over the priors' spreads.
[[nodiscard]] PredictionBand prior_band(const CycleModel& model, const Prediction& p,
                                        int samples = kDefaultBandSamples, std::uint64_t seed = 1);
// The same over other rows than the registry's (priors()): a test's, with one prior's spread
// collapsed. The rows the band draws take the hypercube's dimensions in their order.
[[nodiscard]] PredictionBand prior_band(const CycleModel& model, const Prediction& p, std::span<const Prior> rows,
                                        int samples = kDefaultBandSamples, std::uint64_t seed = 1);

// The sigma of the log-normal through a p10 and a p90: (ln p90 - ln p10) / (2 z_0.9).
[[nodiscard]] double ln_sigma_through(double p10, double p90);

// `priors` widened by specsim's own held-out error: each draw (or, with no prior spread,
// kDefaultBandSamples copies of `point_tokens_per_s`) times exp(s z), z ~ N(0, 1) from its own
// seeded stream, s = sigma_below where z < 0 and sigma_above where z > 0 (a split normal: the
// residuals' two tails). The error's median is 0: the band widens, its middle stays the priors'.
// The priors' p10/p90 are kept beside the widened ones. Both sigmas 0 return `priors` with the
// error noted.
[[nodiscard]] PredictionBand with_model_error(PredictionBand priors, double point_tokens_per_s, const ModelError& error,
                                              std::uint64_t seed = 2);

// `error` for a prediction at `batch` from a plain run measured at `measured_batch`: each tail's
// sigma and the transfer's, error.transfer_sigma_per_ln_batch x |ln(batch / measured_batch)|, added
// in quadrature (docs/validation.md#batch-transfer). The same batch, or no transfer error known:
// `error` as it is.
[[nodiscard]] ModelError with_batch_transfer(ModelError error, int batch, int measured_batch);

// What predict shows: prior_band, widened by the scenario's model error where it carries one, and
// at another batch than the measured one (rules.batch_transfer_error) by the transfer's error too.
[[nodiscard]] PredictionBand prediction_band(const CycleModel& model, const Prediction& p);

// Whether speculation pays against plain decoding, the decision a user acts on: a call only where
// the whole p10-p90 band of the speculative rate lies on one side of the plain rate; a band that
// spans it is too close to call (docs/model.md#the-call). A band without spread (p90 <= p10, none
// drawn) calls on the point `spec_tokens_per_s`.
enum class SpeculationCall { kPays, kLoses, kTooClose };
[[nodiscard]] SpeculationCall speculation_call(double p10_tokens_per_s, double p90_tokens_per_s,
                                               double spec_tokens_per_s, double plain_tokens_per_s);
[[nodiscard]] SpeculationCall speculation_call(const PredictionBand& band, double spec_tokens_per_s,
                                               double plain_tokens_per_s);
[[nodiscard]] std::string_view to_string(SpeculationCall call);  // "pays", "loses", "too close to call"

}  // namespace specsim
