#include "specsim/validate_corpus.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

#include "specsim/cycle.hpp"
#include "specsim/error.hpp"
#include "specsim/monte_carlo.hpp"
#include "specsim/prior_band.hpp"
#include "specsim/units.hpp"

namespace specsim {

namespace fs = std::filesystem;

const char* to_string(InputOrigin o) {
  switch (o) {
    case InputOrigin::kMeasured: return "measured";
    case InputOrigin::kCalibrated: return "calibrated";
    case InputOrigin::kSet: return "set";
    case InputOrigin::kPrior: return "prior";
  }
  return "?";
}

namespace {

// CalibratedValue::origin starts with "calibrated", "profile" (fitted to measured steps), "prior" or
// "set" (the file or a patch states it).
InputOrigin origin_of(const std::string& origin) {
  if (origin.rfind("calibrated", 0) == 0 || origin.rfind("profile", 0) == 0) return InputOrigin::kCalibrated;
  if (origin.rfind("prior", 0) == 0) return InputOrigin::kPrior;
  return InputOrigin::kSet;
}

std::string acceptance_detail(const Acceptance& a) {
  auto list = [](const std::vector<double>& v) {
    std::string out;
    for (double x : v) out += (out.empty() ? "" : ",") + units::format_fixed(x, 3);
    return out;
  };
  if (const auto* c = std::get_if<ConstantChain>(&a.kind)) {
    return "accept " + units::format_fixed(c->accept, 3) +
           (c->depth_profile.empty() ? "" : ", depth profile " + list(c->depth_profile));
  }
  if (const auto* d = std::get_if<DepthDecayChain>(&a.kind)) {
    return "accept " + units::format_fixed(d->accept, 3) + ", depth decay " + units::format_fixed(d->depth_decay, 3);
  }
  if (const auto* b = std::get_if<ConditionalChain>(&a.kind)) return "conditional rates " + list(b->rates);
  if (const auto* u = std::get_if<UnconditionalChain>(&a.kind)) return "unconditional rates " + list(u->rates);
  if (const auto* m = std::get_if<MeasuredTau>(&a.kind)) return "tau " + units::format_fixed(m->tokens_per_cycle, 3);
  return "";
}

// Fails naming the file and the key a validation row must carry.
[[noreturn]] void missing(const std::string& file, const std::string& key, const std::string& why) {
  throw Error(SourceLocation{file, 0, 0}, key, why);
}

Scenario load_row(const std::string& file, const DataDir& data, const ModelRules& rules = {}) {
  Scenario s = load_scenario(file, {}, data);
  // A setting the speculative run changed from the file (validation.applied): calibrated on the file
  // as written (the loader keeps it as the scenario as measured), predicted with the setting.
  if (s.validation && !s.validation->applied.empty()) s = load_scenario(file, s.validation->applied, data);
  s.rules = rules;
  if (!rules.engine_prior_scoped_to_method && !s.engine_prior_skipped.empty()) {
    // The engine's prior for another method, as if its file named none (the rule's ablation).
    s.engine_prior = load_engine_prior(data.resolve(DataKind::kEngine, s.engine.name));
    if (!s.explicit_keys.count("host.spec_extra_per_cycle")) s.host.spec_extra_per_cycle_s = s.engine_prior->cycle_overhead.value_s;
    if (!s.explicit_keys.count("host.draft_step_overhead")) s.host.draft_step_overhead_s = s.engine_prior->draft_step_overhead.value_s;
    if (!s.explicit_keys.count("host.spec_per_request") && s.engine_prior->spec_per_request) {
      s.host.spec_per_request_s = s.engine_prior->spec_per_request->value_s;
    }
    s.engine_prior_skipped.clear();
  }
  if (!s.validation) {
    missing(file, "validation", "a validation row needs a `validation:` source header (source, url, published, "
                                "engine_version, measured, acceptance_published, assumptions; docs/validation.md)");
  }
  if (!s.measurements.baseline_tokens_per_s) {
    missing(file, "measurements.baseline.tokens_per_s", "a validation row needs the measured plain-decoding rate");
  }
  if (!s.measurements.speculative_tokens_per_s) {
    missing(file, "measurements.speculative.tokens_per_s",
            "a validation row needs the measured speculative rate (held out: compared with, never an input)");
  }
  return s;
}

// Each input of a row's prediction with where it came from (the text table's last column).
std::vector<RowInput> inputs_of(const ValidationRow& row, const Scenario& sc, const Calibration& cal) {
  const auto value = [](const char* name, const char* code, const CalibratedValue& v, const std::string& shown) {
    return RowInput{name, code, origin_of(v.origin), shown + " (" + v.origin + ")"};
  };
  const auto duration = [&](const char* name, const char* code, const CalibratedValue& v) {
    return value(name, code, v, units::format_duration(v.value));
  };
  std::vector<RowInput> in;
  in.push_back({"plain tokens/s", "plain", InputOrigin::kMeasured,
                units::format_fixed(row.measured_plain_tokens_per_s, 1) + " tok/s"});
  in.push_back({"acceptance", "acc", InputOrigin::kMeasured, acceptance_detail(sc.acceptance)});
  if (sc.parallel.tp > 1) {
    in.push_back({"all-reduce", "ar", cal.comm_calibrated ? InputOrigin::kMeasured : InputOrigin::kPrior, cal.comm_source});
  }
  in.push_back(value("bandwidth efficiency", "bw", cal.bandwidth_efficiency,
                     units::format_fixed(cal.bandwidth_efficiency.value, 3)));
  if (row.moe) in.push_back(value("routing skew", "skew", cal.routing_skew, units::format_fixed(cal.routing_skew.value, 3)));
  if (row.moe && cal.expert_bandwidth_efficiency.origin != kExpertsFollowDense) {
    in.push_back(value("expert bandwidth efficiency", "exp", cal.expert_bandwidth_efficiency,
                       units::format_fixed(cal.expert_bandwidth_efficiency.value, 3)));
  }
  const bool eager = sc.engine.decode_mode == LaunchMode::kEager || sc.engine.verify_mode == LaunchMode::kEager ||
                     sc.engine.draft_mode == LaunchMode::kEager;
  if (eager && sc.parallel.tp > 1) in.push_back(duration("eager all-reduce overhead", "eager", cal.eager_overhead_per_op_s));
  if (launches_eagerly(sc)) in.push_back(duration("eager launch per kernel", "launch", cal.eager_launch_per_kernel_s));
  in.push_back(duration("host per plain step", "host", cal.host_decode_s));
  in.push_back(duration("spec overhead per cycle", "extra", cal.spec_extra_per_cycle_s));
  in.push_back(duration("draft step overhead", "step", cal.draft_step_overhead_s));
  if (sc.batch > 1) in.push_back(duration("spec per request beyond the first", "req", cal.spec_per_request_s));
  if (async_scheduling_of(sc).cycle_pays_hidden_host()) {
    in.push_back(duration("host per synchronous step", "sync", cal.sync_step_host_s));
  }
  return in;
}

ValidationRow predict_row(Scenario s) {
  // The model error a row's band carries is fitted without the row's source (widen_by_other_sources),
  // never the data directory's file, which holds every row.
  s.model_error.reset();
  ValidationRow row;
  row.file = s.file;
  row.name = s.name;
  row.source = *s.validation;
  row.engine = s.engine.name;
  // One GPU crosses no link: its rows are neither NVLink's nor PCIe's evidence.
  const LinkClass slowest = slowest_pair_link(s.topology).first;
  row.interconnect = s.parallel.tp * s.parallel.pp == 1 ? "single gpu"
                     : slowest == LinkClass::kNvlink  ? "nvlink"
                     : slowest == LinkClass::kXgmi    ? "xgmi"
                                                      : "pcie";
  row.gpu = s.gpu.name;
  row.model = s.model.name;
  row.draft = s.speculation.runs_draft_forwards() ? s.draft.name : s.speculation.method;
  row.moe = s.model.moe_layers() > 0;
  row.tp = s.parallel.tp;
  row.batch = s.batch;
  row.tree = s.speculation.shape.eagle_topk > 1;
  row.eagle_topk = s.speculation.shape.eagle_topk;
  row.num_steps = s.speculation.shape.num_steps;
  row.num_draft_tokens = s.speculation.shape.num_draft_tokens;
  row.measured_plain_tokens_per_s = *s.measurements.baseline_tokens_per_s;
  row.measured_spec_tokens_per_s = *s.measurements.speculative_tokens_per_s;
  row.spec_extra_per_cycle_s = s.host.spec_extra_per_cycle_s;
  if (!s.measurements.speculative_held_out) {
    row.not_scored = "measurements.speculative.held_out is false: the measured speculative run calibrates the row";
  } else if (!s.validation->inputs_from_speculative_run.empty()) {
    row.not_scored = "inputs from its own speculative run: " + s.validation->inputs_from_speculative_run;
  }

  const CycleModel model(std::move(s));
  const Prediction p = model.predict();
  if (!(p.cycle_s > 0.0)) {
    throw Error(SourceLocation{row.file, 0, 0}, "host.spec_extra_per_cycle",
                "= " + units::format_duration(row.spec_extra_per_cycle_s) + " leaves no time for the cycle");
  }
  const Scenario& sc = model.scenario();
  const Calibration& cal = model.calibration();
  row.predicted_plain_tokens_per_s = p.baseline_tokens_per_s;
  row.predicted_spec_tokens_per_s = p.spec_tokens_per_s;
  row.tokens_per_cycle = p.tokens_per_cycle;
  PredictionBand band = prior_band(model, p);
  row.band_p10_tokens_per_s = row.prior_band_p10_tokens_per_s = band.p10_tokens_per_s;
  row.band_p90_tokens_per_s = row.prior_band_p90_tokens_per_s = band.p90_tokens_per_s;
  row.prior_band_draws = std::move(band.draws);
  row.warnings = cal.warnings;

  row.inputs = inputs_of(row, sc, cal);
  return row;
}

// Scored rows: the check and fit sets, every scored row (leave-source-out: no row's band is fitted
// on its own source, and the predictions fit nothing on the corpus), then the latter by group.
std::vector<ErrorSummary> summaries_of(const std::vector<ValidationRow>& rows) {
  std::vector<const ValidationRow*> all, check, fit;
  std::map<std::string, std::vector<const ValidationRow*>> groups;
  for (const auto& r : rows) {
    if (!r.scored()) continue;
    all.push_back(&r);
    (r.set == "check" ? check : fit).push_back(&r);
    if (r.set == "check") {
      groups["check engine " + r.engine].push_back(&r);
      groups["check interconnect " + r.interconnect].push_back(&r);
    }
    groups[r.batch == 1 ? "batch 1" : "batch > 1"].push_back(&r);
    groups["engine " + r.engine].push_back(&r);
    groups["interconnect " + r.interconnect].push_back(&r);
    groups[r.tp == 1 ? "tp 1" : "tp >= 2"].push_back(&r);
    groups[r.moe ? "target moe" : "target dense"].push_back(&r);
    groups[r.tree ? "draft tree" : "draft chain"].push_back(&r);
    groups[r.measured_speedup() > 1.0 ? "measured faster" : "measured slower"].push_back(&r);
  }
  std::vector<ErrorSummary> out{summarize_errors("check", check), summarize_errors("fit", fit),
                                summarize_errors("leave-source-out", all)};
  for (const auto& [name, members] : groups) out.push_back(summarize_errors(name, members));
  return out;
}

}  // namespace

constexpr std::size_t kMaxCorpusEntries = 100000;

std::vector<std::string> find_validation_rows(const std::vector<std::string>& paths, const DataDir& data) {
  std::vector<std::string> roots = paths;
  if (roots.empty()) roots.push_back((fs::path(data.root()) / "validation").string());
  std::vector<std::string> files;
  for (const auto& root : roots) {
    std::error_code ec;
    if (fs::is_regular_file(root, ec)) {
      files.push_back(root);
      continue;
    }
    if (!fs::is_directory(root, ec)) throw Error("validate: '" + root + "' is neither a row file nor a folder");
    std::size_t visited = 0;
    for (const auto& entry : fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec)) {
      // A corpus is a few hundred files: a walk past this is a wrong folder (`validate /`), not rows.
      if (++visited > kMaxCorpusEntries) {
        throw Error("validate: '" + root + "' holds more than " + std::to_string(kMaxCorpusEntries) +
                    " entries: name the folder of row files (validation/ or one of its sources)");
      }
      // The corpus's split file (validation/split.yaml) sits beside the rows but is not one.
      std::error_code entry_ec;
      if (entry.is_regular_file(entry_ec) && entry.path().extension() == ".yaml" && entry.path().filename() != "split.yaml")
        files.push_back(entry.path().string());
    }
    if (ec) throw Error("validate: cannot read '" + root + "': " + ec.message());
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  if (files.empty()) throw Error("validate: no row files (*.yaml) found");
  return files;
}

ValidationRow validate_row(const std::string& file, const DataDir& data) { return predict_row(load_row(file, data)); }

ValidationRow validate_row(const std::string& file, double spec_extra_per_cycle_s, const DataDir& data,
                           const ModelRules& rules) {
  Scenario s = load_row(file, data, rules);
  // Fixed by the calibration: the band no longer draws it from its prior.
  s.host.spec_extra_per_cycle_s = spec_extra_per_cycle_s;
  s.explicit_keys.insert("host.spec_extra_per_cycle");
  ValidationRow row = predict_row(std::move(s));
  for (auto& in : row.inputs) {
    if (in.code != "extra") continue;
    in.origin = InputOrigin::kCalibrated;
    in.detail = "calibrated on another run of the deployment: " + units::format_duration(spec_extra_per_cycle_s);
  }
  if (spec_extra_per_cycle_s < 0) {
    row.warnings.push_back("the calibrated per-cycle term is negative (" + units::format_duration(spec_extra_per_cycle_s) +
                           "): the model's cycle without it is already longer than the calibrating row measured");
  }
  return row;
}

double fit_spec_extra_per_cycle(const std::string& file, const DataDir& data, const ModelRules& rules) {
  // The row's speculative run, no longer held out, calibrates the per-cycle term (CycleModel does
  // the fit); the per-forward term stays as the row states it.
  Scenario s = load_row(file, data, rules);
  s.measurements.speculative_held_out = false;
  s.explicit_keys.erase("host.spec_extra_per_cycle");
  const CycleModel model(std::move(s));
  return model.calibration().spec_extra_per_cycle_s.value;
}

double transferable_spec_extra(double fitted_s) { return std::max(0.0, fitted_s); }

namespace {

// The rows a held-out row k is calibrated on: the rest of its source, narrowed to the same draft,
// then to the same batch, wherever that leaves any (engine work per cycle depends on both).
std::vector<std::size_t> same_deployment(const std::vector<ValidationRow>& rows, const std::vector<std::size_t>& members,
                                         std::size_t k) {
  std::vector<std::size_t> out;
  for (std::size_t j : members) {
    if (j != k) out.push_back(j);
  }
  const auto narrow = [&](auto same) {
    std::vector<std::size_t> kept;
    std::copy_if(out.begin(), out.end(), std::back_inserter(kept), [&](std::size_t j) { return same(rows[j]); });
    if (!kept.empty()) out = std::move(kept);
  };
  narrow([&](const ValidationRow& r) { return r.draft == rows[k].draft; });
  narrow([&](const ValidationRow& r) { return r.batch == rows[k].batch; });
  return out;
}

std::string negative_fit_note(int negative, int of) {
  return std::to_string(negative) + " of the " + std::to_string(of) +
         " calibrating rows fit a negative per-cycle term (their modelled cycle is already longer than "
         "measured: a model error of theirs, not engine work), taken as 0";
}

void widen(ValidationRow& r, const ModelError& e) {
  PredictionBand priors;
  priors.p10_tokens_per_s = r.prior_band_p10_tokens_per_s;
  priors.p90_tokens_per_s = r.prior_band_p90_tokens_per_s;
  priors.priors_p10_tokens_per_s = r.prior_band_p10_tokens_per_s;
  priors.priors_p90_tokens_per_s = r.prior_band_p90_tokens_per_s;
  priors.draws = r.prior_band_draws;
  const PredictionBand b = with_model_error(std::move(priors), r.predicted_spec_tokens_per_s, e);
  r.band_p10_tokens_per_s = b.p10_tokens_per_s;
  r.band_p90_tokens_per_s = b.p90_tokens_per_s;
  r.model_error = e;
}

// Each target's band widened by specsim's error on the rows of `pool` (the fit set) from other
// sources than its own, so that no row's band is fitted on its own source or on the check set.
// Returns a note when some source has too few rows beside it (those bands keep the priors' spread
// alone).
std::string widen_by_other_sources(const std::vector<ValidationRow*>& targets,
                                   const std::vector<const ValidationRow*>& pool, const ModelRules& rules) {
  std::map<std::string, std::optional<ModelError>> by_source;
  int bare = 0;
  for (ValidationRow* t : targets) {
    auto [it, fresh] = by_source.try_emplace(t->source.source);
    if (fresh) {
      std::vector<const ValidationRow*> others;
      std::copy_if(pool.begin(), pool.end(), std::back_inserter(others),
                   [&](const ValidationRow* r) { return r->source.source != t->source.source; });
      it->second = model_error_of(others, rules);
      if (it->second) {
        it->second->origin = "held out by source: the " + std::to_string(it->second->rows) + " fit-set rows of " +
                             std::to_string(it->second->sources) + " other sources";
      }
    }
    if (it->second) {
      widen(*t, *it->second);
    } else {
      ++bare;
    }
  }
  if (bare == 0) return "";
  return std::to_string(bare) + " row(s) carry the priors' band alone: their sources leave fewer than " +
         std::to_string(kMinModelErrorRows) + " fit-set rows of " + std::to_string(kMinModelErrorSources) +
         " other sources to measure specsim's error on";
}

// The q-quantile of residuals each weighted 1 / (its source's rows), by nearest rank on the
// cumulative weight: the smallest residual whose cumulative weight reaches q of the total. Equal
// weights give nearest_rank's value.
double source_weighted_rank(std::vector<std::pair<double, double>> residual_weight, double q) {
  std::sort(residual_weight.begin(), residual_weight.end());
  double total = 0.0;
  for (const auto& [r, w] : residual_weight) total += w;
  double cumulative = 0.0;
  for (const auto& [r, w] : residual_weight) {
    cumulative += w;
    if (cumulative >= q * total * (1.0 - 1e-12)) return r;
  }
  return residual_weight.back().first;
}

}  // namespace

Scenario load_validation_row(const std::string& file, const DataDir& data, const ModelRules& rules) {
  return load_row(file, data, rules);
}

std::optional<ModelError> model_error_of(const std::vector<const ValidationRow*>& rows, const ModelRules& rules) {
  std::map<std::string, int> sources;
  for (const ValidationRow* r : rows) ++sources[r->source.source];
  if (int(rows.size()) < kMinModelErrorRows || int(sources.size()) < kMinModelErrorSources) return std::nullopt;
  const double z90 = boost::math::quantile(boost::math::normal(), 0.9);
  std::vector<std::pair<double, double>> residuals;
  double prior_var = 0.0, prior_var_below = 0.0, prior_var_above = 0.0;
  for (const ValidationRow* r : rows) {
    const double point = r->predicted_spec_tokens_per_s;
    residuals.emplace_back(std::log(r->measured_spec_tokens_per_s / point),
                           rules.model_error_per_source ? 1.0 / sources.at(r->source.source) : 1.0);
    const double s = ln_sigma_through(r->prior_band_p10_tokens_per_s, r->prior_band_p90_tokens_per_s);
    prior_var += s * s;
    const double below = std::max(0.0, std::log(point / r->prior_band_p10_tokens_per_s)) / z90;
    const double above = std::max(0.0, std::log(r->prior_band_p90_tokens_per_s / point)) / z90;
    prior_var_below += below * below;
    prior_var_above += above * above;
  }
  ModelError e;
  e.rows = int(rows.size());
  e.sources = int(sources.size());
  // The next deployment is a new source: each source counts once, however many rows it has.
  e.residual_p10 = source_weighted_rank(residuals, 0.1);
  e.residual_p50 = source_weighted_rank(residuals, 0.5);
  e.residual_p90 = source_weighted_rank(residuals, 0.9);
  e.prior_sigma_rms = std::sqrt(prior_var / double(rows.size()));
  e.prior_sigma_below_rms = std::sqrt(prior_var_below / double(rows.size()));
  e.prior_sigma_above_rms = std::sqrt(prior_var_above / double(rows.size()));
  // The spread is estimated from e.sources sources: a band for one more source takes Student's t
  // with sources - 1 degrees of freedom at its 0.9 point where a known spread would take z_0.9.
  if (rules.model_error_small_sample) {
    e.small_sample_factor =
        boost::math::quantile(boost::math::students_t_distribution<double>(double(e.sources - 1)), 0.9) / z90;
  }
  const auto beyond_priors = [&](double s, double prior) {
    const double total = s * e.small_sample_factor;
    return std::sqrt(std::max(0.0, total * total - prior * prior));
  };
  // The residuals are logs already: their spread is the log-normal's through exp(p10), exp(p90).
  e.sigma = beyond_priors(ln_sigma_through(std::exp(e.residual_p10), std::exp(e.residual_p90)), e.prior_sigma_rms);
  // Each tail on its own: the residuals' p10 (p90) as the split normal's lower (upper) z_0.9 point,
  // measured from 0 (the point is not moved by the bias), less the priors' spread on that side.
  e.sigma_below = beyond_priors(std::max(0.0, -e.residual_p10) / z90, e.prior_sigma_below_rms);
  e.sigma_above = beyond_priors(std::max(0.0, e.residual_p90) / z90, e.prior_sigma_above_rms);
  e.origin = std::to_string(e.rows) + " rows of " + std::to_string(e.sources) + " sources";
  return e;
}

std::string model_error_yaml(const ModelError& e) {
  const auto f = [](double v) { return units::format_fixed(v, 4); };
  std::ostringstream os;
  os << "schema_version: 1\n"
     << "kind: model_error\n"
     << "description: \"specsim's error on the validation corpus beyond its priors' spread: what a prediction's "
        "band draws on top of the priors (prior_band.hpp, docs/validation.md#model-error)\"\n"
     << "source: \"specsim validate --write-model-error over the fit set of validation/ (" << e.rows
     << " public deployments, " << e.sources
     << " sources, each named in its row file; validation/split.yaml): the check set never enters it\"\n"
     << "# Written by specsim validate; a test recomputes it from the corpus. ln(measured / predicted)\n"
     << "# speculative tokens/s, each row weighted 1 / its source's rows (every source counts once), by\n"
     << "# nearest rank on the cumulative weight; p50 is the corpus's bias, reported, not applied.\n"
     << "rows: " << e.rows << "\n"
     << "sources: " << e.sources << "\n"
     << "residual_ln:\n"
     << "  p10: " << f(e.residual_p10) << "\n"
     << "  p50: " << f(e.residual_p50) << "\n"
     << "  p90: " << f(e.residual_p90) << "\n"
     << "# The rows' own prior bands as a ln sigma (root mean square), and what is left of the residuals'\n"
     << "# spread (p90 - p10) / 2.563, times the small-sample factor t_0.9(sources - 1) / z_0.9 (the\n"
     << "# spread is estimated from that many sources), beyond it: sigma = sqrt((spread x factor)^2 -\n"
     << "# prior_sigma_rms^2).\n"
     << "prior_sigma_rms: " << f(e.prior_sigma_rms) << "\n"
     << "small_sample_factor: " << f(e.small_sample_factor) << "\n"
     << "sigma: " << f(e.sigma) << "\n"
     << "# The band's two tails apart (a split normal): the residuals' p10 and p90, each measured from 0\n"
     << "# as a z_0.9 point, times the factor, less the priors' spread on the same side (the rows' ln(point\n"
     << "# / prior p10) and ln(prior p90 / point) over z_0.9, root mean square).\n"
     << "prior_sigma_below_rms: " << f(e.prior_sigma_below_rms) << "\n"
     << "prior_sigma_above_rms: " << f(e.prior_sigma_above_rms) << "\n"
     << "sigma_below: " << f(e.sigma_below) << "\n"
     << "sigma_above: " << f(e.sigma_above) << "\n";
  if (e.gain_pairs > 0) {
    os << "# A predicted gain's error over the fit set's pairs (docs/validation.md#pairs): ln((1 + measured\n"
       << "# gain) / (1 + predicted gain)), each pair both ways (its reverse is as much a pair), so p10 =\n"
       << "# -p90; rank's gain band. The pairs are K sweeps and draft changes.\n"
       << "gain_residual_ln:\n"
       << "  pairs: " << e.gain_pairs << "\n"
       << "  p10: " << f(e.gain_residual_p10) << "\n"
       << "  p90: " << f(e.gain_residual_p90) << "\n";
  }
  if (e.transfer_points > 0) {
    os << "# A rate carried from the batch its plain run was measured at to another (predict --concurrency,\n"
       << "# docs/validation.md#batch-transfer): over the fit set's speculative batch transfers, the ln sigma\n"
       << "# per unit |ln(batch / measured batch)| beyond the band each carries at its own batch (each source\n"
       << "# counted once), times the small-sample factor of its sources; added to both tails in quadrature.\n"
       << "batch_transfer:\n"
       << "  points: " << e.transfer_points << "\n"
       << "  sources: " << e.transfer_sources << "\n"
       << "  sigma_per_ln_batch: " << f(e.transfer_sigma_per_ln_batch) << "\n";
  }
  return os.str();
}

ErrorSummary summarize_errors(const std::string& group, const std::vector<const ValidationRow*>& rows) {
  ErrorSummary s;
  s.group = group;
  s.rows = static_cast<int>(rows.size());
  std::vector<double> abs_errors, widths;
  double signed_sum = 0.0;
  for (const ValidationRow* r : rows) {
    const double e = r->error();
    abs_errors.push_back(std::fabs(e));
    signed_sum += e;
    if (std::fabs(e) >= s.worst_abs_error) {
      s.worst_abs_error = std::fabs(e);
      s.worst_row = r->name;
    }
    if (r->sign_right()) ++s.sign_right;
    if (r->called()) ++s.called;
    if (r->call_right()) ++s.called_right;
    if (r->in_band()) ++s.in_band;
    if (r->in_prior_band()) ++s.in_prior_band;
    widths.push_back(r->band_width());
  }
  s.median_band_width = median(widths);
  s.median_abs_error = median(abs_errors);
  s.mean_signed_error = rows.empty() ? 0.0 : signed_sum / rows.size();
  return s;
}

namespace {

void check_unique_names(const std::vector<ValidationRow>& rows) {
  std::map<std::string, int> names;
  for (const auto& r : rows) {
    if (++names[r.name] == 2) throw Error(SourceLocation{r.file, 0, 0}, "name", "'" + r.name + "' names two rows");
  }
}

std::vector<const ValidationRow*> fit_set(const std::vector<ValidationRow>& rows) {
  std::vector<const ValidationRow*> fit;
  for (const auto& r : rows) {
    if (r.scored() && r.set == "fit") fit.push_back(&r);
  }
  return fit;
}

// The model error over the fit set, and each row's band widened by the fit set's other sources.
void attach_model_error(ValidationReport& report, const ModelRules& rules) {
  const std::vector<const ValidationRow*> fit = fit_set(report.rows);
  std::vector<ValidationRow*> targets;
  for (auto& r : report.rows) targets.push_back(&r);
  report.model_error = model_error_of(fit, rules);
  if (report.model_error) {
    report.model_error->origin = "the fit set: " + std::to_string(report.model_error->rows) + " rows of " +
                                 std::to_string(report.model_error->sources) + " sources";
  }
  report.model_error_note = widen_by_other_sources(targets, fit, rules);
}

// The transfer error of the fit set's transfers, beside the model error (transfer_error_of).
void attach_transfer_error(ValidationReport& report, const ModelRules& rules) {
  if (!report.model_error || !rules.batch_transfer_error) return;
  const auto e = transfer_error_of(report.batch_transfers, "", rules);
  if (!e) return;
  report.model_error->transfer_points = e->points;
  report.model_error->transfer_sources = e->sources;
  report.model_error->transfer_sigma_per_ln_batch = e->sigma_per_ln_batch;
}

// The gain error of the fit set's pairs, beside the model error (gain_residual_band); too few pairs
// (kMinModelErrorRows) leave it out.
void attach_gain_error(ValidationReport& report) {
  if (!report.model_error) return;
  const auto band = gain_residual_band(report.pairs);
  if (!band) return;
  report.model_error->gain_pairs = band->pairs;
  report.model_error->gain_residual_p10 = band->p10;
  report.model_error->gain_residual_p90 = band->p90;
}

// Each scored row's set from the split read at `path` (named `split_file` in the report); sources it
// does not list are scored in the check set.
void assign_sets(ValidationReport& report, const std::string& path, const std::string& split_file) {
  ValidationSplit split;
  if (!path.empty()) split = load_validation_split(path);
  report.split_file = split_file;
  std::set<std::string> unlisted;
  for (auto& r : report.rows) {
    if (!r.scored()) continue;
    if (split_file.empty()) {
      r.set = "fit";
      continue;
    }
    r.set = split.set_of_source(r.source.source);
    if (!split.set_of.count(r.source.source)) unlisted.insert(r.source.source);
  }
  if (split_file.empty()) {
    report.split_notes.push_back("no split file: every scored row is in the fit set (each band still fitted "
                                 "without its own source)");
  }
  for (const auto& source : unlisted) {
    report.split_notes.push_back("source '" + source + "' is not in " + split_file +
                                 ": scored in the check set (sources found after the freeze go there first)");
  }
}

// The split file: the option's, else the nearest split.yaml above the row files (a corpus folder
// carries its own split), else the data directory's. Rows under two different split files are refused.
std::string split_file_of(const ValidateOptions& options, const std::vector<std::string>& files,
                          const DataDir& data) {
  if (!options.split_file.empty()) return options.split_file;
  std::set<std::string> found;
  for (const auto& f : files) {
    std::error_code ec;
    for (fs::path dir = fs::absolute(f, ec).parent_path(); !dir.empty(); dir = dir.parent_path()) {
      if (fs::is_regular_file(dir / "split.yaml", ec)) {
        found.insert(fs::weakly_canonical(dir / "split.yaml", ec).string());
        break;
      }
      if (dir == dir.root_path()) break;
    }
  }
  if (found.size() > 1) {
    throw Error("validate: the rows lie under " + std::to_string(found.size()) + " split files (" + *found.begin() +
                ", " + *std::next(found.begin()) + "): pass --split to name the one that holds");
  }
  if (found.size() == 1) return *found.begin();
  const std::string f = validation_split_file(data);
  std::error_code ec;
  return fs::is_regular_file(f, ec) ? f : "";
}

}  // namespace

namespace {

std::vector<ErrorSummary> calibrated_splits(const std::vector<CalibratedRow>& rows,
                                            const std::vector<ValidationRow>& plain) {
  std::map<std::string, std::vector<const ValidationRow*>> groups;
  std::map<std::string, const ValidationRow*> by_name;
  for (const auto& r : plain) by_name[r.name] = &r;
  for (const auto& c : rows) {
    if (!c.row.scored()) continue;
    groups[c.row.set].push_back(&c.row);
    // A K sweep: the calibrating run differs from the predicted one in its draft shape alone (not in
    // a catalogue setting either).
    const ValidationRow* on = c.calibrated_on.size() == 1 ? by_name[c.calibrated_on.front()] : nullptr;
    const ValidationRow* self = by_name[c.row.name];
    if (on && self && on->batch == c.row.batch && on->draft == c.row.draft && on->tp == c.row.tp &&
        on->settings == self->settings) {
      groups["K sweep"].push_back(&c.row);
    }
  }
  std::vector<ErrorSummary> out;
  for (const auto& [name, members] : groups) out.push_back(summarize_errors(name, members));
  return out;
}

// One run -> siblings: each row of a source alone calibrates the per-cycle term for every sibling.
CalibrationRun one_run_calibration(const ValidationReport& report, const std::vector<std::string>& files,
                                   const std::map<std::string, std::vector<std::size_t>>& by_source,
                                   const DataDir& data, const ModelRules& rules) {
  CalibrationRun run;
  run.mode = "one run -> siblings";
  for (const auto& [source, members] : by_source) {
    if (int(members.size()) < kMinRowsForLeaveOneOut) {
      run.sources_skipped.push_back(source + " (" + std::to_string(members.size()) + " row)");
      continue;
    }
    std::map<std::size_t, double> fitted;
    for (std::size_t i : members) fitted[i] = fit_spec_extra_per_cycle(files[i], data, rules);
    for (std::size_t k : members) {
      for (std::size_t j : same_deployment(report.rows, members, k)) {
        CalibratedRow c{validate_row(files[k], transferable_spec_extra(fitted[j]), data, rules), {report.rows[j].name}};
        if (fitted[j] < 0) c.row.warnings.push_back(negative_fit_note(1, 1));
        c.row.file = report.rows[k].file;
        c.row.set = report.rows[k].set;
        run.rows.push_back(std::move(c));
      }
    }
  }
  return run;
}

CalibrationRun calibration_on_row(const ValidationReport& report, const std::vector<std::string>& files,
                                  const std::map<std::string, std::vector<std::size_t>>& by_source,
                                  const std::string& name, const DataDir& data, const ModelRules& rules) {
  const auto it = std::find_if(report.rows.begin(), report.rows.end(),
                               [&](const ValidationRow& r) { return r.name == name; });
  if (it == report.rows.end()) {
    std::string known;
    for (const auto& r : report.rows) known += (known.empty() ? "" : ", ") + r.name;
    throw Error(SourceLocation{"--calibrate-on", 0, 0}, "", "no row named '" + name + "' (rows: " + known + "; or 'all')");
  }
  CalibrationRun run;
  run.mode = "on " + it->name;
  const double fitted = fit_spec_extra_per_cycle(files[std::size_t(it - report.rows.begin())], data, rules);
  for (std::size_t i : by_source.at(it->source.source)) {
    if (report.rows[i].name == it->name) continue;
    CalibratedRow c{validate_row(files[i], transferable_spec_extra(fitted), data, rules), {it->name}};
    if (fitted < 0) c.row.warnings.push_back(negative_fit_note(1, 1));
    c.row.file = report.rows[i].file;
    c.row.set = report.rows[i].set;
    run.rows.push_back(std::move(c));
  }
  if (run.rows.empty()) {
    throw Error(SourceLocation{"--calibrate-on", 0, 0}, "", "source '" + it->source.source + "' has no other row to predict");
  }
  return run;
}

// The calibrated rows' bands: the model error of calibrated predictions on the fit set's other
// sources (a calibrated row errs less than a prior one: the uncalibrated error would overstate it).
void widen_calibrated(CalibrationRun& run, const ModelRules& rules) {
  std::vector<ValidationRow*> targets;
  std::vector<const ValidationRow*> predicted, fit;
  for (auto& c : run.rows) {
    targets.push_back(&c.row);
    if (!c.row.scored()) continue;  // shown, not summarized: its inputs came from its own run
    predicted.push_back(&c.row);
    if (c.row.set == "fit") fit.push_back(&c.row);
  }
  widen_by_other_sources(targets, fit, rules);
  run.summary = summarize_errors(run.mode, predicted);
}

}  // namespace

ValidationReport validate_corpus(const std::vector<std::string>& files, const ValidateOptions& options,
                                 const DataDir& data) {
  ValidationReport report;
  const std::vector<InterventionKey> keys = intervention_keys(data);
  for (const auto& f : files) {
    Scenario s = load_row(f, data, options.rules);
    auto settings = row_settings(s, keys);
    report.rows.push_back(predict_row(std::move(s)));
    report.rows.back().settings = std::move(settings);
  }
  // Row files as a reader finds them in the repository: relative to the data directory when under it.
  const auto shown = [&](const std::string& f) {
    const fs::path rel = fs::weakly_canonical(f).lexically_relative(fs::weakly_canonical(data.root()));
    return !rel.empty() && *rel.begin() != ".." ? rel.string() : f;
  };
  check_unique_names(report.rows);
  for (auto& r : report.rows) r.file = shown(r.file);
  const std::string split = split_file_of(options, files, data);
  assign_sets(report, split, split.empty() ? "" : shown(split));
  attach_model_error(report, options.rules);
  report.summaries = summaries_of(report.rows);
  std::vector<const ValidationRow*> apart;
  for (const auto& r : report.rows) {
    if (!r.scored()) apart.push_back(&r);
  }
  if (!apart.empty()) report.not_scored = summarize_errors("not scored", apart);
  derive_pairs(report.rows, keys, report.pairs, report.rankings, report.pair_summaries);
  attach_gain_error(report);
  add_gain_bands(report.pairs, report.rankings);
  report.pair_summaries = summarize_pairs(report.pairs, report.rankings);
  report.batch_transfers = derive_batch_transfers(files, report.rows, keys, data, options.rules);
  report.batch_transfer_summaries = summarize_batch_transfers(report.batch_transfers);
  attach_transfer_error(report, options.rules);
  if (options.calibrate_on.empty()) return report;

  // Rows by source, in file order.
  std::map<std::string, std::vector<std::size_t>> by_source;
  for (std::size_t i = 0; i < report.rows.size(); ++i) by_source[report.rows[i].source.source].push_back(i);
  CalibrationRun run = options.calibrate_on == "all"
                           ? one_run_calibration(report, files, by_source, data, options.rules)
                           : calibration_on_row(report, files, by_source, options.calibrate_on, data, options.rules);
  widen_calibrated(run, options.rules);
  run.splits = calibrated_splits(run.rows, report.rows);
  report.calibration = std::move(run);
  return report;
}

std::vector<RuleAblation> ablate_rules(const std::vector<std::string>& files, const ValidateOptions& options,
                                       const DataDir& data) {
  ValidateOptions plain = options;
  plain.calibrate_on.clear();
  const auto out_of_sample = [](const ValidationReport& r) {
    return std::vector<ErrorSummary>(r.summaries.begin(), r.summaries.begin() + 3);  // check, fit, leave-source-out
  };
  const auto transfers = [](const ValidationReport& r) {
    std::vector<BatchTransferSummary> out;
    std::copy_if(r.batch_transfer_summaries.begin(), r.batch_transfer_summaries.end(), std::back_inserter(out),
                 [](const BatchTransferSummary& s) { return s.group == "check" || s.group == "fit"; });
    return out;
  };
  const ValidationReport shipped = validate_corpus(files, plain, data);
  const std::vector<ErrorSummary> shipped_rows = out_of_sample(shipped);
  const std::vector<BatchTransferSummary> shipped_transfers = transfers(shipped);
  std::vector<RuleAblation> out;
  for (const auto& [name, member] : model_rule_names()) {
    ValidateOptions flipped = plain;
    flipped.rules.*member = !(plain.rules.*member);
    const ValidationReport other = validate_corpus(files, flipped, data);
    out.push_back({name, plain.rules.*member, shipped_rows, out_of_sample(other), shipped_transfers, transfers(other)});
  }
  return out;
}

}  // namespace specsim
