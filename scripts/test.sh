#!/usr/bin/env bash
# Run the whole test suite; extra args go to pytest.  On a fresh machine this sets up all of
# it: .venv (scripts/bootstrap.sh) and the PostgreSQL and MariaDB server binaries the tests
# start private servers from (scripts/provision.sh: apt-get when run as root, otherwise one
# line saying what to run).  With pytest args (a subset of the tests) a missing server is
# reported and the run goes on, since the subset may not need it.  The suite reads with
# serde_kit's default path, the compiled reader when it was built; SERDE_KIT_PURE_PYTHON=1
# runs it on the pure-Python path (CI runs both, .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! scripts/provision.sh && [ $# -eq 0 ]; then
    exit 3
fi
scripts/bootstrap.sh dev
exec .venv/bin/python -m pytest "$@"
