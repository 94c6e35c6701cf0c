#!/usr/bin/env bash
# Create .venv (once) and install serde-kit with the given extras into it, at the exact
# versions in constraints/test.txt (the extras themselves state ranges).
# Usage: scripts/bootstrap.sh EXTRAS   e.g. scripts/bootstrap.sh dev
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-dev}"
python="${PYTHON:-python3}"
stamp=".venv/.installed-$extras"
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
# serde_kit/__init__.py holds the version, which the installed metadata copies; a changed
# _reader.c needs the compiled reader built again, and so does a .venv installed without it
# (no compiler then) when the build is now required (SERDE_KIT_REQUIRE_NATIVE=1, as in CI).
missing_reader=0
if [ "${SERDE_KIT_REQUIRE_NATIVE:-}" = 1 ] && [ -f "$stamp" ] \
        && ! .venv/bin/python -c 'import serde_kit._reader' 2>/dev/null; then
    missing_reader=1
fi
if [ ! -f "$stamp" ] || [ "$missing_reader" = 1 ] || [ pyproject.toml -nt "$stamp" ] \
        || [ constraints/test.txt -nt "$stamp" ] || [ serde_kit/__init__.py -nt "$stamp" ] \
        || [ serde_kit/_reader.c -nt "$stamp" ] || [ setup.py -nt "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -c constraints/test.txt -e ".[$extras]"
    touch "$stamp"
fi
