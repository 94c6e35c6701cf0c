#!/usr/bin/env bash
# Compatibility job: serde_kit's built wheel next to the oldest supported and the newest
# LangGraph releases, each in its own venv under build/compat/, running the serializer,
# wire-format, saver-integration and conformance tests against the installed wheel.
# Usage: scripts/compat.sh [oldest] [newest] [-- PYTEST_ARGS...]   (default: both)
#   oldest: the pins in constraints/compat-oldest.txt (the extras' lower bounds)
#   newest: whatever PyPI resolves today for the extras' upper bounds
# SERDE_KIT_COMPAT_TESTS overrides the test selection (space-separated paths); PYTHON picks
# the interpreter for the venvs (e.g. PYTHON=python3.13 scripts/compat.sh newest).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
python="${PYTHON:-python3}"
envs=()
while [ $# -gt 0 ]; do
    case "$1" in
        oldest|newest) envs+=("$1"); shift ;;
        --) shift; break ;;
        *) echo "usage: scripts/compat.sh [oldest] [newest] [-- PYTEST_ARGS...]" >&2; exit 2 ;;
    esac
done
[ ${#envs[@]} -gt 0 ] || envs=(oldest newest)
tests="${SERDE_KIT_COMPAT_TESTS:-tests/test_serializer.py tests/test_golden.py tests/test_legacy_json.py tests/ext tests/crypto tests/integration tests/tools/test_db.py tests/tools/test_rotate.py}"
# MySQL is left out: its savers are tested in the main suite, and -m "not mysql" below.
extras="langgraph,sqlite,postgres,numpy,pydantic,pycryptodome,cli,kms"
# Test tools only (pytest, hypothesis, ...), at the versions the main suite uses.
tool_pins="$(grep -iE '^(pytest|pytest-timeout|hypothesis|langgraph-checkpoint-conformance|moto)==' constraints/test.txt | sed 's/^moto==/moto[server]==/')"

out="$root/build/compat"
quiet() {  # run pip, hiding the lines about this machine's empty local indexes; keep its exit code
    local rc=0
    "$@" > "$out/pip.log" 2>&1 || rc=$?
    grep -v "^WARNING: Location" "$out/pip.log" || true
    return $rc
}
rm -rf "$out/dist"
mkdir -p "$out/dist"
echo "== building the wheel"
quiet "$python" -m pip wheel --quiet --no-deps --wheel-dir "$out/dist" .
wheel="$(ls "$out"/dist/serde_kit-*.whl)"

status=0
for name in "${envs[@]}"; do
    venv="$out/$name"
    echo "== $name: fresh venv $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    pip=("$venv/bin/python" -m pip --quiet --disable-pip-version-check)
    if [ "$name" = oldest ]; then
        # As a user's project would: the wheel with its extras, next to pinned old releases.
        mapfile -t pins < <(grep -vE '^\s*(#|$)' constraints/compat-oldest.txt)
        install=(install "$wheel[$extras]" "${pins[@]}")
    else
        install=(install --upgrade "$wheel[$extras]")
    fi
    if ! quiet "${pip[@]}" "${install[@]}"; then
        echo "== $name: FAILED: pip install ${install[*]}"
        status=1
        continue
    fi
    # The test tools, without letting them move any LangGraph package.
    "$venv/bin/pip" freeze --exclude-editable > "$venv/resolved.txt"
    # shellcheck disable=SC2086
    quiet "${pip[@]}" install -c "$venv/resolved.txt" $tool_pins
    echo "== $name: resolved $(grep -iE '^(langgraph|langgraph-checkpoint|langchain-core|langgraph-checkpoint-sqlite|langgraph-checkpoint-postgres|psycopg|ormsgpack|cryptography|numpy|pydantic)==' "$venv/resolved.txt" | tr '\n' ' ')"
    # Run a copy of the tests with no source tree beside it, so serde_kit comes from the wheel.
    work="$venv/work"
    mkdir -p "$work"
    cp -r tests pyproject.toml "$work/"
    site="$(cd "$work" && "$venv/bin/python" -c 'import serde_kit, os; print(os.path.dirname(serde_kit.__file__))')"
    case "$site" in *site-packages*) ;; *) echo "== $name: serde_kit not imported from the wheel: $site"; exit 1 ;; esac
    echo "== $name: pytest (serde_kit from $site)"
    deselect=()
    if [ "$name" = oldest ]; then
        # This one checks the recorded expectations against the stock reader of
        # langgraph-checkpoint 4.3.2 itself (the release that wrote tests/golden/);
        # older stock readers give other results (4.1.0 returns None for a numpy case).
        # What serde_kit reads and writes is still checked against the old reader.
        deselect=(--deselect tests/test_golden.py::test_stock_reader_still_gives_the_recorded_results)
    fi
    # shellcheck disable=SC2086
    if ! (cd "$work" && "$venv/bin/python" -m pytest -q -p no:cacheprovider -m "not mysql" $tests "${deselect[@]}" "$@"); then
        echo "== $name: TESTS FAILED"
        status=1
    else
        echo "== $name: ok"
    fi
done
exit $status
