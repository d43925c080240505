#!/usr/bin/env bash
# Reliability check by hand (docs/testing.md): run the whole test suite N times in a row while
# `stress-ng --cpu <cores>` keeps every core busy beside it, and print one summary line per run.
#   scripts/stress-suite.sh [runs=3] [stress workers=$(nproc)]
# Not for CI: it takes N times the suite's duration, and longer under load.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
workers=${2:-$(nproc)}
command -v stress-ng >/dev/null || { echo "stress-ng is missing: apt-get install stress-ng"; exit 1; }
stress-ng --cpu "$workers" --timeout 0 --quiet &
stress=$!
trap 'kill $stress 2>/dev/null' EXIT
mkdir -p .tmp
for i in $(seq 1 "$runs"); do
  started=$(date +%s)
  node scripts/test.mjs > ".tmp/stress-run-$i.log" 2>&1
  code=$?
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' ".tmp/stress-run-$i.log" | tail -1)
  echo "run $i: ${line:-no summary} (exit $code, $(( $(date +%s) - started )) s, stress-ng --cpu $workers beside it)"
  grep -E '^FAIL' ".tmp/stress-run-$i.log" | sed 's/^/  /'
done
