#!/usr/bin/env bash
# Reproduce the recorded benchmark run (bench/README.md).
#   bench/run.sh            # full comparison, then numpy again with the mmap threshold pinned
#   bench/run.sh --rounds 3 # extra args go to both compare.py runs
# Raw numbers: .benchmarks/compare/*.json (git-ignored, next to pytest-benchmark's own results).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
PIN="${MALLOC_PIN:-131072}"
mkdir -p .benchmarks/compare
echo "### run 1: glibc default (dynamic mmap threshold)"
env -u MALLOC_MMAP_THRESHOLD_ "$PY" bench/compare.py --json .benchmarks/compare/default.json "$@"
echo
echo "### run 2: numpy with MALLOC_MMAP_THRESHOLD_=$PIN (pinned: no dynamic raise, every big buffer is a fresh mmap)"
MALLOC_MMAP_THRESHOLD_="$PIN" "$PY" bench/compare.py --only numpy --json .benchmarks/compare/numpy_pinned.json "$@"
