// One Prediction, rendered for people (a table read at a glance) and for programs (JSON). The
// JSON key names are a contract scripts rely on: baseline.tokens_per_s, baseline.step_s,
// speculative.{tokens_per_s, cycle_s, tokens_per_cycle, draft_s, verify_s, verify_compute_s,
// verify_comm_s, verify_allreduce_count}, speedup. Seconds and counts are plain numbers.
#pragma once

#include <string>

#include "specsim/cycle.hpp"
#include "specsim/memory_fit.hpp"

namespace specsim {

// Why the scenario's measured speculative rate is no yardstick for its prediction; "" when it is.
// It is one only for the deployment that was measured: the scenario as its file states it (no
// `--set` patch: any patch makes a what-if), with measurements taken on its own target model and
// box (no measurements.model, measurements.topology or measurements.gpu naming another).
// docs/model.md, "Measurements of another deployment".
[[nodiscard]] std::string held_out_mismatch(const Scenario& s);

[[nodiscard]] std::string render_text(const CycleModel& model, const Prediction& p);
[[nodiscard]] std::string render_json(const CycleModel& model, const Prediction& p);

// The "memory per GPU" section of predict's text (a heading line, then a line per part), and the
// object its JSON holds under "memory": gpu, batch, capacity_bytes, used_bytes, fits,
// engine_fraction, engine_rule, parts[{name, bytes, basis}].
[[nodiscard]] std::string render_memory_text(const MemoryFit& fit);
[[nodiscard]] std::string render_memory_json(const MemoryFit& fit);

}  // namespace specsim
