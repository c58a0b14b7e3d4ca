#!/usr/bin/env bash
# Every command with its standard output on a full device (/dev/full) or closed must fail (exit
# non-zero) and say so on stderr: a report cut short is never an exit status of 0 (issue 36).
set -u
bin="${SPECSIM_BIN:?SPECSIM_BIN names the specsim binary}"
cd "${SPECSIM_DATA_DIR:?SPECSIM_DATA_DIR names the repository}"
commands=(
  "predict"
  "predict --json"
  "check models/gpu/h200.yaml"
  "comm --profile rtx-pro-6000-8x-pcie5-aic-nccl --ranks 8 --size 14KiB"
  "forward --model llama-3.1-8b --gpu h200 --tokens 1,4 --ctx 4096"
  "acceptance tests/data/valid/logs/sglang_issue11948.log"
  "breakeven"
  "rank"
  "sweep --vary speculation.num_steps=1..3"
  "sweep --vary speculation.num_steps=1..3 --csv --stream"
  "validate tests/data/valid/validation --json"
  "init --model llama-3.1-8b --draft llama-3.1-8b-eagle3 --topology 8x-h200-nvswitch --engine sglang --tp 1"
  "priors"
  "priors --json"
  "--help"
  "--version"
)
failed=0
for c in "${commands[@]}"; do
  # shellcheck disable=SC2086
  "$bin" $c > /dev/null 2>/dev/null || { echo "stdout_full: '$c' fails even on a working stdout: fix the list" >&2; failed=1; continue; }
  for target in full closed; do
    if [ "$target" = full ]; then
      err=$("$bin" $c 2>&1 >/dev/full); rc=$?
    else
      err=$("$bin" $c 2>&1 >&-); rc=$?
    fi
    if [ "$rc" -eq 0 ] || ! grep -q "cannot write the output to standard output" <<<"$err"; then
      echo "stdout_full: '$c' with stdout $target: exit $rc, stderr: $err" >&2
      failed=1
    fi
  done
done
exit $failed
