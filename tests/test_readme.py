"""Every snippet in README.md, run against the real savers.

A snippet is a fenced block right after ``<!-- snippet: NAME -->``. Python
snippets are the files in tests/typing/readme/ (``NAME`` is the path), which
scripts/typecheck.sh checks with mypy --strict and pyright; the README must hold
each file exactly. Each runs as a script in a fresh directory (so the state types
live in an importable ``my_graph`` module, as in a user's project), and the test
then looks at what the saver stored.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from collections.abc import Iterator
from typing import Any

import pytest

from serde_kit import EncodeError, EncryptedSerializer, Keyring, Serializer

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
SNIPPET_DIR = ROOT / "tests" / "typing" / "readme"
SNIPPET = re.compile(r"<!-- snippet: (?P<name>[^>]+?) -->\n```(?P<lang>\w+)\n(?P<code>.*?)^```$", re.S | re.M)
SNIPPETS = {m["name"]: (m["lang"], m["code"]) for m in SNIPPET.finditer(README)}
DOC_A = "Doc(title='a.txt', words=100)"
DOC_B = "Doc(title='b.txt', words=200)"


def _code(name: str) -> str:
    return SNIPPETS[name][1]


# --- the README and the typed files are the same text -----------------------------


def test_every_python_and_json_block_is_a_tested_snippet() -> None:
    blocks = re.findall(r"^```(python|json)$", README, flags=re.M)
    marked = [lang for lang, _ in SNIPPETS.values() if lang in ("python", "json")]
    assert len(blocks) == len(marked), "a ```python or ```json block in README.md has no snippet marker"


@pytest.mark.parametrize("path", sorted(p.name for p in SNIPPET_DIR.glob("*.py")))
def test_readme_holds_each_typed_snippet_file_exactly(path: str) -> None:
    name = f"tests/typing/readme/{path}"
    names = [m["name"] for m in SNIPPET.finditer(README)]
    assert names.count(name) == 1, f"{name} must appear once in README.md"
    assert SNIPPETS[name] == ("python", (SNIPPET_DIR / path).read_text(encoding="utf-8"))


def test_every_python_snippet_is_a_typed_file() -> None:
    for name, (lang, _) in SNIPPETS.items():
        if lang == "python":
            assert (ROOT / name).is_file(), name


def test_install_line_names_real_extras() -> None:
    (line,) = _code("install (extras checked against pyproject.toml)").splitlines()
    meta = importlib.metadata.metadata("serde-kit")
    match = re.fullmatch(r'pip install "\.\[([\w,]+)\]" +# in a clone; extras: (.*)', line)
    assert match, line
    extras, named = match[1].split(","), match[2].split(", ")
    assert meta["Name"] == "serde-kit"
    assert set(extras) <= set(named) <= set(meta.get_all("Provides-Extra") or [])


# --- running them -------------------------------------------------------------------


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory holding every snippet file, with a keyring in the environment."""
    for path in SNIPPET_DIR.glob("*.py"):
        shutil.copy(path, tmp_path / path.name)
    keyring = Keyring.generate("k1")
    monkeypatch.setenv("SERDE_KIT_KEYRING", keyring.to_env_value())
    monkeypatch.delenv("SERDE_KIT_KEYRING_FILE", raising=False)
    monkeypatch.delenv("LANGGRAPH_STRICT_MSGPACK", raising=False)
    return tmp_path


