// A plain rate predicted at another batch of one deployment (validate_corpus.hpp, BatchTransfer;
// docs/validation.md#batch-transfer).
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "specsim/concurrency.hpp"
#include "specsim/monte_carlo.hpp"
#include "specsim/prior_band.hpp"
#include "specsim/validate_corpus.hpp"

namespace specsim {

namespace {

// What two rows must share for one's plain run to predict the other's at another batch: everything a
// plain step depends on but the batch, and how the rate was measured.
std::string deployment_key(const ValidationRow& row, const Scenario& s, const std::vector<InterventionKey>& keys) {
  const Parallelism& p = s.parallel;
  std::string key = row.source.source + "|" + row.model + "|" + row.gpu + "|" + s.topology.name + "|" +
                    std::to_string(p.tp) + "/" + std::to_string(p.pp) + "/" + std::to_string(p.ep) + "/" +
                    std::to_string(p.attention_dp) + "|" + std::to_string(s.context_tokens) + "|" + row.engine + "|" +
                    (s.measurements.baseline_includes_prefill ? "e2e" : "step") + "|" +
                    (s.measurements.baseline_tpot_s ? "tpot" : "");
  for (const InterventionKey& k : keys) {
    if (!k.plain_too) continue;
    const auto it = row.settings.find(k.key);
    key += "|" + k.key + "=" + (it == row.settings.end() ? "" : it->second);
  }
  return key;
}

// The speculative side of a transfer: `to_file`'s speculative run predicted on the calibration of
// `from` (a row's file as written: its plain run), as predict --concurrency carries a calibration to
// another level, and its band: the priors' spread, widened by `error` where there is one.
// Returns the priors' band, which the transfer's own error widens later.
PredictionBand predict_spec_transfer(BatchTransfer& t, const std::string& to_file, const Scenario& from,
                                     const DataDir& data, const ModelRules& rules,
                                     const std::optional<ModelError>& error) {
  Scenario to = load_validation_row(to_file, data, rules);
  to.as_measured = std::make_shared<const Scenario>(from);
  to.model_error.reset();
  const CycleModel model(std::move(to));
  const Prediction p = model.predict();
  t.measured_spec_tokens_per_s = *model.scenario().measurements.speculative_tokens_per_s;
  t.predicted_spec_tokens_per_s = p.spec_tokens_per_s;
  PredictionBand priors = prior_band(model, p);
  const PredictionBand band = error ? with_model_error(priors, p.spec_tokens_per_s, *error) : priors;
  t.spec_own_p10_tokens_per_s = t.spec_p10_tokens_per_s = band.p10_tokens_per_s;
  t.spec_own_p90_tokens_per_s = t.spec_p90_tokens_per_s = band.p90_tokens_per_s;
  return priors;
}

// specsim's error on the fit set's scored rows from other sources than `source` (as a row's band
// carries it); none below the minimum.
std::optional<ModelError> error_without(const std::string& source, const std::vector<ValidationRow>& rows,
                                        const ModelRules& rules) {
  std::vector<const ValidationRow*> pool;
  for (const ValidationRow& r : rows) {
    if (r.scored() && r.set == "fit" && r.source.source != source) pool.push_back(&r);
  }
  return model_error_of(pool, rules);
}

}  // namespace

std::vector<BatchTransfer> derive_batch_transfers(const std::vector<std::string>& files,
                                                  const std::vector<ValidationRow>& rows,
                                                  const std::vector<InterventionKey>& keys, const DataDir& data,
                                                  const ModelRules& rules) {
  // Per deployment, the first row (file order) at each batch.
  std::map<std::string, std::map<int, std::size_t>> deployments;
  std::vector<Scenario> loaded;
  loaded.reserve(files.size());
  for (std::size_t i = 0; i < files.size() && i < rows.size(); ++i) {
    // The file as written: a setting its speculative run changed (validation.applied) is not the
    // plain run's.
    Scenario s = load_scenario(files[i], {}, data);
    s.rules = rules;
    deployments[deployment_key(rows[i], s, keys)].try_emplace(rows[i].batch, i);
    loaded.push_back(std::move(s));
  }
  std::vector<BatchTransfer> out;
  std::map<std::string, std::optional<ModelError>> errors;  // by source
  std::map<std::size_t, PredictionBand> priors;               // by index in out, where scored
  for (const auto& [key, by_batch] : deployments) {
    if (by_batch.size() < 2) continue;
    const std::size_t from = by_batch.begin()->second;
    Scenario s = loaded[from];
    s.concurrency.clear();
    for (auto it = std::next(by_batch.begin()); it != by_batch.end(); ++it) s.concurrency.push_back(it->first);
    const ConcurrencyPrediction p = predict_concurrency(s, LevelBands::kSkip);
    for (const ConcurrencyLevel& level : p.levels) {
      if (!level.feasible()) continue;
      const ValidationRow& to = rows[by_batch.at(level.concurrency)];
      BatchTransfer t;
      t.source = to.source.source;
      t.set = to.set;
      t.from_row = rows[from].name;
      t.from_batch = rows[from].batch;
      t.to_row = to.name;
      t.to_batch = to.batch;
      t.measured_plain_tokens_per_s = to.measured_plain_tokens_per_s;
      t.predicted_plain_tokens_per_s = level.plain_aggregate_tokens_per_s;
      if (to.scored()) {
        auto [it, fresh] = errors.try_emplace(to.source.source);
        if (fresh) it->second = error_without(to.source.source, rows, rules);
        priors.emplace(out.size(), predict_spec_transfer(t, files[by_batch.at(level.concurrency)], loaded[from],
                                                         data, rules, it->second));
      }
      out.push_back(std::move(t));
    }
  }
  // Each band widened by the transfer error of the fit set's other sources, measured on the bands
  // above (the measured batch's error alone: transfer_error_of reads spec_own_p10/p90, which this
  // leaves as they are), as a row's band is by their row error.
  if (rules.batch_transfer_error) {
    std::map<std::string, std::optional<TransferError>> transfer_errors;  // by source
    for (const auto& [i, band] : priors) {
      BatchTransfer& t = out[i];
      const std::optional<ModelError>& error = errors.at(t.source);
      auto [it, fresh] = transfer_errors.try_emplace(t.source);
      if (fresh) it->second = transfer_error_of(out, t.source, rules);
      if (!error || !it->second) continue;
      ModelError e = *error;
      e.transfer_sigma_per_ln_batch = it->second->sigma_per_ln_batch;
      const PredictionBand b =
          with_model_error(band, t.predicted_spec_tokens_per_s, with_batch_transfer(e, t.to_batch, t.from_batch));
      t.spec_p10_tokens_per_s = b.p10_tokens_per_s;
      t.spec_p90_tokens_per_s = b.p90_tokens_per_s;
    }
  }
  std::sort(out.begin(), out.end(), [](const BatchTransfer& a, const BatchTransfer& b) {
    return std::tie(a.source, a.from_row, a.to_batch) < std::tie(b.source, b.from_row, b.to_batch);
  });
  return out;
}

std::optional<TransferError> transfer_error_of(const std::vector<BatchTransfer>& transfers,
                                               const std::string& without_source, const ModelRules& rules) {
  std::map<std::string, int> sources;
  std::vector<const BatchTransfer*> pool;
  for (const BatchTransfer& t : transfers) {
    if (t.set != "fit" || !t.has_spec() || t.source == without_source || t.to_batch == t.from_batch) continue;
    pool.push_back(&t);
    ++sources[t.source];
  }
  if (int(pool.size()) < kMinTransferErrorPoints || int(sources.size()) < kMinModelErrorSources) return std::nullopt;
  const double z90 = boost::math::quantile(boost::math::normal(), 0.9);
  double excess = 0.0, distance = 0.0;
  for (const BatchTransfer* t : pool) {
    const double w = 1.0 / sources.at(t->source);
    const double r = std::log(t->measured_spec_tokens_per_s / t->predicted_spec_tokens_per_s);
    // The band's own sigma on the residual's side.
    const double own = (r < 0.0 ? std::log(t->predicted_spec_tokens_per_s / t->spec_own_p10_tokens_per_s)
                                : std::log(t->spec_own_p90_tokens_per_s / t->predicted_spec_tokens_per_s)) /
                       z90;
    const double d = std::log(double(t->to_batch) / t->from_batch);
    excess += w * (r * r - own * own);
    distance += w * d * d;
  }
  TransferError e;
  e.points = int(pool.size());
  e.sources = int(sources.size());
  e.sigma_per_ln_batch = std::sqrt(std::max(0.0, excess) / distance);
  if (rules.model_error_small_sample) {
    e.sigma_per_ln_batch *=
        boost::math::quantile(boost::math::students_t_distribution<double>(double(e.sources - 1)), 0.9) / z90;
  }
  return e;
}

std::vector<BatchTransferSummary> summarize_batch_transfers(const std::vector<BatchTransfer>& transfers) {
  std::vector<BatchTransferSummary> out;
  for (const std::string group : {"check", "fit", "all"}) {
    BatchTransferSummary s;
    s.group = group;
    std::vector<double> abs_errors;
    std::set<std::string> sources;
    double signed_sum = 0.0;
    for (const BatchTransfer& t : transfers) {
      if (group != "all" && t.set != group) continue;
      const double e = t.error();
      abs_errors.push_back(std::fabs(e));
      signed_sum += e;
      sources.insert(t.source);
      if (std::fabs(e) >= s.worst_abs_error) {
        s.worst_abs_error = std::fabs(e);
        s.worst_point = t.from_row + " -> " + t.to_row;
      }
    }
    s.points = int(abs_errors.size());
    s.sources = int(sources.size());
    s.median_abs_error = median(abs_errors);
    s.mean_signed_error = abs_errors.empty() ? 0.0 : signed_sum / double(abs_errors.size());
    std::vector<double> spec_abs, widths;
    double spec_signed = 0.0;
    for (const BatchTransfer& t : transfers) {
      if ((group != "all" && t.set != group) || !t.has_spec()) continue;
      spec_abs.push_back(std::fabs(t.spec_error()));
      spec_signed += t.spec_error();
      s.spec_in_band += t.spec_in_band() ? 1 : 0;
      widths.push_back((t.spec_p90_tokens_per_s - t.spec_p10_tokens_per_s) / t.predicted_spec_tokens_per_s);
    }
    s.spec_points = int(spec_abs.size());
    s.spec_median_abs_error = median(spec_abs);
    s.spec_mean_signed_error = spec_abs.empty() ? 0.0 : spec_signed / double(spec_abs.size());
    s.spec_median_band_width = median(widths);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace specsim
