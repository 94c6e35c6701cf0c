"""A real PostgreSQL restart under a running rotate (issue 11, section 3).

The server is a dedicated private instance (tests/support/pg_server.py), never the
suite's shared one, restarted with ``pg_ctl restart`` as its own user.  The
restart happens from rotate's progress callback after a committed batch, so
the test is synchronised on rotate's own events and bounded by counts:
rotate must reconnect and resume a bounded number of times, and past that
stop with a one-line error that a rerun resumes from.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

from serde_kit.errors import StoreError
from serde_kit.tools.db import open_database
from serde_kit.tools.rotate import MAX_RECONNECTS, rotate
from serde_kit.tools.status import status
from tests.support.pg_server import PostgresServer
from tests.support.rotate_fixtures import K_ROTATE, plain_rows, populate, postgres_saver

ALL = {"encrypt_plaintext": True, "upgrade_legacy": True}

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture(scope="module")
def own_server() -> Iterator[PostgresServer]:
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def template(own_server: PostgresServer) -> str:
    dsn = own_server.new_database("restart_template")
    populate(partial(postgres_saver, dsn), threads_per_group=2)
    return dsn


@pytest.fixture
def dsn(own_server: PostgresServer, template: str, request: pytest.FixtureRequest) -> str:
    return own_server.new_database(request.node.name, template=template)


class Restarter:
    """rotate's progress collaborator: restarts the server after committed batches, ``times`` times at most."""

    def __init__(self, server: PostgresServer, times: int) -> None:
        self.server, self.times, self.restarts = server, times, 0

    def __call__(self, **_: Any) -> Restarter:
        return self

    def update(self, n: int) -> None:
        if n and self.restarts < self.times:
            self.restarts += 1
            self.server.restart()  # returns once the server accepts connections again

    def close(self) -> None:
        pass


def test_rotate_reconnects_and_resumes_after_a_server_restart(own_server: PostgresServer, dsn: str) -> None:
    with open_database(postgres=dsn) as db:
        before = plain_rows(db)
    restarter = Restarter(own_server, times=2)
    with open_database(postgres=dsn, readonly=False) as db:
        report = rotate(db, keyring=K_ROTATE, apply=True, batch_size=5, verify_after=False, progress=restarter, **ALL)
        assert restarter.restarts == 2
        assert report.ok and report.reconnects == 2
        assert plain_rows(db) == before  # every value is the same, none lost or doubled
        total = status(db, keyring=K_ROTATE, verify=True).total
    assert dict(total.by_key) == {"k2": total.rows - total.empty}


def test_a_server_restarting_every_batch_stops_with_one_line_and_a_rerun_resumes(
    own_server: PostgresServer, dsn: str
) -> None:
    restarter = Restarter(own_server, times=MAX_RECONNECTS + 10)
    with open_database(postgres=dsn, readonly=False) as db:
        with pytest.raises(StoreError) as caught:
            rotate(db, keyring=K_ROTATE, apply=True, batch_size=5, verify_after=False, progress=restarter, **ALL)
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    assert "lost the connection to PostgreSQL" in message
    assert f"gave up after {MAX_RECONNECTS} reconnections; rerun to resume" in message
    assert restarter.restarts == MAX_RECONNECTS + 1  # one restart per committed batch, bounded
    with open_database(postgres=dsn, readonly=False) as db:
        assert rotate(db, keyring=K_ROTATE, apply=True, **ALL).ok

