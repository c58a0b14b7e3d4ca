#include "specsim/comm_model.hpp"

#include <algorithm>
#include <cmath>

namespace specsim {

CommModel::CommModel(CommProfile profile, double eager_overhead_per_op_s)
    : profile_(std::move(profile)), eager_overhead_s_(eager_overhead_per_op_s) {}

double CommModel::table_s(double bytes) const {
  const auto& pts = profile_->points;
  if (pts.size() == 1) return pts.front().time_s;
  if (bytes <= pts.front().message_bytes) return pts.front().time_s;  // latency floor
  if (bytes >= pts.back().message_bytes) {
    // alpha-beta beyond the table: the last segment's incremental bandwidth.
    const auto& a = pts[pts.size() - 2];
    const auto& b = pts.back();
    const double slope = std::max(0.0, (b.time_s - a.time_s) / (b.message_bytes - a.message_bytes));
    return b.time_s + slope * (bytes - b.message_bytes);
  }
  const auto hi = std::upper_bound(pts.begin(), pts.end(), bytes,
                                   [](double v, const CommProfile::Point& p) { return v < p.message_bytes; });
  const auto lo = hi - 1;
  const double f = std::log(bytes / lo->message_bytes) / std::log(hi->message_bytes / lo->message_bytes);
  return std::exp(std::log(lo->time_s) + f * std::log(hi->time_s / lo->time_s));
}

double CommModel::allreduce_s(double message_bytes, LaunchMode mode) const {
  if (!profile_) return 0.0;
  double t = table_s(message_bytes);
  if (mode == LaunchMode::kEager && profile_->mode == LaunchMode::kGraph) t += eager_overhead_s_;
  return t;
}

}  // namespace specsim
