"""The golden cases: what the stock writer was given, and what the stock reader gives back.

Each :class:`Case` names a value, builds it fresh on every call (``value``),
and says what the *stock permissive* reader (``JsonPlusSerializer()`` of
langgraph-checkpoint 4.3.2) returns for the bytes the stock writer made of it
(``expected``). The stock format is lossy — tuples come back as lists,
ZoneInfo-aware datetimes as fixed offsets, structured numpy dtypes as raw
void records — so ``expected`` differs from ``value`` where noted. Every
``expected`` here was checked by running the stock reader (``generate.py``
refuses to write data that disagrees).

Legacy ``json`` rows have no writer in langgraph-checkpoint 4.3 any more; their
bytes (``raw``) are written by hand from the format the stock ``_reviver``
reads: LangGraph ``lc: 2`` constructor envelopes and langchain ``lc: 1``
serialized objects.
"""

from __future__ import annotations

import decimal
import ipaddress
import json
import pathlib
import re
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pydantic
from langchain_core.documents import Document
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.store.base import Item
from langgraph.types import Command, Interrupt, Send, TimeoutPolicy

from tests.golden.golden_types import (
    Address,
    Color,
    LegacyUser,
    Mood,
    Perm,
    Person,
    Point,
    Priority,
    Task,
)

STOCK_VERSION = "4.3.2"


@dataclass(frozen=True)
class Case:
    """One golden vector.

    ``value`` builds what the stock writer was given (None for hand-written
    ``raw`` rows). ``expected`` builds what the stock permissive reader returns
    for the stored bytes; it defaults to ``value`` (a lossless case).
    ``exact_ok`` marks cases where a reader that is more exact than the stock
    one may legitimately return ``value`` (or ``exact``) instead of
    ``expected``; ``why`` says what the stock format loses.
    ``golden`` is False for values the stock writer cannot write at all: they
    have no data file and only check that the stock reader reads ours.
    ``ours_may_refuse`` names a word the EncodeError must contain when
    serde_kit refuses to write a value the stock writer changes silently.
    """

    name: str
    value: Callable[[], Any] | None
    expected: Callable[[], Any] | None = None
    tag: str = "msgpack"
    raw: bytes | None = None
    exact: Callable[[], Any] | None = None
    exact_ok: bool = False
    golden: bool = True
    ours_may_refuse: str = ""
    why: str = ""

    def expected_value(self) -> Any:
        """What the stock permissive reader returns for the stored bytes."""
        if self.expected is not None:
            return self.expected()
        assert self.value is not None, self.name
        return self.value()

    def exact_value(self) -> Any:
        """The value a perfectly exact reader would return."""
        if self.exact is not None:
            return self.exact()
        if self.value is not None:
            return self.value()
        return self.expected_value()

    @property
    def lossy(self) -> bool:
        """True when the stock reader does not give back what was written."""
        return self.expected is not None


def _ro(arr: np.ndarray) -> np.ndarray:
    """The stock reader builds arrays with ``np.frombuffer``: they are read-only."""
    arr = np.array(arr, copy=True, order="K")
    arr.setflags(write=False)
    return arr


def _ro_f(arr: np.ndarray) -> np.ndarray:
    arr = np.asfortranarray(arr)
    arr.setflags(write=False)
    return arr


_STRUCT = np.dtype([("id", "<i4"), ("score", "<f8")])


def _structured() -> np.ndarray:
    return np.array([(1, 0.5), (2, -1.25)], dtype=_STRUCT)


def _structured_as_void() -> np.ndarray:
    # The stock writer stores dtype.str ("|V12"): field names and types are gone.
    return _ro(np.frombuffer(_structured().tobytes(), dtype="|V12"))


def _dt64() -> np.ndarray:
    return np.array(
        ["2024-01-01", "2024-02-29", "2024-03-31", "2024-12-31"], dtype="datetime64[D]"
    )


def _person() -> Person:
    return Person(
        name="Ada", age=36, address=Address(city="London", zip_code="W1"), nicknames=["ada"]
    )


