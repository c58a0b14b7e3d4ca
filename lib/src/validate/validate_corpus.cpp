#include "specsim/validate_corpus.hpp"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

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

Scenario load_row(const std::string& file, const DataDir& data) {
  Scenario s = load_scenario(file, {}, data);
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
  const bool eager = sc.engine.decode_mode == LaunchMode::kEager || sc.engine.verify_mode == LaunchMode::kEager ||
                     sc.engine.draft_mode == LaunchMode::kEager;
  if (eager && sc.parallel.tp > 1) in.push_back(duration("eager all-reduce overhead", "eager", cal.eager_overhead_per_op_s));
  if (launches_eagerly(sc)) in.push_back(duration("eager launch per kernel", "launch", cal.eager_launch_per_kernel_s));
  in.push_back(duration("host per plain step", "host", cal.host_decode_s));
  in.push_back(duration("spec overhead per cycle", "extra", cal.spec_extra_per_cycle_s));
  in.push_back(duration("draft step overhead", "step", cal.draft_step_overhead_s));
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
  row.interconnect = s.parallel.tp * s.parallel.pp == 1 ? "single gpu"
                     : slowest_pair_link(s.topology).first == LinkClass::kNvlink ? "nvlink" : "pcie";
  row.gpu = s.gpu.name;
  row.model = s.model.name;
  row.draft = s.speculation.runs_draft_forwards() ? s.draft.name : s.speculation.method;
  row.moe = s.model.moe_layers() > 0;
  row.tp = s.parallel.tp;
  row.batch = s.batch;
  row.tree = s.speculation.shape.eagle_topk > 1;
  row.num_steps = s.speculation.shape.num_steps;
  row.num_draft_tokens = s.speculation.shape.num_draft_tokens;
  row.measured_plain_tokens_per_s = *s.measurements.baseline_tokens_per_s;
  row.measured_spec_tokens_per_s = *s.measurements.speculative_tokens_per_s;
  row.spec_extra_per_cycle_s = s.host.spec_extra_per_cycle_s;

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

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<ErrorSummary> summaries_of(const std::vector<ValidationRow>& rows) {
  std::vector<const ValidationRow*> all;
  std::map<std::string, std::vector<const ValidationRow*>> groups;
  for (const auto& r : rows) {
    all.push_back(&r);
    groups[r.batch == 1 ? "batch 1" : "batch > 1"].push_back(&r);
    groups["engine " + r.engine].push_back(&r);
    groups["interconnect " + r.interconnect].push_back(&r);
    groups[r.tp == 1 ? "tp 1" : "tp >= 2"].push_back(&r);
    groups[r.moe ? "target moe" : "target dense"].push_back(&r);
    groups[r.tree ? "draft tree" : "draft chain"].push_back(&r);
    groups[r.measured_speedup() > 1.0 ? "measured faster" : "measured slower"].push_back(&r);
  }
  std::vector<ErrorSummary> out{summarize_errors("all", all)};
  for (const auto& [name, members] : groups) out.push_back(summarize_errors(name, members));
  return out;
}

}  // namespace

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
    for (const auto& entry : fs::recursive_directory_iterator(root, ec)) {
      if (entry.is_regular_file() && entry.path().extension() == ".yaml") files.push_back(entry.path().string());
    }
    if (ec) throw Error("validate: cannot read '" + root + "': " + ec.message());
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  if (files.empty()) throw Error("validate: no row files (*.yaml) found");
  return files;
}

ValidationRow validate_row(const std::string& file, const DataDir& data) { return predict_row(load_row(file, data)); }

ValidationRow validate_row(const std::string& file, double spec_extra_per_cycle_s, const DataDir& data) {
  EngineTerms terms;
  terms.per_cycle_s = spec_extra_per_cycle_s;
  ValidationRow row = validate_row(file, terms, data);
  if (spec_extra_per_cycle_s < 0) {
    row.warnings.push_back("the calibrated per-cycle term is negative (" + units::format_duration(spec_extra_per_cycle_s) +
                           "): the model's cycle without it is already longer than the calibrating row measured");
  }
  return row;
}

