"""What the notebooks share: where the specsim binary and the repository are, and how to run it.

The notebooks only plot. Every number comes from the `specsim` binary's JSON or text output
(SPECSIM_BIN, else the newer of build/dev and build/release under the repository root); nothing is recomputed here.
"""
import json
import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The quickstart builds build/release, the test command build/dev: either serves, the newer first.
_builds = sorted((p for p in (ROOT / "build/dev/bin/specsim", ROOT / "build/release/bin/specsim") if p.exists()),
                 key=lambda p: p.stat().st_mtime, reverse=True)
BIN = pathlib.Path(os.environ.get("SPECSIM_BIN", _builds[0] if _builds else ROOT / "build/dev/bin/specsim"))
if not BIN.is_absolute():
    BIN = ROOT / BIN
OUT = pathlib.Path(os.environ.get("SPECSIM_NOTEBOOK_OUT", ROOT / "notebooks/out"))
OUT.mkdir(parents=True, exist_ok=True)

if not BIN.exists():
    raise FileNotFoundError(f"{BIN}: no specsim binary; build it (cmake --preset dev && "
                            "cmake --build --preset dev) or set SPECSIM_BIN")


def run(*args):
    """specsim ARGS..., run from the repository root; its stdout as text. Fails with its stderr."""
    p = subprocess.run([str(BIN), *map(str, args)], cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"specsim {' '.join(map(str, args))} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def run_json(*args):
    """specsim ARGS... --json, parsed."""
    return json.loads(run(*args, "--json"))


def has_subcommand(name):
    """Whether this specsim build has the subcommand (`rank`, `sweep` are newer than the rest)."""
    p = subprocess.run([str(BIN), name, "--help"], cwd=ROOT, capture_output=True, text=True)
    return p.returncode == 0 and f"Usage: specsim {name} " in p.stdout


def save(fig, name):
    """Writes notebooks/out/NAME.png and returns its path."""
    path = OUT / f"{name}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return path
