#!/usr/bin/env bash
# Run every fuzz harness for SECONDS each (default 60), one after another (one core).
#   fuzz/run.sh 60                 # time-bounded
#   FUZZ_RUNS=1000000 fuzz/run.sh  # execution-bounded instead (no time limit)
#   FUZZ_HARNESSES="fuzz_decode" fuzz/run.sh 30
#   FUZZ_MAX_LEN=4096 fuzz/run.sh 60   # cap input size (default: the largest seed)
#   FUZZ_HARNESSES=fuzz_native fuzz/run.sh 60   # compiled reader vs pure path (seeds: its own + fuzz_decode's)
#   FUZZ_NATIVE=1 FUZZ_HARNESSES="fuzz_decode fuzz_resources fuzz_cost" fuzz/run.sh 60
#                                  # the harnesses read with the compiled reader (SERDE_KIT_NATIVE=1;
#                                  # a harness refuses to start if the reader is not the one reading);
#                                  # without FUZZ_NATIVE=1 they read with the pure path
#                                  # (SERDE_KIT_PURE_PYTHON=1), which serde_kit no longer picks by default
#   FUZZ_WORK=/tmp/fz fuzz/run.sh 60   # keep the grown corpora and logs in /tmp/fz/<harness>
# New interesting inputs go to a scratch dir, not the committed seed corpus;
# crashes land in fuzz/crashes/<harness>/ (git-ignored). Exit 1 if any harness crashed.
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${1:-60}"
PY="${PYTHON:-.venv/bin/python}"
HARNESSES="${FUZZ_HARNESSES:-fuzz_decode fuzz_resources fuzz_cost fuzz_roundtrip fuzz_encrypted}"
if [[ "${FUZZ_NATIVE:-}" == 1 ]]; then
    export SERDE_KIT_NATIVE=1 SERDE_KIT_REQUIRE_NATIVE=1
else
    export SERDE_KIT_PURE_PYTHON=1  # fuzz_native still reads with both: it picks each path itself
fi
if [[ -n "${FUZZ_WORK:-}" ]]; then
    SCRATCH="$FUZZ_WORK"; mkdir -p "$SCRATCH"
else
    SCRATCH="$(mktemp -d)"
    trap 'rm -rf "$SCRATCH"' EXIT
fi
status=0
for h in $HARNESSES; do
    mkdir -p "fuzz/crashes/$h" "$SCRATCH/$h"
    if [[ -n "${FUZZ_RUNS:-}" ]]; then limit="-runs=$FUZZ_RUNS"; else limit="-max_total_time=$SECONDS_EACH"; fi
    dict=(); [[ -f "fuzz/$h.dict" ]] && dict=("-dict=fuzz/$h.dict")
    [[ ($h == fuzz_resources || $h == fuzz_cost || $h == fuzz_native) && -f fuzz/fuzz_decode.dict ]] && dict=("-dict=fuzz/fuzz_decode.dict")
    seeds=("fuzz/corpus/$h"); [[ $h == fuzz_native ]] && seeds=(fuzz/corpus/fuzz_native fuzz/corpus/fuzz_decode)
    echo "== $h ($limit)"
    start=$(date +%s)
    maxlen=(); [[ -n "${FUZZ_MAX_LEN:-}" ]] && maxlen=("-max_len=$FUZZ_MAX_LEN")
    "$PY" "fuzz/$h.py" "$limit" "${dict[@]}" "${maxlen[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="fuzz/crashes/$h/" "$SCRATCH/$h" "${seeds[@]}" 2>&1 | tee "$SCRATCH/$h.log" \
        | grep -E "^(INFO: Seed|#[0-9]+ +DONE|stat::|==[0-9]+== ERROR| === Uncaught)"
    rc=${PIPESTATUS[0]}
    echo "== $h exit=$rc seconds=$(( $(date +%s) - start ))"
    if [[ $rc -ne 0 ]]; then
        status=1
        tail -n 40 "$SCRATCH/$h.log"
    fi
done
exit $status
