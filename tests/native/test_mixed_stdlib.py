"""The compiled reader on the mixed standard-library payload (bench/payloads.py's
mixed_stdlib): Decimal hashes computed from the stored text, and POSIX paths made from
parts the reader parsed itself (3.11).

- A Decimal the reader builds is counted in the row's hash groups (the typed values the
  pure path may count when its prescan says so) by the hash it computes from the text:
  it must be Python's own numeric hash, or a group of colliding values could be split and
  a refusal missed. Tested against ``hash(Decimal(text))`` directly, and by rows whose
  Decimals share a hash in every way the numeric hash allows (equal values written
  differently, ``-1`` and ``-2``, a fraction and an integer, values a prime apart).
- A PosixPath or PurePosixPath is made by ``cls._from_parsed_parts`` from the parts the
  reader parsed (pathlib's own parser reads them to the same): the object must be the
  one ``cls(*parts)`` makes, slot for slot, and any other shape goes to ``cls(*parts)``.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import pathlib
import sys
import uuid
import zoneinfo
from typing import Any

import ormsgpack
import pytest
from hypothesis import example, given, strategies as st

from serde_kit import Limits, native
from tests.support import budget_attacks as attack

from .conftest import assert_refcounts_settle, assert_same_outcome, make_pair, python_calls
from .test_checked_rows import COLLISIONS, PAD, PRIME, _prescans, array16, assert_same_limit, msgpack, uuid_ext

PARSED = sys.version_info[:2] == (3, 11)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _reader() -> Any:
    make_pair()  # fails or skips visibly without the compiled reader
    return native._reader


# --- the payload itself ---------------------------------------------------------------


def _mixed() -> dict[str, Any]:
    """The shape of bench/payloads.py's mixed_stdlib (smaller)."""
    berlin = zoneinfo.ZoneInfo("Europe/Berlin")
    return {
        "created": [datetime.datetime(2024, 1, 1, 12, i, tzinfo=berlin) for i in range(5)],
        "naive": [datetime.datetime(2023, 5, 1, 8, i) for i in range(5)],
        "dates": [datetime.date(2024, 1, 1) + datetime.timedelta(days=i) for i in range(5)],
        "ids": [uuid.UUID(int=i * 7919**9) for i in range(10)],
        "amounts": [decimal.Decimal(f"{i * 7717 % 10**6}.{i:02d}") for i in range(10)] + [decimal.Decimal("-1.5")],
        "tags": {f"tag{i}" for i in range(10)},
        "frozen": frozenset(range(10)),
        "pairs": [(i, str(i)) for i in range(10)],
        "by_id": {i: {"x": i, "y": (i, i + 1)} for i in range(20)},
        "queue": collections.deque(range(10), maxlen=16),
        "paths": [pathlib.Path("/var/data", f"f{i}.bin") for i in range(10)],
        "durations": [datetime.timedelta(seconds=i * 37) for i in range(5)],
        "floats": [i / 7 for i in range(10)],
        "text": "x" * 3000,
        "blob": bytes(range(256)),
    }


def test_mixed_stdlib_reads_alike_and_calls_python_only_for_the_paths_constructor():
    fast, pure = make_pair()
    row = pure.dumps_typed(_mixed())
    assert_same_outcome(fast, pure, row, "mixed_stdlib")
    calls = python_calls(fast.loads_typed, row)
    assert not {"rebuild", "hook", "_parse_args", "parse_parts", "_from_parts", "__new__"} & set(calls), calls
    assert calls.count("_from_parsed_parts") == (10 if PARSED else 0), calls


# --- Decimal hashes from the stored text ------------------------------------------------

decimal_texts = st.builds(
    lambda sign, whole, point, fraction: sign + whole + point + fraction,
    st.sampled_from(["", "-", "+"]),
    st.text("0123456789", max_size=40),
    st.sampled_from(["", "."]),
    st.text("0123456789", max_size=23),
).filter(lambda text: any(ch.isdigit() for ch in text) and len(text) <= 64)


@given(decimal_texts)
@example("9" * 64)
@example("-" + "9" * 63)
@example("0." + "0" * 61 + "1")
@example(str(PRIME))
@example(str(PRIME - 1))
@example(str(PRIME + 1) + ".0")
@example("-1")
@example("-0.0")
@example(".5")
@example("5.")
def test_the_hash_from_the_text_is_the_decimals_own(text):
    expected = hash(decimal.Decimal(text))
    assert _reader().decimal_text_hash(text) == expected


