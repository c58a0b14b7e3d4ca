// The readers of what validation stands on: models/model-error.yaml (specsim's held-out error,
// which widens every band), validation/split.yaml (the sources that fit and those that check), and
// a validation row's `validation:` header (where its numbers come from).
#include <filesystem>
#include <string>

#include "io/readers.hpp"
#include "specsim/load.hpp"
#include "specsim/scenario.hpp"
#include "util/yaml_reader.hpp"

namespace specsim {

using detail::YamlReader;

ModelError detail::load_model_error_file(const std::string& path) {
  YamlReader r = YamlReader::load_file(path);
  r.expect_header("model_error");
  r.optional_string("description", "");
  r.string("source");
  ModelError e;
  e.origin = path;
  e.rows = int(r.integer("rows", 1, 100000));
  e.sources = int(r.integer("sources", 1, e.rows));
  {
    YamlReader q = r.child("residual_ln");
    e.residual_p10 = q.number("p10", -5.0, 5.0);
    e.residual_p50 = q.number("p50", -5.0, 5.0);
    e.residual_p90 = q.number("p90", -5.0, 5.0);
    if (!(e.residual_p10 <= e.residual_p50 && e.residual_p50 <= e.residual_p90)) q.fail("p50", "must lie within [p10, p90]");
    q.finish();
  }
  // ln units: a sigma of 1 would put the model's own p90 at 13x its p10, not an error a prediction can carry.
  e.prior_sigma_rms = r.number("prior_sigma_rms", 0.0, 1.0);
  e.prior_sigma_below_rms = r.optional_number("prior_sigma_below_rms", e.prior_sigma_rms, 0.0, 1.0);
  e.prior_sigma_above_rms = r.optional_number("prior_sigma_above_rms", e.prior_sigma_rms, 0.0, 1.0);
  // t_0.9 over z_0.9 runs from 1 (infinitely many sources) to 2.4 (two sources).
  e.small_sample_factor = r.optional_number("small_sample_factor", 1.0, 1.0, 3.0);
  e.sigma = r.number("sigma", 0.0, 1.0);
  e.sigma_below = r.optional_number("sigma_below", e.sigma, 0.0, 1.0);
  e.sigma_above = r.optional_number("sigma_above", e.sigma, 0.0, 1.0);
  if (auto g = r.optional_child("gain_residual_ln")) {
    e.gain_pairs = int(g->integer("pairs", 1, 1000000));
    e.gain_residual_p10 = g->number("p10", -5.0, 5.0);
    e.gain_residual_p90 = g->number("p90", -5.0, 5.0);
    if (e.gain_residual_p10 > e.gain_residual_p90) g->fail("p10", "must not exceed p90");
    g->finish();
  }
  if (auto t = r.optional_child("batch_transfer")) {
    e.transfer_points = int(t->integer("points", 1, 1000000));
    e.transfer_sources = int(t->integer("sources", 1, e.transfer_points));
    e.transfer_sigma_per_ln_batch = t->number("sigma_per_ln_batch", 0.0, 1.0);
    t->finish();
  }
  r.finish();
  return e;
}

ValidationSplit load_validation_split(const std::string& path) {
  YamlReader r = YamlReader::load_file(path);
  r.expect_header("validation_split");
  r.optional_string("description", "");
  r.string("rule");
  r.string("salt");
  ValidationSplit split;
  split.file = path;
  const auto read_sources = [&](const std::string& key, bool frozen) {
    if (!r.has(key)) return;
    YamlReader sources = r.child(key);
    if (!sources.node().IsMap()) sources.fail_here("expected a map of source id -> {group, set, ...}");
    for (const auto& kv : sources.node()) {
      const std::string id = kv.first.Scalar();
      YamlReader entry = sources.child(id);
      const std::string set = entry.choice("set", {"fit", "check"});
      if (!frozen && set != "check") entry.fail("set", "a source found after the split was frozen goes to the check set");
      entry.optional_string("group", "");
      entry.optional_string("added", "");
      entry.optional_names("engines");
      entry.optional_names("interconnects");
      entry.finish();
      if (!split.set_of.emplace(id, set).second) sources.fail(id, "lists a source twice");
      if (!frozen) split.added.insert(id);
    }
  };
  read_sources("sources", true);
  read_sources("added", false);
  for (const auto& id : r.optional_names("not_scored")) {
    if (split.set_of.count(id)) r.fail("not_scored", "'" + id + "' is also in a set");
    split.not_scored.insert(id);
  }
  r.finish();
  return split;
}

std::string validation_split_file(const DataDir& data) {
  return (std::filesystem::path(data.root()) / "validation" / "split.yaml").string();
}

std::string model_error_file(const DataDir& data) {
  return (std::filesystem::path(data.root()) / "models" / "model-error.yaml").string();
}

// A validation row's source header (docs/validation.md). Every key is required: a row whose origin
// a reader cannot trace is not evidence.
ValidationSource detail::read_validation_source(YamlReader& v) {
  ValidationSource out;
  out.source = v.string("source");
  if (out.source.empty() || out.source.find_first_of(" /\t") != std::string::npos) {
    v.fail("source", "expected a short id without spaces or '/' (rows of one source share it)");
  }
  out.url = v.string("url");
  if (out.url.rfind("https://", 0) != 0 && out.url.rfind("http://", 0) != 0) {
    v.fail("url", "expected a public address starting with https://, got '" + out.url + "'");
  }
  out.published = v.string("published");
  const auto digits = [&](std::size_t from, std::size_t n) {
    for (std::size_t i = from; i < from + n; ++i) {
      if (i >= out.published.size() || out.published[i] < '0' || out.published[i] > '9') return false;
    }
    return true;
  };
  const std::size_t len = out.published.size();
  const bool date_ok = (len == 7 || len == 10) && digits(0, 4) && out.published[4] == '-' && digits(5, 2) &&
                       (len == 7 || (out.published[7] == '-' && digits(8, 2)));
  if (!date_ok) v.fail("published", "expected a date YYYY-MM or YYYY-MM-DD, got '" + out.published + "'");
  out.engine_version = v.string("engine_version");
  out.measured = v.string("measured");
  out.acceptance_published = v.string("acceptance_published");
  out.assumptions = v.texts("assumptions");  // `[]` when the source states everything
  out.inputs_from_speculative_run = v.optional_string("inputs_from_speculative_run", "");
  if (v.has("applied")) {
    out.applied = v.texts("applied");
    for (const std::string& patch : out.applied) {
      const std::size_t eq = patch.find('=');
      const std::string key = patch.substr(0, eq);
      if (eq == std::string::npos || eq == 0) {
        v.fail("applied", "expected key=value (a setting the speculative run changed), got '" + patch + "'");
      } else if (key.rfind("measurements.", 0) == 0 || key.rfind("validation.", 0) == 0) {
        v.fail("applied", "'" + key + "' is what was measured, not a setting the speculative run changed");
      }
    }
  }
  v.finish();
  return out;
}

}  // namespace specsim
