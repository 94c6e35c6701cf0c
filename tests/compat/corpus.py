"""Read the committed compatibility corpus with today's serde_kit (shared by the tests and the report).

A row is read **exactly** when what serde_kit returns describes the same as the
value the old release was given (``written``) or as the same case built with
today's packages; **as that release read it** when it describes the same as
the old release's own ``loads_typed`` result; **as stock reads it today** when
it is what today's langgraph-checkpoint reads (for types whose class changed
since, so neither of the others can be built); anything else is a failure.
"""

from __future__ import annotations

import base64
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serde_kit import EncryptedSerializer, Keyring, Serializer
from tests.compat import cases
from tests.compat.describe import describe

DATA = Path(__file__).with_name("data")
RELEASES = sorted(
    (p.name for p in DATA.iterdir() if (p / "rows.json").is_file()),
    key=lambda v: tuple(int(part) for part in v.split(".")),
)
_TODAY_KEY = b"\x11" * 32


def rows(release: str) -> list[dict[str, Any]]:
    return json.loads((DATA / release / "rows.json").read_text())["rows"]


def stored_rows(release: str) -> list[dict[str, Any]]:
    """The rows the release actually wrote (not those it could not write)."""
    return [row for row in rows(release) if "data" in row]


def serializer(kind: str) -> Any:
    inner = Serializer(allow=list(cases.USER_TYPES), pickle_fallback=kind == "pickle")
    if kind == "aes":
        keyring = Keyring({"today": _TODAY_KEY}, primary="today", legacy_key=cases.FIXED_KEY)
        return EncryptedSerializer(inner, keyring)
    return inner


def case_name(row: dict[str, Any]) -> str:
    return row["name"][4:] if row["kind"] == "aes" else row["name"]


def today_description(name: str) -> Any:
    """The case built with today's packages, or None where it cannot be built today."""
    build = cases.CASES.get(name) or cases.PICKLE_CASES.get(name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return describe(build())
    except Exception:  # the old release's type is gone or changed today
        return None


@dataclass
class Outcome:
    verdict: str  # "exact", "as_release_read", "as_stock_reads_today", "different"
    actual: Any


def read_row(release: str, row: dict[str, Any]) -> Outcome:
    """Read one stored row with today's serde_kit; raises what serde_kit raises."""
    data = (row["tag"], base64.b64decode(row["data"]))
    actual = describe(serializer(row["kind"]).loads_typed(data))
    if actual == row["written"] or actual == today_description(case_name(row)):
        return Outcome("exact", actual)
    if "read" in row and actual == row["read"]:
        return Outcome("as_release_read", actual)
    if actual == stock_today(row):
        # The class itself changed since (langgraph's Interrupt lost ``when``): what
        # today's LangGraph makes of the row is the best any reader can do.
        return Outcome("as_stock_reads_today", actual)
    return Outcome("different", actual)


def stock_today(row: dict[str, Any]) -> Any:
    """What today's stock reader (langgraph-checkpoint installed here) reads for the row."""
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer as StockEncrypted
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    plain = JsonPlusSerializer(allowed_msgpack_modules=True, pickle_fallback=row["kind"] == "pickle")
    reader: Any = plain
    if row["kind"] == "aes":
        reader = StockEncrypted.from_pycryptodome_aes(plain, key=cases.FIXED_KEY)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return describe(reader.loads_typed((row["tag"], base64.b64decode(row["data"]))))


# --- SqliteSaver databases ------------------------------------------------------

_LC03_MESSAGE_CLASSES = {
    f"langchain_core.messages.{module}.{name}"
    for module, names in (("human", ("HumanMessage", "HumanMessageChunk")), ("ai", ("AIMessage", "AIMessageChunk")))
    for name in names
}


def without_lc03_example(desc: Any) -> Any:
    """A description with langchain-core 0.3's ``example=False`` message field removed
    (the field no longer exists; a message written with it equals today's without it)."""
    if isinstance(desc, list):
        if len(desc) == 4 and desc[0] == "pydantic" and desc[1] in _LC03_MESSAGE_CLASSES:
            fields = [pair for pair in desc[2][1] if pair != ["example", False]]
            return ["pydantic", desc[1], ["dict", without_lc03_example(fields)], without_lc03_example(desc[3])]
        return [without_lc03_example(item) for item in desc]
    return desc


def graph_history(release: str) -> dict[str, Any]:
    return json.loads((DATA / release / "graph.json").read_text())


def read_history(release: str, serde: Any) -> dict[str, list[dict[str, Any]]]:
    """Every checkpoint of every thread in the release's database, read by today's
    SqliteSaver with ``serde``, described as generate.py described the release's own read."""
    import shutil
    import sqlite3
    import tempfile

    from langgraph.checkpoint.sqlite import SqliteSaver

    # A private copy: the committed database is never opened (SQLite would leave
    # -wal/-shm files beside it, and a checkout may be read-only).
    workdir = tempfile.mkdtemp(prefix="serde-kit-compat-")
    path = Path(workdir) / "graph.sqlite"
    shutil.copyfile(DATA / release / "graph.sqlite", path)
    conn = sqlite3.connect(str(path), check_same_thread=False)
    try:
        saver = SqliteSaver(conn, serde=serde)
        out: dict[str, list[dict[str, Any]]] = {}
        for thread_id in graph_history(release)["threads"]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tuples = list(saver.list({"configurable": {"thread_id": thread_id}}))
            out[thread_id] = [
                {
                    "checkpoint_id": tup.config["configurable"]["checkpoint_id"],
                    "channel_values": describe(tup.checkpoint.get("channel_values")),
                    "pending_writes": describe([list(w) for w in (tup.pending_writes or [])]),
                }
                for tup in tuples
            ]
        return out
    finally:
        conn.close()
        shutil.rmtree(workdir, ignore_errors=True)
