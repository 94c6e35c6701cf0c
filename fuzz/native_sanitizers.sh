#!/usr/bin/env bash
# Build the compiled reader with AddressSanitizer + UndefinedBehaviorSanitizer (gcc) and run
# the native decoder tests (tests/native: golden, release and fuzz corpora, hypothesis values,
# every cut and damaged byte), the decoder tests and the native campaigns' corpus
# (tests/test_fuzz_corpora.py) with the compiled reader on.
#   fuzz/native_sanitizers.sh                 # the smoke
#   fuzz/native_sanitizers.sh tests/native -k reader   # other pytest arguments
# Works on a copy of the tree in a temporary directory, so the worktree's normal build
# (and any test running beside it) is untouched. Exit 1 on any sanitizer report or failure.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="$(pwd)/${PYTHON:-.venv/bin/python}"
CC="${CC:-gcc}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
tar --exclude=.venv --exclude=.git --exclude='*.so' --exclude=.hypothesis --exclude=__pycache__ -cf - \
    serde_kit tests fuzz pyproject.toml | tar -xf - -C "$WORK"
include="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
suffix="$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
"$CC" -shared -fPIC -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
    -Wall -Wextra -Wno-missing-field-initializers -Wno-unused-parameter -Werror \
    -I"$include" serde_kit/_reader.c -o "$WORK/serde_kit/_reader$suffix"
runtime="$("$CC" -print-file-name=libasan.so):$("$CC" -print-file-name=libubsan.so)"
cd "$WORK"
# Left out: the tests that cap the address space (ASan's shadow memory cannot live in it) and
# the one that decodes on the smallest supported thread stack (ASan's frames are several times
# larger; the normal build passes it in the suite's native run), and the packaging test that
# installs the package without a compiler (it builds nothing to sanitize; the copy has no setup.py).
[[ $# -gt 0 ]] || set -- tests/native tests/test_decoder.py tests/test_decode_budget.py tests/test_fuzz_corpora.py \
    --ignore tests/native/test_fallback_build.py \
    --deselect tests/test_decode_budget.py::test_the_smallest_supported_thread_stack_survives_every_prescan_path \
    --deselect tests/test_decode_budget.py::test_running_out_of_memory_is_a_typed_error_not_a_hang \
    --deselect tests/test_decode_budget.py::test_running_out_of_memory_while_decoding_is_a_limit_error \
    --deselect tests/test_decode_budget.py::test_big_recursion_limits_reuse_one_helper_thread_and_fail_typed_when_none_can_start
# Python's own allocations are not freed at exit: leak reports would be noise.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# pycryptodome (the legacy "+aes" rows' cipher) dlopens its C parts with RTLD_DEEPBIND, which
# the sanitizer runtime refuses (it aborts the process); its documented switch turns that off.
export PYCRYPTODOME_DISABLE_DEEPBIND=1
export SERDE_KIT_NATIVE=1 SERDE_KIT_REQUIRE_NATIVE=1 PYTHONDONTWRITEBYTECODE=1
LD_PRELOAD="$runtime" "$PY" -c 'import serde_kit.native as n, sys; print(n.reason(), n._reader.__file__); sys.exit(n.ACTIVE != "native")'
# Sanitized code runs several times slower: the per-test timeout is raised to match.
LD_PRELOAD="$runtime" "$PY" -m pytest -q -p no:cacheprovider -x -o timeout=1200 "$@"
