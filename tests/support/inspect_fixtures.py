"""Databases for the inspect / scan / audit tests, written by running a real graph.

A small StateGraph (fan-out, an ``interrupt()``, pending writes, numpy,
pydantic, dataclass and Enum values from a *user module*) runs through the
real SqliteSaver / PostgresSaver. The user module is written to a temporary
directory, imported for the run, then made unimportable again: it leaves a
mark file whenever it is imported, so a test can prove the tools never import
it.
"""

from __future__ import annotations

import importlib
import operator
import sqlite3
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer as StockEncrypted
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from serde_kit.crypto import EncryptedSerializer, Keyring

USER_MODULE = "sk_inspect_usermod"
KEY_ID = "k1"
KEY = bytes(range(32))
KEYRING = Keyring({KEY_ID: KEY}, primary=KEY_ID)
#: env value that loads KEYRING (inline format "id:<base64>")
LEGACY_KEY = b"0123456789abcdef0123456789abcdef"

_USER_SOURCE = """
import dataclasses, enum, os, pydantic

_mark = os.environ.get("SK_INSPECT_IMPORT_MARK")
if _mark:
    with open(_mark, "a") as f:
        f.write("imported\\n")

class Doc(pydantic.BaseModel):
    title: str
    pages: int

@dataclasses.dataclass
class Note:
    text: str
    stars: int

class Mood(enum.Enum):
    HAPPY = "happy"
    GRUMPY = "grumpy"
"""

#: (module, name, ext code) of every type the graph stores, as the writer names them.
STORED_TYPES = {
    (USER_MODULE, "Doc", 5),
    (USER_MODULE, "Note", 2),
    (USER_MODULE, "Mood", 0),
    ("langchain_core.messages.human", "HumanMessage", 5),
    ("langchain_core.messages.ai", "AIMessage", 5),
    ("datetime", "date", 1),
    ("langgraph.types", "Interrupt", 2),
    # LangGraph's own: the join edge's barrier channel stores the set of finished sources
    ("builtins", "set", 0),
    # serde_kit's Serializer keeps tuples as tuples (the tuple of Interrupts in a write)
    ("builtins", "tuple", 0),
}


@dataclass
class UserModule:
    """The temporary user module: where it lives and the mark file it writes on import."""

    directory: Path
    mark: Path
    module: Any = field(default=None, repr=False)

    def imported_since_cleared(self) -> bool:
        return self.mark.exists()

    def clear_mark(self) -> None:
        self.mark.unlink(missing_ok=True)


@contextmanager
def user_module(tmp: Path, monkeypatch: Any) -> Iterator[UserModule]:
    """Import the user module for the duration of the block; afterwards it is gone.

    After the block the module is out of ``sys.modules`` and ``sys.path`` but
    its file stays, so a subprocess given the directory on PYTHONPATH *could*
    import it — and would leave the mark.
    """
    directory = tmp / "usermod"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{USER_MODULE}.py").write_text(textwrap.dedent(_USER_SOURCE))
    mark = tmp / "usermod-imported.mark"
    monkeypatch.setenv("SK_INSPECT_IMPORT_MARK", str(mark))
    sys.path.insert(0, str(directory))
    importlib.invalidate_caches()
    try:
        mod = importlib.import_module(USER_MODULE)
        yield UserModule(directory, mark, mod)
    finally:
        sys.path.remove(str(directory))
        sys.modules.pop(USER_MODULE, None)
        mark.unlink(missing_ok=True)


def _inner() -> Any:
    try:
        from serde_kit import Serializer  # the lead's serializer, once it exists
    except ImportError:
        return JsonPlusSerializer()
    from serde_kit import Allowlist

    return Serializer(allowlist=Allowlist.allow_everything_unsafe())


def serde_for(kind: str) -> Any:
    """The serializer a thread of ``kind`` is written with."""
    if kind == "plain":
        return _inner()
    if kind == "encrypted":
        return EncryptedSerializer(_inner(), KEYRING)
    if kind == "legacy":
        return StockEncrypted.from_pycryptodome_aes(JsonPlusSerializer(), key=LEGACY_KEY)
    raise ValueError(kind)


def build_graph(mod: Any) -> StateGraph:
    """fan-out graph: prepare -> (left, ask) -> finish; ``ask`` interrupts."""

    class State(TypedDict, total=False):
        messages: Annotated[list, add_messages]
        doc: Any
        note: Any
        mood: Any
        counter: int
        title: str
        vector: Any
        results: Annotated[list, operator.add]
        answer: str

    def prepare(state: State) -> dict:
        import datetime

        return {
            "messages": [HumanMessage("hello", id="m1")],
            "doc": mod.Doc(title="Quarterly report", pages=12),
            "counter": state.get("counter", 0) + 1,
            "title": "draft",
            "vector": np.arange(6, dtype="<f8").reshape(2, 3),
            "results": [datetime.date(2024, 5, 17)],
        }

    def left(state: State) -> dict:
        return {"note": mod.Note(text="looks fine", stars=4), "mood": mod.Mood.HAPPY}

    def ask(state: State) -> dict:
        answer = interrupt({"question": "approve?", "doc_title": state["doc"].title})
        return {"answer": answer}

    def finish(state: State) -> dict:
        return {"messages": [AIMessage("done", id="m2")], "counter": state["counter"] + 1}

    g = StateGraph(State)
    g.add_node("prepare", prepare)
    g.add_node("left", left)
    g.add_node("ask", ask)
    g.add_node("finish", finish)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "left")
    g.add_edge("prepare", "ask")
    g.add_edge(["left", "ask"], "finish")
    g.add_edge("finish", END)
    return g


