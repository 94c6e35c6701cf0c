"""LangGraph's serde events: serde_kit emits the kinds and fields the stock serializer emits,
to listeners registered with LangGraph's own ``register_serde_event_listener``."""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections import Counter
from collections.abc import Iterator
from typing import Any

import ormsgpack
import pytest
from langgraph.checkpoint.serde.event_hooks import register_serde_event_listener
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from serde_kit import Allowlist, BlockedTypeError, LenientDecodeWarning, Serializer, events
from tests.support.sample_types import Doc, Point


@pytest.fixture
def seen() -> Iterator[list[dict[str, Any]]]:
    got: list[dict[str, Any]] = []
    unregister = register_serde_event_listener(lambda event: got.append(dict(event)))
    try:
        yield got
    finally:
        unregister()


def _stock_row(value: Any) -> tuple[str, bytes]:
    return JsonPlusSerializer().dumps_typed(value)


def _method_row(module: str, name: str, method: str) -> tuple[str, bytes]:
    """An ext code 3 row naming ``method``: what someone who can write the database could store."""
    payload = ormsgpack.packb([module, name, "2024-01-01", method])
    return "msgpack", ormsgpack.packb(ormsgpack.Ext(3, payload))


def _stock_strict_events(row: tuple[str, bytes], seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen.clear()
    JsonPlusSerializer(allowed_msgpack_modules=None).loads_typed(row)
    found = list(seen)
    seen.clear()
    return found


def test_blocked_events_match_the_stock_reader_occurrence_for_occurrence(seen: list[dict[str, Any]]) -> None:
    row = _stock_row([Doc("a.txt", 3), Point(1, 2), Doc("b.txt", 4)])
    stock = _stock_strict_events(row, seen)
    assert [e["name"] for e in stock] == ["Doc", "Point", "Doc"]
    # serde_kit in lenient mode reads on past a refusal, as the stock reader does: the same events.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LenientDecodeWarning)
        Serializer(lenient=True).loads_typed(row)
    assert seen == stock
    # In the default mode the first refusal raises, after its event.
    seen.clear()
    with pytest.raises(BlockedTypeError):
        Serializer().loads_typed(row)
    assert seen == stock[:1]
    # An allowed type emits nothing.
    seen.clear()
    assert Serializer(allow=[Doc, Point]).loads_typed(row) == [Doc("a.txt", 3), Point(1, 2), Doc("b.txt", 4)]
    assert seen == []


def test_a_method_outside_the_table_emits_msgpack_method_blocked(seen: list[dict[str, Any]]) -> None:
    row = _method_row("datetime", "datetime", "strptime")
    stock = _stock_strict_events(row, seen)
    assert stock == [{"kind": "msgpack_method_blocked", "module": "datetime", "name": "datetime", "method": "strptime"}]
    with pytest.raises(BlockedTypeError):
        Serializer().loads_typed(row)
    assert seen == stock


def test_allow_everything_reports_unregistered_types_once(seen: list[dict[str, Any]]) -> None:
    row = _stock_row([Doc("a.txt", 3), Doc("b.txt", 4)])
    serde = Serializer(allowlist=Allowlist.allow_everything_unsafe())
    assert serde.loads_typed(row) == [Doc("a.txt", 3), Doc("b.txt", 4)]
    assert seen == [{"kind": "msgpack_unregistered_allowed", "module": "tests.support.sample_types", "name": "Doc"}]
    seen.clear()
    serde.loads_typed(row)  # the verdict is cached per serializer: not reported again
    assert seen == []
    # A type the allowlist names is not "unregistered", even with everything allowed.
    Serializer(allowlist=Allowlist.allow_everything_unsafe() | [Doc]).loads_typed(row)
    assert seen == []


def test_counting_refusals_as_the_events_module_documents(seen: list[dict[str, Any]]) -> None:
    refused: Counter[tuple[str, str, str]] = Counter()
    unregister = register_serde_event_listener(
        lambda event: refused.update([(event["kind"], event["module"], event["name"])])
    )
    try:
        serde = Serializer()
        for _ in range(3):
            with pytest.raises(BlockedTypeError):
                serde.loads_typed(_stock_row(Doc("a.txt", 3)))
    finally:
        unregister()
    assert refused == Counter({("msgpack_blocked", "tests.support.sample_types", "Doc"): 3})
    assert events.__doc__ is not None and "register_serde_event_listener(" in events.__doc__


def test_a_failing_listener_does_not_change_what_the_reader_raises(seen: list[dict[str, Any]]) -> None:
    def broken(event: Any) -> None:
        raise RuntimeError("listener bug")

    unregister = register_serde_event_listener(broken)
    try:
        with pytest.raises(BlockedTypeError):
            Serializer().loads_typed(_stock_row(Doc("a.txt", 3)))
    finally:
        unregister()
    assert [e["kind"] for e in seen] == ["msgpack_blocked"]


def test_each_refusal_is_reported_once_though_a_small_row_is_read_twice(seen: list[dict[str, Any]]) -> None:
    # A small row is read without a work meter first; resolving Doc's class (a costly step)
    # makes the decoder read it again with one. The refusal of Point before it is reported once.
    row = _stock_row([Point(1, 2), Doc("b.txt", 4)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LenientDecodeWarning)
        assert Serializer(allow=[Doc], lenient=True).loads_typed(row)[1] == Doc("b.txt", 4)
    assert seen == [{"kind": "msgpack_blocked", "module": "tests.support.sample_types", "name": "Point"}]


def test_without_langgraph_a_refusal_still_raises_and_emits_nothing() -> None:
    code = (
        "import sys\n"
        "for name in ('langgraph', 'langgraph.checkpoint', 'langgraph.checkpoint.serde',"
        " 'langgraph.checkpoint.serde.event_hooks'):\n"
        "    sys.modules[name] = None\n"
        "import ormsgpack\n"
        "from serde_kit import BlockedTypeError, Serializer\n"
        "row = ormsgpack.packb(ormsgpack.Ext(2, ormsgpack.packb(['mymod', 'Thing', {'a': 1}])))\n"
        "try:\n"
        "    Serializer().loads_typed(('msgpack', row))\n"
        "except BlockedTypeError as e:\n"
        "    print('refused', e.module, e.name)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout == "refused mymod Thing\n", done.stderr
