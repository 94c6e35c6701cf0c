"""Look into stored LangGraph checkpoints without running or importing any user code.

Library behind ``serde-kit inspect``: list threads, show one checkpoint (channel
values, pending writes, metadata, parent link, the nodes that run next) or a
thread's history, and decode a single blob. Values go through
:mod:`serde_kit.tools.render`, so ext types come back as tagged JSON and no
module named in the data is ever imported. Encrypted rows are decrypted when a
keyring is given and shown as ``encrypted (key id k1)`` when not.

Everything here only reads: the database is opened read-only by the caller
(:func:`serde_kit.tools.db.open_database`), and every query is the database
object's own (layouts of langgraph-checkpoint-sqlite 3.x, -postgres 3.x and
-mysql 3.x).  A row that cannot be read renders as an ``$error`` cell and is
counted in ``CheckpointView.unreadable``; the rest is still shown.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from serde_kit.crypto import Keyring, load_keyring
from serde_kit.crypto.cipher import RowCipher
from serde_kit.crypto.keyring import LEGACY_ENV_VAR, LEGACY_KEY_ID, keyring_configured
from serde_kit.crypto.rows import EMPTY_TAG, RowInfo, RowKind, classify_row
from serde_kit.errors import ConfigError, MalformedDataError, SerdeError
from serde_kit.tools.common import describe_failure
from serde_kit.tools.db import Database
from serde_kit.tools.render import render_typed

__all__ = [
    "CheckpointDiff",
    "CheckpointView",
    "RowDecoder",
    "ThreadSummary",
    "WriteView",
    "decode_blob",
    "derive_next",
    "diff_checkpoints",
    "encrypted_marker",
    "keyring_from_env",
    "list_threads",
    "show_checkpoint",
    "task_status",
    "thread_history",
]


# ---------------------------------------------------------------------------
# decoding one stored row
# ---------------------------------------------------------------------------


def keyring_from_env(environ: Mapping[str, str] | None = None) -> Keyring | None:
    """The application's keyring when one is configured, else None.

    A keyring is optional for inspection: without one, encrypted rows are shown
    by key id. A configured but broken keyring still raises
    :class:`~serde_kit.errors.KeyringError`.
    """
    env = os.environ if environ is None else environ
    if keyring_configured(env):
        return load_keyring(environ=env)
    if LEGACY_ENV_VAR not in env:
        return None
    # Only LANGGRAPH_AES_KEY: a keyring that can read stock "+aes" rows. Its
    # primary is a throwaway random key (the tools here never encrypt).
    legacy = env[LEGACY_ENV_VAR].encode()
    return Keyring({"inspect-none": os.urandom(32)}, primary="inspect-none", legacy_key=legacy)


class RowDecoder:
    """Turn one stored ``(tag, blob)`` into rendered, JSON-able data.

    With a keyring, ``+aesgcm`` and ``+aes`` rows are decrypted first; without
    one (or when the key is missing) they render as an ``$encrypted`` marker.
    Failures never raise: they render as ``{"$error": "Class: message"}`` so one
    bad row does not hide the rest.
    """

    def __init__(self, keyring: Keyring | None = None, *, preview: int = 8) -> None:
        self.keyring = keyring
        self.preview = preview
        self._cipher = None if keyring is None else RowCipher(keyring, allow_plaintext=True)

    def classify(self, tag: Any, blob: Any) -> RowInfo:
        """Header-only classification (works without a keyring); see :mod:`serde_kit.crypto.rows`."""
        info = classify_row(tag, blob)
        if info.kind is RowKind.LEGACY:
            return info._replace(key_id=LEGACY_KEY_ID)
        return info

    def decrypt(self, tag: Any, blob: Any) -> tuple[str | None, bytes | None]:
        """``(inner_tag, inner_bytes)``; raises CryptoError/DecodeError when that is impossible."""
        info = self.classify(tag, blob)
        if info.kind is RowKind.STRAY:
            raise MalformedDataError(f"stray row: {info.problem}")
        if info.kind in (RowKind.PLAINTEXT, RowKind.EMPTY):
            return tag, blob
        if self._cipher is None:
            raise _Encrypted(info)
        if info.kind is RowKind.UNKNOWN and info.problem:
            raise MalformedDataError(info.problem)
        return self._cipher.open(tag, blob)

    def decode(self, tag: str | None, blob: bytes | None) -> Any:
        """Rendered value of one row (see the class docstring)."""
        if tag == EMPTY_TAG:
            return {"$empty": True}
        try:
            inner_tag, data = self.decrypt(tag, blob)
            return render_typed((inner_tag, data), preview=self.preview)
        except _Encrypted as e:
            return encrypted_marker(e.info)
        except SerdeError as e:
            return {"$error": describe_failure(self.classify(tag, blob), e)}

    def raw(self, tag: str | None, blob: bytes | None) -> tuple[str | None, bytes | None] | None:
        """Inner ``(tag, bytes)`` when the row can be read, else None (no detail)."""
        try:
            return self.decrypt(tag, blob)
        except (_Encrypted, SerdeError):
            return None


class _Encrypted(Exception):
    def __init__(self, info: RowInfo) -> None:
        super().__init__(info.key_id)
        self.info = info


def encrypted_marker(info: RowInfo) -> dict[str, Any]:
    """The placeholder shown for a row we hold no key for."""
    marker: dict[str, Any] = {"cipher": "aes" if info.kind == "legacy" else info.kind}
    if info.key_id is not None:
        marker["key_id"] = info.key_id
    if info.inner_tag is not None:
        marker["inner_tag"] = info.inner_tag
    return {"$encrypted": marker}


def decode_blob(
    blob: bytes, /, *, tag: str = "msgpack", keyring: Keyring | None = None, preview: int = 8
) -> Any:
    """Render one blob (e.g. pasted from a database) with its type tag.

    Unlike :class:`RowDecoder`, errors raise: a wrong key or malformed bytes give
    a typed :class:`~serde_kit.errors.SerdeError`.
    """
    decoder = RowDecoder(keyring, preview=preview)
    try:
        inner_tag, data = decoder.decrypt(tag, blob)
    except _Encrypted as e:
        return encrypted_marker(e.info)
    return render_typed((inner_tag, data), preview=preview)


# ---------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------


@dataclass
class ThreadSummary:
    """One ``(thread_id, checkpoint_ns)`` and its newest checkpoint."""

    thread_id: str
    checkpoint_ns: str
    checkpoints: int
    last_checkpoint_id: str
    last_step: int | None
    last_source: str | None
    pending_writes: int


@dataclass
class WriteView:
    """One pending write of a checkpoint."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    tag: str | None
    value: Any


