#!/usr/bin/env python3
"""The validation corpus's fit / check split (validation/split.yaml), by a rule fixed before any
error was looked at (docs/validation.md#fit-and-check-sets).

    scripts/make_split.py            print the split the rule gives for the corpus as it stands
    scripts/make_split.py --write    write it to validation/split.yaml (only when none exists yet:
                                     the split is frozen once written)
    scripts/make_split.py --check    fail unless validation/split.yaml is the rule's split of the
                                     sources it lists, and every scored source of the corpus is
                                     either listed or, found later, goes to the check set

The rule. Sources that measured one deployment across engine versions or settings (siblings) form
one group and are hashed together, so that no sibling of a check source helps fit the model. A
group goes to the check set when

    int(sha256(salt + "/" + group).hexdigest()[:8], 16) / 2**32 < 0.40

and the salt is the first of specsim-split-1, specsim-split-2, ... for which the check set holds at
least 30% and at most 50% of the scored sources and every engine and every interconnect class (nvlink, pcie,
single gpu) that the scored rows hold. A source is scored when at least one of its rows is: rows
with measurements.speculative.held_out false, or whose inputs came from their own speculative run
(validation.inputs_from_speculative_run), are reported apart and never scored.

Sources first seen after the split was frozen go to the check set (listed under `added:` with the
date); the rule is not rerun over them.
"""
import argparse
import hashlib
import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPLIT = os.path.join(ROOT, "validation", "split.yaml")
CHECK_FRACTION = 0.40
MIN_CHECK_SHARE = 0.30
MAX_CHECK_SHARE = 0.50  # the fit set must keep enough sources to fit a model error leaving one out
# Sibling sources: one deployment measured in several runs. Each list is hashed as one group.
SIBLINGS = {
    "rtx6kpro-kimi-k26": ["rtx6kpro-kimi-k26-v4", "rtx6kpro-kimi-k26-v5", "rtx6kpro-kimi-k26-v5-fullq",
                          "rtx6kpro-kimi-k26-v7"],
    "vllm-lab-ngram-rtx4090": ["vllm-lab-v018-ngram-rtx4090", "vllm-lab-v029-ngram-rtx4090"],
    "vllm-scripts-h100": ["vllm-scripts-llama33-70b-2xh100", "vllm-scripts-qwen3-32b-h100"],
}


def interconnect(row):
    """The class of link a row's TP group crosses, as specsim validate names it."""
    parallel = row.get("parallel") or {}
    if int(parallel.get("tp", 1)) * int(parallel.get("pp", 1)) == 1:
        return "single gpu"
    topology = str(row.get("topology", ""))
    if "pcie" in topology:
        return "pcie"
    if "nvswitch" in topology or "nvlink" in topology:
        return "nvlink"
    if "xgmi" in topology:  # an AMD Instinct mesh (specsim validate's "xgmi"); none in the frozen split
        return "xgmi"
    raise SystemExit(f"make_split: cannot tell the interconnect of topology '{topology}' ({row.get('name')})")


def scored(row):
    spec = (row.get("measurements") or {}).get("speculative") or {}
    validation = row.get("validation") or {}
    return spec.get("held_out", True) is not False and not validation.get("inputs_from_speculative_run")


def read_corpus():
    """source -> {engines, interconnects, rows, scored_rows} over validation/*/*.yaml."""
    sources = {}
    folder = os.path.join(ROOT, "validation")
    for dirpath, _, names in sorted(os.walk(folder)):
        for name in sorted(names):
            if not name.endswith(".yaml") or os.path.join(dirpath, name) == SPLIT:
                continue
            path = os.path.join(dirpath, name)
            with open(path) as f:
                row = yaml.safe_load(f)
            if not isinstance(row, dict) or "validation" not in row:
                continue
            source = row["validation"]["source"]
            s = sources.setdefault(source, {"engines": set(), "interconnects": set(), "rows": 0, "scored_rows": 0})
            s["rows"] += 1
            if scored(row):
                s["scored_rows"] += 1
                s["engines"].add((row.get("engine") or {}).get("name", "?"))
                s["interconnects"].add(interconnect(row))
    return sources


def group_of(source):
    for group, members in SIBLINGS.items():
        if source in members:
            return group
    return source


def in_check(salt, group):
    digest = hashlib.sha256(f"{salt}/{group}".encode()).hexdigest()
    return int(digest[:8], 16) / 2**32 < CHECK_FRACTION


def split_with(salt, sources):
    return {source: ("check" if in_check(salt, group_of(source)) else "fit") for source in sources}


