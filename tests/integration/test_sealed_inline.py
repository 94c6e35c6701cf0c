"""bind_rows(seal_inline=True) on a real PostgreSQL: inline primitives reach the encryption layer."""

from __future__ import annotations

import operator
from typing import Annotated, TypedDict

import pytest
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph

from serde_kit import EncryptedSerializer, Keyring, Serializer
from serde_kit.bound_saver import MANIFEST_CHANNEL, bind_rows
from serde_kit.crypto import blob_key_id
from serde_kit.crypto.blob import blob_binding
from serde_kit.crypto.binding import RowIdentity
from serde_kit.errors import ConfigError, RowBindingError

pytestmark = pytest.mark.postgres

KEYRING = Keyring({"k1": bytes(range(32))}, primary="k1")
TOKEN = "api-token-3b9f"
STEP_SECRET = "step-secret-c41d"


class State(TypedDict):
    api_token: str
    step: str
    count: int
    notes: Annotated[list[str], operator.add]


def _touch(state: State) -> dict:
    # Leaves api_token alone: its channel does not change in this step.
    return {"notes": ["n"], "step": STEP_SECRET}


def _graph(saver):
    builder = StateGraph(State)
    builder.add_node("touch", _touch)
    builder.add_edge(START, "touch")
    builder.add_edge("touch", END)
    return builder.compile(checkpointer=saver)


def _connect(dsn: str):
    import psycopg
    from psycopg.rows import dict_row

    return psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row)


def _saver(pg, **options):
    from langgraph.checkpoint.postgres import PostgresSaver

    saver = PostgresSaver(pg, serde=EncryptedSerializer(Serializer(), KEYRING))
    saver.setup()
    return bind_rows(saver, **options)


def _checkpoint_texts(dsn: str, thread: str) -> list[str]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return [
            r[0]
            for r in conn.execute(
                "SELECT checkpoint::text FROM checkpoints WHERE thread_id=%s ORDER BY checkpoint_id",
                (thread,),
            )
        ]


def _blobs(dsn: str, thread: str, channel: str) -> list[tuple[str, bytes]]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT type, blob FROM checkpoint_blobs WHERE thread_id=%s AND channel=%s AND type <> 'empty'",
            (thread, channel),
        ).fetchall()


def _conf(thread: str) -> dict:
    return {"configurable": {"thread_id": thread}}


def test_inline_primitives_are_sealed_and_bound(postgres_db: str) -> None:
    with _connect(postgres_db) as pg:
        graph = _graph(_saver(pg, seal_inline=True))
        graph.invoke({"api_token": TOKEN, "step": "s0", "count": 7, "notes": []}, _conf("t1"))
        values = graph.get_state(_conf("t1")).values
    assert values == {"api_token": TOKEN, "step": STEP_SECRET, "count": 7, "notes": ["n"]}
    assert not any(TOKEN in text or STEP_SECRET in text for text in _checkpoint_texts(postgres_db, "t1"))
    rows = _blobs(postgres_db, "t1", "api_token")
    assert rows
    for tag, blob in rows:
        assert tag == "msgpack+aesgcm" and blob_key_id(blob) == "k1"
        assert blob_binding(blob) == RowIdentity("t1", "")
        assert TOKEN.encode() not in blob


def test_control_without_the_option_primitives_stay_inline(postgres_db: str) -> None:
    with _connect(postgres_db) as pg:
        graph = _graph(_saver(pg))
        graph.invoke({"api_token": TOKEN, "step": "s0", "count": 7, "notes": []}, _conf("t1"))
    assert any(TOKEN in text for text in _checkpoint_texts(postgres_db, "t1"))
    assert _blobs(postgres_db, "t1", "api_token") == []