@dataclass
class CheckpointView:
    """A checkpoint as stored, rendered without importing user code.

    ``storage`` says where each channel value lives: ``"checkpoint"`` (inside
    the serialized checkpoint, SQLite), ``"inline"`` (plain JSONB, PostgreSQL
    primitives) or ``"blob <tag>"`` (PostgreSQL ``checkpoint_blobs``).
    ``next`` is derived from channel versions the way LangGraph decides which
    nodes run (None when the data needed is encrypted); ``tasks`` gives each
    one's status from the pending writes (done / interrupted / error / pending).
    """

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    metadata: Any
    checkpoint_row: dict[str, Any] = field(metadata={"json": "row"})
    checkpoint: Any
    channel_values: dict[str, Any]
    storage: dict[str, str]
    pending_writes: list[WriteView] = field(default_factory=list)
    next: list[str] | None = None
    tasks: dict[str, str] = field(default_factory=dict)
    unreadable: int = 0

    @property
    def step(self) -> int | None:
        """``metadata["step"]`` when present."""
        return self.metadata.get("step") if isinstance(self.metadata, dict) else None


# ---------------------------------------------------------------------------
# queries
# ---------------------------------------------------------------------------


def _metadata(raw: Any) -> Any:
    """Metadata as Python data: SQLite keeps JSON bytes, PostgreSQL JSONB, MySQL JSON text."""
    if raw is None:
        return {}
    if isinstance(raw, (bytes, bytearray, memoryview)):
        raw = bytes(raw).decode("utf-8", errors="replace")
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return {"$error": "metadata is not valid JSON"}
    return raw


def list_threads(db: Database, *, limit: int | None = None) -> list[ThreadSummary]:
    """Every thread (and checkpoint namespace) with its checkpoint count and last step."""
    out = []
    for thread_id, ns, n, last_id, meta, writes in db.list_threads(limit=limit):
        md = _metadata(meta)
        step = md.get("step") if isinstance(md, dict) else None
        source = md.get("source") if isinstance(md, dict) else None
        out.append(
            ThreadSummary(
                str(thread_id), ns, int(n), last_id,
                step if isinstance(step, int) else None,
                source if isinstance(source, str) else None,
                int(writes),
            )
        )  # fmt: skip
    return out