@dataclass
class ThreadRecord:
    """What LangGraph itself says about a thread, captured while the user module was importable."""

    state: Any
    live_next: tuple[str, ...]
    history: list[tuple[str, tuple[str, ...], str | None]]  # (checkpoint_id, next, parent_id)


def run_threads(saver: Any, mod: Any, *, prefix: str) -> dict[str, ThreadRecord]:
    """Run one interrupted and one finished thread through ``saver``."""
    graph = build_graph(mod).compile(checkpointer=saver)
    paused = {"configurable": {"thread_id": f"{prefix}-paused"}}
    graph.invoke({"counter": 0}, paused)
    done = {"configurable": {"thread_id": f"{prefix}-done"}}
    graph.invoke({"counter": 10}, done)
    graph.invoke(Command(resume="yes"), done)
    out = {}
    for config in (paused, done):
        history = [
            (
                snap.config["configurable"]["checkpoint_id"],
                snap.next,
                snap.parent_config["configurable"]["checkpoint_id"] if snap.parent_config else None,
            )
            for snap in graph.get_state_history(config)
        ]
        state = graph.get_state(config)
        out[config["configurable"]["thread_id"]] = ThreadRecord(state, state.next, history)
    return out


def populate_sqlite(path: Path, mod: Any, kinds: tuple[str, ...]) -> dict[str, ThreadRecord]:
    """Write threads ``<kind>-paused`` / ``<kind>-done`` for each kind into ``path``."""
    records = {}
    for kind in kinds:
        conn = sqlite3.connect(str(path), check_same_thread=False)
        try:
            records.update(run_threads(SqliteSaver(conn, serde=serde_for(kind)), mod, prefix=kind))
        finally:
            conn.close()
    return records


def populate_postgres(dsn: str, mod: Any, kinds: tuple[str, ...]) -> dict[str, ThreadRecord]:
    """As :func:`populate_sqlite`, through the real PostgresSaver."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg import Connection
    from psycopg.rows import dict_row

    records = {}
    with Connection.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row) as conn:
        PostgresSaver(conn).setup()
        for kind in kinds:
            records.update(run_threads(PostgresSaver(conn, serde=serde_for(kind)), mod, prefix=kind))
    return records


def populate_mysql(dsn: str, mod: Any, kinds: tuple[str, ...]) -> dict[str, ThreadRecord]:
    """As :func:`populate_sqlite`, through the real PyMySQLSaver (MariaDB)."""
    import pymysql
    from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver

    records = {}
    with pymysql.connect(**PyMySQLSaver.parse_conn_string(dsn), autocommit=True) as conn:
        PyMySQLSaver(conn).setup()
        for kind in kinds:
            records.update(run_threads(PyMySQLSaver(conn, serde=serde_for(kind)), mod, prefix=kind))
    return records


_POPULATE = {"postgres": populate_postgres, "mysql": populate_mysql}


@dataclass
class Databases:
    """The three databases of one backend, plus what LangGraph said about their threads."""

    backend: str  # "sqlite" | "postgres" | "mysql"
    mixed: str  # plain + encrypted + legacy threads
    plain: str
    encrypted: str
    records: dict[str, ThreadRecord]
    usermod: UserModule

    def args(self, which: str) -> list[str]:
        """``["--sqlite", path]`` or ``["--postgres", dsn]`` for database ``which``."""
        return [f"--{self.backend}", getattr(self, which)]

    def store(self, which: str) -> Any:
        """A read-only store on database ``which``."""
        from serde_kit.tools.db import open_database

        return open_database(**{self.backend: getattr(self, which)})


def build_databases(backend: str, tmp: Path, *, new_dsn: Any = None) -> Databases:
    """Populate mixed / plain / encrypted databases for ``backend``.

    The user module is importable only while the graphs run.
    """
    with pytest.MonkeyPatch.context() as mp, user_module(tmp, mp) as um:
        records: dict[str, ThreadRecord] = {}
        if backend == "sqlite":
            paths = {name: str(tmp / f"{name}.sqlite") for name in ("mixed", "plain", "encrypted")}
            records.update(populate_sqlite(Path(paths["mixed"]), um.module, ("plain", "encrypted", "legacy")))
            populate_sqlite(Path(paths["plain"]), um.module, ("plain",))
            populate_sqlite(Path(paths["encrypted"]), um.module, ("encrypted",))
        else:
            populate = _POPULATE[backend]
            paths = {name: new_dsn(f"inspect_{name}") for name in ("mixed", "plain", "encrypted")}
            records.update(populate(paths["mixed"], um.module, ("plain", "encrypted", "legacy")))
            populate(paths["plain"], um.module, ("plain",))
            populate(paths["encrypted"], um.module, ("encrypted",))
    um.module = None
    return Databases(backend, paths["mixed"], paths["plain"], paths["encrypted"], records, um)


@pytest.fixture(
    scope="module",
    params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres), pytest.param("mysql", marks=pytest.mark.mysql)],
)
def dbs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Databases:
    """Graph-written databases on SQLite, PostgreSQL and MariaDB (one module-scoped set each)."""
    tmp = tmp_path_factory.mktemp(f"inspect-{request.param}")
    if request.param == "sqlite":
        return build_databases("sqlite", tmp)
    server = request.getfixturevalue(f"{request.param}_server")
    return build_databases(request.param, tmp, new_dsn=server.new_database)


def keyring_env() -> dict[str, str]:
    """Environment that makes ``load_keyring()`` return KEYRING (plus the legacy key)."""
    return {"SERDE_KIT_KEYRING": KEYRING.to_env_value(), "LANGGRAPH_AES_KEY": LEGACY_KEY.decode()}
