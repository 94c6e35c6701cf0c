#!/usr/bin/env bash
# Run the demo: a LangGraph review workflow on an embedded SQLite file, interrupted and resumed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh demo
exec .venv/bin/python examples/demo.py "$@"
