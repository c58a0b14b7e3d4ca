#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for specsim and builds it.
#   scripts/setup.sh            install what the command line needs (apt), build build/release/bin/specsim
#                               and nothing else (no tests, benchmarks, fuzzers or Python module)
#   scripts/setup.sh test       install everything the suite needs, build the dev preset (the Python
#                               module included), then run the whole test suite
#   scripts/setup.sh asan       the suite again under AddressSanitizer + UndefinedBehaviorSanitizer
#                               (the notebook and install tests, which exercise no new code, are left out)
# Only Debian's packages are used; nothing is downloaded from anywhere else.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  test) preset=dev ;;
  asan) preset=asan ;;
  "") preset=release ;;
  *) echo "setup: unknown mode '$1' (use: test, asan, or nothing)" >&2; exit 2 ;;
esac

# The library and the command line.
packages=(g++ cmake ninja-build pkg-config libyaml-cpp-dev libeigen3-dev libboost-math-dev
          libcli11-dev nlohmann-json3-dev)
if [ "$preset" != release ]; then
  packages+=(catch2 libbenchmark-dev                # the tests and benchmarks
             python3-dev pybind11-dev python3-pybind11 python3-pytest  # the Python module and its tests
             python3-matplotlib python3-nbconvert python3-nbclient python3-ipykernel python3-nbformat
             python3-yaml jupyter-nbconvert         # the notebooks (scripts/notebooks.sh), Debian's python3
             clang libclang-rt-14-dev)              # the fuzzers (scripts/fuzz.sh)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
fi

if [ "$preset" = release ]; then
  # A first prediction needs the command line only: the rest of the tree is the suite's.
  cmake --preset release -G Ninja -DSPECSIM_BUILD_TESTS=OFF -DSPECSIM_BUILD_BENCHMARKS=OFF \
    -DSPECSIM_BUILD_FUZZERS=OFF -DSPECSIM_BUILD_PYTHON=OFF >/dev/null
  cmake --build --preset release -j "$(nproc)" --target specsim_app >&2
else
  cmake --preset "$preset" -G Ninja >/dev/null
  cmake --build --preset "$preset" -j "$(nproc)" >&2
fi
case "$preset" in
  dev) ctest --preset dev -j "$(nproc)" ;;
  asan) ctest --preset asan -j "$(nproc)" -E '^(notebooks|install_package)$' ;;
esac