def test_a_database_written_without_the_option_reads_and_moves_on(postgres_db: str) -> None:
    with _connect(postgres_db) as pg:
        graph = _graph(_saver(pg))
        graph.invoke({"api_token": TOKEN, "step": "s0", "count": 7, "notes": []}, _conf("t1"))
        before = graph.get_state(_conf("t1")).values
        n_before = len(list(graph.get_state_history(_conf("t1"))))
    assert any(TOKEN in text for text in _checkpoint_texts(postgres_db, "t1"))
    with _connect(postgres_db) as pg:
        graph = _graph(_saver(pg, seal_inline=True))
        assert graph.get_state(_conf("t1")).values == before
        # Old checkpoints (inline values) still read in the history.
        assert len(list(graph.get_state_history(_conf("t1")))) == n_before
        # A new step that leaves api_token unchanged: the value must not be lost,
        # and the new checkpoint must not carry it inline.
        graph.invoke({"notes": ["more"]}, _conf("t1"))
        after = graph.get_state(_conf("t1")).values
    assert after["api_token"] == TOKEN and after["count"] == 7
    assert after["notes"] == ["n", "more", "n"]
    assert TOKEN not in _checkpoint_texts(postgres_db, "t1")[-1]
    assert _blobs(postgres_db, "t1", "api_token")


def test_seal_inline_is_refused_for_savers_that_need_no_help() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver(serde=EncryptedSerializer(Serializer(), KEYRING))
    with pytest.raises(ConfigError, match="PostgreSQL"):
        bind_rows(saver, seal_inline=True)


def test_seal_inline_on_a_mysql_saver_says_it_is_postgresql_only() -> None:
    from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

    saver = PyMySQLSaver(None, serde=EncryptedSerializer(Serializer(), KEYRING))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="PostgreSQL savers only: PyMySQLSaver keeps .* inline in plaintext JSON"):
        bind_rows(saver, seal_inline=True)
    assert bind_rows(saver).saver is saver  # binding alone applies


# -- audit ------------------------------------------------------------------------------


def _audit(dsn: str):
    from serde_kit.tools.audit import audit
    from serde_kit.tools.db import open_database

    with open_database(postgres=dsn) as store:
        return audit(store)


def _inline_warnings(report) -> list[str]:
    return [w for w in report.warnings() if "inline" in w]


def test_audit_does_not_warn_for_sealed_inline_values(postgres_db: str) -> None:
    with _connect(postgres_db) as pg:
        graph = _graph(_saver(pg, seal_inline=True))
        graph.invoke({"api_token": TOKEN, "step": "s0", "count": 7, "notes": []}, _conf("t1"))
        graph.invoke({"notes": ["again"]}, _conf("t1"))
    report = _audit(postgres_db)
    assert _inline_warnings(report) == []
    assert {ch: t for ch, t in report.inline_primitives.items() if set(t) - {"null"}} == {}
    assert report.passed() and report.plaintext_rows == 0
    # the sealed values are counted as encrypted rows instead
    assert report.tables["checkpoint_blobs"].encrypted > 0


def test_audit_still_warns_for_unsealed_inline_values(postgres_db: str) -> None:
    with _connect(postgres_db) as pg:
        graph = _graph(_saver(pg))
        graph.invoke({"api_token": TOKEN, "step": "s0", "count": 7, "notes": []}, _conf("t1"))
    (warning,) = _inline_warnings(_audit(postgres_db))
    assert "api_token" in warning and "count" in warning and "seal_inline=True" in warning
    assert TOKEN not in warning  # counts and names only, never values


def test_audit_still_warns_for_inline_values_of_checkpoints_written_before_sealing(postgres_db: str) -> None:
    with _connect(postgres_db) as pg:
        graph = _graph(_saver(pg))
        graph.invoke({"api_token": TOKEN, "step": "s0", "count": 7, "notes": []}, _conf("t1"))
    assert any(TOKEN in text for text in _checkpoint_texts(postgres_db, "t1"))
    # Sealing from now on: the checkpoints written before keep their inline values, and audit must say so.
    with _connect(postgres_db) as pg:
        graph = _graph(_saver(pg, seal_inline=True))
        graph.invoke({"notes": ["more"]}, _conf("t1"))
    assert any(TOKEN in text for text in _checkpoint_texts(postgres_db, "t1"))
    (warning,) = _inline_warnings(_audit(postgres_db))
    assert "api_token" in warning


# -- the checkpoint JSONB is plaintext: edits to it are refused (seal_inline + require_bound) --


def _sealed_thread(dsn: str, thread: str = "t1") -> dict:
    """Run two steps through bind_rows(seal_inline, require_bound); the values read back."""
    with _connect(dsn) as pg:
        graph = _graph(_saver(pg, seal_inline=True, require_bound=True))
        graph.invoke({"api_token": TOKEN, "step": "s0", "count": 7, "notes": []}, _conf(thread))
        graph.invoke({"notes": ["more"]}, _conf(thread))
        state = graph.get_state(_conf(thread))
        history = list(graph.get_state_history(_conf(thread)))
    assert MANIFEST_CHANNEL not in state.values
    assert all(MANIFEST_CHANNEL not in s.values for s in history)
    return state.values


