"""status and audit count rows with one RowTally: bound and unbound rows per table, text and JSON.

On the three real servers: the graph-populated databases hold unbound rows
(written without ``bind_rows``); ``rotate --bind --apply`` (the documented
migration) binds them, and both commands show the move from unbound to bound,
table by table, agreeing with each other and with the blobs' own headers.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest

from serde_kit.cli import main
from serde_kit.crypto.blob import BOUND_VERSION
from serde_kit.crypto.rows import RowKind, classify_row
from serde_kit.tools.audit import audit
from serde_kit.tools.db import open_database
from serde_kit.tools.status import status
from serde_kit.tools.tally import RowTally
from serde_kit.tools.verify import verify
from tests.support.rotate_fixtures import K_ROTATE, LEGACY_TEXT, raw_rows

MIGRATE = ["--encrypt-plaintext", "--upgrade-legacy", "--bind", "--apply"]


@pytest.fixture(autouse=True)
def keyring_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SERDE_KIT_KEYRING", "SERDE_KIT_KEYRING_FILE", "LANGGRAPH_AES_KEY", "SERDE_KIT_ALLOW"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SERDE_KIT_KEYRING", K_ROTATE.to_env_value())
    monkeypatch.setenv("LANGGRAPH_AES_KEY", LEGACY_TEXT)
    monkeypatch.setenv("COLUMNS", "200")


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def _from_headers(kind: str, location: str) -> dict[str, Counter[str]]:
    """Per table, encrypted rows bound (v2 header) and unbound (v1), read from the blobs themselves."""
    out: dict[str, Counter[str]] = {}
    with open_database(**{kind: location}) as store:
        for (table, _pk), (tag, blob) in raw_rows(store).items():
            counts = out.setdefault(table, Counter())
            if classify_row(tag, blob).kind is RowKind.AESGCM:
                counts["bound" if blob[0] == BOUND_VERSION else "unbound"] += 1
    return out


def _check_views(capsys: pytest.CaptureFixture[str], args: list[str], expected: dict[str, Counter[str]]) -> None:
    code, out = _cli(capsys, "status", *args, "--json")
    assert code == 0
    data = json.loads(out)
    tables = {t["name"]: t for t in data["tables"]}
    for name, counts in expected.items():
        assert (tables[name]["bound"], tables[name]["unbound"]) == (counts["bound"], counts["unbound"]), name
        assert tables[name]["encrypted"] == counts["bound"] + counts["unbound"] == sum(tables[name]["by_key"].values())
    assert data["total"]["bound"] == sum(c["bound"] for c in expected.values())
    assert data["total"]["unbound"] == sum(c["unbound"] for c in expected.values())

    code, out = _cli(capsys, "audit", *args, "--json")
    audit = json.loads(out)
    for name, counts in expected.items():
        assert (audit["tables"][name]["bound"], audit["tables"][name]["unbound"]) == (counts["bound"], counts["unbound"])
    assert audit["bound_rows"] == data["total"]["bound"] and audit["unbound_rows"] == data["total"]["unbound"]

    for command in ("status", "audit"):
        _code, text = _cli(capsys, command, *args)
        header = next(line for line in text.splitlines() if line.lower().startswith("table"))
        columns = [c.lower() for c in re.split(r" {2,}", header.strip())]  # titles hold single spaces
        bound_at, unbound_at = columns.index("bound"), columns.index("unbound")
        for name, counts in expected.items():
            line = next(line for line in text.splitlines() if line.split()[:1] == [name])
            cells = re.split(r" {2,}", line.strip())
            assert int(cells[bound_at]) == counts["bound"] and int(cells[unbound_at]) == counts["unbound"], (command, line)


def test_status_and_audit_count_bound_and_unbound_rows_and_rotate_bind_migrates(
    graph_db: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    kind, location = graph_db
    args = [f"--{kind}", location]
    before = _from_headers(kind, location)
    assert sum(c["unbound"] for c in before.values()) > 0 and sum(c["bound"] for c in before.values()) == 0
    _check_views(capsys, args, before)
    code, out = _cli(capsys, "audit", *args)
    assert "not bound to their thread" in out and "rotate --bind --apply" in out
    _code, out = _cli(capsys, "status", *args)
    assert "rotate --bind --apply" in out

    code, out = _cli(capsys, "rotate", *args, *MIGRATE)
    assert code == 0, out

    after = _from_headers(kind, location)
    assert sum(c["unbound"] for c in after.values()) == 0 and sum(c["bound"] for c in after.values()) > 0
    _check_views(capsys, args, after)
    code, out = _cli(capsys, "audit", *args)
    assert "not bound to their thread" not in out


def test_status_and_audit_share_one_tally(graph_sqlite_db: str) -> None:
    with open_database(sqlite=graph_sqlite_db) as store:
        report = status(store)
        audited = audit(store)
    assert all(isinstance(t, RowTally) for t in report.tables)
    assert all(isinstance(t, RowTally) for t in audited.tables.values())
    fields: Any = lambda t: {k: v for k, v in vars(t).items() if k != "failed"}  # noqa: E731
    assert [fields(t) for t in report.tables] == [fields(audited.tables[t.name]) for t in report.tables]
    with open_database(sqlite=graph_sqlite_db) as store:
        checked = verify(store, keyring=K_ROTATE)
    assert isinstance(checked.counts, RowTally)
    assert fields(checked.counts) == fields(report.total)  # verify reads whole blobs, status headers: same kinds


def test_a_bound_header_longer_than_the_bytes_read_counts_as_bound(tmp_path) -> None:
    """status/audit read 128 bytes per blob; a long thread id makes a bound header longer."""
    import sqlite3

    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.sqlite import SqliteSaver

    from serde_kit import EncryptedSerializer, Serializer
    from serde_kit.bound_saver import bind_rows

    path = tmp_path / "long.db"
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = bind_rows(SqliteSaver(conn, serde=EncryptedSerializer(Serializer(), K_ROTATE)))
    for thread in ("t" * 20, "t" * 200):  # short and long bound headers
        checkpoint = empty_checkpoint()
        config = saver.put({"configurable": {"thread_id": thread, "checkpoint_ns": ""}}, checkpoint, {}, {})
        saver.put_writes(config, [("x", 1)], "task")
    conn.close()
    with open_database(sqlite=str(path)) as store:
        report = status(store)
        audited = audit(store)
    assert report.total.unknown == 0 and report.total.bound == 4 and report.total.unbound == 0
    assert dict(report.total.by_key) == {K_ROTATE.primary_id: 4}
    assert sum(t.bound for t in audited.tables.values()) == 4 and sum(t.unknown for t in audited.tables.values()) == 0
