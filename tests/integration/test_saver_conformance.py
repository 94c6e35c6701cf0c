"""langgraph-checkpoint-conformance, run against real savers that use serde_kit.

The suite drives the async saver API (aput, aget_tuple, alist, ...). The sync
SqliteSaver refuses async calls, so it runs behind a shim whose async methods
call its own sync ones (its storage code and serde calls, unchanged); SQLite is
also covered through AsyncSqliteSaver. PostgreSQL runs through AsyncPostgresSaver,
MySQL through AIOMySQLSaver and (behind the same kind of shim) the sync
PyMySQLSaver, on the suite's private servers. The report must be FULL: every
capability the saver implements passes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import sqlite3
from typing import Any

import aiosqlite
import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import CapabilityReport
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
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


class _SqliteSaverAsyncShim(SqliteSaver):
    """The sync SqliteSaver, with async methods that call its sync methods."""

    async def aget_tuple(self, config: Any) -> Any:
        return self.get_tuple(config)

    async def alist(self, config: Any, *, filter: Any = None, before: Any = None, limit: Any = None) -> Any:
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)


def _async_shim(saver_class: type) -> type:
    """``saver_class`` with the async methods of :class:`_SqliteSaverAsyncShim` (sync calls underneath)."""
    methods = {k: v for k, v in vars(_SqliteSaverAsyncShim).items() if k.startswith("a") and callable(v)}
    return type(f"{saver_class.__name__}AsyncShim", (saver_class,), methods)


async def _sqlite_saver() -> AsyncIterator[BaseCheckpointSaver]:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        saver = _SqliteSaverAsyncShim(conn, serde=Serializer())
        saver.setup()
        yield _ours(saver)
    finally:
        conn.close()


SAVERS: dict[str, Callable[[], AsyncIterator[BaseCheckpointSaver]]] = {
    "InMemorySaver+serde_kit": _memory_saver,
    "SqliteSaver+serde_kit": _sqlite_saver,
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


@pytest.mark.mysql
# aiomysql turns the server's notes into Python warnings: setup()'s CREATE ... IF NOT
# EXISTS, and the saver's own INSERT IGNORE of a write that is already stored
@pytest.mark.filterwarnings("ignore:Table '.*' already exists")
@pytest.mark.filterwarnings("ignore:Duplicate entry .* for key 'PRIMARY'")
def test_conformance_report_is_full_mysql_async(mysql_db: str) -> None:
    from langgraph.checkpoint.mysql.aio import AIOMySQLSaver

    async def _mysql_saver() -> AsyncIterator[BaseCheckpointSaver]:
        async with AIOMySQLSaver.from_conn_string(mysql_db, serde=Serializer()) as saver:
            await saver.setup()
            yield _ours(saver)

    _run_suite("AIOMySQLSaver+serde_kit", _mysql_saver)


@pytest.mark.mysql
def test_conformance_report_is_full_mysql_sync(mysql_db: str) -> None:
    import pymysql
    from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

    shim = _async_shim(PyMySQLSaver)

    async def _mysql_saver() -> AsyncIterator[BaseCheckpointSaver]:
        with pymysql.connect(**PyMySQLSaver.parse_conn_string(mysql_db), autocommit=True) as conn:
            saver = shim(conn, serde=Serializer())
            saver.setup()
            yield _ours(saver)

    _run_suite("PyMySQLSaver+serde_kit", _mysql_saver)
