#!/usr/bin/env bash
# Reproduce the recorded benchmark run (bench/README.md).
#   bench/run.sh            # full comparison, then numpy again with the mmap threshold pinned
#   bench/run.sh --rounds 3 # extra args go to both compare.py runs
# Raw numbers: bench/results/*.json (git-ignored scratch unless you commit them on purpose).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
PIN="${MALLOC_PIN:-131072}"
mkdir -p bench/results
echo "### run 1: glibc default (dynamic mmap threshold)"
env -u MALLOC_MMAP_THRESHOLD_ "$PY" bench/compare.py --json bench/results/default.json "$@"
echo
echo "### run 2: numpy with MALLOC_MMAP_THRESHOLD_=$PIN (pinned: no dynamic raise, every big buffer is a fresh mmap)"
MALLOC_MMAP_THRESHOLD_="$PIN" "$PY" bench/compare.py --only numpy --json bench/results/numpy_pinned.json "$@"
