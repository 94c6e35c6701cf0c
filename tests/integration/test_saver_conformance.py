"""langgraph-checkpoint-conformance, run against real savers that use serde_kit.

The suite drives the async saver API (aput, aget_tuple, alist, ...). The sync
SqliteSaver refuses async calls, so SQLite is covered through AsyncSqliteSaver
(same tables, same serde calls). The report must be FULL: every capability the
saver implements passes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import aiosqlite
import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import CapabilityReport
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from serde_kit import Serializer


async def _memory_saver() -> AsyncIterator[BaseCheckpointSaver]:
    yield InMemorySaver(serde=Serializer())


async def _async_sqlite_saver() -> AsyncIterator[BaseCheckpointSaver]:
    async with aiosqlite.connect(":memory:") as conn:
        saver = AsyncSqliteSaver(conn, serde=Serializer())
        await saver.setup()
        yield saver


SAVERS: dict[str, Callable[[], AsyncIterator[BaseCheckpointSaver]]] = {
    "InMemorySaver+serde_kit": _memory_saver,
    "AsyncSqliteSaver+serde_kit": _async_sqlite_saver,
}


@pytest.mark.parametrize("name", sorted(SAVERS))
def test_conformance_report_is_full(name: str) -> None:
    registered = checkpointer_test(name=name)(SAVERS[name])
    report: CapabilityReport = asyncio.run(validate(registered))
    report.print_report()
    failures = {
        cap: result.failures for cap, result in report.results.items() if result.detected and not result.passed
    }
    assert report.conformance_level() == "FULL", failures
    # FULL also holds when nothing ran; make sure the base capabilities did.
    assert report.passed_all_base()
    assert sum(r.tests_passed for r in report.results.values()) > 0
