"""The values the compatibility corpus stores: what LangGraph users keep in state.

Each builder makes its value with whatever library versions are installed, so
the same module runs inside every old release's venv (to write the corpus) and
under today's packages (to build the value a row should read back as, where
the value can still be built the same way today). A builder raises
:class:`Unavailable` where the installed release has no such type.
"""

from __future__ import annotations

import collections
import decimal
import inspect
import ipaddress
import pathlib
import re
import uuid
from collections.abc import Callable
from datetime import date, datetime, time, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

from tests.compat import corpus_types as ct

FIXED_KEY = b"serde-kit-compat-corpus-key-32b!"  # 32 bytes: LANGGRAPH_AES_KEY of the +aes rows
assert len(FIXED_KEY) == 32


class Unavailable(Exception):
    """The installed release has no such type."""


def _need(module: str, name: str) -> Any:
    try:
        mod = __import__(module, fromlist=[name])
        return getattr(mod, name)
    except (ImportError, AttributeError):
        raise Unavailable(f"{module}.{name}") from None


def _messages() -> list:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    return [
        SystemMessage(content="be brief", id="s1"),
        HumanMessage(content="weather in Paris?", id="h1"),
        AIMessage(
            content="",
            id="a1",
            tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "call_1"}],
        ),
        ToolMessage(content="sunny, 21C", tool_call_id="call_1", id="t1"),
        AIMessage(content="It is sunny.", id="a2"),
    ]


def _document() -> Any:
    from langchain_core.documents import Document

    return Document(page_content="LangGraph keeps state.", metadata={"source": "a.txt", "page": 2})


def _send() -> Any:
    Send = _need("langgraph.types", "Send")
    return Send("worker", {"job": 7})


def _interrupt() -> Any:
    Interrupt = _need("langgraph.types", "Interrupt")
    params = inspect.signature(Interrupt).parameters
    if "id" in params:
        return Interrupt(value={"question": "approve?"}, id="int-1")
    return Interrupt(value={"question": "approve?"})


def _command() -> Any:
    Command = _need("langgraph.types", "Command")
    return Command(resume={"approved": True}, update={"step": 2}, goto="review")


def _item(search: bool) -> Any:
    cls = _need("langgraph.store.base", "SearchItem" if search else "Item")
    when = datetime(2024, 5, 6, 7, 8, 9, tzinfo=timezone.utc)
    kwargs: dict[str, Any] = dict(
        namespace=("users", "u1"), key="prefs", value={"theme": "dark"}, created_at=when, updated_at=when
    )
    if search:
        kwargs["score"] = 0.5
    return cls(**kwargs)


def _numpy() -> Any:
    try:
        import numpy as np
    except ImportError:
        raise Unavailable("numpy") from None
    return {"vec": np.arange(4, dtype=np.float64), "grid": np.arange(6, dtype=np.int32).reshape(2, 3)}


def _checkpoint() -> dict:
    # The shape every release's savers store (v1..v4 differ in which keys exist;
    # the serializer stores whatever dict it is given).
    return {
        "v": 1,
        "id": "1ef4f797-8335-6428-8001-8a1503f9b875",
        "ts": "2024-07-31T20:14:19.804150+00:00",
        "channel_values": {
            "messages": _messages()[:2],
            "task": ct.Task("write", tags=["a"]),
            "count": 3,
        },
        "channel_versions": {"__start__": 2, "messages": 3},
        "versions_seen": {"__input__": {}, "agent": {"__start__": 1}},
        "pending_sends": [],
    }


def _surrogate() -> str:
    return "caf\udce9 ok"  # what bytes.decode("utf-8", "surrogateescape") gives for b"caf\xe9"


def _unvalidated() -> Any:
    return ct.Person.model_construct(name="ann", age="not a number")


