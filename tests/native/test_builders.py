"""The C builders that replace a Python call: the datetime family through the datetime
C API, UUIDs read from their hex digits, deques, pathlib paths, and the field-name
checks of dataclasses and messages (by pointer, the names seeded into the key cache).

Each builder takes the common shape only; every other shape (a number that does not
fit a C int, an unnormalised timedelta, a non-hex digit, a maxlen that is not an int, a
part that is not a str ...) goes to the Python rebuilder, so values, types and errors
stay the pure path's own. Every case is read by both paths.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import pathlib
import sys
import uuid
import zoneinfo
from typing import Any

import ormsgpack
import pytest
from langchain_core.messages import AIMessage, HumanMessage

from serde_kit import native

from .conftest import assert_refcounts_settle, assert_same_outcome, make_pair, python_calls

INT_EDGES = [0, 1, -1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, -(2**63), 2**64 - 1]


def _row(code: int, module: str, name: str, arg: Any) -> tuple[str, bytes]:
    return "msgpack", ormsgpack.packb(ormsgpack.Ext(code, ormsgpack.packb([module, name, arg])))


def _reads_alike(fast: Any, pure: Any, code: int, module: str, name: str, args: list[Any]) -> None:
    for arg in args:
        assert_same_outcome(fast, pure, _row(code, module, name, arg), f"{module}.{name}({arg!r:.80})")


DATES = [
    [2024, 2, 29], [2023, 2, 29], [1, 1, 1], [9999, 12, 31], [0, 1, 1], [10000, 1, 1], [2024, 13, 1], [2024, 0, 1],
    [2024, 1, 0], [2024, 1, 32], [2024, 1], [2024, 1, 1, 1], [2024.0, 1, 1], [True, 1, 1], ["2024", 1, 1], None, "x",
    *([edge, 1, 1] for edge in INT_EDGES), *([2024, edge, 1] for edge in INT_EDGES), *([2024, 1, edge] for edge in INT_EDGES),
]  # fmt: skip

DELTAS = [
    [0, 0, 0], [1, 2, 3], [-1, 86399, 999999], [0, 86400, 0], [0, -1, 0], [0, 0, 1000000], [0, 0, -1],
    [999999999, 86399, 999999], [-999999999, 0, 0], [1000000000, 0, 0], [-1000000000, 0, 0], [-999999999, -1, 0],
    [999999999, 86400, 0], [0, 10**9, 0], [0, 0, 10**12], [1.5, 0, 0], [0, True, 0], [0, 0], None,
    *([edge, 0, 0] for edge in INT_EDGES), *([0, edge, 0] for edge in INT_EDGES), *([0, 0, edge] for edge in INT_EDGES),
]  # fmt: skip


@pytest.mark.parametrize("name, args", [("date", DATES), ("timedelta", DELTAS)])
def test_dates_and_deltas_read_alike(name, args):
    fast, pure = make_pair()
    _reads_alike(fast, pure, 1, "datetime", name, args)


def _datetimes() -> list[Any]:
    utc = ["datetime", "timezone", [["datetime", "timedelta", [0, 0, 0]]]]  # not ext: a plain list, refused
    plain = [2024, 1, 2, 3, 4, 5, 6, None]
    out: list[Any] = [plain, [2024, 1, 2, 3, 4, 5, 6], [2024, 1, 2, 3, 4, 5, 6, None, 0], utc, None, "2024"]
    for at in range(7):
        for edge in [*INT_EDGES, 1.0, True, "1", None, 24, 60, 1000000]:
            out.append(plain[:at] + [edge] + plain[at + 1 :])
    return out


def test_datetimes_read_alike():
    fast, pure = make_pair()
    _reads_alike(fast, pure, 1, "datetime", "datetime", _datetimes())
    # with a tzinfo of each allowed type (the envelope nests the zone's own ext)
    for tz in (datetime.timezone.utc, datetime.timezone(datetime.timedelta(hours=-3)), zoneinfo.ZoneInfo("Europe/Paris")):
        for value in (datetime.datetime(2024, 3, 31, 2, 30, tzinfo=tz), datetime.datetime(1, 1, 1, tzinfo=tz)):
            row = ("msgpack", pure.dumps(value))
            assert_same_outcome(fast, pure, row, repr(value))
            got = fast.loads_typed(row)
            assert got == value and got.tzinfo == value.tzinfo and type(got.tzinfo) is type(value.tzinfo) and got.fold == 0


ISO_DATETIMES = [
    "2024-01-02T03:04:05", "2024-01-02T03:04:05.123456", "2024-01-02T03:04:05+05:30", "2024-01-02T03:04:05.000001-23:59",
    "2024-01-02T03:04:05+00:00", "2024-01-02T03:04:05-00:00", "2024-01-02T03:04:05.999999+23:59", "0001-01-01T00:00:00",
    "9999-12-31T23:59:59.999999", "2024-01-02T03:04:05+24:00", "2024-01-02T03:04:05+23:60", "2024-01-02T03:04:05+05:3x",
    "2024-01-02T03:04:05.12345", "2024-01-02T03:04:05.1234567", "2024-01-02T03:04:05.12345+01:00", "2024-13-02T03:04:05",
    "2024-02-30T03:04:05", "0000-01-02T03:04:05", "2024-01-02T24:00:00", "2024-01-02T23:60:00", "2024-01-02T23:59:60",
    "2024-01-02t03:04:05", "2024-01-02 03:04:05", "2024-01-02T03:04:05Z", "2024-01-02T03-04-05", "2024-01-02T03:04:05*05:30",
    "2024-01-02T03:04:05+05-30", "２０２４-01-02T03:04:05", "2024-01-02T03:04:0٥", "-024-01-02T03:04:05", "2024-01-02",
    "2024-01-02T03:04:05.123456+05:30:00", "2024-01-02T03:04:05.123456+05:30:00.000001",
]  # fmt: skip
ISO_DATES = ["2024-01-02", "0001-01-01", "9999-12-31", "0000-01-01", "2024-02-30", "2024-00-01", "2024-1-02", "2024/01/02",
             "2024-01-0x", "20240102", "2024-01-02T00:00", "2024-W01-1", "２０２４-01-02"]  # fmt: skip


@pytest.mark.parametrize("name, texts", [("datetime", ISO_DATETIMES), ("date", ISO_DATES)])
def test_canonical_iso_texts_read_alike(name, texts):
    fast, pure = make_pair()
    for text in texts:
        row = ("msgpack", ormsgpack.packb(ormsgpack.Ext(3, ormsgpack.packb(["datetime", name, text, "fromisoformat"]))))
        assert_same_outcome(fast, pure, row, repr(text))
        try:
            expected = getattr(datetime, name).fromisoformat(text)
        except ValueError:
            continue
        got = fast.loads_typed(row)
        assert got == expected and type(got) is type(expected) and str(got) == str(expected)
        if name == "datetime" and expected.tzinfo is not None:
            assert type(got.tzinfo) is type(expected.tzinfo) and got.utcoffset() == expected.utcoffset()
            assert (got.tzinfo is datetime.timezone.utc) == (expected.tzinfo is datetime.timezone.utc)


UUIDS = [
    "0" * 32, "f" * 32, "F" * 32, "0123456789abcdefABCDEF0123456789", "g" + "0" * 31, "z" * 32, "0" * 31, "0" * 33,
    "0" * 30 + " 1", "0" * 31 + "é", "-" * 32, "_" + "0" * 31, "{" + "0" * 30 + "}", "0x" + "0" * 30, 7, None, ["0" * 32],
]  # fmt: skip


def test_uuids_read_alike():
    fast, pure = make_pair()
    _reads_alike(fast, pure, 0, "uuid", "UUID", UUIDS)
    for text in ("0123456789abcdefABCDEF0123456789", "f" * 32, "0" * 32):
        value = fast.loads_typed(_row(0, "uuid", "UUID", text))
        expected = uuid.UUID(hex=text)
        assert value == expected and value.int == expected.int and value.is_safe is expected.is_safe


DEQUE_ARGS = [
    [[1, 2, 3], None], [[1, 2, 3], 2], [[], 0], [[1], -1], [[1], 2**64 - 1], [[1], 1.5], [[1], "2"], [[1], True],
    ["abc", None], [{"a": 1}, None], [[1, 2]], [[1, 2], None, 3], [], None, "x", [[[1], [2]], 5],
]  # fmt: skip


def test_deques_read_alike():
    fast, pure = make_pair()
    _reads_alike(fast, pure, 1, "collections", "deque", DEQUE_ARGS)
    _reads_alike(fast, pure, 0, "collections", "deque", [[1, 2], [], "abc", None, 5, {"a": 1}, [[1], {"b": 2}]])
    value = fast.loads(pure.dumps(collections.deque(range(5), maxlen=3)))
    assert type(value) is collections.deque and list(value) == [2, 3, 4] and value.maxlen == 3


PATH_PARTS = [
    ["/", "var", "data"], ["a", "b"], [], ["/"], ["a/b", "c"], ["", "a"], [".", "a", ".."], ["a", "/abs"], ["a\x00b"],
    ["a", 1], ["a", None], [b"a"], "abc", None, 3, [["a"]], ["ü", "𝄞"], ["/", "."], ["//", "a"], ["///", "a"],
    ["a", ""], ["", "a"], [".", "."], ["/", "a/b"], ["a/", "b"], ["/a", "b"], ["x", ".."], ["/", "..", "a"], ["//", "//"],
    ["/", "/"], ["a", "/b"], ["/", "a", "/b", "c"], ["C:", "x"], ["\\", "x"], ["a\\b", "c"], ["/", "var", "data", "f0.bin"],
]  # fmt: skip


def _path_state(path: Any) -> tuple[Any, ...]:
    """What a path object holds (3.11: its parsed parts; later versions: what they expose)."""
    names = ("_drv", "_root", "_parts") if sys.version_info < (3, 12) else ()
    return (type(path), path.parts, str(path), *(getattr(path, name) for name in names))


@pytest.mark.parametrize("cls", ["PosixPath", "PurePosixPath", "PureWindowsPath"])
def test_paths_read_alike(cls):
    fast, pure = make_pair()
    _reads_alike(fast, pure, 1, "pathlib", cls, PATH_PARTS)
    for parts in PATH_PARTS:
        if type(parts) is list and all(type(part) is str for part in parts):
            got = fast.loads_typed(_row(1, "pathlib", cls, parts))
            assert _path_state(got) == _path_state(getattr(pathlib, cls)(*parts)), parts
    parts = ["C:\\", "Users", "x"] if cls == "PureWindowsPath" else ["/", "var", "data"]
    value = fast.loads_typed(_row(1, "pathlib", cls, parts))
    expected = getattr(pathlib, cls)(*parts)
    assert type(value) is type(expected) and value == expected and value.parts == expected.parts


def test_the_new_kinds_are_built_without_python():
    fast, pure = make_pair()
    value = {
        "date": datetime.date(2024, 1, 2),
        "delta": datetime.timedelta(days=-3, seconds=5, microseconds=7),
        "naive": datetime.datetime(2024, 1, 2, 3, 4, 5, 6),
        "aware": datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=datetime.timezone.utc),
        "id": uuid.UUID(int=2**128 - 1),
        "queue": collections.deque([1, 2], maxlen=4),
        "path": pathlib.PurePosixPath("/var", "x.bin"),
    }
    row = pure.dumps(value)
    assert fast.loads(row) == value
    fast.loads(row)  # the table now holds every head
    calls = set(python_calls(fast.loads, row))
    assert not {"rebuild", "hook", "uuid_", "_rebuild_deque_args", "_rebuild_datetime_pos"} & calls, calls
    assert "rebuild" in python_calls(pure.loads, row)


def test_kinds_are_chosen_from_the_decoders_own_rebuilders():
    module = native._reader
    assert module is not None
    fast, _ = make_pair()
    decoder = fast._decoder
    expected = {
        (1, "collections", "deque"): module.KIND_DEQUE,
        (0, "collections", "deque"): module.KIND_DEQUE,
        (1, "pathlib", "PosixPath"): module.KIND_PATH,
        (1, "pathlib", "PureWindowsPath"): module.KIND_PATH,
        (1, "datetime", "date"): module.KIND_INTS3,
        (1, "datetime", "timedelta"): module.KIND_INTS3,
        (1, "datetime", "datetime"): module.KIND_DATETIME,
        (0, "uuid", "UUID"): module.KIND_UUID,
    }
    for (code, mod, name), kind in expected.items():
        verdict = decoder.rebuilder(code, mod, name, None)
        assert native._kind(decoder, code, mod, name, verdict)[0] == kind, (mod, name)
        assert native._kind(decoder, code, mod, name, lambda env: None)[0] == module.KIND_CALL
    # a path rebuilder of another class than the one named is never a path kind
    assert native._path_kind(lambda env: None)[0] == module.KIND_CALL


@pytest.mark.parametrize(
    "code, kind, param",
    [
        (0, "KIND_PATH", None),  # paths are ext 1
        (2, "KIND_DEQUE", None),  # deques are ext 0 or 1
        (1, "KIND_DATACLASS", ("a", 1)),  # field names are str
        (1, "KIND_DATACLASS", ["a"]),
    ],
)
def test_reader_refuses_entries_that_do_not_fit(code, kind, param):
    fast, _ = make_pair()
    module = native._reader
    with pytest.raises(ValueError):
        fast._decoder.engine.register(code, b"\x93\xa1m\xa1n", 3, None, "m", "n", getattr(module, kind), len, object, param)


# --- field names matched by pointer --------------------------------------------


@dataclasses.dataclass
class Record:
    identifier: int
    a_field_name_longer_than_the_key_cache_takes: str  # never cached: compared by text
    when: datetime.date


def _record_rows(serializer: Any) -> list[tuple[str, bytes]]:
    value = Record(1, "x", datetime.date(2024, 1, 1))
    env = ["tests.native.test_builders", "Record"]
    fields = {"identifier": 1, "a_field_name_longer_than_the_key_cache_takes": "x", "when": None}
    reordered = dict(reversed(list(fields.items())))
    renamed = {**{k: v for k, v in fields.items() if k != "when"}, "whem": None}
    rows = [("msgpack", serializer.dumps(value))]
    for arg in (fields, reordered, renamed, {**fields, "extra": 1}, {"identifier": 1}, {1: 1, 2: 2, 3: 3}, [1, 2, 3]):
        rows.append(("msgpack", ormsgpack.packb(ormsgpack.Ext(2, ormsgpack.packb([*env, arg], option=ormsgpack.OPT_NON_STR_KEYS)))))
    return rows


def test_dataclass_field_names_are_checked_alike():
    fast, pure = make_pair(allow=[Record])
    for row in _record_rows(pure):
        assert_same_outcome(fast, pure, row, repr(row[1][:60]))
    value = fast.loads_typed(_record_rows(pure)[0])
    assert type(value) is Record and vars(value) == vars(Record(1, "x", datetime.date(2024, 1, 1)))


def test_field_names_are_checked_by_text_once_their_cache_slot_is_taken():
    """A key of another text that takes a seeded name's cache slot only costs the
    comparison: the check reads text, so the same rows still build the same values."""
    fast, pure = make_pair(allow=[Record])
    row = _record_rows(pure)[0]
    assert_same_outcome(fast, pure, row, "seeded")
    # many distinct short keys in one row: some take the slots of the seeded names
    crowd = ("msgpack", pure.dumps({f"k{i}": i for i in range(3000)}))
    assert_same_outcome(fast, pure, crowd, "crowd")
    assert_same_outcome(fast, pure, row, "after the crowd")
    value = fast.loads_typed(row)
    assert list(vars(value)) == ["identifier", "a_field_name_longer_than_the_key_cache_takes", "when"]


def test_messages_have_a_fields_set_of_their_own():
    fast, pure = make_pair()
    messages = [HumanMessage("hi", id="1"), HumanMessage("there", id="2"), AIMessage("", id="3")]
    row = ("msgpack", pure.dumps(messages))
    assert_same_outcome(fast, pure, row, "messages")
    fast.loads_typed(row)
    first, second, ai = fast.loads_typed(row)
    expected = pure.loads_typed(row)
    for got, want in zip((first, second, ai), expected):
        assert type(got.model_fields_set) is set and got.model_fields_set == want.model_fields_set
        # the slots written directly (as their member descriptors write them) hold what the pure path's do
        assert got.__pydantic_extra__ == want.__pydantic_extra__ and got.__pydantic_private__ is want.__pydantic_private__
        assert vars(got) == vars(want) and type(vars(got)) is dict
    first.model_fields_set.add("not_a_field")
    assert "not_a_field" not in second.model_fields_set  # a set per message, not a shared one
    assert first.model_fields_set is not second.model_fields_set


# --- hostile bytes around the new builders -------------------------------------


def _sample_rows(serializer: Any) -> list[bytes]:
    return [
        serializer.dumps([datetime.date(2024, 2, 29), datetime.timedelta(days=-1, seconds=3, microseconds=4)]),
        serializer.dumps(datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=zoneinfo.ZoneInfo("UTC"))),
        serializer.dumps([uuid.UUID(int=2**127 + 5), collections.deque([1, "a"], maxlen=3), collections.deque([])]),
        serializer.dumps([pathlib.PurePosixPath("/var", "x"), pathlib.PureWindowsPath("C:\\", "y")]),
        serializer.dumps(Record(1, "x", datetime.date(2024, 1, 1))),
    ]


def test_every_cut_and_changed_byte_of_the_new_kinds_ends_alike():
    fast, pure = make_pair(allow=[Record])
    for row in _sample_rows(pure):
        for cut in range(len(row) + 1):
            assert_same_outcome(fast, pure, ("msgpack", row[:cut]), f"{row!r:.60}[:{cut}]")
        for at in range(len(row)):
            for byte in (0x00, 0x01, 0x30, 0x66, 0x7F, 0x80, 0x90, 0x93, 0xA0, 0xC0, 0xC1, 0xCD, 0xD2, 0xDB, 0xFF):
                changed = row[:at] + bytes([byte]) + row[at + 1 :]
                assert_same_outcome(fast, pure, ("msgpack", changed), f"{row!r:.60}[{at}]={byte:#x}")


def test_no_reference_is_leaked_by_the_new_kinds():
    """Reads that build, hand to Python or fail at every point keep the counts of the
    singletons, the reader and what its table holds (classes, field names)."""
    fast, pure = make_pair(allow=[Record])
    cases: list[bytes] = []
    for row in _sample_rows(pure):
        cases.append(row)
        cases.extend(row[:cut] for cut in range(len(row)))
        cases.extend(row[:at] + b"\xc1" + row[at + 1 :] for at in range(len(row)))
    for code, module, name, args in [
        (1, "datetime", "date", DATES), (1, "datetime", "timedelta", DELTAS), (1, "datetime", "datetime", _datetimes()),
        (0, "uuid", "UUID", UUIDS), (1, "collections", "deque", DEQUE_ARGS), (1, "pathlib", "PurePosixPath", PATH_PARTS),
    ]:  # fmt: skip
        cases.extend(_row(code, module, name, arg)[1] for arg in args)

    def read_all() -> None:
        for case in cases:
            try:
                fast.loads(case)
            except Exception:
                pass

    names = ("identifier", "when", "content", "additional_kwargs")
    watched = [None, True, False, fast._decoder.engine, Record, collections.deque, pathlib.PurePosixPath, *names]
    read_all()  # fills the table and the caches, whose rebuilders are watched too
    assert_refcounts_settle(read_all, [*watched, *fast._decoder._hot.values()], reads_per_round=5)
