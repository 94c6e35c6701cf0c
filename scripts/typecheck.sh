#!/usr/bin/env bash
# Type-check the package, the typed README snippets (tests/typing/) and examples/ with mypy --strict
# and pyright, as users' editors will, then lint the package with ruff (a check, no formatting). Settings: [tool.mypy] and [tool.pyright] in
# pyproject.toml. Exit code 1 while either reports an error anywhere.
# tests/test_typecheck.py runs the same two commands and holds the files already clean at 0.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh dev
status=0
echo "== mypy --strict"
.venv/bin/python -m mypy serde_kit tests/typing examples || status=1
echo "== pyright"
.venv/bin/pyright serde_kit tests/typing examples || status=1
echo "== ruff check (lint only; rules in [tool.ruff])"
.venv/bin/ruff check serde_kit || status=1
exit $status
