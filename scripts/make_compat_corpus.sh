#!/usr/bin/env bash
# Regenerate the compatibility corpus (tests/compat/data/) with real old releases.
#
# For each langgraph-checkpoint release line that wrote a distinct format, make a
# venv under .compat-venvs/ (gitignored), install that exact release with the
# langgraph and sqlite saver releases it shipped with, record `pip freeze` in the
# corpus, and run tests/compat/generate.py inside it. Run on purpose only, never
# from the tests; commit the result. Usage: scripts/make_compat_corpus.sh [RELEASE...]
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"

# release | extra requirements (the langgraph + sqlite saver lines that accept it)
RELEASES=(
    "1.0.9|langgraph==0.2.28 langgraph-checkpoint-sqlite==1.0.3"     # json rows (the last json-only writer)
    "1.0.12|langgraph==0.2.28 langgraph-checkpoint-sqlite==1.0.4"    # first msgpack writer (python msgpack)
    "2.0.26|langgraph==0.3.34 langgraph-checkpoint-sqlite==2.0.11"   # ormsgpack, EncryptedSerializer, pickle_fallback
    "2.1.2|langgraph==0.6.11 langgraph-checkpoint-sqlite==2.0.11"    # numpy ext 6
    "3.0.1|langgraph==1.0.10 langgraph-checkpoint-sqlite==3.0.3"     # json writer removed
    "4.0.3|langgraph==1.0.10 langgraph-checkpoint-sqlite==3.0.3"     # _DeltaSnapshot ext 7, strict msgpack
    "4.3.2|langgraph==1.2.24 langgraph-checkpoint-sqlite==3.1.2"     # today's pinned release
)
COMMON="numpy==2.4.6 pycryptodome==3.23.0"

wanted=("$@")
for entry in "${RELEASES[@]}"; do
    release="${entry%%|*}"
    extra="${entry#*|}"
    if [ ${#wanted[@]} -gt 0 ] && [[ ! " ${wanted[*]} " == *" $release "* ]]; then
        continue
    fi
    venv=".compat-venvs/lgc-$release"
    out="tests/compat/data/$release"
    echo "== langgraph-checkpoint $release"
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pip install --quiet "langgraph-checkpoint==$release" $extra $COMMON 2>&1 \
        | grep -v "is ignored" || true
    mkdir -p "$out"
    "$venv/bin/python" -m pip freeze --all | grep -v "^-e \|^serde" > "$out/pip-freeze.txt"
    PYTHONPATH=. PYTHONHASHSEED=0 "$venv/bin/python" -W ignore -m tests.compat.generate "$out"
done
echo "corpus written to tests/compat/data/"
