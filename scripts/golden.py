#!/usr/bin/env python3
"""Golden outputs: the JSON predict, rank, sweep, breakeven and comm print on every shipped
scenario, validation row and comm profile, and the launch `predict --emit ENGINE` prints for every
shipped scenario on vLLM, SGLang and TensorRT-LLM (its error where the engine cannot run the
setting), kept in tests/golden/ and compared byte for byte.

A refactor must leave every file unchanged. A change that is meant to move a figure rewrites them
(`--update`), and the commit message says which figures moved and why:

    SPECSIM_BIN=build/release/bin/specsim scripts/golden.py --update
    SPECSIM_BIN=build/dev/bin/specsim scripts/golden.py            # what ctest `golden` runs

The command list is built from the data directories, so a new scenario, row or profile is covered
without editing this file (its golden file is then missing, which --check reports).
"""
import argparse
import difflib
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BIN = os.environ.get("SPECSIM_BIN", str(ROOT / "build/release/bin/specsim"))
GOLDEN = ROOT / "tests/golden"
SIZES = "256B,14KiB,56KiB,1MiB,16MiB,128MiB"
ENGINES = ("vllm", "sglang", "trtllm")
# Where a case keeps its output: JSON views, or a launch's shell text (.txt).
SUFFIXES = (".json", ".txt")


def commands():
    """(golden file name, argument list) for every case."""
    out = []
    for path in sorted((ROOT / "models/scenarios").glob("*.yaml")):
        s = str(path.relative_to(ROOT))
        out += [
            (f"predict-{path.stem}", ["predict", "--scenario", s, "--json"]),
            (f"predict-{path.stem}-accept-0.747", ["predict", "--scenario", s, "--accept", "0.747", "--json"]),
        ]
        # rank on every box: models/interventions/any-box.yaml where its preconditions hold.
        out.append((f"rank-{path.stem}", ["rank", "--scenario", s, "--json"]))
        # A block drafter's shape is its block (speculation.block_size), not a depth.
        block = re.search(r"^\s*method:\s*dflash", path.read_text(), re.M)
        draft_axis = "speculation.block_size=2,4,8,12,16" if block else "speculation.num_steps=1..5"
        out += [(f"emit-{path.stem}-{engine}.txt", ["predict", "--scenario", s, "--emit", engine]) for engine in ENGINES]
        out += [
            (f"breakeven-{path.stem}", ["breakeven", "--scenario", s, "--json"]),
            (f"sweep-{path.stem}-draft", ["sweep", "--scenario", s, "--vary", draft_axis,
                                          "--vary", "acceptance.accept=0.5,0.7,0.9", "--json"]),
            (f"sweep-{path.stem}-compute", ["sweep", "--scenario", s, "--vary",
                                            "compute.bandwidth_efficiency=0.5,0.7,0.9", "--json"]),
        ]
    for path in sorted((ROOT / "validation").glob("*/*.yaml")):
        out.append((f"predict-{path.parent.name}-{path.stem}",
                    ["predict", "--scenario", str(path.relative_to(ROOT)), "--json"]))
    for path in sorted((ROOT / "calibration/profiles").glob("*.yaml")):
        text = path.read_text()
        if not re.search(r"^kind:\s*comm_profile", text, re.M):
            continue
        ranks = re.search(r"^ranks:\s*(\d+)", text, re.M).group(1)
        out.append((f"comm-{path.stem}", ["comm", "--profile", path.stem, "--ranks", ranks, "--size", SIZES,
                                          "--json"]))
    return out


def run(args):
    done = subprocess.run([BIN, *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode == 1 and "--emit" in args:
        # A setting the engine cannot run: the refusal is the output.
        return f"exit 1\n{done.stderr}"
    if done.returncode != 0:
        sys.exit(f"golden: `specsim {' '.join(args)}` exited {done.returncode}:\n{done.stderr}")
    return done.stdout


def file_name(name):
    """A case's file: its own suffix, else .json."""
    return name if name.endswith(SUFFIXES) else f"{name}.json"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite tests/golden/ from the binary")
    update = parser.parse_args().update
    cases = commands()
    if not os.access(BIN, os.X_OK):
        sys.exit(f"golden: no specsim binary at {BIN}: build it, or set SPECSIM_BIN (nothing was changed)")
    GOLDEN.mkdir(exist_ok=True)
    if update:
        for old in [p for suffix in SUFFIXES for p in GOLDEN.glob(f"*{suffix}")]:
            old.unlink()
    failed = []
    for name, args in cases:
        got = run(args)
        path = GOLDEN / file_name(name)
        if update:
            path.write_text(got)
            continue
        if not path.exists():
            failed.append(f"{path.relative_to(ROOT)}: missing (scripts/golden.py --update)")
            continue
        want = path.read_text()
        if got != want:
            diff = difflib.unified_diff(want.splitlines(), got.splitlines(), "golden", "now", n=1, lineterm="")
            failed.append(f"{path.relative_to(ROOT)}: `specsim {' '.join(args)}` differs:\n" +
                          "\n".join(list(diff)[:40]))
    stale = {p.name for suffix in SUFFIXES for p in GOLDEN.glob(f"*{suffix}")} - {file_name(n) for n, _ in cases}
    failed += [f"tests/golden/{s}: no command makes it any more" for s in sorted(stale)]
    if failed:
        print("\n\n".join(failed))
        sys.exit(f"golden: {len(failed)} of {len(cases)} outputs differ")
    print(f"golden: {len(cases)} outputs {'written' if update else 'match'}")


if __name__ == "__main__":
    main()
