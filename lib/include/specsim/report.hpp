// One Prediction, rendered for people (a table read at a glance) and for programs (JSON). The
// JSON key names are a contract scripts rely on: baseline.tokens_per_s, baseline.step_s,
// speculative.{tokens_per_s, cycle_s, tokens_per_cycle, draft_s, verify_s, verify_compute_s,
// verify_comm_s, verify_allreduce_count}, speedup. Seconds and counts are plain numbers.
#pragma once

#include <string>

#include "specsim/cycle.hpp"

namespace specsim {

[[nodiscard]] std::string render_text(const CycleModel& model, const Prediction& p);
[[nodiscard]] std::string render_json(const CycleModel& model, const Prediction& p);

}  // namespace specsim
