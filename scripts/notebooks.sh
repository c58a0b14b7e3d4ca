#!/usr/bin/env bash
# Runs every notebook in notebooks/ headless with Debian's Python 3 and checks the plots they write.
#   scripts/notebooks.sh                       uses the Python module in build/dev/python
#   SPECSIM_PYTHONPATH=build/release/python scripts/notebooks.sh
# The notebooks write PNGs to notebooks/out/ (gitignored); the executed copies go to a temporary
# directory so the committed notebooks stay without outputs. Needs python3-matplotlib,
# python3-nbconvert, python3-nbclient, python3-ipykernel (scripts/setup.sh installs them).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
python=/usr/bin/python3  # Debian's, whatever python3 is first on PATH (pyenv): the kernel is Debian's too
export SPECSIM_PYTHONPATH="${SPECSIM_PYTHONPATH:-$root/build/dev/python}"
export SPECSIM_NOTEBOOK_OUT="${SPECSIM_NOTEBOOK_OUT:-$root/notebooks/out}"
[ -d "$SPECSIM_PYTHONPATH/specsim" ] ||
  { echo "notebooks: no specsim module in $SPECSIM_PYTHONPATH; build it or set SPECSIM_PYTHONPATH" >&2; exit 1; }

# Each notebook and the plots it must write.
declare -A plots=(
  [01_tokens_vs_acceptance]="tokens_vs_acceptance"
  [02_cycle_breakdown]="cycle_breakdown interventions"
  [03_allreduce_calibration]="allreduce_calibration"
  [04_topology_comparison]="topology_comparison"
  [05_validation]="validation validation_pairs"
)
executed="$(mktemp -d)"
trap 'rm -rf "$executed"' EXIT
mkdir -p "$SPECSIM_NOTEBOOK_OUT"
expected=()
status=0
for nb in notebooks/*.ipynb; do
  stem="$(basename "$nb" .ipynb)"
  for p in ${plots[$stem]:-}; do
    rm -f "$SPECSIM_NOTEBOOK_OUT/$p.png"
    expected+=("$SPECSIM_NOTEBOOK_OUT/$p.png")
  done
  start=$SECONDS
  if "$python" -m nbconvert --to notebook --execute --output-dir "$executed" \
       --ExecutePreprocessor.kernel_name=python3 --ExecutePreprocessor.timeout=120 "$nb" \
       >"$executed/$stem.log" 2>&1; then
    echo "notebooks: $stem ok ($((SECONDS - start)) s)"
  else
    echo "notebooks: $stem FAILED ($((SECONDS - start)) s):" >&2
    grep -vE '^\[NbConvertApp\]' "$executed/$stem.log" | sed "s/\x1b\[[0-9;]*m//g" | tail -25 >&2
    status=1
  fi
done
for stem in "${!plots[@]}"; do
  [ -e "notebooks/$stem.ipynb" ] || { echo "notebooks: notebooks/$stem.ipynb is missing" >&2; status=1; }
done

# A plot is not blank when it has many distinct colours: an empty figure has a handful (background,
# frame, tick labels); a plot with curves, bars and text has hundreds after anti-aliasing.
"$python" - "${expected[@]}" <<'PY' || status=1
import sys
import matplotlib.image as mpimg
import numpy as np
kMinDistinctColours = 64
bad = 0
for path in sys.argv[1:]:
    try:
        img = mpimg.imread(path)
    except (FileNotFoundError, OSError) as e:
        print(f"notebooks: {path}: missing ({e})", file=sys.stderr)
        bad += 1
        continue
    colours = len(np.unique(img.reshape(-1, img.shape[-1]), axis=0))
    ok = colours > kMinDistinctColours
    print(f"notebooks: {path}: {img.shape[1]}x{img.shape[0]}, {colours} distinct colours"
          + ("" if ok else f" (blank? want > {kMinDistinctColours})"), file=sys.stdout if ok else sys.stderr)
    bad += not ok
sys.exit(1 if bad else 0)
PY
exit $status
