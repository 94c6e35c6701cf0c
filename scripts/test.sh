#!/usr/bin/env bash
# Run the whole test suite (starts its own PostgreSQL server). Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh dev
exec .venv/bin/python -m pytest "$@"
