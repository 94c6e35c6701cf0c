"""langgraph-checkpoint-conformance on savers wrapped by bind_rows (row binding).

Same savers as test_saver_conformance.py, each with an EncryptedSerializer and
wrapped in BoundSaver, so every blob the suite writes is bound to its thread and
every read goes through the binding checks. PostgreSQL also runs with
seal_inline. The report must be FULL.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable

import aiosqlite
import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import CapabilityReport
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from serde_kit import EncryptedSerializer, Keyring, Serializer
from serde_kit.bound_saver import BoundSaver, bind_rows
from tests.integration.test_saver_conformance import _async_shim, _SqliteSaverAsyncShim

KEYRING = Keyring({"k1": bytes(range(32))}, primary="k1")


def _serde() -> EncryptedSerializer:
    return EncryptedSerializer(Serializer(), KEYRING)


def _bound(saver: BaseCheckpointSaver, **options: bool) -> BoundSaver:
    bound = bind_rows(saver, **options)
    assert isinstance(bound.serde, EncryptedSerializer)
    return bound


async def _memory() -> AsyncIterator[BaseCheckpointSaver]:
    yield _bound(InMemorySaver(serde=_serde()))


async def _async_sqlite() -> AsyncIterator[BaseCheckpointSaver]:
    async with aiosqlite.connect(":memory:") as conn:
        saver = AsyncSqliteSaver(conn, serde=_serde())
        await saver.setup()
        yield _bound(saver)


async def _sqlite() -> AsyncIterator[BaseCheckpointSaver]:
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    try:
        saver = _SqliteSaverAsyncShim(conn, serde=_serde())
        saver.setup()
        yield _bound(saver)
    finally:
        conn.close()


SAVERS: dict[str, Callable[[], AsyncIterator[BaseCheckpointSaver]]] = {
    "BoundSaver(InMemorySaver)": _memory,
    "BoundSaver(SqliteSaver)": _sqlite,
    "BoundSaver(AsyncSqliteSaver)": _async_sqlite,
}


def _run_suite(name: str, factory: Callable[[], AsyncIterator[BaseCheckpointSaver]]) -> None:
    registered = checkpointer_test(name=name)(factory)
    report: CapabilityReport = asyncio.run(validate(registered))
    report.print_report()
    failures = {
        cap: result.failures
        for cap, result in report.results.items()
        if result.detected and not result.passed
    }
    assert report.conformance_level() == "FULL", failures
    assert report.passed_all_base()
    assert sum(r.tests_passed for r in report.results.values()) > 0


@pytest.mark.parametrize("name", sorted(SAVERS))
def test_bound_conformance_report_is_full(name: str) -> None:
    _run_suite(name, SAVERS[name])


@pytest.mark.postgres
@pytest.mark.parametrize("seal_inline", [False, True], ids=["plain", "seal_inline"])
def test_bound_conformance_report_is_full_postgres(postgres_db: str, seal_inline: bool) -> None:
    async def _postgres() -> AsyncIterator[BaseCheckpointSaver]:
        async with AsyncPostgresSaver.from_conn_string(postgres_db, serde=_serde()) as saver:
            await saver.setup()
            yield _bound(saver, seal_inline=seal_inline)

    _run_suite(f"BoundSaver(AsyncPostgresSaver, seal_inline={seal_inline})", _postgres)


@pytest.mark.mysql
# aiomysql turns the server's notes into Python warnings: setup()'s CREATE ... IF NOT
# EXISTS, and the saver's own INSERT IGNORE of a write that is already stored
@pytest.mark.filterwarnings("ignore:Table '.*' already exists")
@pytest.mark.filterwarnings("ignore:Duplicate entry .* for key 'PRIMARY'")
def test_bound_conformance_report_is_full_mysql_async(mysql_db: str) -> None:
    from langgraph.checkpoint.mysql.aio import AIOMySQLSaver

    async def _mysql() -> AsyncIterator[BaseCheckpointSaver]:
        async with AIOMySQLSaver.from_conn_string(mysql_db, serde=_serde()) as saver:
            await saver.setup()
            yield _bound(saver)

    _run_suite("BoundSaver(AIOMySQLSaver)", _mysql)


@pytest.mark.mysql
def test_bound_conformance_report_is_full_mysql_sync(mysql_db: str) -> None:
    import pymysql
    from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

    shim = _async_shim(PyMySQLSaver)

    async def _mysql() -> AsyncIterator[BaseCheckpointSaver]:
        with pymysql.connect(**PyMySQLSaver.parse_conn_string(mysql_db), autocommit=True) as conn:
            saver = shim(conn, serde=_serde())
            saver.setup()
            yield _bound(saver)

    _run_suite("BoundSaver(PyMySQLSaver)", _mysql)
