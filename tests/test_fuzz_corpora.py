"""The native fuzz corpus, replayed through the fuzz_native check on every run.

``fuzz/corpus/fuzz_native/`` holds the inputs the 10^6-execution native campaigns
kept (merged, so each adds coverage of serde_kit's Python code or, from the
clang coverage build, of the compiled reader's C code), and
``fuzz/regressions/fuzz_native/`` its findings. Each goes through
``checks.check_native``: both read paths give identical values and types or the
same error. ``fuzz/native_sanitizers.sh`` runs this file against an ASan+UBSan
build of the reader, so every input the campaigns reached is replayed under the
sanitizers in CI.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fuzz_scripts import fuzz_module

REPO = Path(__file__).resolve().parent.parent
checks = fuzz_module("checks")
INPUTS = sorted((REPO / "fuzz" / "corpus" / "fuzz_native").glob("*")) + sorted(
    (REPO / "fuzz" / "regressions" / "fuzz_native").glob("*")
)


def test_the_native_corpus_is_there() -> None:
    assert len(INPUTS) >= 100, "fuzz/corpus/fuzz_native lost its inputs"


@pytest.mark.parametrize("chunk", range(8))
def test_native_corpus_reads_the_same_on_both_paths(chunk: int) -> None:
    from tests.native.conftest import require_reader

    require_reader()
    for path in INPUTS[chunk::8]:
        try:
            checks.check_native(path.read_bytes())
        except AssertionError as exc:
            raise AssertionError(f"{path.relative_to(REPO)}: {exc}") from None
