#include "io/interventions.hpp"

#include <set>

#include "specsim/interventions.hpp"
#include "specsim/preconditions.hpp"
#include "specsim/scenario_fields.hpp"

namespace specsim::detail {

namespace {

// One alternative of a condition: a map of scenario facts to the value, or list of values, each
// must take (`{link: pcie, p2p: true}`, `{compute_capability: [90, 100]}`).
std::vector<Precondition> read_conjunction(YamlReader& m) {
  std::vector<Precondition> all;
  for (const auto& item : m.node()) {
    const std::string key = item.first.Scalar();
    Precondition p{key, m.optional_names(key)};
    if (p.values.empty()) m.fail(key, "needs at least one value");
    for (const std::string& v : p.values) {
      if (const std::string problem = fact_value_problem(key, v); !problem.empty()) m.fail(key, problem);
    }
    all.push_back(std::move(p));
  }
  return all;
}

// `key` of `r`: one map (every fact holds) or a list of maps (one of them holds); absent, always.
Condition read_condition(YamlReader& r, const std::string& key) {
  Condition c;
  if (!r.has(key)) return c;
  if (r.node()[key].IsMap()) {
    YamlReader m = r.child(key);
    c.any.push_back(read_conjunction(m));
    m.finish();
    return c;
  }
  for (YamlReader m : r.sequence(key)) {
    if (!m.node().IsMap()) m.fail_here("expected a map of scenario facts (e.g. {link: pcie, p2p: true})");
    c.any.push_back(read_conjunction(m));
    m.finish();
  }
  if (c.any.empty()) r.fail(key, "an empty list never holds: leave the key out for 'always'");
  return c;
}

Intervention read_intervention(YamlReader& i) {
  Intervention v;
  v.name = i.string("name");
  v.description = i.optional_string("description", "");
  for (YamlReader p : i.sequence("patches")) {
    const std::string patch = p.node().IsScalar() ? p.node().Scalar() : "";
    const std::size_t eq = patch.find('=');
    if (eq == std::string::npos) p.fail_here("expected 'key=value' or 'key*=factor', got '" + patch + "'");
    // rank sets an intervention on the loaded scenario, so its keys are fields (scenario_fields.hpp).
    const std::string key = patch.substr(0, eq > 0 && patch[eq - 1] == '*' ? eq - 1 : eq);
    if (!is_scenario_field(key)) {
      std::string keys;
      for (const std::string& k : scenario_field_keys()) keys += (keys.empty() ? "" : ", ") + k;
      p.fail_here("'" + key + "' is not a key an intervention can set on a loaded scenario; the keys: " + keys);
    }
    v.patches.push_back(patch);
  }
  if (auto e = i.optional_child("effort")) {
    v.effort_launches = e->optional_number("launches", 1.0, 0.0, 1e4);
    // Gain per launch divides by it: every change costs some part of a server launch.
    if (v.effort_launches <= 0.0) e->fail("launches", "must be > 0 (a change made at the next launch is 1; half of one, 0.5)");
    if (auto h = e->optional_quantity("time", units::Quantity::kDuration)) v.effort_hours = *h / 3600.0;
    e->finish();
  }
  v.group = i.optional_string("group", "");
  v.risk = i.optional_string("risk", "");
  v.source = i.optional_string("source", "");
  v.when = read_condition(i, "when");
  if (i.has("constraints")) {
    for (YamlReader k : i.sequence("constraints")) {
      Constraint con;
      con.when = read_condition(k, "when");
      if (con.when.always()) k.fail("when", "a constraint needs the condition under which the intervention fails");
      con.reason = k.string("reason");
      k.ignore("source");
      k.finish();
      v.constraints.push_back(std::move(con));
    }
  }
  i.ignore("constraints");
  i.finish();
  return v;
}

}  // namespace

std::vector<Intervention> read_interventions(YamlReader& r, const std::string& key) {
  std::vector<Intervention> out;
  std::set<std::string> names;
  for (YamlReader i : r.sequence(key)) {
    Intervention v = read_intervention(i);
    if (!names.insert(v.name).second) i.fail("name", "'" + v.name + "' appears twice in the list");
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace specsim::detail

namespace specsim {

InterventionCatalogue load_interventions(const std::string& path) {
  detail::YamlReader r = detail::YamlReader::load_file(path);
  r.expect_header("interventions");
  InterventionCatalogue c;
  c.file = path;
  c.name = r.string("name");
  c.description = r.optional_string("description", "");
  r.ignore("source");
  c.interventions = detail::read_interventions(r, "interventions");
  r.finish();
  return c;
}

}  // namespace specsim
