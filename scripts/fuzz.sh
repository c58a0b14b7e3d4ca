#!/usr/bin/env bash
# Builds the `fuzz` preset (clang, libFuzzer, ASan + UBSan) and runs every fuzz target for
# SECONDS_PER_TARGET seconds (default 12; CI passes 30), one after another.
#   scripts/fuzz.sh            12 s per target
#   scripts/fuzz.sh 30         30 s per target, what CI runs (.ci/run)
#   scripts/fuzz.sh 300        300 s per target
#   SPECSIM_FUZZ_TARGETS="fuzz_load fuzz_set_patch" scripts/fuzz.sh 60   only these targets
# Seeds are the real files (fuzz/README.md); new inputs go to build/fuzz/corpus/<target>, crashers
# to build/fuzz/artifacts/<target>/, libFuzzer's output to build/fuzz/logs/<target>.log.
# SPECSIM_FUZZ_TIMEOUT=N sets the per-input timeout (default 10 s; a loaded machine wants more).
# Exits non-zero when any target crashed, leaked, timed out or ran out of memory.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-12}"
jobs="${SPECSIM_FUZZ_BUILD_JOBS:-2}"
build=build/fuzz

# SPECSIM_FUZZ_NO_BUILD=1 runs the targets already built (several fuzz.sh at once must not share a build).
if [ -z "${SPECSIM_FUZZ_NO_BUILD:-}" ]; then
  cmake --preset fuzz -G Ninja >/dev/null
  cmake --build "$build" -j "$jobs" >&2
fi

# target | -max_len (bytes; seeds longer than this are cut) | seed directories
targets=(
  "fuzz_nccl_tests|16384|calibration/nccl tests/data/invalid/nccl"
  "fuzz_engine_log|8192|tests/data/valid/logs tests/data/invalid/logs"
  "fuzz_load|8192|models calibration/profiles tests/data/valid/hf tests/data/invalid/gpu tests/data/invalid/scenario"
  "fuzz_set_patch|512|fuzz/seeds/set_patch"
  "fuzz_topo_import|8192|tests/data/valid/topo tests/data/invalid/topo"
  "fuzz_rocm_topo|8192|fuzz/seeds/rocm_topo tests/data/valid/topo tests/data/invalid/topo"
  "fuzz_compute_csv|8192|calibration/compute"
  "fuzz_interventions|8192|models/interventions"
  "fuzz_cli_values|512|fuzz/seeds/cli_values"
  "fuzz_metrics|8192|fuzz/seeds/metrics tests/data/valid/logs tests/data/invalid/logs"
  "fuzz_validation_row|16384|validation"
  "fuzz_hf_config|16384|tests/data/valid/hf"
)

failed=()
summary=()
for entry in "${targets[@]}"; do
  IFS='|' read -r target max_len seeds <<<"$entry"
  if [ -n "${SPECSIM_FUZZ_TARGETS:-}" ] && [[ " $SPECSIM_FUZZ_TARGETS " != *" $target "* ]]; then
    continue
  fi
  corpus="$build/corpus/$target"
  artifacts="$build/artifacts/$target"
  log="$build/logs/$target.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  extra=()
  [ -f "fuzz/${target#fuzz_}.dict" ] && extra+=("-dict=fuzz/${target#fuzz_}.dict")
  echo "fuzz.sh: $target for ${seconds}s (log: $log)" >&2
  started=$SECONDS
  # shellcheck disable=SC2086  # $seeds is a list of directories
  if "$build/bin/$target" "$corpus" $seeds "${extra[@]}" -max_len="$max_len" -timeout="${SPECSIM_FUZZ_TIMEOUT:-10}" \
       -rss_limit_mb=2048 -max_total_time="$seconds" -print_final_stats=1 \
       -artifact_prefix="$artifacts/" >"$log" 2>&1; then
    status=ok
  else
    status=FAILED
    failed+=("$target")
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  secs=$((SECONDS - started))  # wall time, start-up and seed loading included
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo "?")
  summary+=("$(printf '%-16s %-6s %10s execs %6s s  cov %s' "$target" "$status" "$runs" "$secs" "$cov")")
done

printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: findings in ${failed[*]}; inputs under $build/artifacts/, details in $build/logs/" >&2
  exit 1
fi