double fit_spec_extra_per_cycle(const std::string& file, const DataDir& data) {
  const EngineOverheadFit f = fit_engine_overhead(file, data);
  return f.total_s - f.forwards * f.per_forward_s;
}

double transferable_spec_extra(double fitted_s) { return std::max(0.0, fitted_s); }

EngineOverheadFit fit_engine_overhead(const std::string& file, const DataDir& data) {
  // The row's speculative run, no longer held out, calibrates the per-cycle term (CycleModel does
  // the fit); the per-forward term stays as the row states it.
  Scenario s = load_row(file, data);
  s.measurements.speculative_held_out = false;
  s.explicit_keys.erase("host.spec_extra_per_cycle");
  const CycleModel model(std::move(s));
  EngineOverheadFit f;
  f.forwards = double(model.predict().drafts.size());
  f.per_forward_s = model.calibration().draft_step_overhead_s.value;
  f.total_s = model.calibration().spec_extra_per_cycle_s.value + f.forwards * f.per_forward_s;
  return f;
}

namespace {

// c alone, d as each row states it: the median of what each row leaves for c, never below 0.
EngineTerms per_cycle_only(const std::vector<EngineOverheadFit>& rows) {
  EngineTerms t;
  std::vector<double> c;
  for (const auto& r : rows) {
    const double fitted = r.total_s - r.forwards * r.per_forward_s;
    t.negative += fitted < 0 ? 1 : 0;
    c.push_back(transferable_spec_extra(fitted));
  }
  t.per_cycle_s = median(c);
  return t;
}

}  // namespace

EngineTerms carried_engine_terms(const std::vector<EngineOverheadFit>& rows) {
  const auto [lo, hi] = std::minmax_element(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.forwards < b.forwards;
  });
  if (rows.size() < 2 || hi->forwards == lo->forwards) return per_cycle_only(rows);
  const auto n = Eigen::Index(rows.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd o(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    a(i, 0) = 1.0;
    a(i, 1) = rows[std::size_t(i)].forwards;
    o(i) = rows[std::size_t(i)].total_s;
  }
  const Eigen::Vector2d cd = a.colPivHouseholderQr().solve(o);
  if (cd(1) < 0.0) return per_cycle_only(rows);  // more forwards, less engine time: not a per-forward cost
  EngineTerms t;
  if (cd(0) >= 0.0) {
    t.per_cycle_s = cd(0);
    t.per_draft_forward_s = cd(1);
  } else {
    // Through the origin: d = sum(n o) / sum(n^2).
    t.per_draft_forward_s = a.col(1).dot(o) / a.col(1).squaredNorm();
  }
  return t;
}

ValidationRow validate_row(const std::string& file, const EngineTerms& terms, const DataDir& data) {
  Scenario s = load_row(file, data);
  s.host.spec_extra_per_cycle_s = terms.per_cycle_s;
  if (terms.per_draft_forward_s) s.host.draft_step_overhead_s = *terms.per_draft_forward_s;
  ValidationRow row = predict_row(std::move(s));
  for (auto& in : row.inputs) {
    const bool carried = in.code == "extra" || (in.code == "step" && terms.per_draft_forward_s);
    if (!carried) continue;
    in.origin = InputOrigin::kCalibrated;
    in.detail = "calibrated on other rows of the deployment: " +
                units::format_duration(in.code == "extra" ? terms.per_cycle_s : *terms.per_draft_forward_s);
  }
  return row;
}

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
  priors.draws = r.prior_band_draws;
  const PredictionBand b = with_model_error(std::move(priors), r.predicted_spec_tokens_per_s, e);
  r.band_p10_tokens_per_s = b.p10_tokens_per_s;
  r.band_p90_tokens_per_s = b.p90_tokens_per_s;
  r.model_error = e;
}

