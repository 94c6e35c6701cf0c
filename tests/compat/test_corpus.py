"""The compatibility corpus: rows and databases written by real langgraph-checkpoint
releases (tests/compat/data, made by scripts/make_compat_corpus.sh), read forever
with today's serde_kit and today's SqliteSaver.

Every stored row must read back exactly, or exactly as the release that wrote it
read it back itself (the stock format loses tuples, ZoneInfo keys, ...), or — only
for a type whose class has changed since, so neither can be built today — as
today's stock reader reads it. A refused row is a failure.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from tests.compat import corpus

#: Rows whose type changed in LangGraph since they were written: langgraph.types.Interrupt
#: lost ``when``/``resumable``/``ns`` (and gained ``id``) in langgraph 0.4 - 0.6.
CLASS_CHANGED = {("1.0.9", "interrupt"), ("1.0.12", "interrupt"), ("2.0.26", "interrupt")}
#: Every release line the issue names must be in the corpus.
REQUIRED_LINES = ("1.0.9", "1.0.12", "2.0.", "2.1.", "3.0.", "4.0.", "4.3.")

ROWS = [(release, row) for release in corpus.RELEASES for row in corpus.stored_rows(release)]


@pytest.fixture(autouse=True)
def _quiet_stock_logger() -> Iterator[None]:
    logger = logging.getLogger("langgraph.checkpoint.serde.jsonplus")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def test_every_release_line_is_in_the_corpus_with_its_pins():
    for line in REQUIRED_LINES:
        matches = [r for r in corpus.RELEASES if r == line or (line.endswith(".") and r.startswith(line))]
        assert matches, f"no corpus for langgraph-checkpoint {line}x"
    for release in corpus.RELEASES:
        freeze = (corpus.DATA / release / "pip-freeze.txt").read_text().splitlines()
        assert f"langgraph-checkpoint=={release}" in freeze
        assert json.loads((corpus.DATA / release / "rows.json").read_text())["release"] == release
        assert len(corpus.stored_rows(release)) >= 30


def test_the_corpus_holds_json_msgpack_encrypted_and_pickle_rows():
    tags = {row["tag"] for _, row in ROWS}
    assert {"json", "msgpack", "bytes", "msgpack+aes", "pickle"} <= tags
    assert {release for release, row in ROWS if row["tag"] == "json"} >= {"1.0.9"}


# Rows written from models that do not validate read as their release read them,
# with serde_kit's once-per-class warning (issue 19).
_UNVALIDATED = pytest.mark.filterwarnings("ignore:stored .* does not validate:serde_kit.SerdeWarning")


@_UNVALIDATED
@pytest.mark.parametrize(("release", "row"), ROWS, ids=[f"{r}-{row['name']}" for r, row in ROWS])
def test_row_reads_exactly_or_as_its_release_read_it(release, row):
    outcome = corpus.read_row(release, row)
    allowed = {"exact", "as_release_read"}
    if (release, corpus.case_name(row)) in CLASS_CHANGED:
        allowed.add("as_stock_reads_today")
    assert outcome.verdict in allowed, (
        f"{release} {row['name']}: serde_kit read {json.dumps(outcome.actual)[:600]}\n"
        f"written: {json.dumps(row['written'])[:600]}\nrelease read: {json.dumps(row.get('read'))[:600]}"
    )


# Rows where the release itself loses information and serde_kit can do no better;
# everything else it wrote must come back exactly. (Pinned so that a regression
# from "exact" to "as the release read it" fails here.)
_LOSSY_BY_FORMAT = {
    "tuple",  # every release stores a tuple as a msgpack array / JSON list
    "datetime_zoneinfo", "aes_datetime_zoneinfo",  # isoformat keeps the offset, not the zone key
    "exception",  # stock stores repr(exc) (so does serde_kit: LangGraph reads errors as strings)
    "str_subclass", "defaultdict",  # stored as the builtin value
    "surrogate",  # stock replaces lone surrogates ('?', or drops them in json rows)
    "bytes_nested",  # msgpack bin has no mutable flavour: a nested bytearray comes back as bytes
}
_LOSSY_IN_OLD_RELEASES = {
    "1.0.9": {"int_keys", "enums", "namedtuple"},  # JSON: str keys; enums/namedtuples written by value
    "1.0.12": {"enums", "namedtuple"},  # python-msgpack: enum members by value, namedtuples as arrays
}


@_UNVALIDATED
@pytest.mark.parametrize("release", corpus.RELEASES)
def test_only_rows_the_stock_format_loses_are_read_as_the_release_read_them(release):
    lossy = set()
    for row in corpus.stored_rows(release):
        if corpus.read_row(release, row).verdict == "as_release_read":
            lossy.add(row["name"])
    allowed = _LOSSY_BY_FORMAT | _LOSSY_IN_OLD_RELEASES.get(release, set())
    assert lossy <= allowed, sorted(lossy - allowed)


@pytest.mark.parametrize("release", corpus.RELEASES)
def test_database_history_reads_with_todays_sqlite_saver(release):
    old = corpus.graph_history(release)["threads"]
    ours = corpus.read_history(release, corpus.serializer("plain"))
    stock = corpus.read_history(release, JsonPlusSerializer(allowed_msgpack_modules=True))
    assert set(ours) == set(old) == {"t1", "t2"}
    for thread_id, entries in old.items():
        assert [e["checkpoint_id"] for e in ours[thread_id]] == [e["checkpoint_id"] for e in entries]
        assert len(entries) >= 2
        for before, now, theirs in zip(entries, ours[thread_id], stock[thread_id]):
            for part in ("channel_values", "pending_writes"):
                if now[part] == corpus.without_lc03_example(before[part]):
                    continue
                # Only where the stored value holds a class changed since (Interrupt: it
                # lost when/resumable/ns and gained id, then response_schema) may it read
                # as today's stock reader reads it, and nowhere else.
                where = f"{release} {thread_id} {before['checkpoint_id']} {part}"
                assert '"langgraph.types.Interrupt"' in json.dumps(before[part]), where
                assert now[part] == theirs[part], where


@pytest.mark.parametrize("release", corpus.RELEASES)
def test_database_failed_node_error_reads_as_the_string_langgraph_expects(release):
    history = corpus.read_history(release, corpus.serializer("plain"))["t2"]
    errors = [w for entry in history for w in entry["pending_writes"][1] if w[1][1] == "__error__"]
    assert errors and all(w[1][2] == "ValueError('boom')" for w in errors)


def test_encrypted_rows_need_the_key_they_were_written_with():
    from serde_kit import EncryptedSerializer, Keyring, Serializer, UnknownKeyError

    row = next(row for _, row in ROWS if row["kind"] == "aes")
    wrong = EncryptedSerializer(Serializer(), Keyring({"k": b"\x02" * 32}, primary="k"))
    with pytest.raises(UnknownKeyError):
        wrong.loads_typed((row["tag"], base64.b64decode(row["data"])))
