"""specsim from Python: predicts speculative-decoding throughput on multi-GPU boxes.

The functions return what the command line prints with --json, parsed: `predict(s)` is
`specsim predict --json`, `rank(s)` is `specsim rank --json`, `validate()` is `specsim validate
--json`. The numbers come from the same C++ library and the same JSON rendering, so a dict here and
the command's output agree key for key. Every failure raises specsim.Error with the library's
message (file:line:column: key: what), its parts as attributes.

    import specsim
    s = specsim.load("kimi-k2.5-eagle3-8x-rtx-pro-6000", set={"speculation.num_steps": 2})
    print(specsim.predict(s)["speculative"]["tokens_per_s"])
"""
import json
import os
import pathlib
import tempfile

from . import _core
from ._core import Error, Scenario

__all__ = ["Error", "Scenario", "load", "predict", "sweep", "rank", "emit", "validate", "calibrate_nccl",
           "breakeven", "comm", "check", "scenarios", "data_dir", "set_data_dir"]


def _installed_data_dir():
    """<prefix>/share/specsim when this package lies in <prefix>/lib/python3/dist-packages."""
    parents = pathlib.Path(__file__).resolve().parents
    if len(parents) < 5:
        return None
    data = parents[4] / "share" / "specsim"
    return data if (data / "models" / "scenarios").is_dir() else None


# $SPECSIM_DATA_DIR wins, as for the command line; else the installed data beside this package;
# else the library's default (the source tree it was built from).
if not os.environ.get("SPECSIM_DATA_DIR") and _installed_data_dir():
    _core.set_data_dir(str(_installed_data_dir()))


def data_dir():
    """The folder names resolve in (models/, calibration/, validation/)."""
    return _core.data_dir()


def set_data_dir(path):
    """Resolve names in another data folder from now on."""
    _core.set_data_dir(os.fspath(path))


def scenarios():
    """The shipped scenario names (models/scenarios)."""
    return _core.scenario_names()