// Each target's band widened by specsim's error on the rows of `all` from other sources than its
// own, so that no row's band is fitted on its own source. Returns a note when some source has too
// few rows beside it (those bands keep the priors' spread alone).
std::string widen_by_other_sources(const std::vector<ValidationRow*>& targets, const std::vector<ValidationRow>& all) {
  std::map<std::string, std::optional<ModelError>> by_source;
  int bare = 0;
  for (ValidationRow* t : targets) {
    auto [it, fresh] = by_source.try_emplace(t->source.source);
    if (fresh) {
      std::vector<const ValidationRow*> others;
      for (const auto& r : all) {
        if (r.source.source != t->source.source) others.push_back(&r);
      }
      it->second = model_error_of(others);
      if (it->second) {
        it->second->origin = "held out by source: the " + std::to_string(it->second->rows) + " rows of " +
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
         std::to_string(kMinModelErrorRows) + " rows of " + std::to_string(kMinModelErrorSources) +
         " other sources to measure specsim's error on";
}

}  // namespace

std::optional<ModelError> model_error_of(const std::vector<const ValidationRow*>& rows) {
  std::vector<double> residuals;
  std::map<std::string, int> sources;
  double prior_var = 0.0;
  for (const ValidationRow* r : rows) {
    residuals.push_back(std::log(r->measured_spec_tokens_per_s / r->predicted_spec_tokens_per_s));
    const double s = ln_sigma_through(r->prior_band_p10_tokens_per_s, r->prior_band_p90_tokens_per_s);
    prior_var += s * s;
    ++sources[r->source.source];
  }
  if (int(rows.size()) < kMinModelErrorRows || int(sources.size()) < kMinModelErrorSources) return std::nullopt;
  ModelError e;
  e.rows = int(rows.size());
  e.sources = int(sources.size());
  std::sort(residuals.begin(), residuals.end());
  e.residual_p10 = nearest_rank(residuals, 0.1);
  e.residual_p50 = nearest_rank(residuals, 0.5);
  e.residual_p90 = nearest_rank(residuals, 0.9);
  e.prior_sigma_rms = std::sqrt(prior_var / double(rows.size()));
  // The residuals are logs already: their spread is the log-normal's through exp(p10), exp(p90).
  const double spread = ln_sigma_through(std::exp(e.residual_p10), std::exp(e.residual_p90));
  e.sigma = std::sqrt(std::max(0.0, spread * spread - e.prior_sigma_rms * e.prior_sigma_rms));
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
     << "source: \"specsim validate --write-model-error over validation/ (" << e.rows << " public deployments, "
     << e.sources << " sources, each named in its row file)\"\n"
     << "# Written by specsim validate; a test recomputes it from the corpus. ln(measured / predicted)\n"
     << "# speculative tokens/s by nearest rank; p50 is the corpus's bias, reported, not applied.\n"
     << "rows: " << e.rows << "\n"
     << "sources: " << e.sources << "\n"
     << "residual_ln:\n"
     << "  p10: " << f(e.residual_p10) << "\n"
     << "  p50: " << f(e.residual_p50) << "\n"
     << "  p90: " << f(e.residual_p90) << "\n"
     << "# The rows' own prior bands as a ln sigma (root mean square), and what is left of the residuals'\n"
     << "# spread (p90 - p10) / 2.563 beyond it: sigma = sqrt(spread^2 - prior_sigma_rms^2).\n"
     << "prior_sigma_rms: " << f(e.prior_sigma_rms) << "\n"
     << "sigma: " << f(e.sigma) << "\n";
  return os.str();
}

ErrorSummary summarize_errors(const std::string& group, const std::vector<const ValidationRow*>& rows) {
  ErrorSummary s;
  s.group = group;
  s.rows = static_cast<int>(rows.size());
  std::vector<double> abs_errors;
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
    if (r->in_band()) ++s.in_band;
    if (r->in_prior_band()) ++s.in_prior_band;
  }
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

// The corpus's model error over every row, and each row's band widened by the other sources'.
void attach_model_error(ValidationReport& report) {
  std::vector<const ValidationRow*> all;
  std::vector<ValidationRow*> targets;
  for (auto& r : report.rows) {
    all.push_back(&r);
    targets.push_back(&r);
  }
  report.model_error = model_error_of(all);
  report.model_error_note = widen_by_other_sources(targets, report.rows);
}

}  // namespace

ValidationReport validate_corpus(const std::vector<std::string>& files, const ValidateOptions& options,
                                 const DataDir& data) {
  ValidationReport report;
  for (const auto& f : files) report.rows.push_back(validate_row(f, data));
  // Row files as a reader finds them in the repository: relative to the data directory when under it.
  const auto shown = [&](const std::string& f) {
    const fs::path rel = fs::weakly_canonical(f).lexically_relative(fs::weakly_canonical(data.root()));
    return !rel.empty() && *rel.begin() != ".." ? rel.string() : f;
  };
  check_unique_names(report.rows);
  for (auto& r : report.rows) r.file = shown(r.file);
  attach_model_error(report);
  report.summaries = summaries_of(report.rows);
  if (options.calibrate_on.empty()) return report;

  // Rows by source, in file order.
  std::map<std::string, std::vector<std::size_t>> by_source;
  for (std::size_t i = 0; i < report.rows.size(); ++i) by_source[report.rows[i].source.source].push_back(i);

  CalibrationRun run;
  if (options.calibrate_on == "all") {
    run.mode = "leave-one-out";
    for (const auto& [source, members] : by_source) {
      if (int(members.size()) < kMinRowsForLeaveOneOut) {
        run.sources_skipped.push_back(source + " (" + std::to_string(members.size()) + " row)");
        continue;
      }
      std::map<std::size_t, EngineOverheadFit> fitted;
      for (std::size_t i : members) fitted[i] = fit_engine_overhead(files[i], data);
      for (std::size_t k : members) {
        CalibratedRow c;
        std::vector<EngineOverheadFit> others;
        for (std::size_t j : same_deployment(report.rows, members, k)) {
          others.push_back(fitted[j]);
          c.calibrated_on.push_back(report.rows[j].name);
        }
        const EngineTerms terms = carried_engine_terms(others);
        c.row = validate_row(files[k], terms, data);
        if (terms.negative > 0) c.row.warnings.push_back(negative_fit_note(terms.negative, int(others.size())));
        c.row.file = shown(c.row.file);
        run.rows.push_back(std::move(c));
      }
    }
  } else {
    const auto it = std::find_if(report.rows.begin(), report.rows.end(),
                                 [&](const ValidationRow& r) { return r.name == options.calibrate_on; });
    if (it == report.rows.end()) {
      std::string known;
      for (const auto& r : report.rows) known += (known.empty() ? "" : ", ") + r.name;
      throw Error(SourceLocation{"--calibrate-on", 0, 0}, "",
                  "no row named '" + options.calibrate_on + "' (rows: " + known + "; or 'all')");
    }
    run.mode = "on " + it->name;
    const double fitted = fit_spec_extra_per_cycle(files[std::size_t(it - report.rows.begin())], data);
    for (std::size_t i : by_source[it->source.source]) {
      if (report.rows[i].name == it->name) continue;
      CalibratedRow c{validate_row(files[i], transferable_spec_extra(fitted), data), {it->name}};
      if (fitted < 0) c.row.warnings.push_back(negative_fit_note(1, 1));
      c.row.file = shown(c.row.file);
      run.rows.push_back(std::move(c));
    }
    if (run.rows.empty()) {
      throw Error(SourceLocation{"--calibrate-on", 0, 0}, "",
                  "source '" + it->source.source + "' has no other row to predict");
    }
  }
  std::vector<ValidationRow*> targets;
  std::vector<const ValidationRow*> predicted;
  for (auto& c : run.rows) {
    targets.push_back(&c.row);
    predicted.push_back(&c.row);
  }
  widen_by_other_sources(targets, report.rows);
  run.summary = summarize_errors(run.mode, predicted);
  report.calibration = std::move(run);
  return report;
}

}  // namespace specsim
