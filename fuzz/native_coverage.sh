#!/usr/bin/env bash
# Fuzz with libFuzzer guided by the compiled reader's own C coverage (atheris "native
# extension fuzzing"): serde_kit/_reader.c is built with clang -fsanitize=fuzzer-no-link
# (plus AddressSanitizer + UndefinedBehaviorSanitizer unless FUZZ_SANITIZE=0), and a
# libFuzzer from clang's runtime (with the ASan runtime linked in) is preloaded, so the
# reader's edges and comparisons count as coverage next to serde_kit's Python code.
#   fuzz/native_coverage.sh fuzz_native -runs=100000            # any harness, any libFuzzer flag
#   FUZZ_SANITIZE=0 fuzz/native_coverage.sh fuzz_decode -max_total_time=600
#   FUZZ_WORK=/tmp/cov fuzz/native_coverage.sh fuzz_native ...   # keep the grown corpus there
#   FUZZ_SANITIZE=0 fuzz/native_coverage.sh fuzz_native -merge=1 "$PWD/fuzz/corpus/fuzz_native" /tmp/cov/fuzz_native
#                                  # merge by Python and C coverage (absolute paths: it runs in a copy)
# Needs clang (Debian: apt-get install clang) with its compiler-rt (libclang_rt.fuzzer_no_main).
# Works on a copy of the tree in a temporary directory (the worktree's build is untouched);
# seeds: fuzz/corpus/<harness> (and fuzz_decode's for fuzz_native), inputs up to 4 KiB by default
# (FUZZ_MAX_LEN), fuzz_decode.dict. Crashes land in fuzz/crashes/<harness>-native-cov/.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
PY="$ROOT/${PYTHON:-.venv/bin/python}"
CLANG="${CLANG:-clang}"
harness="${1:?usage: fuzz/native_coverage.sh HARNESS [libFuzzer flags...]}"
shift
command -v "$CLANG" >/dev/null || { echo "native_coverage.sh: $CLANG not found (apt-get install clang)" >&2; exit 2; }
rt="$("$CLANG" -print-resource-dir)/lib/linux"
arch="$(uname -m)"
[[ -f "$rt/libclang_rt.fuzzer_no_main-$arch.a" ]] || { echo "native_coverage.sh: no libFuzzer in $rt" >&2; exit 2; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
tar --exclude=.venv --exclude=.git --exclude='*.so' --exclude=.hypothesis --exclude=__pycache__ \
    --exclude=fuzz/crashes -cf - serde_kit tests fuzz bench pyproject.toml | tar -xf - -C "$WORK"
include="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
suffix="$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
sanitize="fuzzer-no-link"
runtime=("-Wl,--whole-archive" "$rt/libclang_rt.fuzzer_no_main-$arch.a" "-Wl,--no-whole-archive")
if [[ "${FUZZ_SANITIZE:-1}" != 0 ]]; then
    sanitize="fuzzer-no-link,address,undefined"
    # The ASan runtime and libFuzzer in one preloaded library (as atheris' asan_with_fuzzer.so):
    # preloaded separately, the sanitizer's weak coverage callbacks would shadow libFuzzer's.
    # Its preinit object cannot live in a shared library (the preload initialises it instead).
    mkdir "$WORK/asan"
    (cd "$WORK/asan" && ar x "$rt/libclang_rt.asan-$arch.a" && rm -f asan_preinit*.o)
    runtime=("$WORK"/asan/*.o "${runtime[@]}")
fi
"$CLANG" -shared -fPIC -o "$WORK/libfuzzer_preload.so" "${runtime[@]}" -lstdc++ -lpthread -ldl -lm -lrt
"$CLANG" -shared -fPIC -O1 -g -fno-omit-frame-pointer -fsanitize="$sanitize" -fno-sanitize-recover=undefined \
    -Wall -Wextra -Wno-missing-field-initializers -Wno-unused-parameter -Werror \
    -I"$include" serde_kit/_reader.c -o "$WORK/serde_kit/_reader$suffix"
seeds=("fuzz/corpus/$harness")
[[ $harness == fuzz_native ]] && seeds=(fuzz/corpus/fuzz_native fuzz/corpus/fuzz_decode)
corpus="${FUZZ_WORK:-$WORK/corpus}/$harness"
crashes="$ROOT/fuzz/crashes/$harness-native-cov"
mkdir -p "$corpus" "$crashes"
cd "$WORK"
export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:quarantine_size_mb=64:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export SERDE_KIT_NATIVE=1 SERDE_KIT_REQUIRE_NATIVE=1 PYTHONDONTWRITEBYTECODE=1
# libFuzzer's -merge=1 runs the harness as a program (argv[0]): its shebang finds this python.
export PATH="$(dirname "$PY"):$PATH"
# The harness must read with this build of the reader, not the worktree's.
LD_PRELOAD="$WORK/libfuzzer_preload.so" "$PY" -c "
import sys; sys.path.insert(0, '$WORK')
import serde_kit.native as n
assert n._reader.__file__.startswith('$WORK'), n._reader.__file__
print(n.reason(), n._reader.__file__)"
dirs=("$corpus" "${seeds[@]}")
case " $* " in *" -merge=1 "*) dirs=() ;; esac # merging: the caller names the directories
LD_PRELOAD="$WORK/libfuzzer_preload.so" "$PY" "fuzz/$harness.py" -dict=fuzz/fuzz_decode.dict \
    -max_len="${FUZZ_MAX_LEN:-4096}" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$crashes/" "$@" "${dirs[@]}"