def show_checkpoint(
    db: Database,
    thread_id: str,
    *,
    checkpoint_id: str | None = None,
    checkpoint_ns: str = "",
    decoder: RowDecoder | None = None,
) -> CheckpointView:
    """One checkpoint of a thread (the newest unless ``checkpoint_id`` is given).

    Raises :class:`~serde_kit.errors.ConfigError` when the thread or checkpoint
    does not exist.
    """
    decoder = decoder or RowDecoder()
    rows = db.checkpoint_rows(thread_id, checkpoint_ns, checkpoint_id=checkpoint_id, limit=1)
    if not rows:
        what = f"checkpoint {checkpoint_id!r} of thread" if checkpoint_id else "thread"
        ns = f" in namespace {checkpoint_ns!r}" if checkpoint_ns else ""
        raise ConfigError(
            f"no {what} {thread_id!r}{ns} in {db.describe()}; "
            "run `serde-kit inspect` without --thread to list the threads"
        )
    return _build_view(db, thread_id, checkpoint_ns, rows[0], decoder)


def thread_history(
    db: Database,
    thread_id: str,
    *,
    checkpoint_ns: str = "",
    limit: int | None = None,
    decoder: RowDecoder | None = None,
) -> list[CheckpointView]:
    """A thread's checkpoints, newest first (parent links in each view)."""
    decoder = decoder or RowDecoder()
    rows = db.checkpoint_rows(thread_id, checkpoint_ns, limit=limit)
    if not rows:
        raise ConfigError(
            f"no thread {thread_id!r} in {db.describe()}; "
            "run `serde-kit inspect` without --thread to list the threads"
        )
    return [_build_view(db, thread_id, checkpoint_ns, r, decoder) for r in rows]


def _build_view(
    db: Database, thread_id: str, ns: str, row: tuple[Any, ...], decoder: RowDecoder
) -> CheckpointView:
    checkpoint_id, parent_id, meta, tag, raw_checkpoint = row
    storage: dict[str, str] = {}
    channel_values: dict[str, Any] = {}
    if db.layout.checkpoint_serde:
        blob = raw_checkpoint
        info = decoder.classify(tag, blob)
        checkpoint_row = _row_info(tag, info, blob)
        rendered = decoder.decode(tag, blob)
        if isinstance(rendered, dict) and isinstance(rendered.get("channel_values"), dict):
            channel_values = rendered["channel_values"]
            skeleton: Any = {k: v for k, v in rendered.items() if k != "channel_values"}
            storage = {k: "checkpoint" for k in channel_values}
        else:
            skeleton = rendered
    else:
        checkpoint_row = {"storage": "json (plaintext)"}
        if isinstance(raw_checkpoint, dict):
            skeleton = dict(raw_checkpoint)
            inline = skeleton.pop("channel_values", None)
        else:
            skeleton = {"$error": f"checkpoint JSON is {type(raw_checkpoint).__name__}, not an object"}
            inline = None
        if inline is not None and not isinstance(inline, dict):
            channel_values["channel_values"] = {"$error": f"channel_values is {type(inline).__name__}, not an object"}
            inline = None
        versions = skeleton.get("channel_versions") if isinstance(skeleton, dict) else None
        if versions is not None and not isinstance(versions, dict):
            skeleton["channel_versions"] = {"$error": f"channel_versions is {type(versions).__name__}, not an object"}
            versions = None
        for name, value in (inline or {}).items():
            channel_values[str(name)] = value
            storage[str(name)] = "inline"
        for channel, tag_, blob in db.channel_blobs(thread_id, ns, versions or {}):
            # A blob wins over an inline value (the delta-snapshot marker `true`).
            if tag_ == EMPTY_TAG:
                continue
            channel_values[channel] = decoder.decode(tag_, blob)
            storage[channel] = _storage_label(tag_, decoder.classify(tag_, blob))
    writes = _fetch_writes(db, thread_id, ns, checkpoint_id, decoder)
    view = CheckpointView(
        thread_id=thread_id,
        checkpoint_ns=ns,
        checkpoint_id=checkpoint_id,
        parent_checkpoint_id=parent_id,
        metadata=_metadata(meta),
        checkpoint_row=checkpoint_row,
        checkpoint=skeleton,
        channel_values=channel_values,
        storage=storage,
        pending_writes=writes,
    )
    try:
        view.next = derive_next(skeleton, channel_values)
        if view.next is not None:
            view.tasks = task_status(view.next, writes)
    except Exception:  # a shape derive_next does not know: show the rest without it
        view.next = None
    view.unreadable = count_errors([skeleton, channel_values, [w.value for w in writes]])
    return view


