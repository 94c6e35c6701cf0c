"""The compiled reader and the pure path are equals: identical values, types and errors.

Every stored row the project keeps (golden rows written by the real
JsonPlusSerializer, the release corpus, every fuzz corpus: the decode-like
harnesses' rows, the encrypted rows decrypted by the same keyring, the values
the round-trip harness builds) and every value the hypothesis strategies make is
read by both paths; so are damaged copies of the golden rows (cut at every byte,
one byte changed). Identical means: values equal with the same types all the
way down, or the same error class with the same message, and the same warnings
(tests/native/conftest.py).
"""

from __future__ import annotations

import base64
import functools
import inspect
import json
from pathlib import Path

import pytest
from hypothesis import assume, given, strategies as st

from serde_kit import Allowlist
from tests.compat import cases as compat_cases
from tests.compat.corpus import RELEASES, stored_rows
from tests.support.compare import assert_same
from tests.support.strategies import checkpoint_values, state_dicts, stock_values

from .conftest import assert_same_outcome, make_pair, outcome

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


#: The corpora whose inputs are a tag selector byte and a row (fuzz/_common.split_tagged).
DECODE_LIKE = ("fuzz_decode", "fuzz_resources", "fuzz_cost", "fuzz_native")


def _fuzz() -> list[tuple[str, tuple[str, bytes]]]:
    rows = []
    for harness in DECODE_LIKE:
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
    assert len(GOLDEN_ROWS) > 50 and len(RELEASE_ROWS) > 100
    for harness in (*DECODE_LIKE, "fuzz_encrypted", "fuzz_roundtrip"):
        assert len(list((CORPUS / harness).iterdir())) >= 20, f"fuzz/corpus/{harness} lost its inputs"
    assert len(FUZZ_ROWS) == sum(len(list((CORPUS / harness).iterdir())) for harness in DECODE_LIKE)


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


@pytest.mark.parametrize("plaintext", [False, True], ids=["encrypted-only", "plaintext-allowed"])
def test_encrypted_corpus_decrypted_by_the_same_keyring(plaintext):
    """The fuzz_encrypted rows (damaged headers, nonces, tags and inner rows) through an
    EncryptedSerializer over each path: what decrypts is read by that path."""
    from serde_kit.crypto import EncryptedSerializer, Keyring
    from tests.support.fuzz_scripts import fuzz_module
    from tests.support.strategy_types import USER_TYPES

    checks, common = fuzz_module("checks"), fuzz_module("_common")
    ring = Keyring({"k1": checks.K1, "k2": checks.K2}, primary="k2", legacy_key=checks.LEGACY_KEY)
    fast, pure = (EncryptedSerializer(inner, ring, allow_plaintext=plaintext) for inner in make_pair(allow=USER_TYPES))
    paths = sorted((CORPUS / "fuzz_encrypted").iterdir())
    for path in paths:
        row = common.split_tagged(path.read_bytes(), checks.ENC_TAGS)
        assert_same_outcome(fast, pure, row, f"fuzz_encrypted/{path.name[:12]}")
    # The corpus reaches the inner read: a good share of its rows decrypt to a value.
    rows = [common.split_tagged(path.read_bytes(), checks.ENC_TAGS) for path in paths]
    read = sum(outcome(pure.loads_typed, row)[0] == "value" for row in rows)
    assert read >= 5, read


def test_values_the_round_trip_harness_builds():
    """Each fuzz_roundtrip input builds a value (fuzz/values.py, every supported family,
    nested); its row, as serde_kit and as the stock serializer write it, reads alike."""
    import atheris
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from tests.support.fuzz_scripts import fuzz_module
    from tests.support.strategy_types import USER_TYPES

    values = fuzz_module("values")
    fast, pure = make_pair(allow=USER_TYPES)
    stock = JsonPlusSerializer()
    for path in sorted((CORPUS / "fuzz_roundtrip").iterdir()):
        value = values.build(atheris.FuzzedDataProvider(path.read_bytes()))
        assert_same_outcome(fast, pure, pure.dumps_typed(value), f"fuzz_roundtrip/{path.name[:12]}")
        try:
            row = stock.dumps_typed(value)
        except TypeError:  # the stock writer cannot write some of them (numpy arrays in some layouts)
            continue
        assert_same_outcome(fast, pure, row, f"fuzz_roundtrip/{path.name[:12]} (stock writer)")


