#!/usr/bin/env bash
# Installs specsim into a temporary prefix and builds examples/planner against it with
# find_package(specsim): the check that the installed package (headers, static library, CMake
# config, share/specsim data) is enough for an out-of-tree tool. The Python module installed under
# the prefix must import with Debian's python3 and predict what the installed specsim does.
#   scripts/test_install.sh               build in build/install-test (kept: reruns are incremental)
#   SPECSIM_INSTALL_BUILD_DIR=DIR scripts/test_install.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${SPECSIM_INSTALL_BUILD_DIR:-$root/build/install-test}"
jobs="${SPECSIM_JOBS:-2}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSPECSIM_BUILD_TESTS=OFF -DSPECSIM_BUILD_BENCHMARKS=OFF -DSPECSIM_BUILD_FUZZERS=OFF \
  -DSPECSIM_BUILD_PYTHON=ON >/dev/null
cmake --build "$build" -j "$jobs"
cmake --install "$build" --prefix "$prefix" >/dev/null

for f in include/specsim/cycle.hpp include/specsim/load.hpp lib/libspecsim.a \
         lib/cmake/specsim/specsimConfig.cmake lib/cmake/specsim/specsimTargets.cmake \
         share/specsim/models/scenarios/kimi-k2.5-eagle3-8x-rtx-pro-6000.yaml bin/specsim \
         lib/python3/dist-packages/specsim/__init__.py lib/python3/dist-packages/specsim/__init__.pyi; do
  [ -e "$prefix/$f" ] || { echo "test_install: $prefix/$f was not installed" >&2; exit 1; }
done
# The library's private helpers stay private.
[ ! -e "$prefix/include/specsim/yaml_reader.hpp" ] || { echo "test_install: yaml_reader.hpp installed" >&2; exit 1; }

cmake -S "$root/examples/planner" -B "$tmp/planner" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix"
cmake --build "$tmp/planner" -j "$jobs"

# The installed CLI and the example must agree on the same patched scenario; the source tree is
# moved out of reach (SPECSIM_DATA_DIR unset, run from $tmp) so share/specsim is what is read.
cd "$tmp"
unset SPECSIM_DATA_DIR
out="$("$tmp/planner/planner" speculation.num_steps=2)"
echo "$out"
cli="$("$prefix/bin/specsim" predict --set speculation.num_steps=2 --json)"
want_plain="$(printf '%s' "$cli" | sed -n 's/^ *"tokens_per_s": \([0-9.e+-]*\),\{0,1\}$/\1/p' | head -1)"
want_spec="$(printf '%s' "$cli" | sed -n 's/^ *"tokens_per_s": \([0-9.e+-]*\),\{0,1\}$/\1/p' | tail -1)"
got_plain="$(printf '%s\n' "$out" | awk '/^plain decoding/ {print $3}')"
got_spec="$(printf '%s\n' "$out" | awk '/^speculative decoding/ {print $3}')"
[ "$(printf '%.1f' "$want_plain")" = "$got_plain" ] ||
  { echo "test_install: planner says $got_plain plain tok/s, specsim predict says $want_plain" >&2; exit 1; }
[ "$(printf '%.1f' "$want_spec")" = "$got_spec" ] ||
  { echo "test_install: planner says $got_spec speculative tok/s, specsim predict says $want_spec" >&2; exit 1; }

# docs/library.md shows this run of the planner: its block must be what the planner prints now.
doc="$(awk '/^\$ planner speculation.num_steps=2$/ {on=1; next} on && /^```/ {exit} on' "$root/docs/library.md")"
[ "$doc" = "$out" ] ||
  { echo "test_install: docs/library.md's planner output has drifted; the planner prints:" >&2; echo "$out" >&2
    diff <(echo "$doc") <(echo "$out") >&2; exit 1; }

# The installed Python module: Debian's python3 with the prefix's dist-packages on its path reads
# the prefix's share/specsim and gives the installed command's speculative tokens/s.
got_py="$(PYTHONPATH="$prefix/lib/python3/dist-packages" /usr/bin/python3 -c '
import specsim
print(specsim.data_dir())
print(specsim.predict(specsim.load("kimi-k2.5-eagle3-8x-rtx-pro-6000", set={"speculation.num_steps": 2}))["speculative"]["tokens_per_s"])')"
echo "$got_py"
[ "$(printf '%s\n' "$got_py" | head -1)" = "$prefix/share/specsim" ] ||
  { echo "test_install: the installed module reads $(printf '%s\n' "$got_py" | head -1), not $prefix/share/specsim" >&2; exit 1; }
[ "$(printf '%.6g' "$(printf '%s\n' "$got_py" | tail -1)")" = "$(printf '%.6g' "$want_spec")" ] ||
  { echo "test_install: the installed module says $(printf '%s\n' "$got_py" | tail -1) speculative tok/s, specsim predict says $want_spec" >&2; exit 1; }
echo "test_install: OK (installed package builds and runs examples/planner; matches specsim predict; the Python module too)"