def _attack(dsn: str, sql: str, *params: object) -> None:
    """The database writer's edit, on the newest checkpoint of thread t1."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        newest = conn.execute("SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = 't1'").fetchone()
        assert newest is not None
        conn.execute(sql.replace("$NEWEST", "%s"), (*params, newest[0]))


def _read(dsn: str, **options: bool) -> dict:
    with _connect(dsn) as pg:
        return _graph(_saver(pg, **options)).get_state(_conf("t1")).values


def _history(dsn: str) -> list:
    with _connect(dsn) as pg:
        return list(_graph(_saver(pg, seal_inline=True, require_bound=True)).get_state_history(_conf("t1")))


def _newest_version(dsn: str, channel: str) -> str:
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT checkpoint -> 'channel_versions' ->> %s FROM checkpoints WHERE thread_id = 't1' "
            "ORDER BY checkpoint_id DESC LIMIT 1",
            (channel,),
        ).fetchone()
    assert row is not None
    return str(row[0])


SET = "UPDATE checkpoints SET checkpoint = jsonb_set(checkpoint, %s, %s::jsonb) WHERE checkpoint_id = $NEWEST"


def test_a_sealed_checkpoint_reads_back_without_its_manifest(postgres_db: str) -> None:
    values = _sealed_thread(postgres_db)
    assert values == {"api_token": TOKEN, "step": STEP_SECRET, "count": 7, "notes": ["n", "more", "n"]}
    assert not any(TOKEN in text for text in _checkpoint_texts(postgres_db, "t1"))


def test_a_plaintext_value_put_in_the_jsonb_is_refused(postgres_db: str) -> None:
    _sealed_thread(postgres_db)
    # a value for a channel that holds none in this checkpoint (no blob to override it)
    _attack(postgres_db, SET, "{channel_values,evil}", '"attacker-chosen"')
    with pytest.raises(RowBindingError, match="sealed manifest"):
        _read(postgres_db, seal_inline=True, require_bound=True)
    with pytest.raises(RowBindingError):
        _history(postgres_db)  # the list path too


def test_a_plaintext_value_in_place_of_a_deleted_blob_is_refused(postgres_db: str) -> None:
    import psycopg

    _sealed_thread(postgres_db)
    version = _newest_version(postgres_db, "api_token")
    with psycopg.connect(postgres_db, autocommit=True) as conn:
        conn.execute("DELETE FROM checkpoint_blobs WHERE channel = 'api_token' AND version = %s", (version,))
    _attack(postgres_db, SET, "{channel_values,api_token}", '"attacker-token"')
    with pytest.raises(RowBindingError, match="api_token"):
        _read(postgres_db, seal_inline=True, require_bound=True)


def test_a_channel_pointed_at_a_version_without_its_blob_is_refused(postgres_db: str) -> None:
    _sealed_thread(postgres_db)
    _attack(postgres_db, SET, "{channel_versions,notes}", '"00000000000000000000000000000099.0.1"')
    with pytest.raises(RowBindingError, match="versions differ"):
        _read(postgres_db, seal_inline=True, require_bound=True)


def test_a_channel_whose_blob_was_deleted_is_refused(postgres_db: str) -> None:
    import psycopg

    _sealed_thread(postgres_db)
    version = _newest_version(postgres_db, "count")
    with psycopg.connect(postgres_db, autocommit=True) as conn:
        conn.execute("DELETE FROM checkpoint_blobs WHERE channel = 'count' AND version = %s", (version,))
    with pytest.raises(RowBindingError, match="lost its blob"):
        _read(postgres_db, seal_inline=True, require_bound=True)


def test_a_checkpoint_stripped_of_its_manifest_is_refused(postgres_db: str) -> None:
    _sealed_thread(postgres_db)
    _attack(
        postgres_db,
        "UPDATE checkpoints SET checkpoint = checkpoint #- %s WHERE checkpoint_id = $NEWEST",
        ["channel_versions", MANIFEST_CHANNEL],
    )
    with pytest.raises(RowBindingError, match="no sealed manifest"):
        _read(postgres_db, seal_inline=True, require_bound=True)


def test_a_manifest_written_into_the_jsonb_is_refused(postgres_db: str) -> None:
    import json

    import psycopg

    _sealed_thread(postgres_db)
    with psycopg.connect(postgres_db) as conn:
        row = conn.execute(
            "SELECT checkpoint_id, checkpoint FROM checkpoints WHERE thread_id = 't1' ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
    assert row is not None
    checkpoint_id, checkpoint = row
    versions = {k: v for k, v in checkpoint["channel_versions"].items() if k != MANIFEST_CHANNEL}
    forged = {
        "mark": "serde_kit.manifest/1",
        "checkpoint_id": checkpoint_id,
        "versions": versions,
        "values": ["api_token", "count", "notes", "step"],
        "primitives": {"api_token": "attacker-token", "count": 7, "step": STEP_SECRET},
    }
    checkpoint["channel_versions"] = versions
    checkpoint["channel_values"] = {MANIFEST_CHANNEL: forged, "api_token": "attacker-token"}
    _attack(postgres_db, "UPDATE checkpoints SET checkpoint = %s::jsonb WHERE checkpoint_id = $NEWEST", json.dumps(checkpoint))
    with pytest.raises(RowBindingError, match="not a sealed value"):
        _read(postgres_db, seal_inline=True, require_bound=True)


def test_another_checkpoints_manifest_is_refused(postgres_db: str) -> None:
    import psycopg

    _sealed_thread(postgres_db)
    with psycopg.connect(postgres_db) as conn:
        older = conn.execute(
            "SELECT checkpoint -> 'channel_versions' ->> %s FROM checkpoints WHERE thread_id = 't1' "
            "ORDER BY checkpoint_id DESC OFFSET 1 LIMIT 1",
            (MANIFEST_CHANNEL,),
        ).fetchone()
    assert older is not None
    _attack(postgres_db, SET, ["channel_versions", MANIFEST_CHANNEL], json_string(older[0]))
    with pytest.raises(RowBindingError, match="another checkpoint"):
        _read(postgres_db, seal_inline=True, require_bound=True)


def json_string(text: str) -> str:
    import json

    return json.dumps(text)


def test_without_require_bound_checkpoints_written_before_sealing_still_read(postgres_db: str) -> None:
    with _connect(postgres_db) as pg:
        _graph(_saver(pg)).invoke({"api_token": TOKEN, "step": "s0", "count": 7, "notes": []}, _conf("t1"))
    assert _read(postgres_db, seal_inline=True)["api_token"] == TOKEN  # the migration mode
    with pytest.raises(RowBindingError):
        _read(postgres_db, seal_inline=True, require_bound=True)  # no manifest: not written by the wrapper


def test_the_async_saver_refuses_an_edited_checkpoint_too(postgres_db: str) -> None:
    import asyncio

    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    _sealed_thread(postgres_db)
    _attack(postgres_db, SET, "{channel_values,evil}", '"attacker-chosen"')

    async def read() -> None:
        async with AsyncPostgresSaver.from_conn_string(postgres_db) as saver:
            saver.serde = EncryptedSerializer(Serializer(), KEYRING)
            bound = bind_rows(saver, seal_inline=True, require_bound=True)
            await bound.aget_tuple(_conf("t1"))

    with pytest.raises(RowBindingError, match="sealed manifest"):
        asyncio.run(read())


# -- DeltaChannel history (get_delta_channel_history) reads the JSONB of every ancestor --------------


def _concat(state: list[str] | None, writes: list[list[str]]) -> list[str]:
    out = list(state or [])
    for w in writes:
        out.extend(w)
    return out


class DeltaState(TypedDict):
    items: Annotated[list[str], DeltaChannel(_concat, snapshot_frequency=4)]


def _delta_graph(saver):
    builder = StateGraph(DeltaState)
    builder.add_node("add", lambda s: {"items": [f"i{len(s['items'])}"]})
    builder.add_edge(START, "add")
    builder.add_edge("add", END)
    return builder.compile(checkpointer=saver)


def _delta_thread(dsn: str, steps: int = 3) -> list[str]:
    with _connect(dsn) as pg:
        graph = _delta_graph(_saver(pg, seal_inline=True, require_bound=True))
        for _ in range(steps):
            graph.invoke({"items": []}, _conf("t1"))
        return graph.get_state(_conf("t1")).values["items"]


def _delta_read(dsn: str, **options: bool) -> list[str]:
    with _connect(dsn) as pg:
        return _delta_graph(_saver(pg, **options)).get_state(_conf("t1")).values["items"]


def _delta_history(dsn: str, **options: bool) -> dict:
    with _connect(dsn) as pg:
        saver = _saver(pg, **options)
        return dict(saver.get_delta_channel_history(config=_conf("t1"), channels=["items"]))


def _ancestor_without_items_blob(dsn: str) -> str:
    """The newest checkpoint but one whose ``items`` version has no blob (not a DeltaChannel snapshot)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT c.checkpoint_id FROM checkpoints c WHERE c.thread_id = 't1' AND NOT EXISTS ("
            " SELECT 1 FROM checkpoint_blobs b WHERE b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns"
            " AND b.channel = 'items' AND b.version = c.checkpoint -> 'channel_versions' ->> 'items')"
            " ORDER BY c.checkpoint_id DESC OFFSET 1"
        ).fetchall()
    assert rows, "every checkpoint holds an items snapshot: the attack needs one that does not"
    return str(rows[0][0])