def count_errors(rendered: Any) -> int:
    """Number of ``$error`` cells in rendered data."""
    if isinstance(rendered, dict):
        return (1 if "$error" in rendered else 0) + sum(count_errors(v) for v in rendered.values())
    if isinstance(rendered, list):
        return sum(count_errors(v) for v in rendered)
    return 0


def _row_info(tag: str | None, info: RowInfo, blob: bytes | None) -> dict[str, Any]:
    out: dict[str, Any] = {"tag": tag, "kind": info.kind, "bytes": None if blob is None else len(blob)}
    if info.key_id is not None:
        out["key_id"] = info.key_id
    return out


def _storage_label(tag: str | None, info: RowInfo) -> str:
    label = f"blob {tag}"
    if info.kind == "aesgcm" and info.key_id:
        label += f" (key {info.key_id})"
    return label


def _fetch_writes(db: Database, thread_id: str, ns: str, checkpoint_id: str, decoder: RowDecoder) -> list[WriteView]:
    return [
        WriteView(str(task_id), path or "", int(idx), str(channel), tag, decoder.decode(tag, blob))
        for task_id, path, idx, channel, tag, blob in db.pending_writes(thread_id, ns, checkpoint_id)
    ]


@dataclass
class ListEdit:
    """How a list-valued channel (``messages``, say) changed: what went and what came.

    The first ``kept_head`` and the last ``kept_tail`` items are the same on both
    sides; ``removed`` were between them before, ``added`` are between them now
    (an appended message is one item in ``added``; a message replaced in place is
    one item in each).
    """

    kept_head: int
    kept_tail: int
    removed: list[Any]
    added: list[Any]


def list_edit(before: list[Any], after: list[Any]) -> ListEdit:
    """The :class:`ListEdit` from ``before`` to ``after``: shared head and tail, the rest in between."""
    head = 0
    limit = min(len(before), len(after))
    while head < limit and before[head] == after[head]:
        head += 1
    tail = 0
    while tail < limit - head and before[-1 - tail] == after[-1 - tail]:
        tail += 1
    return ListEdit(head, tail, before[head : len(before) - tail], after[head : len(after) - tail])


@dataclass
class CheckpointDiff:
    """What changed in a thread's channel values from one checkpoint to another.

    ``changed`` maps a channel to ``[before, after]`` (rendered values); for a
    channel that holds a list on both sides, ``list_edits`` says which items went
    and which came (so an appended message is shown, not hidden behind the items
    both sides share).
    """

    thread_id: str
    checkpoint_ns: str
    from_checkpoint_id: str | None
    to_checkpoint_id: str
    from_step: int | None
    to_step: int | None
    added: dict[str, Any] = field(default_factory=dict)
    removed: dict[str, Any] = field(default_factory=dict)
    changed: dict[str, list[Any]] = field(default_factory=dict)
    list_edits: dict[str, ListEdit] = field(default_factory=dict)
    unreadable: int = 0


def diff_checkpoints(
    db: Database,
    thread_id: str,
    *,
    from_id: str | None = None,
    to_id: str | None = None,
    checkpoint_ns: str = "",
    decoder: RowDecoder | None = None,
) -> CheckpointDiff:
    """Channels added, removed and changed between two checkpoints of a thread.

    By default ``to_id`` is the newest checkpoint and ``from_id`` its parent
    (the last step).  Raises :class:`~serde_kit.errors.ConfigError` when a
    checkpoint does not exist.
    """
    decoder = decoder or RowDecoder()
    after = show_checkpoint(db, thread_id, checkpoint_id=to_id, checkpoint_ns=checkpoint_ns, decoder=decoder)
    from_id = from_id if from_id is not None else after.parent_checkpoint_id
    before = (
        None
        if from_id is None
        else show_checkpoint(db, thread_id, checkpoint_id=from_id, checkpoint_ns=checkpoint_ns, decoder=decoder)
    )
    old = {} if before is None else before.channel_values
    new = after.channel_values
    diff = CheckpointDiff(
        thread_id=thread_id,
        checkpoint_ns=checkpoint_ns,
        from_checkpoint_id=from_id,
        to_checkpoint_id=after.checkpoint_id,
        from_step=None if before is None else before.step,
        to_step=after.step,
        unreadable=after.unreadable + (0 if before is None else before.unreadable),
    )
    for name in sorted(set(old) | set(new)):
        if name not in old:
            diff.added[name] = new[name]
        elif name not in new:
            diff.removed[name] = old[name]
        elif old[name] != new[name]:
            diff.changed[name] = [old[name], new[name]]
            if isinstance(old[name], list) and isinstance(new[name], list):
                diff.list_edits[name] = list_edit(old[name], new[name])
    return diff