def run(app: Path, script: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, script], cwd=app, capture_output=True, text=True, timeout=120,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def sqlite_tags(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [t for (t,) in conn.execute("SELECT type FROM checkpoints UNION ALL SELECT type FROM writes")]
    finally:
        conn.close()


def sqlite_state(path: Path, serde: Any, *, bound: bool = False, thread: str = "t-1") -> list[Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from serde_kit.bound_saver import bind_rows

    sys_path = sys.path[:]
    sys.path.insert(0, str(path.parent))
    try:
        from my_graph import builder  # the app's modules, as the snippets import them

        conn = sqlite3.connect(path, check_same_thread=False)
        try:
            saver = SqliteSaver(conn, serde=serde)
            graph = builder.compile(checkpointer=bind_rows(saver) if bound else saver)
            return graph.get_state({"configurable": {"thread_id": thread}}).values["docs"]
        finally:
            conn.close()
    finally:
        sys.path[:] = sys_path
        for name in ("my_graph", "my_types"):
            sys.modules.pop(name, None)


def encrypted_serde(**kwargs: Any) -> EncryptedSerializer:
    return EncryptedSerializer(Serializer(allow=["my_types:Doc"]), **kwargs)


def test_sqlite_snippet(app: Path) -> None:
    out = run(app, "sqlite.py")
    assert f"[{DOC_A}, {DOC_B}]" in out
    tags = sqlite_tags(app / "checkpoints.db")
    assert "msgpack" in tags and set(tags) <= {"msgpack", "null"}  # plaintext rows


@pytest.mark.parametrize("script", ["encrypted.py", "async_sqlite.py", "from_conn_string.py"])
def test_encrypted_sqlite_snippets_store_only_ciphertext(app: Path, script: str) -> None:
    out = run(app, script)
    if script == "async_sqlite.py":
        assert f"[{DOC_A}, {DOC_B}]" in out
    tags = sqlite_tags(app / "checkpoints.db")
    # from_conn_string takes no serde=: setting saver.serde afterwards must be honoured.
    assert tags and all(t.endswith("+aesgcm") for t in tags), tags
    raw = (app / "checkpoints.db").read_bytes()
    assert b"a.txt" not in raw and b"b.txt" not in raw
    # Every encryption snippet binds rows: each blob has the v2 header naming its thread.
    assert [True] == list({blob[0] == 2 for blob in sqlite_blobs(app / "checkpoints.db")})
    assert [repr(d) for d in sqlite_state(app / "checkpoints.db", encrypted_serde(), bound=True)] == [DOC_A, DOC_B]


def sqlite_blobs(path: Path) -> list[bytes]:
    """Every stored encrypted blob (checkpoints and writes)."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT type, checkpoint FROM checkpoints UNION ALL SELECT type, value FROM writes")
        return [blob for tag, blob in rows if tag and tag.endswith("+aesgcm")]
    finally:
        conn.close()


def test_the_first_encryption_snippet_refuses_a_row_moved_to_another_thread(app: Path) -> None:
    """alice's checkpoint pasted onto mallory's thread is not decrypted for him (finding 7)."""
    from serde_kit.errors import RowBindingError

    run(app, "encrypted.py")
    db = app / "checkpoints.db"
    conn = sqlite3.connect(db)
    try:
        conn.execute(
            "INSERT INTO checkpoints SELECT 'mallory', checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
            "type, checkpoint, metadata FROM checkpoints WHERE thread_id = 't-1'"
        )
        conn.commit()
    finally:
        conn.close()
    with pytest.raises(RowBindingError):
        sqlite_state(db, encrypted_serde(), bound=True, thread="mallory")


def test_in_memory_snippet_uses_serde_kit(app: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import runpy

    monkeypatch.chdir(app)
    monkeypatch.syspath_prepend(str(app))
    try:
        scope = runpy.run_path(str(app / "in_memory.py"), run_name="__main__")
    finally:
        for name in ("my_graph", "my_types"):
            sys.modules.pop(name, None)
    saver = scope["graph"].checkpointer
    assert type(saver.serde) is Serializer
    stored = [tag for (tag, _blob) in (v[0] for v in saver.storage["t-1"][""].values())]
    assert stored and set(stored) == {"msgpack"}


def test_migrating_a_plaintext_database(app: Path) -> None:
    db = app / "checkpoints.db"
    run(app, "sqlite.py")
    assert set(sqlite_tags(db)) == {"msgpack", "null"}
    # Plaintext rows are refused without allow_plaintext ...
    from serde_kit import PlaintextRefusedError

    with pytest.raises(PlaintextRefusedError):
        sqlite_state(db, encrypted_serde())
    # ... and read with it, by the README's snippet.
    assert f"[{DOC_A}, {DOC_B}]" in run(app, "allow_plaintext.py")

    bin_dir = Path(sys.executable).parent
    commands = [line.split("#")[0].strip() for line in _code("migrate (bash)").splitlines()]
    assert [shlex.split(c)[:2] for c in commands] == [["serde-kit", "rotate"]] * 2 + [["serde-kit", "status"]]
    outputs = []
    for command in commands:
        argv = [str(bin_dir / "serde-kit"), *shlex.split(command)[1:]]
        done = subprocess.run(argv, cwd=app, capture_output=True, text=True, timeout=120, env=os.environ)
        assert done.returncode == 0, done.stdout + done.stderr
        outputs.append(done.stdout)
        if command.endswith("--encrypt-plaintext"):
            assert set(sqlite_tags(db)) == {"msgpack", "null"}, "the dry run changed rows"
    tags = sqlite_tags(db)
    assert tags and all(t.endswith("+aesgcm") for t in tags)
    assert "plaintext" in outputs[2], outputs[2]  # status reports the count (checked in the rows above)
    # Without allow_plaintext again, everything reads.
    assert [repr(d) for d in sqlite_state(db, encrypted_serde())] == [DOC_A, DOC_B]


def test_strict_msgpack_warning_is_what_the_readme_says(app: Path) -> None:
    code = (
        "from langgraph.checkpoint.memory import InMemorySaver\n"
        "from my_graph import builder\n"
        "from my_types import Doc\n"
        "from serde_kit import Serializer, EncodeError\n"
        "saver = InMemorySaver(serde=Serializer())\n"
        "graph = builder.compile(checkpointer=saver)\n"
        "try:\n"
        "    graph.invoke({'docs': [Doc('a.txt', 100)]}, {'configurable': {'thread_id': 't'}})\n"
        "except EncodeError as e:\n"
        "    print('refused:', e)\n"
    )
    (app / "strict.py").write_text(code)
    done = subprocess.run(
        [sys.executable, "strict.py"], cwd=app, capture_output=True, text=True, timeout=120,
        env={**os.environ, "LANGGRAPH_STRICT_MSGPACK": "true"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Serializer Serializer does not support msgpack allowlist. Strict msgpack deserialization will not be enforced." in done.stderr
    assert "Serializer Serializer does not support msgpack allowlist" in README.replace("\n", " ")
    # serde_kit stays strict on its own: Doc is not allowed, so writing it fails at once.
    assert "refused:" in done.stdout and "my_types.Doc" in done.stdout


# --- PostgreSQL, on the suite's private server --------------------------------------


def pg_tags(dsn: str) -> list[str]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT type FROM checkpoint_blobs WHERE type <> 'empty' UNION ALL SELECT type FROM checkpoint_writes"
        ).fetchall()
    return [t for (t,) in rows]


@pytest.mark.postgres
@pytest.mark.parametrize("script", ["postgres.py", "async_postgres.py"])
def test_postgres_snippets_store_only_ciphertext(app: Path, postgres_db: str, script: str) -> None:
    out = run(app, script, DATABASE_URL=postgres_db)
    assert f"[{DOC_A}, {DOC_B}]" in out
    tags = pg_tags(postgres_db)
    assert tags and all(t.endswith("+aesgcm") for t in tags), tags
    blobs = pg_blobs(postgres_db)
    assert blobs and all(blob[0] == 2 for blob in blobs)  # v2 header: bound to its thread
    assert pg_inline_values(postgres_db) == []  # seal_inline: no channel value left in the JSONB


def _load_as_the_server_does(path: Path) -> Any:
    """langgraph-api loads a graph file given by path as module ``__<stem>``."""
    name = f"__{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.postgres
def test_platform_checkpointer_follows_the_langgraph_json_contract(
    app: Path, postgres_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = json.loads(_code("langgraph.json"))
    file, _, attr = config["checkpointer"]["path"].partition(":")
    assert (app / file).is_file() and attr == "make_checkpointer"
    graph_file, _, graph_attr = config["graphs"]["agent"].partition(":")
    assert (app / graph_file).is_file()
    # The same graph file with the type defined inside it, as the README warns against.
    inline = (app / "my_graph.py").read_text().replace(
        "from my_types import Doc\n", (app / "my_types.py").read_text()
    )
    assert "class Doc" in inline and "my_types" not in inline.split("class Doc")[1]
    (app / "inline_graph.py").write_text(inline)

    monkeypatch.setenv("DATABASE_URL", postgres_db)
    monkeypatch.chdir(app)
    monkeypatch.syspath_prepend(str(app))
    loaded = ("__my_graph", "__inline_graph", "checkpointer", "my_graph", "my_types")
    try:
        checkpointer = _load_as_the_server_does(app / file)
        served = _load_as_the_server_does(app / graph_file)
        inline_graph = _load_as_the_server_does(app / "inline_graph.py")
        graph = getattr(served, graph_attr)
        assert graph.checkpointer is None  # the server supplies it

        async def serve() -> list[Any]:
            from langgraph.checkpoint.base import BaseCheckpointSaver

            from serde_kit.bound_saver import BoundSaver

            # What the server does: enter the context manager, run graphs with what it yields.
            async with getattr(checkpointer, attr)() as saver:
                assert isinstance(saver, BaseCheckpointSaver) and isinstance(saver, BoundSaver)
                assert type(saver.serde) is EncryptedSerializer
                run = {"configurable": {"thread_id": "t-1"}}
                with_saver = served.builder.compile(checkpointer=saver)
                await with_saver.ainvoke({"docs": [{"title": "a.txt", "words": 100}]}, run)
                # A type defined in the graph file is stored under the private module name: refused.
                refused = inline_graph.builder.compile(checkpointer=saver)
                with pytest.raises(EncodeError, match="__inline_graph.Doc"):
                    await refused.ainvoke({"docs": []}, {"configurable": {"thread_id": "t-2"}})
                return (await with_saver.aget_state(run)).values["docs"]

        docs = asyncio.run(serve())
    finally:
        for name in loaded:
            sys.modules.pop(name, None)
    # Input arrives as JSON (dicts); what the node added is a my_types.Doc.
    assert len(docs) == 2 and docs[0] == {"title": "a.txt", "words": 100}
    assert type(docs[1]).__module__ == "my_types" and repr(docs[1]) == DOC_B
    tags = pg_tags(postgres_db)
    assert tags and all(t.endswith("+aesgcm") for t in tags), tags
    blobs = pg_blobs(postgres_db)
    assert blobs and all(blob[0] == 2 for blob in blobs)  # v2 header: bound to its thread
    assert pg_inline_values(postgres_db) == []  # seal_inline: no channel value left in the JSONB


def pg_blobs(dsn: str) -> list[bytes]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT blob FROM checkpoint_blobs WHERE type <> 'empty' UNION ALL SELECT blob FROM checkpoint_writes"
        ).fetchall()
    return [bytes(b) for (b,) in rows]


def pg_inline_values(dsn: str) -> list[Any]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT v.value FROM checkpoints, jsonb_each(checkpoint -> 'channel_values') AS v").fetchall()
    return [v for (v,) in rows]


def test_limits_snippet_raises_the_limits_it_names() -> None:
    import runpy

    import ormsgpack

    from serde_kit import LimitExceededError

    serde = runpy.run_path(str(SNIPPET_DIR / "limits.py"))["serde"]
    assert serde.limits.max_row_bytes == 2 * 2**30
    pattern = "a" * 4000
    row = ormsgpack.packb(ormsgpack.Ext(1, ormsgpack.packb(["re", "compile", [pattern, 0]])))
    with pytest.raises(LimitExceededError, match="max_regex_length"):
        Serializer().loads(row)
    assert serde.loads(row).pattern == pattern


def write_unbound(app: Path, db: Path) -> None:
    """Encrypted rows as an earlier deployment wrote them: a saver without bind_rows."""
    script = (
        "import sqlite3\n"
        "from langgraph.checkpoint.sqlite import SqliteSaver\n"
        "from my_graph import builder\n"
        "from my_types import Doc\n"
        "from serde_kit import EncryptedSerializer, Serializer, load_keyring\n"
        "serde = EncryptedSerializer(Serializer(allow=[Doc]), load_keyring())\n"
        f"conn = sqlite3.connect({str(db)!r}, check_same_thread=False)\n"
        "graph = builder.compile(checkpointer=SqliteSaver(conn, serde=serde))\n"
        "graph.invoke({'docs': [Doc('a.txt', 100)]}, {'configurable': {'thread_id': 't-1'}})\n"
    )
    (app / "unbound_writer.py").write_text(script)
    run(app, "unbound_writer.py")


def test_the_documented_migration_binds_stored_rows_for_require_bound(app: Path) -> None:
    """Unbound rows (a saver without bind_rows) refuse under require_bound=True until the
    README's `rotate --bind` commands bound them; status then shows 0 unbound rows."""
    from serde_kit.errors import RowBindingError

    db = app / "checkpoints.db"
    write_unbound(app, db)
    assert sqlite_blobs(db) and not any(blob[0] == 2 for blob in sqlite_blobs(db))
    refused = subprocess.run([sys.executable, "bound.py"], cwd=app, capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and RowBindingError.__name__ in refused.stderr

    bin_dir = Path(sys.executable).parent
    commands = [line.split("#")[0].strip() for line in _code("bind (bash)").splitlines()]
    assert [shlex.split(c)[:2] for c in commands] == [["serde-kit", "rotate"]] * 2 + [["serde-kit", "status"]]
    outputs = []
    for command in commands:
        argv = [str(bin_dir / "serde-kit"), *shlex.split(command)[1:]]
        done = subprocess.run(argv, cwd=app, capture_output=True, text=True, timeout=120, env=os.environ)
        assert done.returncode == 0, done.stdout + done.stderr
        outputs.append(done.stdout)
    assert all(blob[0] == 2 for blob in sqlite_blobs(db))
    status = subprocess.run(
        [str(bin_dir / "serde-kit"), "status", "--sqlite", "checkpoints.db", "--json"],
        cwd=app, capture_output=True, text=True, timeout=120, env=os.environ,
    )  # fmt: skip
    total = json.loads(status.stdout)["total"]
    assert total["unbound"] == 0 and total["bound"] == len(sqlite_blobs(db)) > 0
    assert DOC_A in run(app, "bound.py")  # require_bound=True now reads the migrated thread


def test_the_quick_start_encrypts_and_binds_every_row(app: Path) -> None:
    out = run(app, "quickstart.py")
    assert f"[{DOC_A}, {DOC_B}]" in out
    conn = sqlite3.connect(app / "app.db")
    rows = conn.execute("SELECT type, checkpoint FROM checkpoints").fetchall()
    rows += conn.execute("SELECT type, value FROM writes").fetchall()
    conn.close()
    sealed = [blob for tag, blob in rows if tag and tag.endswith("+aesgcm")]
    assert sealed and all(blob[0] == 2 for blob in sealed)  # header v2: bound to its thread
    assert not [tag for tag, blob in rows if tag and blob and not tag.endswith("+aesgcm")]


def test_the_first_screen_holds_the_contents_the_quick_start_and_the_two_commands() -> None:
    first = "\n".join(README.splitlines()[:60])
    assert "**Contents:**" in first and "## Quick start" in first
    assert "<!-- snippet: tests/typing/readme/quickstart.py -->" in first
    assert first.count("```") >= 6  # the install line, the snippet and the two commands, whole
    assert "./scripts/demo.sh" in first and "./scripts/test.sh" in first
    code = SNIPPETS["tests/typing/readme/quickstart.py"][1]
    body = [line for line in code.splitlines() if line and not line.startswith(("import ", "from "))]
    assert len(body) <= 10, body  # the snippet is short: set-up and use, no more
    # Every link of the contents leads to a heading of this README.
    anchors = {
        re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        for heading in re.findall(r"^#+ (.+)$", README, flags=re.M)
    }
    links = re.findall(r"\]\(#([\w-]+)\)", first.split("## Quick start")[0])
    assert len(links) >= 10 and set(links) <= anchors, set(links) - anchors


def test_the_refusal_counter_counts_serde_kits_refusals(app: Path) -> None:
    (app / "count.py").write_text(
        "import runpy\n"
        "from my_types import Doc\n"
        "from serde_kit import BlockedTypeError, Serializer\n"
        "snippet = runpy.run_path('refusals.py')\n"
        "row = Serializer(allow=[Doc]).dumps_typed(Doc('a.txt', 1))\n"
        "for _ in range(2):\n"
        "    try:\n"
        "        Serializer().loads_typed(row)\n"
        "    except BlockedTypeError:\n"
        "        pass\n"
        "Serializer(allow=[Doc]).loads_typed(row)  # allowed: not counted\n"
        "print(dict(snippet['refused']))\n"
        "snippet['unregister']()\n"
    )
    assert run(app, "count.py").strip() == "{('msgpack_blocked', 'my_types', 'Doc'): 2}"


def test_bound_snippet_binds_every_encrypted_row(app: Path) -> None:
    out = run(app, "bound.py")
    assert f"[{DOC_A}, {DOC_B}]" in out
    conn = sqlite3.connect(app / "checkpoints.db")
    rows = conn.execute("SELECT type, checkpoint FROM checkpoints").fetchall()
    rows += conn.execute("SELECT type, value FROM writes").fetchall()
    conn.close()
    sealed = [blob for tag, blob in rows if tag and tag.endswith("+aesgcm")]
    assert sealed and all(blob[0] == 2 for blob in sealed)  # header v2: bound to its thread


# --- MySQL / MariaDB, on the suite's private server ----------------------------------

APP_USER, APP_PASSWORD = "readme_app", "pw-of-readme-app"


@pytest.fixture
def mysql_app(mysql_server: Any, mysql_db: str) -> Iterator[tuple[str, str]]:
    """A database owned by a user with a password: (DSN with the password, DSN without)."""
    database = mysql_db.rsplit("/", 1)[-1]
    with mysql_server.connect() as admin, admin.cursor() as cur:
        cur.execute(f"CREATE USER '{APP_USER}'@'127.0.0.1' IDENTIFIED BY %s", (APP_PASSWORD,))
        cur.execute(f"GRANT ALL ON `{database}`.* TO '{APP_USER}'@'127.0.0.1'")
    try:
        yield (
            mysql_server.dsn_for(database, user=APP_USER, password=APP_PASSWORD),
            mysql_server.dsn_for(database, user=APP_USER),
        )
    finally:
        with mysql_server.connect() as admin, admin.cursor() as cur:
            cur.execute(f"DROP USER '{APP_USER}'@'127.0.0.1'")


def mysql_tags(mysql_server: Any, dsn: str) -> list[str]:
    with mysql_server.connect(dsn.rsplit("/", 1)[-1]) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT type FROM checkpoint_blobs WHERE type <> 'empty' UNION ALL SELECT type FROM checkpoint_writes"
        )
        return [t for (t,) in cur.fetchall()]


@pytest.mark.mysql
def test_mysql_snippets_store_only_ciphertext_and_the_tools_read_it(
    app: Path, mysql_server: Any, mysql_app: tuple[str, str]
) -> None:
    with_password, without_password = mysql_app
    out = run(app, "mysql.py", DATABASE_URL=with_password)
    # Written through PyMySQLSaver, read back through from_conn_string with saver.serde set;
    # then a thread written and read through AIOMySQLSaver.
    assert f"[{DOC_A}, {DOC_B}]\n[Doc(title='c.txt', words=300), {DOC_B}]\n" in out, out
    tags = mysql_tags(mysql_server, with_password)
    assert tags and all(t.endswith("+aesgcm") for t in tags), tags

    # The tools, as the README writes them, with this server's DSN and password in the export.
    export, *commands = _code("mysql tools (bash)").splitlines()
    assert re.fullmatch(r"export MYSQL_PWD=\S+ MYSQL_URL=mysql://app@[\w.]+:3306/app", export), export
    assert [shlex.split(c.split("#")[0])[:2] for c in commands] == [["serde-kit", "status"], ["serde-kit", "verify"]]
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "MYSQL_PWD": APP_PASSWORD,
        "MYSQL_URL": without_password,
    }
    env.pop("SERDE_KIT_DB", None)
    outputs = []
    for command in commands:
        done = subprocess.run(["bash", "-c", command], cwd=app, capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, command + "\n" + done.stdout + done.stderr
        outputs.append(done.stdout)
    # status: every row under k1, none in plaintext (as the comment in the README says); verify: none failed.
    assert "key k1 (primary)  bound  unbound  plaintext" in outputs[0], outputs[0]
    # total rows, all under k1, all bound (the snippet uses bind_rows), none unbound, none plaintext
    assert re.search(r"^total +(\d+) +\1 +\1 +0 +0 ", outputs[0], flags=re.M), outputs[0]
    assert re.search(r"^(\d+) row\(s\): \1 decrypt, 0 plaintext, 0 empty, 0 failed$", outputs[1], flags=re.M), outputs[1]
    assert APP_PASSWORD not in "".join(outputs)
    # The password does come from MYSQL_PWD: without it the same command cannot connect (exit 3).
    env.pop("MYSQL_PWD")
    done = subprocess.run(["bash", "-c", commands[0]], cwd=app, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 3 and "Access denied" in done.stdout + done.stderr, done.stdout + done.stderr


@pytest.mark.mysql
def test_mysql_saver_without_autocommit_misses_what_others_write(mysql_db: str) -> None:
    """Why the README opens PyMySQLSaver's connection with autocommit=True."""
    import pymysql
    from langgraph.checkpoint.mysql.pymysql import PyMySQLSaver
    from langgraph.graph import START, StateGraph

    builder = StateGraph(dict)
    builder.add_node("step", lambda state: {"n": state["n"] + 1})
    builder.add_edge(START, "step")
    args = PyMySQLSaver.parse_conn_string(mysql_db)
    seen = {}
    for autocommit in (False, True):
        config: Any = {"configurable": {"thread_id": f"autocommit-{autocommit}"}}
        with pymysql.connect(**args, autocommit=autocommit) as mine, pymysql.connect(**args, autocommit=True) as other:
            saver = PyMySQLSaver(mine, serde=Serializer())
            saver.setup()
            graph = builder.compile(checkpointer=saver)
            graph.invoke({"n": 1}, config)
            assert graph.get_state(config).values == {"n": 2}  # a read: without autocommit, it opens a transaction
            builder.compile(checkpointer=PyMySQLSaver(other, serde=Serializer())).invoke({"n": 10}, config)
            seen[autocommit] = graph.get_state(config).values
    assert seen == {False: {"n": 2}, True: {"n": 11}}


# --- the two commands of the quick start ---------------------------------------------------


def test_the_demo_extra_installs_what_the_demo_runs() -> None:
    # ./scripts/demo.sh installs only the demo extra; the demo runs the serde-kit command
    # line, whose tqdm comes with the cli extra (a fresh clone's demo stopped at rotation).
    assert "scripts/bootstrap.sh demo" in (ROOT / "scripts" / "demo.sh").read_text()
    assert "serde-kit" in (ROOT / "examples" / "demo.py").read_text()
    (demo,) = [r for r in importlib.metadata.requires("serde-kit") or [] if 'extra == "demo"' in r]
    match = re.fullmatch(r'serde-kit\[([\w,]+)\]; extra == "demo"', demo)
    assert match, demo
    extras = set(match[1].split(","))
    assert {"cli", "langgraph", "sqlite", "numpy", "pydantic"} <= extras, demo


def test_the_cli_tour_runs_on_the_demo_database(tmp_path: Path) -> None:
    demo = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py")], cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert demo.returncode == 0, demo.stdout + demo.stderr
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SERDE_KIT_", "MYSQL_", "PG"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # .venv/bin, as the README says
    lines = [line.split("#")[0].strip() for line in _code("cli tour (bash, after ./scripts/demo.sh)").splitlines()]
    exports = [line for line in lines if line.startswith("export ")]
    commands = [line for line in lines if line.startswith("serde-kit ")]
    assert len(exports) == 2 and len(commands) + len(exports) == len([line for line in lines if line])
    for line in exports:
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = value
    outputs: dict[str, str] = {}
    for command in commands:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
        # --check exits 1 because the demo's own types are not in SERDE_KIT_ALLOW, as its comment says.
        assert done.returncode == (1 if command.endswith("--check") else 0), command + "\n" + done.stdout + done.stderr
        assert done.stdout.strip() and "error:" not in done.stderr, command + "\n" + done.stdout + done.stderr
        outputs[command] = done.stdout
    assert "primary k2" in outputs["serde-kit status"]
    assert "0 failed" in outputs["serde-kit verify"]
    assert "task-001" in outputs["serde-kit inspect"]
    assert "SERDE_KIT_ALLOW=demo:DocSummary,demo:Reviewer" in outputs["serde-kit allowlist scan --check"]
    env["SERDE_KIT_ALLOW"] = "demo:DocSummary,demo:Reviewer"
    done = subprocess.run(["bash", "-c", "serde-kit allowlist scan --check"], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_read_path_snippet_prints_what_its_comments_say(tmp_path: Path) -> None:
    """Each line of the compiled reader's snippet, run in a shell with this venv's
    python and serde-kit first on PATH, prints its comment (the version is this one)."""
    import serde_kit
    from tests.native.conftest import require_reader

    require_reader()  # the snippet shows an install that built the reader
    env = {k: v for k, v in os.environ.items() if not k.startswith("SERDE_KIT_")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    lines = [line for line in _code("read path (bash)").splitlines() if line.strip()]
    assert len(lines) == 3
    for line in lines:
        command, said = (part.strip() for part in line.split("#", 1))
        said = re.sub(r"^serde-kit \S+ ", f"serde-kit {serde_kit.__version__} ", said)
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == said, command


def test_the_fallback_line_in_the_readme_is_the_builds() -> None:
    from tests.native.test_fallback_build import FALLING_BACK, NOT_BUILT

    shown = re.search(r"^```text\n(serde_kit: the compiled reader was not built.*)\n```$", README, re.M)
    assert shown, "README.md lost the build's fallback line"
    assert shown[1].startswith(NOT_BUILT) and shown[1].endswith(FALLING_BACK)
