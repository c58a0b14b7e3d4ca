// specsim._core: the library as a Python extension (pybind11). Every function returns the library's
// own JSON view (report.hpp) as text, which specsim/__init__.py parses: a dict from Python has the
// keys `specsim predict --json` prints, because it is the same rendering, not a second one.
//
// A Scenario keeps the name or path and the `key=value` patches it was loaded with beside the loaded
// value: predict and rank use the value, while sweep (and rank for an intervention whose keys are not
// scenario fields) load the scenario again from name and patches (whatif.hpp), as the command line does.
//
// specsim::Error becomes specsim.Error with the library's message (file:line:column: key: what) and
// its parts as attributes.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "specsim/concurrency.hpp"
#include "specsim/cycle.hpp"
#include "specsim/emit.hpp"
#include "specsim/error.hpp"
#include "specsim/intervention.hpp"
#include "specsim/launch_checks.hpp"
#include "specsim/load.hpp"
#include "specsim/memory_fit.hpp"
#include "specsim/report.hpp"
#include "specsim/validate_corpus.hpp"
#include "specsim/whatif.hpp"

namespace py = pybind11;

namespace specsim::python {

namespace {

// The data directory every call resolves names in: default_data_dir() until set_data_dir (an
// installed package points it at <prefix>/share/specsim, specsim/__init__.py).
DataDir& data_dir() {
  static DataDir data;
  return data;
}

struct PyScenario {
  std::string source;                // the name or path given to load()
  std::vector<std::string> patches;  // key=value, as `--set` takes them
  Scenario scenario;
};

PyScenario load(const std::string& name_or_path, const std::vector<std::string>& patches) {
  return {name_or_path, patches, load_scenario(name_or_path, patches, data_dir())};
}

// predict --json as the command prints it: the concurrency table when the scenario lists levels,
// else one batch, with the launch problems.
std::string predict_document(const PyScenario& p) {
  Scenario s = p.scenario;
  std::vector<std::string> warnings = acceptance_warnings(s);
  const std::vector<LaunchProblem> problems = launch_problems(s);
  for (const auto& problem : problems) warnings.push_back(describe(problem));
  const auto with_problems = [&](const std::string& out) { return problems.empty() ? out : with_launch_problems(out, problems); };
  if (!s.concurrency.empty()) {
    return with_problems(render_concurrency(s.name, predict_concurrency(s), Format::kJson, warnings));
  }
  require_memory_fit(s);  // a deployment that cannot load predicts nothing
  const CycleModel model(std::move(s));
  return with_problems(render_prediction(model, model.predict(), Format::kJson, warnings));
}

// `--emit ENGINE`'s engine; an unknown name lists the three.
Engine engine_named(const std::string& name) {
  if (const auto e = parse_engine(name)) return *e;
  std::string valid;
  for (const auto& n : engine_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw Error({"--emit", 0, 0}, "", "'" + name + "' is not an engine (" + valid + ")");
}

// The launch `predict --emit ENGINE` prints for the scenario as it stands.
EmittedLaunch predict_launch(const PyScenario& p, const std::string& engine) {
  return emit_launch(p.scenario, engine_named(engine));
}

// The launch `sweep --emit ENGINE` prints: the best point of the grid over `vary`, or with
// concurrency levels (these, or the scenario's) the best per level. Raises when no point can run.
EmittedLaunch sweep_launch(const PyScenario& p, const std::vector<std::string>& vary, const std::string& concurrency,
                           const std::string& engine) {
  const Engine e = engine_named(engine);
  std::vector<SweepAxis> axes;
  for (const auto& v : vary) axes.push_back(parse_vary(v));
  std::vector<std::string> patches = p.patches;
  if (!concurrency.empty()) patches.push_back("workload.concurrency=" + concurrency);
  if (!concurrency.empty() || !p.scenario.concurrency.empty()) {
    const std::vector<ConcurrencySweep> buckets = sweep_by_workload(p.source, patches, axes, data_dir());
    if (buckets.size() != 1) {
      throw Error({"--emit", 0, 0}, "", "one launch per workload: fix the condition axes with set= (" +
                                            std::to_string(buckets.size()) + " buckets)");
    }
    return emit_launch(emit_levels(p.source, patches, buckets.front(), data_dir()), e);
  }
  if (axes.empty()) throw Error("emit: vary is required (a dict of key -> values) unless there are concurrency levels");
  const SweepResult r = sweep(p.source, patches, axes, data_dir(), {}, nullptr, 1);
  if (r.points.empty() || !r.points.front().infeasible.empty()) {
    throw Error({"--emit", 0, 0}, "", "no point of the sweep fits in GPU memory: nothing to launch");
  }
  for (auto& patch : point_patches(r.keys, r.points.front())) patches.push_back(std::move(patch));
  return emit_launch(load_scenario(p.source, patches, data_dir()), e);
}

// What `specsim predict|sweep --emit ENGINE` prints: the launch as a shell snippet.
std::string emit_script(const PyScenario& p, const std::string& engine, const std::vector<std::string>& vary,
                        const std::string& concurrency) {
  if (vary.empty() && concurrency.empty()) return predict_launch(p, engine).script;
  return sweep_launch(p, vary, concurrency, engine).script;
}

// predict --json, with `emit` an engine's launch under "launch" (predict --json --emit ENGINE).
std::string predict_json(const PyScenario& p, const std::string& emit) {
  const std::string out = predict_document(p);
  return emit.empty() ? out : with_launch(out, predict_launch(p, emit));
}


// sweep --json: the best point per concurrency level when there are levels (the scenario's, or
// `concurrency` given here, which replaces them), else every point of the grid.
std::string sweep_json(const PyScenario& p, const std::vector<std::string>& vary, const std::string& concurrency) {
  std::vector<SweepAxis> axes;
  for (const auto& v : vary) axes.push_back(parse_vary(v));
  std::vector<std::string> patches = p.patches;
  if (!concurrency.empty()) patches.push_back("workload.concurrency=" + concurrency);
  if (!concurrency.empty() || !p.scenario.concurrency.empty()) {
    return render_workload_sweep(sweep_by_workload(p.source, patches, axes, data_dir()), Format::kJson);
  }
  if (axes.empty()) throw Error("sweep: vary is required (a dict of key -> values) unless there are concurrency levels");
  return render_sweep(sweep(p.source, patches, axes, data_dir()), Format::kJson);
}

// rank --json over `priorities`, else the scenario's catalogue (rank_catalogue), with the box's own;
// with the launch problems as the command prints them, and with `emit` the top pick's launch.
std::string rank_json(const PyScenario& p, const std::string& priorities, int path_steps, const std::string& emit) {
  const InterventionCatalogue catalogue = rank_catalogue(p.scenario, priorities, data_dir());
  const RankReport r = rank(p.scenario, p.patches, catalogue, data_dir(), path_steps);
  std::string out = render_rank(p.source, r, Format::kJson);
  if (const auto problems = launch_problems(p.scenario); !problems.empty()) out = with_launch_problems(out, problems);
  if (emit.empty()) return out;
  return with_launch(out, emit_launch(top_pick(p.source, p.patches, r, data_dir()), engine_named(emit)));
}

std::string validate_json(const std::vector<std::string>& paths, const std::string& calibrate_on) {
  ValidateOptions options;
  options.calibrate_on = calibrate_on;
  return render_validation(validate_corpus(find_validation_rows(paths, data_dir()), options, data_dir()),
                           Format::kJson);
}

std::string breakeven_json(const PyScenario& p) {
  return render_breakeven(p.source, breakeven_report(p.scenario), Format::kJson);
}

// `specsim ARGS` run in-process, for the commands whose pipeline lives in the command line
// (calibrate nccl and comm, apps/specsim/): the module runs those rather than a copy of them.
// Returns what the command prints; a failure raises specsim.Error with the message it prints.
std::string run_command(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  if (cli::run(args, {out, err}) == cli::kExitOk) return out.str();
  std::string message = err.str();
  for (const std::string prefix : {"specsim: error: ", "specsim: "}) {
    if (message.starts_with(prefix)) {
      message.erase(0, prefix.size());
      break;
    }
  }
  while (!message.empty() && message.back() == '\n') message.pop_back();
  throw Error(message);
}

}  // namespace

}  // namespace specsim::python

PYBIND11_MODULE(_core, m) {
  using namespace specsim;
  using namespace specsim::python;
  m.doc() = "specsim's library (specsim/__init__.py is the API)";

  static py::exception<Error> error(m, "Error");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      py::object value = py::handle(error.ptr())(e.what());  // an instance, not yet raised
      value.attr("file") = e.where().file;
      value.attr("line") = e.where().line;
      value.attr("column") = e.where().column;
      value.attr("key") = e.key_path();
      value.attr("reason") = e.message();
      PyErr_SetObject(error.ptr(), value.ptr());
    }
  });

  py::class_<PyScenario>(m, "Scenario")
      .def_property_readonly("source", [](const PyScenario& p) { return p.source; })
      .def_property_readonly("patches", [](const PyScenario& p) { return p.patches; })
      .def_property_readonly("name", [](const PyScenario& p) { return p.scenario.name; })
      .def_property_readonly("description", [](const PyScenario& p) { return p.scenario.description; })
      .def_property_readonly("file", [](const PyScenario& p) { return p.scenario.file; })
      .def_property_readonly("model", [](const PyScenario& p) { return p.scenario.model.name; })
      .def_property_readonly("draft", [](const PyScenario& p) { return p.scenario.draft.name; })
      .def_property_readonly("gpu", [](const PyScenario& p) { return p.scenario.gpu.name; })
      .def_property_readonly("topology", [](const PyScenario& p) { return p.scenario.topology.name; })
      .def_property_readonly("batch", [](const PyScenario& p) { return p.scenario.batch; })
      .def_property_readonly("concurrency", [](const PyScenario& p) { return p.scenario.concurrency; })
      .def_property_readonly("interventions", [](const PyScenario& p) { return p.scenario.interventions; });

  m.def("load", &load, py::arg("name_or_path"), py::arg("patches"));
  m.def("predict_json", &predict_json, py::arg("scenario"), py::arg("emit"));
  m.def("emit_script", &emit_script, py::arg("scenario"), py::arg("engine"), py::arg("vary"), py::arg("concurrency"));
  m.def("sweep_json", &sweep_json, py::arg("scenario"), py::arg("vary"), py::arg("concurrency"));
  m.def("rank_json", &rank_json, py::arg("scenario"), py::arg("priorities"), py::arg("path_steps"), py::arg("emit"));
  m.def("validate_json", &validate_json, py::arg("paths"), py::arg("calibrate_on"));
  m.def("breakeven_json", &breakeven_json, py::arg("scenario"));
  m.def("run_command", &run_command, py::arg("args"));
  m.def("check", [](const std::string& path) { return check_data_file(path, data_dir()); }, py::arg("path"));
  m.def("data_dir", [] { return data_dir().root(); });
  m.def("set_data_dir", [](const std::string& root) { data_dir() = DataDir(root); }, py::arg("root"));
  m.def("scenario_names", [] { return data_dir().names(DataKind::kScenario); });
}