def acceptable(assignment, sources):
    scored_sources = [s for s in sources if sources[s]["scored_rows"] > 0]
    check = [s for s in scored_sources if assignment[s] == "check"]
    if not scored_sources or not MIN_CHECK_SHARE * len(scored_sources) <= len(check) <= MAX_CHECK_SHARE * len(
            scored_sources):
        return False
    for key in ("engines", "interconnects"):
        wanted = set().union(*(sources[s][key] for s in scored_sources))
        held = set().union(*(sources[s][key] for s in check)) if check else set()
        if wanted - held:
            return False
    return True


def first_salt(sources):
    scored_sources = {s: v for s, v in sources.items() if v["scored_rows"] > 0}
    for n in range(1, 10000):
        salt = f"specsim-split-{n}"
        if acceptable(split_with(salt, scored_sources), scored_sources):
            return salt
    raise SystemExit("make_split: no salt below 10000 satisfies the constraints")


def render(salt, sources):
    scored_sources = {s: v for s, v in sources.items() if v["scored_rows"] > 0}
    assignment = split_with(salt, scored_sources)
    lines = [
        "schema_version: 1",
        "kind: validation_split",
        'description: "The corpus\'s fit and check sets (docs/validation.md#fit-and-check-sets): priors, rules, '
        'thresholds and the model error come from the fit set or from outside the corpus, never from the check set"',
        'rule: "a group of sibling sources goes to the check set when int(sha256(salt + \\"/\\" + group)[:8 hex], 16) '
        "/ 2^32 < 0.40; salt = the first specsim-split-N giving the check set 30-50% of the scored sources and "
        'every engine and interconnect of the scored rows (scripts/make_split.py)"',
        f"salt: {salt}",
        "# Frozen: scripts/make_split.py --check (a ctest) recomputes the sets of the sources below.",
        "# Sources found later go to `added:`, in the check set, without rerunning the rule.",
        "sources:",
    ]
    for source in sorted(scored_sources):
        v = scored_sources[source]
        lines.append(f"  {source}:")
        lines.append(f"    group: {group_of(source)}")
        lines.append(f"    set: {assignment[source]}")
        lines.append(f"    engines: [{', '.join(sorted(v['engines']))}]")
        lines.append(f"    interconnects: [{', '.join(sorted(v['interconnects']))}]")
    unscored = sorted(s for s, v in sources.items() if v["scored_rows"] == 0)
    lines.append("# Sources none of whose rows is scored (held_out false, or inputs from their own speculative")
    lines.append("# run): reported apart by specsim validate, in neither set.")
    lines.append("not_scored: [" + ", ".join(unscored) + "]")
    lines.append("added: {}")
    return "\n".join(lines) + "\n"


def check(sources):
    with open(SPLIT) as f:
        split = yaml.safe_load(f)
    problems = []
    salt = split.get("salt")
    listed = split.get("sources") or {}
    added = split.get("added") or {}
    for source, entry in listed.items():
        want = "check" if in_check(salt, entry.get("group", source)) else "fit"
        if entry.get("set") != want:
            problems.append(f"{source}: set {entry.get('set')}, the rule gives {want}")
        if entry.get("group", source) != group_of(source):
            problems.append(f"{source}: group {entry.get('group')}, SIBLINGS says {group_of(source)}")
    for source, entry in added.items():
        if (entry or {}).get("set") != "check":
            problems.append(f"added {source}: a source found after the freeze goes to the check set")
    frozen = {s: v for s, v in sources.items() if s in listed}
    if frozen and not acceptable({s: listed[s]["set"] for s in frozen}, frozen):
        problems.append("the listed sources' check set no longer holds 30-50% of them or every engine and interconnect")
    not_scored = set(split.get("not_scored") or [])
    for source, v in sources.items():
        if v["scored_rows"] > 0 and source not in listed and source not in added:
            problems.append(f"{source}: a scored source missing from validation/split.yaml (add it under `added:` "
                            "with set: check)")
        if v["scored_rows"] == 0 and source not in not_scored and source not in listed:
            problems.append(f"{source}: no scored row; list it under not_scored")
    for source in list(listed) + list(added):
        if source not in sources:
            problems.append(f"{source}: listed in validation/split.yaml, no row in validation/")
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--write", action="store_true")
    p.add_argument("--check", action="store_true")
    a = p.parse_args()
    sources = read_corpus()
    if a.check:
        problems = check(sources)
        for line in problems:
            print("validation/split.yaml: " + line, file=sys.stderr)
        sys.exit(1 if problems else 0)
    text = render(first_salt(sources), sources)
    if a.write:
        if os.path.exists(SPLIT):
            raise SystemExit("make_split: validation/split.yaml exists and is frozen; add new sources under `added:`")
        with open(SPLIT, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
