#include "specsim/comm_scaling.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "specsim/error.hpp"

namespace specsim {

const char* to_string(RankScaling s) {
  return s == RankScaling::kPowerLaw ? "power law in ranks" : "NCCL model ratio";
}

RankScaledCurve::RankScaledCurve(std::vector<RankedCurve> measured, int target_ranks, const NcclPriorConfig& prior,
                                 std::optional<RankScaling> method)
    : target_(target_ranks) {
  if (measured.empty()) throw Error(SourceLocation{}, "ranks", "rank scaling needs at least one measured curve");
  if (target_ranks < 2) {
    throw Error(SourceLocation{}, "ranks", std::to_string(target_ranks) + ": the target rank count must be >= 2");
  }
  std::sort(measured.begin(), measured.end(), [](const RankedCurve& x, const RankedCurve& y) { return x.ranks < y.ranks; });
  method_ = method.value_or(measured.size() >= 2 ? RankScaling::kPowerLaw : RankScaling::kPriorRatio);
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const RankedCurve& c = measured[i];
    if (!c.curve) throw Error(SourceLocation{}, "ranks", "curve at " + std::to_string(c.ranks) + " ranks is missing");
    if (c.ranks < 2) throw Error(SourceLocation{}, "ranks", std::to_string(c.ranks) + ": a measured rank count must be >= 2");
    if (i > 0 && measured[i - 1].ranks == c.ranks) {
      throw Error(SourceLocation{}, "ranks", std::to_string(c.ranks) + " ranks measured twice: one curve per rank count");
    }
    if (c.ranks == target_ranks) {
      exact_ = c.curve;
      from_ = {c.ranks};
      return;
    }
  }
  // Nearest first, by distance in ln(ranks); a tie goes to the larger count (the one with more hops).
  auto distance = [&](const RankedCurve& c) { return std::abs(std::log(double(c.ranks) / target_ranks)); };
  std::vector<RankedCurve> by_distance = measured;
  std::stable_sort(by_distance.begin(), by_distance.end(), [&](const RankedCurve& x, const RankedCurve& y) {
    const double dx = distance(x), dy = distance(y);
    return dx != dy ? dx < dy : x.ranks > y.ranks;
  });
  if (method_ == RankScaling::kPriorRatio) {
    a_ = by_distance.front();
    from_ = {a_.ranks};
    prior_from_ = prior;
    prior_from_.ranks = a_.ranks;
    prior_to_ = prior;
    prior_to_.ranks = target_ranks;
    return;
  }
  if (measured.size() < 2) {
    throw Error(SourceLocation{}, "ranks",
                "the power law in ranks needs curves at two rank counts; only " + std::to_string(measured.front().ranks) +
                    " was measured (the NCCL model ratio works from one)");
  }
  // Between two measured counts: the pair around the target; outside them: the two nearest.
  const auto above = std::find_if(measured.begin(), measured.end(), [&](const RankedCurve& c) { return c.ranks > target_ranks; });
  if (above != measured.begin() && above != measured.end()) {
    a_ = *(above - 1);
    b_ = *above;
  } else {
    a_ = by_distance[0];
    b_ = by_distance[1];
    if (a_.ranks > b_.ranks) std::swap(a_, b_);
  }
  from_ = {a_.ranks, b_.ranks};
}

double RankScaledCurve::time_s(double bytes) const {
  if (exact_) return exact_->time_s(bytes);
  if (method_ == RankScaling::kPriorRatio) {
    return a_.curve->time_s(bytes) * nccl_prior_ratio(prior_from_, prior_to_, bytes);
  }
  const double ta = a_.curve->time_s(bytes), tb = b_.curve->time_s(bytes);
  const double exponent = std::log(double(target_) / a_.ranks) / std::log(double(b_.ranks) / a_.ranks);
  return ta * std::pow(tb / ta, exponent);
}

}  // namespace specsim