@pytest.mark.parametrize("text", ["", "-", ".", "+.", "1.2.3", "--1", "1e5", "1E-7", "NaN", " 1", "1_0", "٣", "9" * 65])
def test_texts_of_other_forms_get_no_hash_from_the_text(text):
    assert _reader().decimal_text_hash(text) is None


def _decimal_ext(text: str) -> bytes:
    return attack.pack(attack.ext(0, ["decimal", "Decimal", text]))


def _row_of(texts: list[str]) -> tuple[str, bytes]:
    return msgpack(b"\x92" + attack.pack(PAD) + array16([_decimal_ext(text) for text in texts]))


INVERSE_TWO = (PRIME + 1) // 2  # hash(Decimal("0.5")): the inverse of 2 modulo the prime

#: Texts of one hash each, written in the ways the numeric hash makes equal.
SHARED = {
    "equal values": ["7", "7.0", "07", "+7.000", "0007.", "7.00000000000000000000"],
    "minus one is minus two": ["-1", "-2", "-1.0", "-2.00", "-01", "-2."],
    "a fraction and an integer": [
        "0.5",
        ".50",
        str(INVERSE_TWO),
        f"{INVERSE_TWO}.0",
        f"{INVERSE_TWO + PRIME}",
        "0.500",
    ],
    "a prime apart": [str(7 + k * PRIME) + suffix for k in range(1, 4) for suffix in ("", ".0")],
    "negative, a prime apart": ["-" + str(7 + k * PRIME) + suffix for k in range(1, 4) for suffix in ("", ".0")],
    "zeros": ["0", "-0", "0.000", "+0", str(PRIME), "-" + str(PRIME) + ".0"],
}


def _group(texts: list[str], count: int) -> list[str]:
    return [texts[i % len(texts)] for i in range(count)]


@pytest.mark.parametrize("extra", [0, 1])
@pytest.mark.parametrize("how", sorted(SHARED))
def test_decimals_sharing_one_hash_are_one_group(how, extra):
    texts = SHARED[how]
    assert len({hash(decimal.Decimal(text)) for text in texts}) == 1, how
    fast, pure = make_pair(limits=Limits(max_hash_collisions=COLLISIONS))
    row = _row_of(_group(texts, COLLISIONS + extra))
    assert _prescans(fast, row) == extra
    assert_same_limit(fast, pure, row, None)


def test_decimals_of_near_hashes_are_not_one_group():
    # 7 and -7, 0.5 and 5, 1 and 10 ** -1: hashes that differ, each group within the limit.
    fast, pure = make_pair(limits=Limits(max_hash_collisions=COLLISIONS))
    texts = ["7", "-7", "0.5", "5", "1", "0.1", "-0.5", str(PRIME - 7)] * COLLISIONS
    assert len({hash(decimal.Decimal(text)) for text in texts}) == 8
    row = _row_of(texts)
    assert _prescans(fast, row) == 0
    assert_same_limit(fast, pure, row, None)


@pytest.mark.parametrize("extra", [0, 1])
def test_colliding_decimals_written_differently_are_refused_when_the_row_is_tracked(extra):
    fast, pure = make_pair(limits=Limits(max_hash_collisions=COLLISIONS))
    fast.loads_typed(msgpack(_decimal_ext("1")))  # learn the head: Decimals are built in C
    entries = COLLISIONS + 1
    keys = [uuid_ext(uuid.UUID(int=1000 + k)) for k in range(entries)]
    big_map = b"\xde" + entries.to_bytes(2, "big") + b"".join(key + b"\x00" for key in keys)
    # distinct values (the pure path counts those that differ from the first of a hash)
    texts = ["0.5", *[f"{INVERSE_TWO + k * PRIME}" + ".0" * (k % 2) for k in range(COLLISIONS + extra)]]
    assert len({decimal.Decimal(text) for text in texts}) == len(texts)
    values = array16([_decimal_ext(text) for text in texts])
    row = msgpack(b"\x93" + big_map + values + attack.pack("y" * 70_000))
    assert_same_limit(fast, pure, row, "max_hash_collisions" if extra else None)


def test_uuids_are_counted_by_the_hash_of_their_number():
    fast, pure = make_pair(limits=Limits(max_hash_collisions=COLLISIONS))
    for extra in (0, 1):
        ids = [uuid_ext(uuid.UUID(int=7 + k * PRIME)) for k in range(1, COLLISIONS + 1 + extra)]
        row = msgpack(b"\x92" + attack.pack(PAD) + array16(ids))
        assert _prescans(fast, row) == extra
        assert_same_limit(fast, pure, row, None)


