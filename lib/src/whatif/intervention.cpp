#include "specsim/intervention.hpp"

#include <set>

#include "util/yaml_reader.hpp"

namespace specsim {

using detail::YamlReader;

InterventionCatalogue load_interventions(const std::string& path) {
  YamlReader r = YamlReader::load_file(path);
  r.expect_header("interventions");
  InterventionCatalogue c;
  c.file = path;
  c.name = r.string("name");
  c.description = r.optional_string("description", "");
  r.ignore("source");
  std::set<std::string> names;
  for (YamlReader i : r.sequence("interventions")) {
    Intervention v;
    v.name = i.string("name");
    if (!names.insert(v.name).second) i.fail("name", "'" + v.name + "' appears twice in the catalogue");
    v.description = i.optional_string("description", "");
    for (YamlReader p : i.sequence("patches")) {
      const std::string patch = p.node().IsScalar() ? p.node().Scalar() : "";
      if (patch.find('=') == std::string::npos) p.fail_here("expected 'key=value' or 'key*=factor', got '" + patch + "'");
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
    if (i.has("constraints")) {
      for (YamlReader k : i.sequence("constraints")) {
        Constraint con;
        for (YamlReader w : k.sequence("when")) {
          const std::string cond = w.node().IsScalar() ? w.node().Scalar() : "";
          const auto eq = cond.find('=');
          if (eq == std::string::npos || eq == 0) w.fail_here("expected 'key=value', got '" + cond + "'");
          con.when.emplace_back(cond.substr(0, eq), cond.substr(eq + 1));
        }
        con.reason = k.string("reason");
        k.ignore("source");
        k.finish();
        v.constraints.push_back(con);
      }
    }
    i.ignore("constraints");
    i.finish();
    c.interventions.push_back(std::move(v));
  }
  r.finish();
  return c;
}

}  // namespace specsim
