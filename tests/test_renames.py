"""``Serializer(renames={"old.module:OldName": NewClass})``: rows stored under a class's old name
read as the class it is now; the tools see the old names as covered through --allowlist-from."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import ormsgpack
import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver

from serde_kit import BlockedTypeError, ConfigError, EncryptedSerializer, Keyring, Serializer
from serde_kit.cli import main
from tests.support.user_app_types import IntStrPair, Outer, Pair, Ticket


def _row(code: int, *envelope: object) -> tuple[str, bytes]:
    """A row as an older release of the application wrote it (its class lived elsewhere then)."""
    return "msgpack", ormsgpack.packb(ormsgpack.Ext(code, ormsgpack.packb(list(envelope))))


OLD_TICKET = _row(2, "billing.models", "OldTicket", {"title": "t"})
OLD_PAIR = _row(5, "billing.models", "Duo[int, str]", {"first": 1, "second": "x"}, "model_validate_json")
OLD_INNER = _row(2, "billing.models", "Inner", {"n": 3})
RENAMES = {"billing.models:OldTicket": Ticket, "billing.models:Duo": Pair, ("billing.models", "Inner"): Outer.Inner}


def test_rows_under_old_names_read_as_the_classes_of_now() -> None:
    serde = Serializer(renames=RENAMES)
    assert serde.loads_typed(OLD_TICKET) == Ticket("t")
    assert serde.loads_typed(OLD_PAIR) == IntStrPair(first=1, second="x")  # the arguments carry over
    assert serde.loads_typed(OLD_INNER) == Outer.Inner(3)
    # New rows are written under the new name, and read without the map.
    tag, data = serde.dumps_typed(serde.loads_typed(OLD_TICKET))
    assert b"tests.support.user_app_types" in data and b"billing" not in data
    assert Serializer(allow=[Ticket]).loads_typed((tag, data)) == Ticket("t")


def test_without_the_map_the_old_name_is_refused_and_never_imported() -> None:
    with pytest.raises(BlockedTypeError, match="billing.models.OldTicket"):
        Serializer(allow=[Ticket]).loads_typed(OLD_TICKET)
    assert "billing" not in sys.modules


def test_copies_and_encryption_keep_the_map() -> None:
    serde = Serializer(renames=RENAMES).with_allow("x.y:Z")
    assert serde.loads_typed(OLD_TICKET) == Ticket("t")
    keyring = Keyring({"k1": bytes(32)}, primary="k1")

    class OldRelease:  # the inner serializer of an older release: writes the old name
        def dumps_typed(self, obj: object) -> tuple[str, bytes]:
            return OLD_TICKET

        def loads_typed(self, data: tuple[str, bytes]) -> object:
            raise AssertionError("not used")

    sealed = EncryptedSerializer(OldRelease(), keyring).dumps_typed(object())
    assert EncryptedSerializer(Serializer(renames=RENAMES), keyring).loads_typed(sealed) == Ticket("t")


@pytest.mark.parametrize(
    ("renames", "says"),
    [
        ({Ticket: Ticket}, "is a class: give the old name"),
        ({"billing.models:OldTicket": "tests.support.user_app_types:Ticket"}, "must be the class to build now"),
        ({"billing.models:OldTicket,x:Y": Ticket}, "holds several types"),
        ({"tests.support.user_app_types:Ticket": Ticket}, "nothing to rename"),
        ([("a:B", Ticket)], "must be a mapping"),
    ],
)
def test_a_malformed_map_is_a_config_error(renames: object, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        Serializer(renames=renames)  # type: ignore[arg-type]


def test_the_tools_see_renamed_rows_as_covered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for var in ("SERDE_KIT_ALLOW", "SERDE_KIT_ALLOW_FILE", "SERDE_KIT_KEYRING", "SERDE_KIT_KEYRING_FILE", "SERDE_KIT_DB"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    db = tmp_path / "app.db"
    with sqlite3.connect(db, check_same_thread=False) as conn:
        saver = SqliteSaver(conn, serde=Serializer(renames=RENAMES))
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"old": Serializer(renames=RENAMES).loads_typed(OLD_TICKET)}
        saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, checkpoint, {}, {})  # type: ignore[arg-type]
        # ... and a pending write still under the old name, as an older release left it
        conn.execute(
            "INSERT INTO writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value)"
            " VALUES ('t', '', ?, 'task', 0, 'old', ?, ?)",
            (checkpoint["id"], OLD_TICKET[0], OLD_TICKET[1]),
        )
    (tmp_path / "app_serde.py").write_text(
        "from serde_kit import Serializer\n"
        "from tests.support.user_app_types import Ticket\n"
        "serde = Serializer(renames={'billing.models:OldTicket': Ticket})\n"
    )
    args = ["allowlist", "scan", "--sqlite", str(db), "--check", "-q"]
    assert main(args) == 1
    assert "billing.models:OldTicket" in capsys.readouterr().out
    assert main([*args, "--allowlist-from", "app_serde:serde"]) == 0
    sys.modules.pop("app_serde", None)
