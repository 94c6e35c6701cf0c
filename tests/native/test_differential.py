"""The compiled reader and the pure path are equals: identical values, types and errors.

Every stored row the project keeps (golden rows written by the real
JsonPlusSerializer, the release corpus, the fuzz corpora) and every value the
hypothesis strategies make is read by both paths; so are damaged copies of
the golden rows (cut at every byte, one byte changed).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from hypothesis import assume, given

from serde_kit import Allowlist
from tests.compat import cases as compat_cases
from tests.compat.corpus import RELEASES, stored_rows
from tests.support.strategies import checkpoint_values, stock_values

from .conftest import assert_same_outcome, make_pair

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "data"
CORPUS = REPO / "fuzz" / "corpus"
TAGS = ["msgpack", "json", "bytes", "bytearray", "null", "pickle", "", "msgpack+aesgcm", "Msgpack", "msgpack\x00"]


def _golden() -> list[tuple[str, tuple[str, bytes]]]:
    manifest = json.loads((GOLDEN / "manifest.json").read_text())
    return [
        (f"golden/{name}", (case["tag"], (GOLDEN / case["file"]).read_bytes()))
        for name, case in sorted(manifest["cases"].items())
    ]


def _fuzz() -> list[tuple[str, tuple[str, bytes]]]:
    rows = []
    for harness in ("fuzz_decode", "fuzz_resources"):
        for path in sorted((CORPUS / harness).iterdir()):
            raw = path.read_bytes()
            tag = TAGS[raw[0] % len(TAGS)] if raw else "msgpack"
            rows.append((f"{harness}/{path.name[:12]}", (tag, raw[1:])))
    return rows


def _release() -> list[tuple[str, tuple[str, bytes]]]:
    return [
        (f"{release}/{row['name']}", (row["tag"], base64.b64decode(row["data"])))
        for release in RELEASES
        for row in stored_rows(release)
        if row["kind"] != "aes"
    ]


GOLDEN_ROWS = _golden()
FUZZ_ROWS = _fuzz()
RELEASE_ROWS = _release()


def test_the_row_sets_are_not_empty():
    assert len(GOLDEN_ROWS) > 50 and len(FUZZ_ROWS) > 80 and len(RELEASE_ROWS) > 100


@pytest.mark.parametrize("lenient", [False, True], ids=["strict", "lenient"])
def test_golden_rows(lenient):
    from tests.support.strategy_types import USER_TYPES
    from tests.test_golden import ALL_TYPES as GOLDEN_TYPES

    fast, pure = make_pair(allow=[*USER_TYPES, *GOLDEN_TYPES], lenient=lenient)
    for name, row in GOLDEN_ROWS:
        assert_same_outcome(fast, pure, row, name)


@pytest.mark.parametrize("lenient", [False, True], ids=["strict", "lenient"])
def test_fuzz_corpora(lenient):
    from tests.support.strategy_types import USER_TYPES

    fast, pure = make_pair(allow=USER_TYPES, lenient=lenient)
    for name, row in FUZZ_ROWS:
        assert_same_outcome(fast, pure, row, name)


def test_release_corpus():
    fast, pure = make_pair(allow=list(compat_cases.USER_TYPES), pickle_fallback=True)
    for name, row in RELEASE_ROWS:
        assert_same_outcome(fast, pure, row, name)


def test_with_nothing_allowed_every_typed_value_is_refused_alike():
    fast, pure = make_pair(allowlist=Allowlist(defaults=False))
    for name, row in GOLDEN_ROWS:
        assert_same_outcome(fast, pure, row, name)


_DAMAGE_PAIR: list[tuple[object, object]] = []


@pytest.mark.parametrize(
    "name, data",
    [(name, data) for name, (tag, data) in GOLDEN_ROWS if tag == "msgpack"],
    ids=[name for name, (tag, _) in GOLDEN_ROWS if tag == "msgpack"],
)
def test_golden_rows_cut_at_every_byte_and_with_one_byte_changed(name, data):
    if not _DAMAGE_PAIR:
        from tests.test_golden import ALL_TYPES as GOLDEN_TYPES

        _DAMAGE_PAIR.append(make_pair(allow=list(GOLDEN_TYPES)))
    fast, pure = _DAMAGE_PAIR[0]
    # Every byte of all but the one large row (38 KB of plain nested values, whose every
    # read is compared in full); of that one, its first and last 64 bytes (the headers),
    # 300 cuts between and 16 changed places, so a suite run on a loaded machine (load 14
    # on 2 cores) stays well inside its timeout.
    large = len(data) > 3000
    step = max(1, len(data) // 300) if large else 1
    cuts = sorted({*range(0, len(data), step), *range(min(len(data), 64)), *range(max(0, len(data) - 64), len(data))})
    for cut in cuts:
        assert_same_outcome(fast, pure, ("msgpack", data[:cut]), f"{name}[:{cut}]")
    for at in range(0, len(data), max(1, len(data) // (16 if large else 64))):
        for byte in (0x00, 0x7F, 0x90, 0xC1, 0xDC, 0xDE, 0xFF):
            changed = data[:at] + bytes([byte]) + data[at + 1 :]
            assert_same_outcome(fast, pure, ("msgpack", changed), f"{name}[{at}]={byte:#x}")


_PAIR = None


def _shared_pair():
    global _PAIR
    if _PAIR is None:
        from tests.support.strategy_types import USER_TYPES

        _PAIR = make_pair(allow=USER_TYPES)
    return _PAIR


@given(checkpoint_values())
def test_checkpoint_values(value):
    fast, pure = _shared_pair()
    assert_same_outcome(fast, pure, pure.dumps_typed(value), "value")


@given(stock_values())
def test_stock_values_written_by_the_stock_serializer(value):
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    fast, pure = _shared_pair()
    try:
        row = JsonPlusSerializer().dumps_typed(value)
    except TypeError:  # the stock writer cannot write some of them (numpy arrays in some layouts)
        assume(False)
    assert_same_outcome(fast, pure, row, "stock value")