def test_delta_history_reads_back_through_the_manifest_check(postgres_db: str) -> None:
    honest = _delta_thread(postgres_db, steps=6)
    assert honest == ["i0", "i1", "i2", "i3", "i4", "i5"]
    assert _delta_read(postgres_db, seal_inline=True, require_bound=True) == honest
    history = _delta_history(postgres_db, seal_inline=True, require_bound=True)
    assert set(history) == {"items"} and history["items"]["writes"]
    # Every ancestor passes the check, also one whose items version got its snapshot blob
    # from a later checkpoint (PostgreSQL keys blobs by version: the manifest did not list it).
    with _connect(postgres_db) as pg:
        graph = _delta_graph(_saver(pg, seal_inline=True, require_bound=True))
        states = [s.values.get("items") for s in graph.get_state_history(_conf("t1"))]
    assert states[0] == honest and ["i0"] in states and len(states) == 3 * 6


def test_the_async_delta_history_is_checked_too(postgres_db: str) -> None:
    import asyncio

    import psycopg
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    _delta_thread(postgres_db)
    target = _ancestor_without_items_blob(postgres_db)

    async def history() -> dict:
        async with AsyncPostgresSaver.from_conn_string(postgres_db) as saver:
            saver.serde = EncryptedSerializer(Serializer(), KEYRING)
            bound = bind_rows(saver, seal_inline=True, require_bound=True)
            return dict(await bound.aget_delta_channel_history(config=_conf("t1"), channels=["items"]))

    honest = asyncio.run(history())["items"]
    assert [w[2] for w in honest["writes"]] and "seed" not in honest or honest["seed"]
    with psycopg.connect(postgres_db, autocommit=True) as conn:
        conn.execute(
            "UPDATE checkpoints SET checkpoint = jsonb_set(checkpoint, '{channel_values,items}', %s::jsonb) "
            "WHERE thread_id = 't1' AND checkpoint_id = %s",
            ('["attacker-seed"]', target),
        )
    with pytest.raises(RowBindingError, match="'items' holds a value that is not sealed"):
        asyncio.run(history())


def test_a_plaintext_delta_seed_put_in_an_ancestors_jsonb_is_refused(postgres_db: str) -> None:
    import psycopg

    _delta_thread(postgres_db)
    target = _ancestor_without_items_blob(postgres_db)
    with psycopg.connect(postgres_db, autocommit=True) as conn:
        conn.execute(
            "UPDATE checkpoints SET checkpoint = jsonb_set(checkpoint, '{channel_values,items}', %s::jsonb) "
            "WHERE thread_id = 't1' AND checkpoint_id = %s",
            ('["attacker-seed"]', target),
        )
    with pytest.raises(RowBindingError, match="'items' holds a value that is not sealed"):
        _delta_history(postgres_db, seal_inline=True, require_bound=True)
    with pytest.raises(RowBindingError, match="'items' holds a value that is not sealed"):
        _delta_read(postgres_db, seal_inline=True, require_bound=True)
    # Control: without the check (no seal_inline), the saver's own fast path takes the edited seed.
    assert "attacker-seed" in _delta_read(postgres_db)
