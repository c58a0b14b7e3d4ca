#!/usr/bin/env bash
# A data file piped in (/dev/stdin) is read once and checked like a file (issue 36).
set -eu
out=$("${SPECSIM_BIN:?}" check /dev/stdin < <(cat "${SPECSIM_DATA_DIR:?}/models/gpu/h200.yaml"))
grep -q "^# /dev/stdin: ok" <<<"$out"
grep -q "^name: h200" <<<"$out"
