// All-reduce time at a rank count nobody measured, from curves of the same box measured at other
// rank counts (a TP4 what-if on a box with only a TP8 nccl-tests log; TP8 from TP2 and TP4 runs).
//
//   two or more measured counts: per message size, a power law in the rank count through the two
//     measured counts nearest the target (log-log in ranks, as MeasuredCurve is log-log in size):
//         t(n, r) = t(n, a) * (t(n, b) / t(n, a)) ^ (ln(r / a) / ln(b / a))
//     It interpolates between two counts and extrapolates beyond them. Latency-bound sizes grow
//     about like the ring's 2(r-1) hops (exponent ~1), bandwidth-bound ones like 2(r-1)/r (~0.6 at
//     constant bus bandwidth); the exponent is read off the two measured curves per size.
//   one measured count r0: NCCL's own model as a ratio, t(n, r0) x prior(n, r) / prior(n, r0), the
//     prior (nccl_prior.hpp) set up for the box's link and channels.
//
// Either way the result is an estimate at a rank count that was not measured; callers say so.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "specsim/comm_curve.hpp"
#include "specsim/nccl_prior.hpp"

namespace specsim {

enum class RankScaling { kPowerLaw, kPriorRatio };

[[nodiscard]] const char* to_string(RankScaling s);

struct RankedCurve {
  int ranks = 0;
  std::shared_ptr<const MeasuredCurve> curve;
};

class RankScaledCurve {
 public:
  // `prior` describes the box for NCCL's model (its `ranks` is ignored). `method` defaults to the
  // power law when two or more counts are measured, else the prior ratio; the power law needs two.
  // Throws specsim::Error for: no curves, a null curve, a rank count < 2 or repeated, target < 2,
  // the power law with one count.
  RankScaledCurve(std::vector<RankedCurve> measured, int target_ranks, const NcclPriorConfig& prior,
                  std::optional<RankScaling> method = std::nullopt);

  [[nodiscard]] double time_s(double bytes) const;
  [[nodiscard]] RankScaling method() const { return method_; }
  // The measured counts the estimate uses (one for the prior ratio, two for the power law; the
  // target alone when it was measured).
  [[nodiscard]] const std::vector<int>& from_ranks() const { return from_; }
  // True when the target rank count is one of the measured ones: time_s is that curve.
  [[nodiscard]] bool measured() const { return exact_ != nullptr; }

 private:
  int target_ = 0;
  RankScaling method_ = RankScaling::kPowerLaw;
  std::vector<int> from_;
  std::shared_ptr<const MeasuredCurve> exact_;
  RankedCurve a_, b_;  // a_ alone for the prior ratio
  NcclPriorConfig prior_from_, prior_to_;
};

}  // namespace specsim