#: name -> builder. Names are stable: the corpus data is keyed by them.
CASES: dict[str, Callable[[], Any]] = {
    "plain": lambda: {"a": 1, "b": [1.5, "x", None, True], "nested": {"k": {"deep": -2}}},
    "text_unicode": lambda: "naïve café ✓ 𝄞",
    "int_keys": lambda: {1: "one", 2: "two"},
    "big_int": lambda: {"n": 2**70},
    "bytes_nested": lambda: {"blob": b"\x00\xffbin", "ba": bytearray(b"\x01\x02")},
    "bytes_top": lambda: b"\x00\xfftop",
    "tuple": lambda: {"t": (1, "a", (2, 3))},
    "set_frozenset": lambda: {"s": {1, 2, 3}, "f": frozenset({"x"})},
    "deque": lambda: {"d": collections.deque([1, 2])},
    "messages": _messages,
    "document": _document,
    "pydantic_v2": lambda: ct.Person(name="ann", age=41, address=ct.Address(city="Lyon", zip_code="69001"), nicknames=["a"]),
    "pydantic_v1": lambda: ct.LegacyUser(name="bob", score=2.5),
    "pydantic_generic": lambda: ct.Box[int](item=5),
    "pydantic_unvalidated": _unvalidated,
    "secret_str": lambda: {"token": _need("pydantic", "SecretStr")("s3cr3t")},
    "secret_v1": lambda: {"token": _need("pydantic.v1", "SecretStr")("old-s3cr3t")},
    "dataclass": lambda: ct.Task("ship", done=True, tags=["x", "y"]),
    "enums": lambda: {"color": ct.Color.RED, "prio": ct.Priority.HIGH, "mood": ct.Mood.BUSY},
    "namedtuple": lambda: ct.Point(3, 4),
    "datetime_naive": lambda: datetime(2024, 1, 2, 3, 4, 5, 678901),
    "datetime_utc": lambda: datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
    "datetime_offset": lambda: datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    "datetime_offset_seconds": lambda: datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(seconds=-3723))),
    "datetime_offset_micro": lambda: datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(microseconds=7))),
    "datetime_zoneinfo": lambda: datetime(2024, 7, 1, 12, 0, tzinfo=ZoneInfo("Europe/Paris")),
    "date_time_delta": lambda: {"d": date(2024, 2, 29), "t": time(13, 14, 15, 16), "td": timedelta(days=2, seconds=5, microseconds=6)},
    "time_tz": lambda: time(8, 30, tzinfo=timezone(timedelta(hours=-4))),
    "stdlib_values": lambda: {
        "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "dec": decimal.Decimal("3.14159"),
        "path": pathlib.Path("/tmp/a/b.txt"),
        "re": re.compile(r"^a+b$", re.I),
        "ip4": ipaddress.IPv4Address("10.1.2.3"),
        "net6": ipaddress.IPv6Network("2001:db8::/32"),
    },
    "numpy": _numpy,
    "send": _send,
    "interrupt": _interrupt,
    "command": _command,
    "store_item": lambda: _item(False),
    "search_item": lambda: _item(True),
    "exception": lambda: {"error": ValueError("boom", 3)},
    "surrogate": _surrogate,
    "str_subclass": lambda: {"summary": ct.Label("short text"), "n": ct.Count(4)},
    "defaultdict": lambda: {"dd": collections.defaultdict(list, {"a": [1]})},
    "checkpoint": _checkpoint,
}

#: Rows also written through the release's EncryptedSerializer (AES-EAX, "+aes").
ENCRYPTED_CASES = ("plain", "messages", "datetime_zoneinfo", "pydantic_v2", "checkpoint")
#: Rows written with pickle_fallback=True: a value msgpack cannot hold, and one it can.
PICKLE_CASES: dict[str, Callable[[], Any]] = {
    "pickle_opaque": lambda: {"obj": ct.Opaque([1, 2])},
    "pickle_plain": lambda: {"a": [1, 2]},
}

#: Types a reader must allow to read the corpus (beyond serde_kit's defaults).
USER_TYPES = (ct.Color, ct.Priority, ct.Mood, ct.Task, ct.Point, ct.Address, ct.Person, ct.Box, ct.LegacyUser)