@functools.cache
def _attack_rows() -> list[tuple[str, tuple[str, bytes]]]:
    """Every hostile row tests/support/budget_attacks.py builds without arguments (floods,
    deep nesting, forged names, oversized shapes, ...) and its subscripted standard types."""
    from tests.support import budget_attacks as attack

    rows = []
    for name, build in vars(attack).items():
        if name.startswith("_") or not inspect.isfunction(build) or build.__module__ != attack.__name__:
            continue
        if any(p.default is inspect.Parameter.empty for p in inspect.signature(build).parameters.values()):
            continue
        data = build()
        assert type(data) is bytes, name
        rows.append((f"attack/{name}", ("json" if data[:1] in (b"{", b"[") else "msgpack", data)))
    for case in attack.SUBSCRIPTED_STANDARD:
        rows.append((f"attack/subscripted {case[1]}.{case[2]}", ("msgpack", attack.subscripted_standard(*case))))
    return rows


@pytest.mark.parametrize("lenient", [False, True], ids=["strict", "lenient"])
def test_budget_attack_rows_end_alike(lenient):
    """The rows each limit and the work meter were built against end in the same error
    (class and message, naming the same limit) on both paths, or the same value."""
    from tests.support.strategy_types import USER_TYPES

    rows = _attack_rows()
    assert len(rows) >= 40, len(rows)
    fast, pure = make_pair(allow=USER_TYPES, lenient=lenient)
    for name, row in rows:
        assert_same_outcome(fast, pure, row, name)
    assert sum(outcome(pure.loads_typed, row)[0] == "error" for _, row in rows) >= 20


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


@given(state_dicts())
def test_state_dicts(value):
    fast, pure = _shared_pair()
    assert_same_outcome(fast, pure, pure.dumps_typed(value), "state")


@given(checkpoint_values(), st.data())
def test_checkpoint_values_cut_and_with_one_byte_changed(value, data):
    """Hypothesis-made rows damaged where hypothesis chooses: both paths end alike,
    mostly in the same error (class and message)."""
    fast, pure = _shared_pair()
    tag, raw = pure.dumps_typed(value)
    cut = data.draw(st.integers(0, len(raw)), label="cut")
    assert_same_outcome(fast, pure, (tag, raw[:cut]), f"cut at {cut}")
    if raw:
        at = data.draw(st.integers(0, len(raw) - 1), label="at")
        byte = data.draw(st.integers(0, 255), label="byte")
        assert_same_outcome(fast, pure, (tag, raw[:at] + bytes([byte]) + raw[at + 1 :]), f"[{at}]={byte:#x}")


@given(stock_values())
def test_stock_values_written_by_the_stock_serializer(value):
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    fast, pure = _shared_pair()
    try:
        row = JsonPlusSerializer().dumps_typed(value)
    except TypeError:  # the stock writer cannot write some of them (numpy arrays in some layouts)
        assume(False)
    assert_same_outcome(fast, pure, row, "stock value")


def test_a_set_of_one_nan_reads_alike_and_the_comparison_still_sees_a_difference() -> None:
    # Found by the damaged-rows property: a set holding a NaN is not == to an equal one.
    fast, pure = make_pair()
    row = ("msgpack", b"\xc7\x18\x00\x93\xa8builtins\xa3set\x91\xcb\x7f\xf0\x01\x00\x00\x00\x00\x00")
    assert_same_outcome(fast, pure, row)
    nan = float("nan")
    assert_same({nan, 1.0}, {float("nan"), 1.0})
    for other in ({1.0, 2.0}, {nan}, {float("nan"), 2.0}, {float("nan"), float("nan"), 1.0}):
        with pytest.raises(AssertionError):
            assert_same({nan, 1.0}, other)


# --- stored shapes of the mixed_stdlib builders (Decimal texts, POSIX path parts) ----------

_PATH_PART = st.one_of(
    st.sampled_from(["/", "//", "///", ".", "..", "", "a", "b/c", "/d", "e/", "é", "a\x00b", "\\", "C:"]),
    st.text(alphabet="/.ab\\:", max_size=5),
    st.text(max_size=4),
)
_DECIMAL_TEXT = st.one_of(
    st.from_regex(r"\A[+-]?[0-9]{0,40}(\.[0-9]{0,30})?\Z"),
    st.text(alphabet="0123456789+-.eE_ nNaIfinity", max_size=12),
    st.text(max_size=6),
)


def _ext_row(code: int, module: str, name: str, arg: object) -> tuple[str, bytes]:
    import ormsgpack

    return "msgpack", ormsgpack.packb([ormsgpack.Ext(code, ormsgpack.packb([module, name, arg]))] * 2)


@given(
    st.sampled_from(["PosixPath", "PurePosixPath", "PureWindowsPath", "Path", "PurePath"]),
    st.lists(_PATH_PART, max_size=5),
)
def test_stored_path_parts(cls, parts):
    fast, pure = _shared_pair()
    assert_same_outcome(fast, pure, _ext_row(1, "pathlib", cls, parts), f"{cls}{parts!r}")


@given(_DECIMAL_TEXT)
def test_stored_decimal_texts(text):
    fast, pure = _shared_pair()
    assert_same_outcome(fast, pure, _ext_row(0, "decimal", "Decimal", text), repr(text))
