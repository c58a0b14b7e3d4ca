// Time of one tensor-parallel all-reduce by message size and launch mode.
//
// Measured tables (calibration/profiles) are interpolated piecewise-linearly in log-log space
// between points, so NCCL's regime steps between measured sizes stay where they were measured;
// beyond the last point the cost grows with the last segment's bandwidth (alpha-beta). Eager mode
// adds a per-op overhead on top of a graph-mode table: the host launch of the surrounding kernels
// plus the rank skew a collective absorbs while it waits for the slowest rank.
#pragma once

#include <optional>

#include "specsim/hardware.hpp"

namespace specsim {

class CommModel {
 public:
  CommModel() = default;  // a single rank: every all-reduce is free
  CommModel(CommProfile profile, double eager_overhead_per_op_s);

  [[nodiscard]] double allreduce_s(double message_bytes, LaunchMode mode) const;
  [[nodiscard]] double eager_overhead_per_op_s() const { return eager_overhead_s_; }
  [[nodiscard]] const std::optional<CommProfile>& profile() const { return profile_; }

 private:
  [[nodiscard]] double table_s(double message_bytes) const;

  std::optional<CommProfile> profile_;
  double eager_overhead_s_ = 0.0;
};

}  // namespace specsim