def _text(value):
    """A value as a file or `--set` spells it: True -> true, 2.0 -> 2.0, '48GB/s' as it is."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _patches(set):
    if set is None:
        return []
    if isinstance(set, dict):
        return [f"{key}={_text(value)}" for key, value in set.items()]
    return [str(p) for p in set]


def load(name_or_path, set=None):
    """Loads a scenario by name (models/scenarios) or path, with `set` patches applied.

    `set` is a dict {dotted.key: value} or a list of "key=value" strings, as `--set` takes them;
    values with units are strings ("48GB/s"). Everything is validated now: a bad scenario raises
    specsim.Error listing every problem."""
    return _core.load(os.fspath(name_or_path), _patches(set))


def predict(scenario, emit=None):
    """`specsim predict --json` for a loaded scenario: a dict with "speculative", "baseline", ...,
    or the per-level table when the scenario lists workload.concurrency. With `emit` ("vllm",
    "sglang" or "trtllm") the launch that runs it on that engine under "launch", as
    `predict --json --emit ENGINE` adds it."""
    return json.loads(_core.predict_json(scenario, emit or ""))


def _axis(key, values):
    if isinstance(values, str):
        return f"{key}={values}"  # "1..8" or "a,b"
    if isinstance(values, range):
        values = list(values)
    return f"{key}=" + ",".join(_text(v) for v in values)


def _rows(doc):
    """One dict per grid point, or per concurrency level (with its workload conditions)."""
    if "points" in doc:
        return doc["points"]
    if "buckets" in doc:
        return [dict(level, conditions=bucket["conditions"])
                for bucket in doc["buckets"] for level in bucket["concurrency"]]
    return doc["concurrency"]


def sweep(scenario, vary=None, concurrency=None):
    """`specsim sweep --json` as rows: every point of the grid over `vary`, best first, or with
    concurrency levels (these, or the scenario's workload.concurrency) the best point per level.

    `vary` maps a key to its values: a list, a range, or a string "1..8" / "0.5,0.7". Rows are
    dicts; a pandas DataFrame (nested keys joined by dots, as the CSV names its columns) when pandas
    is installed."""
    axes = [_axis(k, v) for k, v in (vary or {}).items()]
    levels = ",".join(str(int(c)) for c in concurrency) if concurrency else ""
    rows = _rows(json.loads(_core.sweep_json(scenario, axes, levels)))
    try:
        import pandas
    except ImportError:
        return rows
    return pandas.json_normalize(rows)


def rank(scenario, priorities=None, path_steps=4, emit=None):
    """`specsim rank --json`: each intervention of the catalogue (`priorities`, a file, else the one
    the scenario names, else models/interventions/any-box.yaml, with what the scenario's box adds)
    that applies to this box, alone, by predicted gain, then the cumulative plan. With `emit` an
    engine name, the launch of the top pick under "launch" (`rank --json --emit ENGINE`)."""
    return json.loads(_core.rank_json(scenario, os.fspath(priorities) if priorities else "", path_steps, emit or ""))


def emit(scenario, engine, vary=None, concurrency=None):
    """The launch that runs a setting on a serving engine ("vllm", "sglang" or "trtllm"), as the
    shell snippet the command prints: the scenario as it stands (`specsim predict --emit ENGINE`),
    or with `vary` / `concurrency` (as sweep() takes them) the best point of that sweep, per level
    where there are levels (`specsim sweep --emit ENGINE`). A setting the engine cannot run raises
    specsim.Error naming it, with the command's message."""
    axes = [_axis(k, v) for k, v in (vary or {}).items()]
    levels = ",".join(str(int(c)) for c in concurrency) if concurrency else ""
    return _core.emit_script(scenario, engine, axes, levels)


def validate(paths=None, calibrate_on=""):
    """`specsim validate --json`: the validation corpus (or these row files and folders) predicted
    against its held-out measurements, with summaries."""
    return json.loads(_core.validate_json([os.fspath(p) for p in (paths or [])], calibrate_on))


def calibrate_nccl(log, output=None, *, holdout_every=None, ranks=None, collective="all_reduce",
                   in_place=False, lenient=False):
    """`specsim calibrate nccl`: nccl-tests logs (a path or a list) -> a comm profile.

    Writes the profile to `output` (PROFILE.yaml, its stem the profile's name) or, without one, to
    a temporary file named after the first log. Returns {"yaml": the profile's text, "report": the
    fit's residuals as the command prints them, "path": output or None}."""
    logs = [os.fspath(log)] if isinstance(log, (str, os.PathLike)) else [os.fspath(p) for p in log]
    options = ["--collective", collective]
    if holdout_every:
        options += ["--holdout-every", str(holdout_every)]
    if ranks:
        options += ["--ranks", str(ranks)]
    if in_place:
        options.append("--in-place")
    if lenient:
        options.append("--lenient")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.fspath(output) if output else os.path.join(tmp, pathlib.Path(logs[0]).stem + ".yaml")
        report = _core.run_command(["calibrate", "nccl"] + logs + ["-o", path] + options)
        with open(path, encoding="utf-8") as f:
            text = f.read()
    return {"yaml": text, "report": report, "path": os.fspath(output) if output else None}


def breakeven(scenario):
    """`specsim breakeven --json`: per draft length, the acceptance and tokens per cycle at which
    speculation pays."""
    return json.loads(_core.breakeven_json(scenario))


def comm(profile, ranks, sizes, topology=None):
    """`specsim comm --json`: all-reduce (or all-to-all) time per message size from comm profiles
    (a name or a list), measured at `ranks` or estimated from others. Sizes are bytes or strings
    with units ("14KiB")."""
    profiles = [profile] if isinstance(profile, (str, os.PathLike)) else list(profile)
    args = ["comm", "--ranks", str(ranks), "--size", ",".join(str(s) for s in sizes), "--json"]
    for p in profiles:
        args += ["--profile", os.fspath(p)]
    if topology:
        args += ["--topology", topology]
    return json.loads(_core.run_command(args))


def check(path):
    """`specsim check`: validates a data file (model, GPU, topology, profile, scenario) and returns
    it normalised as YAML text: every key, units spelled out, defaults filled in."""
    return _core.check(os.fspath(path))
