// A plain rate predicted at another batch of one deployment (validate_corpus.hpp, BatchTransfer;
// docs/validation.md#batch-transfer).
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
void predict_spec_transfer(BatchTransfer& t, const std::string& to_file, const Scenario& from, const DataDir& data,
                           const ModelRules& rules, const std::optional<ModelError>& error) {
  Scenario to = load_validation_row(to_file, data, rules);
  to.as_measured = std::make_shared<const Scenario>(from);
  to.model_error.reset();
  const CycleModel model(std::move(to));
  const Prediction p = model.predict();
  t.measured_spec_tokens_per_s = *model.scenario().measurements.speculative_tokens_per_s;
  t.predicted_spec_tokens_per_s = p.spec_tokens_per_s;
  PredictionBand band = prior_band(model, p);
  if (error) band = with_model_error(std::move(band), p.spec_tokens_per_s, *error);
  t.spec_p10_tokens_per_s = band.p10_tokens_per_s;
  t.spec_p90_tokens_per_s = band.p90_tokens_per_s;
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
        predict_spec_transfer(t, files[by_batch.at(level.concurrency)], loaded[from], data, rules, it->second);
      }
      out.push_back(std::move(t));
    }
  }
  std::sort(out.begin(), out.end(), [](const BatchTransfer& a, const BatchTransfer& b) {
    return std::tie(a.source, a.from_row, a.to_batch) < std::tie(b.source, b.from_row, b.to_batch);
  });
  return out;
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