def test_a_decimal_class_that_hashes_otherwise_is_counted_by_its_own_hash():
    """The reader checks at registration that the class hashes as the numeric hash does;
    one that does not (all of these hash to 5) is counted by its own hash."""
    module = _reader()

    class Odd(decimal.Decimal):
        def __hash__(self) -> int:
            return 5

    fast, _ = make_pair(limits=Limits(max_hash_collisions=COLLISIONS))
    payload = ormsgpack.packb(["tests", "Odd", "1.5"])
    head = payload[: -len(ormsgpack.packb("1.5"))]
    reader = fast._decoder.engine
    assert reader.register(0, head, 3, None, "tests", "Odd", module.KIND_DECIMAL, lambda env: None, Odd, 64)
    odd = [attack.pack(attack.ext(0, ["tests", "Odd", str(k)])) for k in range(COLLISIONS + 1)]
    row = msgpack(b"\x92" + attack.pack(PAD) + array16(odd))
    assert python_calls(fast.loads_typed, row).count("prescan") == 1
    values = fast.loads_typed(row)[1]
    assert [type(v) for v in values] == [Odd] * (COLLISIONS + 1) and values[3] == decimal.Decimal(3)


# --- POSIX paths from parsed parts (3.11) --------------------------------------------------

_SLOTS = ("_drv", "_root", "_parts", "_str", "_hash", "_pparts", "_cached_cparts")


def _state(path: Any) -> tuple[Any, ...]:
    """Everything a path object holds: its type, and on 3.11 each slot (unset: a marker)."""
    if not PARSED:
        return (type(path), path.parts, str(path))
    return (type(path), *(getattr(path, name, "<unset>") for name in _SLOTS))


def _path_row(cls: str, parts: Any) -> tuple[str, bytes]:
    return "msgpack", ormsgpack.packb(ormsgpack.Ext(1, ormsgpack.packb(["pathlib", cls, parts])))


PARTS = [
    ["/", "var", "data", "f0.bin"], ["/"], ["//"], ["//", "a"], [], ["a"], ["a", "b"], ["..", "a"], ["/", ".."],
    ["~", "x"], ["/", "é", "𝄞"], ["a\x00b"], ["a" * 300, "b"], ["a b", " c "], ["/", "a\\b"],
    # shapes the parser changes: handed to cls(*parts)
    ["/", "."], [".", "a"], ["a", "."], ["", "a"], ["a", ""], ["///", "a"], ["/a", "b"], ["a/", "b"], ["a/b"],
    ["/", "a/b"], ["a", "/b"], ["//", "//"], ["/", "/"], ["/x/"], ["x", "//"],
]  # fmt: skip


@pytest.mark.parametrize("cls", ["PosixPath", "PurePosixPath"])
def test_posix_paths_hold_what_the_constructor_makes(cls):
    fast, pure = make_pair()
    for parts in PARTS:
        row = _path_row(cls, parts)
        assert_same_outcome(fast, pure, row, repr(parts))
        for attempt in ("cold", "warm"):
            got, expected = fast.loads_typed(row), getattr(pathlib, cls)(*parts)
            assert _state(got) == _state(expected), (parts, attempt)
            assert got == expected and hash(got) == hash(expected) and str(got) == str(expected)
            assert got.parts == expected.parts and got.name == expected.name and got.parent == expected.parent
            # the caches filled on first use hold the same as the constructor's object's
            assert _state(got) == _state(expected), (parts, attempt)
            assert got / "x" == expected / "x" and got.as_posix() == expected.as_posix()


@pytest.mark.skipif(not PARSED, reason="3.11's pathlib only")
def test_parsed_parts_are_interned_as_the_parser_interns_them():
    fast, _ = make_pair()
    row = _path_row("PosixPath", ["/", "srv", "interned_" + "x" * 5])
    fast.loads_typed(row)
    got = fast.loads_typed(row)
    expected = pathlib.PosixPath("/", "srv", "interned_" + "x" * 5)
    assert all(a is b for a, b in zip(got._parts, expected._parts, strict=True))  # type: ignore[attr-defined]