# ---------------------------------------------------------------------------
# which node runs next
# ---------------------------------------------------------------------------

_START = "__start__"
_TASKS = "__pregel_tasks"
_NULL_TASK_ID = "00000000-0000-0000-0000-000000000000"
# writes that describe what happened to a task rather than what it produced
_CONTROL_CHANNELS = frozenset({"__error__", "__error_source_node__", "__interrupt__", "__resume__"})


def derive_next(checkpoint: Any, channel_values: Mapping[str, Any]) -> list[str] | None:
    """The nodes LangGraph would run from this checkpoint, from stored data alone.

    A node is due when one of its trigger channels (``branch:to:<node>``, a
    complete ``join:<a>+<b>:<node>`` barrier, or ``__start__``) holds a value
    whose version is newer than the version the node has seen; ``Send`` packets
    in ``__pregel_tasks`` add their node. This is ``StateSnapshot.next`` of
    ``graph.get_state()`` for a given checkpoint id (nodes that already wrote
    output are still listed; see :func:`task_status`). Returns None when the
    checkpoint is unreadable (encrypted without a key).
    """
    if not isinstance(checkpoint, dict) or not isinstance(checkpoint.get("channel_versions"), dict):
        return None
    versions: dict[str, Any] = checkpoint["channel_versions"]
    seen_all = checkpoint.get("versions_seen")
    seen_all = seen_all if isinstance(seen_all, dict) else {}
    due: list[str] = []

    def newer(node: str, channel: str) -> bool:
        current = versions.get(channel)
        if current is None:
            return False
        seen = seen_all.get(node)
        seen_v = seen.get(channel) if isinstance(seen, dict) else None
        if seen_v is None:
            return True
        try:
            return bool(current > seen_v)
        except TypeError:
            return str(current) > str(seen_v)

    for channel, value in channel_values.items():
        if channel == _START:
            if newer(_START, channel):
                due.append(_START)
        elif channel.startswith("branch:to:"):
            node = channel[len("branch:to:") :]
            if newer(node, channel):
                due.append(node)
        elif channel.startswith("join:"):
            sources, _, node = channel[len("join:") :].rpartition(":")
            if _barrier_complete(value, sources.split("+")) and newer(node, channel):
                due.append(node)
        elif channel == _TASKS:
            for packet in value if isinstance(value, list) else []:
                if isinstance(packet, dict) and packet.get("$type") == "langgraph.types.Send":
                    args = packet.get("args")
                    if isinstance(args, list) and args and isinstance(args[0], str):
                        due.append(args[0])
    # Sorted: storage order differs between savers, and LangGraph's own order
    # depends on the graph, which we do not have.
    return sorted(set(due))


def task_status(next_nodes: list[str], writes: list[WriteView]) -> dict[str, str]:
    """Status of each due node from the checkpoint's pending writes.

    ``"done"`` (it wrote output, LangGraph will not run it again), ``"interrupted"``,
    ``"error"``, or ``"pending"`` (not run yet). ``graph.get_state()`` on the
    newest checkpoint lists the nodes that are not done.
    """
    status = {node: "pending" for node in next_nodes}
    for w in writes:
        node = _node_of(w.task_path)
        if node not in status or w.task_id == _NULL_TASK_ID:
            continue
        if w.channel == "__interrupt__" and status[node] == "pending":
            status[node] = "interrupted"
        elif w.channel == "__error__" and status[node] != "done":
            status[node] = "error"
        elif w.channel not in _CONTROL_CHANNELS:
            status[node] = "done"
    return status


def _barrier_complete(value: Any, sources: list[str]) -> bool:
    seen = value.get("value") if isinstance(value, dict) else value
    return isinstance(seen, list) and set(sources) <= {s for s in seen if isinstance(s, str)}


def _node_of(task_path: str) -> str | None:
    """``"~__pregel_pull, left"`` -> ``"left"``; push/other paths -> None."""
    if task_path.startswith("~__pregel_pull, "):
        return task_path[len("~__pregel_pull, ") :]
    return None