def _ai_with_tools() -> AIMessage:
    return AIMessage(
        content="calling tools",
        id="ai-7",
        tool_calls=[
            {"name": "search", "args": {"q": "weather", "n": 3}, "id": "call-1"},
            {"name": "lookup", "args": {}, "id": "call-2"},
        ],
    )


def _paris_noon() -> datetime:
    return datetime(2024, 7, 1, 12, 30, 15, 250, tzinfo=ZoneInfo("Europe/Paris"))


# The checkpoint a SqliteSaver wrote after a two-node graph (greet -> finish)
# finished; captured from a real run and written again through SqliteSaver.put
# by generate.py so that the bytes are reproducible.
def _checkpoint() -> dict[str, Any]:
    return {
        "v": 4,
        "ts": "2026-11-30T14:16:26.328817+00:00",
        "id": "1f1ecc8a-0f60-65cf-8002-6c8678b41335",
        "channel_values": {
            "messages": [
                HumanMessage(content="hi", id="h-1"),
                AIMessage(content="hello!", id="ai-1"),
            ],
            "steps": ["greet", "finish"],
            "score": 1.0,
        },
        "channel_versions": {
            "__start__": "00000000000000000000000000000002.0.9411996520939185",
            "messages": "00000000000000000000000000000003.0.9751457393676423",
            "steps": "00000000000000000000000000000004.0.7541697323589067",
            "score": "00000000000000000000000000000004.0.7541697323589067",
            "branch:to:greet": "00000000000000000000000000000003.0.9751457393676423",
            "branch:to:finish": "00000000000000000000000000000004.0.7541697323589067",
        },
        "versions_seen": {
            "__input__": {},
            "__start__": {"__start__": "00000000000000000000000000000001.0.5158048235438764"},
            "greet": {"branch:to:greet": "00000000000000000000000000000002.0.9411996520939185"},
            "finish": {"branch:to:finish": "00000000000000000000000000000003.0.9751457393676423"},
        },
        "updated_channels": ["score", "steps"],
    }


