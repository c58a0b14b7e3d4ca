// The rules that join several keys of a scenario, held once and checked on values: the loader runs
// them on what it read (each broken rule at its key's file:line), and every what-if (a sweep point,
// a rank intervention, a concurrency level) on the scenario it patched (at the patch). Rules about
// one key alone (its type, unit, range) stay with the reader of that key.
#pragma once

#include <string>
#include <vector>

#include "specsim/error.hpp"
#include "specsim/origins.hpp"
#include "specsim/scenario.hpp"

namespace specsim {

// topology and gpu: a box linked by NVLink or Infinity Fabric needs a card that has it.
[[nodiscard]] std::vector<Error> box_problems(const Scenario& s, const Origins& o);
// model: the target is a full model, not a draft head.
[[nodiscard]] std::vector<Error> target_problems(const Scenario& s, const Origins& o);
// draft: the draft file fits the method (as the method's row says where its drafts come from) and
// the target (hidden size, vocabulary, tapped layers).
[[nodiscard]] std::vector<Error> draft_problems(const Scenario& s, const Origins& o);
// parallel: tp and pp against the box and both models' heads, draft_tp, ep and moe_a2a against the
// target's experts and the links, attention_dp. What the split implies without breaking a rule
// (check_tensor_parallel's notes) goes to `notes` when given.
[[nodiscard]] std::vector<Error> parallel_problems(const Scenario& s, const Origins& o,
                                                   std::vector<std::string>* notes = nullptr);
// speculation: the draft's shape against its method (a block drafter's block, a chain's tokens, a
// tree's), n-gram's chain, parallel drafting's method, engine and chain.
[[nodiscard]] std::vector<Error> speculation_problems(const Scenario& s, const Origins& o);
// acceptance: what the draft's shape can emit (a tau, a list of per-position rates).
[[nodiscard]] std::vector<Error> acceptance_fit_problems(const Scenario& s, const Origins& o);
// compute, comm and host keys that depend on each other or on the method.
[[nodiscard]] std::vector<Error> setting_problems(const Scenario& s, const Origins& o);
// The comm profiles the scenario holds against tp and ep (comm.profile, custom_profile,
// all_to_all_profile, all_to_all_latency).
[[nodiscard]] std::vector<Error> comm_profile_problems(const Scenario& s, const Origins& o);

// All of the above.
[[nodiscard]] std::vector<Error> scenario_problems(const Scenario& s, const Origins& o);

// The same on a what-if: a rule broken at a key a patch set (Scenario::patched_keys) is reported at
// that patch ("--set parallel.tp"), any other at the file's place (Scenario::origins).
[[nodiscard]] std::vector<Error> what_if_problems(const Scenario& s);

}  // namespace specsim
