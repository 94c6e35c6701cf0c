#!/usr/bin/env bash
# Compatibility job: serde_kit's built wheel, installed with all its extras next to the
# oldest supported and the newest LangGraph releases, each in its own fresh venv under
# build/compat/, running the serializer, wire-format, saver-integration, conformance and
# README tests against the installed wheel (PostgreSQL and MariaDB: the suite's own servers).
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
tests="${SERDE_KIT_COMPAT_TESTS:-tests/test_serializer.py tests/test_golden.py tests/test_legacy_json.py tests/ext tests/crypto tests/integration tests/tools/test_db.py tests/tools/test_rotate.py tests/test_readme.py}"
# Every extra a user can ask for (test, typecheck, dev and demo only gather these or tools).
extras="langgraph,sqlite,postgres,mysql,numpy,pydantic,pycryptodome,cli,kms"
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
# python -m build (PyPA's build frontend, from .venv) makes the sdist, then the wheel from
# the unpacked sdist in a temporary directory: files left in this tree's build/lib by an
# earlier in-tree build (modules since moved or deleted) cannot end up in the wheel, as they
# did with `pip wheel .`.
echo "== building the wheel (python -m build: sdist, then the wheel from it)"
if ! scripts/bootstrap.sh dev > "$out/build.log" 2>&1 \
        || ! .venv/bin/python -m build --outdir "$out/dist" . >> "$out/build.log" 2>&1; then
    cat "$out/build.log"; echo "== FAILED: building the wheel"; exit 1
fi
wheel="$(ls "$out"/dist/serde_kit-*.whl)"
# The wheel holds exactly the package's modules in this tree, no more, no fewer.
.venv/bin/python - "$wheel" <<'EOF'
import pathlib, sys, zipfile
shipped = {n for n in zipfile.ZipFile(sys.argv[1]).namelist() if n.endswith(".py")}
source = {p.as_posix() for p in pathlib.Path("serde_kit").rglob("*.py")}
if shipped != source:
    sys.exit(f"wheel modules differ from serde_kit/: extra {sorted(shipped - source)}, missing {sorted(source - shipped)}")
print(f"== wheel {pathlib.Path(sys.argv[1]).name}: {len(shipped)} modules, as in serde_kit/")
EOF

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
    echo "== $name: resolved $(grep -iE '^(langgraph|langgraph-checkpoint|langchain-core|langgraph-checkpoint-sqlite|langgraph-checkpoint-postgres|langgraph-checkpoint-mysql|pymysql|aiomysql|psycopg|ormsgpack|cryptography|numpy|pydantic)==' "$venv/resolved.txt" | tr '\n' ' ')"
    # Run a copy of the tests with no source tree beside it, so serde_kit comes from the wheel.
    work="$venv/work"
    mkdir -p "$work"
    cp -r tests examples scripts pyproject.toml README.md "$work/"  # tests/test_readme.py runs the demo
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
    if ! (cd "$work" && "$venv/bin/python" -m pytest -q -p no:cacheprovider $tests "${deselect[@]}" "$@"); then
        echo "== $name: TESTS FAILED"
        status=1
    else
        echo "== $name: ok"
    fi
done
exit $status