def _json(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode("utf-8")


def _lc1(path: list[str], **kwargs: Any) -> dict[str, Any]:
    return {"lc": 1, "type": "constructor", "id": path, "kwargs": kwargs}


def _lc2(path: list[str], **fields: Any) -> dict[str, Any]:
    return {"lc": 2, "type": "constructor", "id": path, **fields}


_UUID = uuid.UUID("7c9e6679-7425-40de-944b-e07fc1f90ae7")

CASES: list[Case] = [
    # --- type tags other than msgpack -------------------------------------
    Case("tag_null", lambda: None),
    Case("tag_bytes", lambda: b"\x00\x01raw\xff"),
    Case("tag_bytes_empty", lambda: b""),
    Case("tag_bytearray", lambda: bytearray(b"\x00mutable\xfe")),
    # --- plain msgpack ----------------------------------------------------
    Case("plain_scalars", lambda: [0, -1, 2**63 - 1, -(2**63), 2**64 - 1, True, False, None, 1.5, ""]),
    Case("plain_floats", lambda: [float("inf"), float("-inf"), -0.0, 0.0, float("nan"), 1e-310]),
    Case("plain_unicode", lambda: {"text": "héllo wörld — 日本語 🎉", "رمز": "ß", "": "empty key"}),
    Case(
        "plain_lone_surrogate",
        lambda: "ab\ud800cd",
        expected=lambda: "ab?cd",
        exact_ok=True,
        why="the stock writer packs with OPT_REPLACE_SURROGATES: a lone surrogate becomes '?'",
    ),
    Case("plain_bytes_in_containers", lambda: {"blob": b"\x00\xff", "list": [b"a", {"k": b""}]}),
    Case(
        "plain_bytearray_in_list",
        lambda: [bytearray(b"xy")],
        expected=lambda: [b"xy"],
        exact_ok=True,
        why="msgpack bin has no mutable flavour: a nested bytearray comes back as bytes",
    ),
    Case(
        "plain_nonstr_keys",
        lambda: {1: "int key", (1, "a"): "tuple key", "s": {2: [3], (4, (5, 6)): None}, -7: {}},
        why="OPT_NON_STR_KEYS: int and tuple (array) map keys round-trip, tuples as tuples",
    ),
    Case(
        "plain_tuple",
        lambda: (1, "two", (3.0, None)),
        expected=lambda: [1, "two", [3.0, None]],
        exact_ok=True,
        why="msgpack has one array type: tuples come back as lists",
    ),
    Case("plain_big_nested", lambda: [[i, [i * 2, [str(i), {"i": i}]]] for i in range(2000)]),
    Case("plain_deep_nesting", lambda: _deep(100)),
    # --- ext 0: constructor with one argument -------------------------------
    Case("ext0_enum", lambda: [Color.RED, Color.GREEN]),
    Case("ext0_intenum", lambda: {"p": Priority.HIGH, "q": Priority.LOW}),
    Case("ext0_strenum", lambda: Mood.BUSY),
    Case("ext0_flag", lambda: [Perm.READ | Perm.WRITE, Perm.EXEC, Perm(0)]),
    Case("ext0_uuid", lambda: _UUID),
    Case("ext0_decimal", lambda: [decimal.Decimal("3.14159265358979323846"), decimal.Decimal("-0.00"), decimal.Decimal("1E+5")]),
    Case("ext0_decimal_special", lambda: [decimal.Decimal("NaN"), decimal.Decimal("-Infinity")]),
    Case("ext0_set", lambda: {1, 2, 3}),
    Case("ext0_frozenset", lambda: frozenset({10, 20, 30})),
    Case("ext0_frozenset_str", lambda: frozenset({"only"})),
    Case("ext0_set_empty", lambda: set()),
    Case(
        "ext0_set_of_tuples",
        lambda: {(1, 2), (3, 4)},
        expected=lambda: [[1, 2], [3, 4]],
        exact=lambda: {(1, 2), (3, 4)},
        exact_ok=True,
        why="the tuples come back as lists, which cannot go into a set: the stock reader "
        "gives up and returns the payload (a list of lists)",
    ),
    Case(
        "ext0_deque",
        lambda: deque([1, "x", None], maxlen=10),
        expected=lambda: deque([1, "x", None]),
        exact_ok=True,
        why="the stock writer stores only the items: maxlen is lost",
    ),
    Case("ext0_ipv4_address", lambda: ipaddress.IPv4Address("192.168.1.10")),
    Case("ext0_ipv4_interface", lambda: ipaddress.IPv4Interface("10.1.2.3/24")),
    Case("ext0_ipv4_network", lambda: ipaddress.IPv4Network("10.0.0.0/8")),
    Case("ext0_ipv6_address", lambda: ipaddress.IPv6Address("2001:db8::1")),
    Case("ext0_ipv6_interface", lambda: ipaddress.IPv6Interface("2001:db8::1/64")),
    Case("ext0_ipv6_network", lambda: ipaddress.IPv6Network("2001:db8::/32")),
    Case("ext0_zoneinfo", lambda: ZoneInfo("America/New_York")),
    Case("ext0_secretstr", lambda: pydantic.SecretStr("hunter2")),
    # --- ext 1: constructor with positional arguments -----------------------
    Case("ext1_posixpath", lambda: pathlib.PosixPath("/var/lib/app/data.db")),
    Case("ext1_posixpath_relative", lambda: pathlib.PosixPath("docs/a b/ü.txt")),
    Case("ext1_pattern_str", lambda: re.compile(r"^(\w+)@example\.com$", re.IGNORECASE | re.MULTILINE)),
    Case("ext1_pattern_bytes", lambda: re.compile(rb"\x00+[a-z]", re.DOTALL)),
    Case("ext1_timedelta", lambda: [timedelta(days=-3, seconds=5, microseconds=7), timedelta(0), timedelta(days=999999999)]),
    Case("ext1_date", lambda: [date(2024, 2, 29), date.min, date.max]),
    Case("ext1_timezone_utc", lambda: timezone.utc),
    Case("ext1_timezone_offset", lambda: timezone(timedelta(hours=-5, minutes=-30))),
    Case("ext1_timezone_named", lambda: timezone(timedelta(hours=2), "CEST")),
    Case("ext1_send", lambda: Send("worker", {"doc": "a.txt", "n": 1})),
    Case(
        "ext1_send_timeout",
        lambda: Send("worker", [1, 2], timeout=TimeoutPolicy(run_timeout=30.0)),
        why="three-argument Send payload (node, arg, timeout); the TimeoutPolicy nests as ext 2",
    ),
    # --- ext 2: constructor with keyword arguments --------------------------
    Case("ext2_dataclass", lambda: Task("review", done=True, tags=["a", "b"])),
    Case("ext2_namedtuple", lambda: Point(3, -4)),
    Case("ext2_time", lambda: [time(0, 0), time(23, 59, 59, 999999)]),
    Case("ext2_time_tz_fold", lambda: time(1, 30, tzinfo=timezone(timedelta(hours=1)), fold=1)),
    Case("ext2_time_zoneinfo", lambda: time(8, 15, 0, 5, tzinfo=ZoneInfo("Asia/Tokyo"))),
    Case("ext2_interrupt", lambda: Interrupt({"question": "approve?", "docs": ["a", "b"]}, id="int-1")),
    Case("ext2_command", lambda: Command(resume={"approved": True}, goto="finalize", update={"note": "ok"})),
    Case("ext2_command_goto_send", lambda: Command(goto=[Send("a", 1), "b"], graph=Command.PARENT)),
    Case(
        # Item has a callable .dict(), so the stock writer takes its pydantic-v1
        # branch: ext 4 with Item.dict() (timestamps as ISO strings), not ext 2.
        "ext4_store_item",
        lambda: Item(
            value={"pref": "dark"},
            key="user-1",
            namespace=("users", "prefs"),
            created_at=datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
            updated_at=datetime(2024, 1, 3, 3, 4, 5, tzinfo=timezone.utc),
        ),
    ),
    # --- ext 3: datetime via fromisoformat -----------------------------------
    Case("ext3_datetime_naive", lambda: datetime(2024, 5, 4, 6, 32, 42, 235444)),
    Case("ext3_datetime_utc", lambda: datetime(2024, 5, 4, 6, 32, 42, tzinfo=timezone.utc)),
    Case("ext3_datetime_offset", lambda: datetime(1999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=5, minutes=45)))),
    Case(
        "ext3_datetime_zoneinfo",
        _paris_noon,
        expected=lambda: datetime(2024, 7, 1, 12, 30, 15, 250, tzinfo=timezone(timedelta(hours=2))),
        why="isoformat keeps only the UTC offset: the ZoneInfo key is lost",
    ),
    Case(
        "ext3_datetime_fold",
        lambda: datetime(2024, 11, 3, 1, 30, fold=1),
        expected=lambda: datetime(2024, 11, 3, 1, 30),
        why="isoformat drops fold",
    ),
    # --- ext 4: pydantic v1 --------------------------------------------------
    Case("ext4_pydantic_v1", lambda: LegacyUser(name="old", score=2.5)),
    # --- ext 5: pydantic v2 --------------------------------------------------
    Case("ext5_pydantic_v2_nested", _person),
    Case("ext5_human_message", lambda: HumanMessage(content="hello", id="h-1", name="ada")),
    Case("ext5_ai_message_tool_calls", _ai_with_tools),
    Case("ext5_tool_message", lambda: ToolMessage(content="sunny", tool_call_id="call-1", name="search")),
    Case("ext5_system_message", lambda: SystemMessage(content=[{"type": "text", "text": "be brief"}])),
    Case("ext5_remove_message", lambda: RemoveMessage(id="h-1")),
    Case("ext5_document", lambda: Document(page_content="body", metadata={"source": "a.txt", "page": 2}, id="d-1")),
    # --- ext 6: numpy --------------------------------------------------------
    Case(
        "ext6_numpy_c",
        lambda: np.arange(12, dtype="<i8").reshape(3, 4),
        expected=lambda: _ro(np.arange(12, dtype="<i8").reshape(3, 4)),
        exact_ok=True,
        why="the stock reader wraps the bytes with np.frombuffer: the array is read-only",
    ),
    Case(
        "ext6_numpy_f",
        lambda: np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)),
        expected=lambda: _ro_f(np.arange(6, dtype="<f4").reshape(2, 3)),
        exact_ok=True,
        why="read-only (np.frombuffer); Fortran order is kept",
    ),
    Case(
        "ext6_numpy_strided",
        lambda: np.arange(20, dtype="<i2")[::3],
        expected=lambda: _ro(np.arange(20, dtype="<i2")[::3]),
        exact_ok=True,
        why="a non-contiguous slice is copied to C order; read-only",
    ),
    Case(
        "ext6_numpy_0d",
        lambda: np.array(3.5, dtype="<f8"),
        expected=lambda: _ro(np.array(3.5, dtype="<f8")),
        exact_ok=True,
        why="read-only (np.frombuffer)",
    ),
    Case(
        "ext6_numpy_empty",
        lambda: np.zeros((0, 3), dtype="<f8"),
        expected=lambda: _ro(np.zeros((0, 3), dtype="<f8")),
        exact_ok=True,
        why="read-only (np.frombuffer)",
    ),
    Case(
        "ext6_numpy_bool",
        lambda: np.array([True, False, True]),
        expected=lambda: _ro(np.array([True, False, True])),
        exact_ok=True,
        why="read-only (np.frombuffer)",
    ),
    Case(
        "ext6_numpy_bigendian",
        lambda: np.arange(4, dtype=">i4"),
        expected=lambda: _ro(np.arange(4, dtype=">i4")),
        exact_ok=True,
        why="byte order is kept; read-only",
    ),
    Case(
        "ext6_numpy_float_nan",
        lambda: np.array([1.0, np.nan, -np.inf], dtype="<f8"),
        expected=lambda: _ro(np.array([1.0, np.nan, -np.inf], dtype="<f8")),
        exact_ok=True,
        why="read-only (np.frombuffer)",
    ),
    Case(
        "ext6_numpy_datetime64_strided",
        lambda: _dt64()[::2],
        expected=lambda: _ro(_dt64()[::2]),
        exact_ok=True,
        why="the stock writer can only write datetime64 arrays that are not C-contiguous "
        "(memoryview refuses dtype 'M'); read-only",
    ),
    Case(
        "ext6_numpy_datetime64_contiguous",
        _dt64,
        expected=lambda: _ro(_dt64()),
        exact_ok=True,
        golden=False,
        why="the stock writer fails (memoryview refuses dtype 'M'); the stock reader reads ours",
    ),
    Case(
        "ext6_numpy_structured",
        _structured,
        expected=_structured_as_void,
        exact_ok=True,
        why="the stock writer stores dtype.str '|V12': the field names and types are lost",
    ),
    # --- ext 7: _DeltaSnapshot -------------------------------------------------
    Case("ext7_delta_snapshot", lambda: _DeltaSnapshot(["m1", "m2", {"k": 1}])),
    Case("ext7_delta_snapshot_nested_ext", lambda: _DeltaSnapshot({"when": datetime(2024, 1, 1, tzinfo=timezone.utc), "ids": {1, 2}})),
    # --- mixtures ------------------------------------------------------------
    Case(
        "mixed_state",
        lambda: {
            "person": _person(),
            "task": Task("t"),
            "when": _paris_noon(),
            "pair": ("a", 1),
            "vec": np.array([1.0, 2.0], dtype="<f8"),
            "tags": {"x"},
            "messages": [HumanMessage(content="hi", id="h-1"), _ai_with_tools()],
        },
        expected=lambda: {
            "person": _person(),
            "task": Task("t"),
            "when": datetime(2024, 7, 1, 12, 30, 15, 250, tzinfo=timezone(timedelta(hours=2))),
            "pair": ["a", 1],
            "vec": _ro(np.array([1.0, 2.0], dtype="<f8")),
            "tags": {"x"},
            "messages": [HumanMessage(content="hi", id="h-1"), _ai_with_tools()],
        },
        exact_ok=True,
        why="tuple -> list, ZoneInfo -> fixed offset, array read-only",
    ),
    Case("sqlite_checkpoint", _checkpoint, why="written through a real SqliteSaver.put"),
    # --- legacy json rows (hand-written) -------------------------------------
    Case("json_plain", None, tag="json", raw=_json({"a": [1, 2.5, None, True], "b": {"c": "ü"}}),
         expected=lambda: {"a": [1, 2.5, None, True], "b": {"c": "ü"}}),
    Case(
        "json_lc2_human_message",
        None,
        tag="json",
        raw=_json(_lc2(["langchain_core", "messages", "human", "HumanMessage"],
                       method=[None, "model_construct"], kwargs={"content": "hi", "id": "h-1"})),
        expected=lambda: HumanMessage(content="hi", id="h-1"),
    ),
    Case(
        "json_lc2_uuid",
        None,
        tag="json",
        raw=_json(_lc2(["uuid", "UUID"], args=[_UUID.hex])),
        expected=lambda: _UUID,
    ),
    Case(
        "json_lc2_set_decimal",
        None,
        tag="json",
        raw=_json({"s": _lc2(["builtins", "set"], args=[[1, 2, 3]]),
                   "d": _lc2(["decimal", "Decimal"], args=["1.10"])}),
        expected=lambda: {"s": {1, 2, 3}, "d": decimal.Decimal("1.10")},
    ),
    Case(
        "json_lc2_datetime",
        None,
        tag="json",
        raw=_json(_lc2(["datetime", "datetime"], method="fromisoformat", args=["2024-05-04T06:32:42+00:00"])),
        expected=lambda: None,
        exact=lambda: datetime(2024, 5, 4, 6, 32, 42, tzinfo=timezone.utc),
        exact_ok=True,
        why="the stock reader no longer honours method='fromisoformat' and returns None",
    ),
    Case(
        "json_lc2_user_model",
        None,
        tag="json",
        raw=_json(_lc2(["tests", "golden", "golden_types", "Person"], method=[None, "model_construct"],
                       kwargs={"name": "Ada", "age": 36, "address": {"city": "London", "zip_code": "W1"},
                               "nicknames": ["ada"]})),
        expected=lambda: _lc2(["tests", "golden", "golden_types", "Person"], method=[None, "model_construct"],
                              kwargs={"name": "Ada", "age": 36,
                                      "address": {"city": "London", "zip_code": "W1"}, "nicknames": ["ada"]}),
        exact=_person,
        exact_ok=True,
        why="the stock reader refuses user types in json rows without allowed_json_modules "
        "and returns the envelope; a reader that allows Person may rebuild it",
    ),
    Case(
        "json_lc1_messages_checkpoint",
        None,
        tag="json",
        raw=_json({
            "v": 1,
            "ts": "2024-05-04T06:32:42.235444+00:00",
            "id": "1ef4f797-8335-6428-8001-8a1503f9b875",
            "channel_values": {
                "messages": [
                    _lc1(["langchain", "schema", "messages", "HumanMessage"], content="hi", type="human"),
                    _lc1(["langchain", "schema", "messages", "AIMessage"], content="yo", type="ai",
                         tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1", "type": "tool_call"}]),
                ],
                "doc": _lc1(["langchain_core", "documents", "base", "Document"],
                            page_content="doc", metadata={"a": 1}),
            },
            "channel_versions": {"messages": 2},
            "versions_seen": {},
        }),
        expected=lambda: {
            "v": 1,
            "ts": "2024-05-04T06:32:42.235444+00:00",
            "id": "1ef4f797-8335-6428-8001-8a1503f9b875",
            "channel_values": {
                "messages": [
                    HumanMessage(content="hi"),
                    AIMessage(content="yo", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1", "type": "tool_call"}]),
                ],
                "doc": Document(page_content="doc", metadata={"a": 1}),
            },
            "channel_versions": {"messages": 2},
            "versions_seen": {},
        },
    ),
]


def _deep(n: int) -> Any:
    value: Any = "bottom"
    for i in range(n):
        value = {"level": i, "child": [value]}
    return value


CASES_BY_NAME: dict[str, Case] = {case.name: case for case in CASES}
assert len(CASES_BY_NAME) == len(CASES), "duplicate case names"

GOLDEN_CASES: list[Case] = [case for case in CASES if case.golden]