@pytest.mark.skipif(not PARSED, reason="3.11's pathlib only")
def test_honest_paths_skip_the_constructor_and_other_shapes_take_it():
    fast, _ = make_pair()
    honest, changed = _path_row("PosixPath", ["/", "var", "x"]), _path_row("PosixPath", ["/", ".", "x"])
    fast.loads_typed(honest)  # learn the head
    assert python_calls(fast.loads_typed, honest) == ["_from_parsed_parts"]
    calls = python_calls(fast.loads_typed, changed)
    assert "_parse_args" in calls and "_from_parsed_parts" not in calls, calls


def test_only_pathlibs_own_posix_classes_get_the_parsed_constructor(monkeypatch):
    expected = PARSED
    assert (native._parsed_parts_constructor(pathlib.PosixPath) is not None) is expected
    assert (native._parsed_parts_constructor(pathlib.PurePosixPath) is not None) is expected
    for cls in (pathlib.Path, pathlib.PurePath, pathlib.PureWindowsPath, pathlib.WindowsPath):
        assert native._parsed_parts_constructor(cls) is None, cls

    class Sub(pathlib.PurePosixPath):
        pass

    assert native._parsed_parts_constructor(Sub) is None
    if not PARSED:
        return
    flavour = type(pathlib._posix_flavour)  # type: ignore[attr-defined]
    replaced = [  # (owner, name, value, whether PosixPath, PurePosixPath still qualify)
        (pathlib.PurePath, "_from_parsed_parts", classmethod(lambda cls, drv, root, parts: None), False, False),
        (pathlib.PurePath, "_parse_args", classmethod(lambda cls, args: None), False, False),
        (pathlib.PurePath, "__new__", lambda cls, *args: None, True, False),
        (pathlib.Path, "__new__", lambda cls, *args: None, False, True),
        (flavour, "splitroot", lambda self, part: ("", "", part), False, False),
        (flavour, "parse_parts", lambda self, parts: ("", "", parts), False, False),
        (flavour, "altsep", "\\", False, False),
        (pathlib.PurePosixPath, "_flavour", pathlib._windows_flavour, False, False),  # type: ignore[attr-defined]
    ]
    for owner, name, value, *still in replaced:
        with monkeypatch.context() as patch:
            patch.setattr(owner, name, value)
            found = [
                native._parsed_parts_constructor(cls) is not None for cls in (pathlib.PosixPath, pathlib.PurePosixPath)
            ]
            assert found == still, (owner, name)
    assert native._parsed_parts_constructor(pathlib.PosixPath) is not None


@pytest.mark.skipif(not PARSED, reason="3.11's pathlib only")
def test_the_reader_refuses_a_path_parameter_that_is_not_a_bool_or_callable():
    module = _reader()
    fast, _ = make_pair()
    with pytest.raises(ValueError, match="path entry's parameter"):
        fast._decoder.engine.register(
            1, b"\x93\xa1m\xa1P", 3, None, "m", "P", module.KIND_PATH, len, pathlib.PosixPath, 3
        )


def test_no_reference_is_leaked_by_parsed_paths_and_text_hashes():
    fast, pure = make_pair(limits=Limits(max_hash_collisions=COLLISIONS))
    cases = [pure.dumps_typed(_mixed())[1]]
    for cls in ("PosixPath", "PurePosixPath"):
        cases.extend(_path_row(cls, parts)[1] for parts in PARTS)
    cases.extend(_row_of(_group(texts, COLLISIONS + 1))[1] for texts in SHARED.values())
    for row in list(cases):
        cases.extend(row[:cut] for cut in range(0, len(row), max(1, len(row) // 40)))

    def read_all() -> None:
        for case in cases:
            try:
                fast.loads(case)
            except Exception:
                pass

    parsed = [
        native._parsed_parts_constructor(pathlib.PosixPath),
        native._parsed_parts_constructor(pathlib.PurePosixPath),
    ]
    watched = [
        None,
        True,
        False,
        fast._decoder.engine,
        pathlib.PosixPath,
        pathlib.PurePosixPath,
        decimal.Decimal,
        "/",
        "//",
        "",
    ]
    watched += [collections.deque, *[p.__func__ for p in parsed if p is not None]]
    assert_refcounts_settle(read_all, watched, 3)


def test_an_uninitialised_reader_registers_nothing():
    """register() reads the keyed-hash types the reader was made with: before __init__ it
    refuses, rather than take every type as unkeyed."""
    module = _reader()
    reader = module.Reader.__new__(module.Reader)
    with pytest.raises(RuntimeError, match="not initialised"):
        reader.register(0, b"\x93\xa1m\xa1n", 3, None, "m", "n", module.KIND_DECIMAL, len, decimal.Decimal, 64)
    assert reader.entries == 0
