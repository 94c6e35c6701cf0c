"""Every row tool takes the same progress factory (``tools.common.Progress``) and closes its bar."""

from __future__ import annotations

from typing import Any

import pytest

from serde_kit.tools.audit import audit
from serde_kit.tools.scan import scan
from serde_kit.tools.status import status
from tests.support.inspect_fixtures import (
    Databases,
    dbs,  # noqa: F401  (fixture)
)


class Bar:
    def __init__(self, total: int, desc: str) -> None:
        self.total, self.desc, self.done, self.closed = total, desc, 0, False

    def update(self, n: int) -> None:
        assert not self.closed
        self.done += n

    def close(self) -> None:
        self.closed = True


class Factory:
    def __init__(self) -> None:
        self.bars: list[Bar] = []

    def __call__(self, *, total: int, desc: str) -> Bar:
        self.bars.append(Bar(total, desc))
        return self.bars[-1]


@pytest.mark.parametrize(
    ("tool", "desc"),
    [
        (lambda db, progress: scan(db, batch_size=3, progress=progress), "scan"),
        (lambda db, progress: audit(db, batch_size=3, progress=progress), "audit"),
        (lambda db, progress: status(db, batch_size=3, progress=progress), "status"),
    ],
)
def test_one_bar_counts_every_row_and_is_closed(dbs: Databases, tool: Any, desc: str):
    factory = Factory()
    with dbs.store("plain") as db:
        rows = db.count_rows()
        tool(db, factory)
    assert rows > 3
    [bar] = factory.bars
    assert (bar.desc, bar.total, bar.done, bar.closed) == (desc, rows, rows, True)

