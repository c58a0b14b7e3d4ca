"""What the notebooks share: the specsim module, where the repository is, and where plots go.

The notebooks only plot. Every number comes from the `specsim` Python module (the C++ library; its
dicts are the JSON the command line prints); nothing is recomputed here. The module is imported as
installed, else from the build tree: $SPECSIM_PYTHONPATH, else the newer of build/dev/python and
build/release/python under the repository root.
"""
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = pathlib.Path(os.environ.get("SPECSIM_NOTEBOOK_OUT", ROOT / "notebooks/out"))
OUT.mkdir(parents=True, exist_ok=True)


def _import_specsim():
    builds = [ROOT / "build/dev/python", ROOT / "build/release/python"]
    builds = sorted((b for b in builds if (b / "specsim").is_dir()), key=lambda b: b.stat().st_mtime, reverse=True)
    paths = [os.environ["SPECSIM_PYTHONPATH"]] if os.environ.get("SPECSIM_PYTHONPATH") else [str(b) for b in builds]
    sys.path[:0] = paths
    try:
        import specsim
    except ImportError as e:
        raise ImportError(f"no specsim module ({e}); build it (cmake --preset dev && cmake --build --preset dev) "
                          "or set SPECSIM_PYTHONPATH to the folder holding specsim/") from e
    return specsim


specsim = _import_specsim()
# Names in the scenarios resolve in this repository's models/ and calibration/.
specsim.set_data_dir(os.environ.get("SPECSIM_DATA_DIR", ROOT))


def save(fig, name):
    """Writes notebooks/out/NAME.png and returns its path."""
    path = OUT / f"{name}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return path
