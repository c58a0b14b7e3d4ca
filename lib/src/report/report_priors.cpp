// priors' views: the registry of priors (priors.hpp) and the engine terms a band draws
// (prior_band.hpp), each as its row states it.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>

#include "report/csv.hpp"
#include "specsim/prior_band.hpp"
#include "specsim/priors.hpp"
#include "specsim/report.hpp"
#include "specsim/units.hpp"

namespace specsim {

namespace {

// A value in its unit: a duration with its prefix, a dimensionless number to four significant digits.
std::string in_unit(double v, PriorUnit unit) {
  if (unit == PriorUnit::kSeconds) return units::format_duration(v);
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", v);
  return text;
}

// ordered_json: scripts read these names in this order.
nlohmann::ordered_json prior_json(const Prior& p) {
  nlohmann::ordered_json j;
  j["key"] = p.key;
  j["label"] = p.label;
  j["value"] = p.estimate.value;
  j["p10"] = p.estimate.p10;
  j["p90"] = p.estimate.p90;
  j["unit"] = to_string(p.unit);
  j["drawn"] = p.drawn();
  if (std::isfinite(p.draw_min)) j["draw_min"] = p.draw_min;
  if (std::isfinite(p.draw_max)) j["draw_max"] = p.draw_max;
  if (p.second_reading) {
    j["second_reading"] = {{"label", p.second_reading->label}, {"weight", p.second_reading->weight}};
  }
  j["feeds"] = p.feeds;
  j["source"] = p.source;
  j["evidence"] = p.evidence;
  return j;
}

nlohmann::ordered_json priors_json() {
  nlohmann::ordered_json j;
  j["priors"] = nlohmann::ordered_json::array();
  for (const Prior& p : priors()) j["priors"].push_back(prior_json(p));
  j["readings"] = nlohmann::ordered_json::array();
  for (const CalibrationReading& r : calibration_readings()) {
    j["readings"].push_back({{"key", r.key},
                             {"label", r.label},
                             {"point", r.point},
                             {"other", r.other},
                             {"weight", r.weight},
                             {"settles", r.settles},
                             {"source", r.source}});
  }
  j["engine_terms"] = nlohmann::ordered_json::array();
  for (const EngineTerm& t : engine_terms()) {
    j["engine_terms"].push_back({{"label", t.label}, {"key", t.key}, {"charged", t.charged}});
  }
  return j;
}

std::string prior_text(const Prior& p) {
  std::string text = std::string(p.label) + " (" + std::string(p.key) + "): " + in_unit(p.estimate.value, p.unit) +
                     ", p10-p90 " + in_unit(p.estimate.p10, p.unit) + " to " + in_unit(p.estimate.p90, p.unit) + "\n";
  text += "  feeds: " + std::string(p.feeds) + "\n";
  if (std::isfinite(p.draw_min)) text += "  draws below " + in_unit(p.draw_min, p.unit) + " are cut there\n";
  if (std::isfinite(p.draw_max)) text += "  draws above " + in_unit(p.draw_max, p.unit) + " are cut there\n";
  if (p.second_reading) {
    text += "  also drawn: " + std::string(p.second_reading->label) + " (the calibration's second reading in " +
            units::format_fixed(100.0 * p.second_reading->weight, 0) + "% of draws, where it has one)\n";
  }
  text += "  source: " + std::string(p.evidence) + " (" + std::string(p.source) + ")\n";
  return text;
}

std::string priors_text() {
  std::string text = "specsim priors: " + std::to_string(priors().size()) +
                     " figures used where a scenario neither sets nor measures them (lib/src/model/priors.cpp)\n";
  for (const Prior& p : priors()) text += "\n" + prior_text(p);
  text += "\nreadings: a measurement with two readings; the point takes one, the band draws the other\n";
  for (const CalibrationReading& r : calibration_readings()) {
    text += "  " + std::string(r.label) + " (" + std::string(r.key) + "): the point reads " + std::string(r.point) +
            "; " + units::format_fixed(100.0 * r.weight, 0) + "% of draws read " + std::string(r.other) +
            "; settled by " + std::string(r.settles) + " (" + std::string(r.source) + ")\n";
  }
  text += "\nengine terms: each engine's own value and p10-p90, in models/engines/ENGINE.yaml\n";
  for (const EngineTerm& t : engine_terms()) {
    text += "  " + std::string(t.label) + " (" + std::string(t.key) + "): " + std::string(t.charged) + "\n";
  }
  return text;
}

}  // namespace

std::string render_priors(Format format) {
  switch (format) {
    case Format::kText: return priors_text();
    case Format::kJson: return priors_json().dump() + "\n";
    case Format::kCsv:
      return csv_table({"key", "label", "value", "p10", "p90", "unit", "drawn", "draw_min", "draw_max", "feeds",
                        "source", "evidence"},
                       nlohmann::json(priors_json()["priors"]));
  }
  return "";
}

}  // namespace specsim
