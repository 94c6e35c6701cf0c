"""langgraph-checkpoint-conformance, run against real savers that use serde_kit.

The suite drives the async saver API (aput, aget_tuple, alist, ...). The sync
SqliteSaver refuses async calls, so SQLite is covered through AsyncSqliteSaver
(same tables, same serde calls). PostgreSQL runs through AsyncPostgresSaver on
the suite's private server. The report must be FULL: every capability the
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
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from serde_kit import Serializer


def _ours(saver: BaseCheckpointSaver) -> BaseCheckpointSaver:
    # The saver must hold our serializer itself, not a stock fallback or wrapper.
    assert type(saver.serde) is Serializer, type(saver.serde)
    return saver


async def _memory_saver() -> AsyncIterator[BaseCheckpointSaver]:
    yield _ours(InMemorySaver(serde=Serializer()))


async def _async_sqlite_saver() -> AsyncIterator[BaseCheckpointSaver]:
    async with aiosqlite.connect(":memory:") as conn:
        saver = AsyncSqliteSaver(conn, serde=Serializer())
        await saver.setup()
        yield _ours(saver)


SAVERS: dict[str, Callable[[], AsyncIterator[BaseCheckpointSaver]]] = {
    "InMemorySaver+serde_kit": _memory_saver,
    "AsyncSqliteSaver+serde_kit": _async_sqlite_saver,
}


def _run_suite(name: str, factory: Callable[[], AsyncIterator[BaseCheckpointSaver]]) -> None:
    registered = checkpointer_test(name=name)(factory)
    report: CapabilityReport = asyncio.run(validate(registered))
    report.print_report()
    failures = {
        cap: result.failures for cap, result in report.results.items() if result.detected and not result.passed
    }
    assert report.conformance_level() == "FULL", failures
    # FULL also holds when nothing ran; make sure the base capabilities did.
    assert report.passed_all_base()
    assert sum(r.tests_passed for r in report.results.values()) > 0


@pytest.mark.parametrize("name", sorted(SAVERS))
def test_conformance_report_is_full(name: str) -> None:
    _run_suite(name, SAVERS[name])


@pytest.mark.postgres
def test_conformance_report_is_full_postgres(postgres_db: str) -> None:
    async def _postgres_saver() -> AsyncIterator[BaseCheckpointSaver]:
        async with AsyncPostgresSaver.from_conn_string(postgres_db, serde=Serializer()) as saver:
            await saver.setup()
            yield _ours(saver)

    _run_suite("AsyncPostgresSaver+serde_kit", _postgres_saver)
