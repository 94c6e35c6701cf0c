"""The questions ``inspect`` and ``audit`` ask of a saver's own tables, in generic SQL.

A mixin of :class:`~serde_kit.tools.db.base.Database`: it uses the database's
``mark``, ``quote``, ``layout`` and ``execute``; dialects override a query where
theirs is better (PostgreSQL's JSONB functions, SQLite's catalog).
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

from .model import Layout, driver_value

__all__ = ["SaverQueries"]

_BYTES = (bytes, bytearray, memoryview)


class SaverQueries:
    """Reads of the saver's checkpoints, blobs and writes (read-only)."""

    mark: ClassVar[str]
    layout: Layout

    @abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...

    @abstractmethod
    def quote(self, name: str) -> str: ...

    @abstractmethod
    def ref(self, table: str) -> str: ...

    @abstractmethod
    def _row_value(self, columns: Sequence[str], op: str, values: Sequence[Any]) -> tuple[str, list[Any]]: ...

    def _after(self, columns: Sequence[str], after: Sequence[Any] | None) -> tuple[str, list[Any]]:
        if after is None:
            return "", []
        sql, params = self._row_value(columns, ">", after)
        return f" WHERE {sql}", params

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of one read query written for this dialect (``mark``, ``quote``); for tests and tools here."""
        return [tuple(r) for r in self.execute(sql, list(params)).fetchall()]

    def list_threads(self, *, limit: int | None = None) -> list[tuple[Any, ...]]:
        """``(thread_id, ns, checkpoints, last checkpoint id, its metadata, its pending writes)`` per thread."""
        w, k = self.ref(self.layout.writes_table), self.ref("checkpoints")
        query = f"""
            SELECT c.thread_id, c.checkpoint_ns, c.n, c.last_id, k.metadata,
                   (SELECT count(*) FROM {w} w WHERE w.thread_id = c.thread_id
                      AND w.checkpoint_ns = c.checkpoint_ns AND w.checkpoint_id = c.last_id)
            FROM (SELECT thread_id, checkpoint_ns, count(*) AS n, max(checkpoint_id) AS last_id
                  FROM {k} GROUP BY thread_id, checkpoint_ns) c
            JOIN {k} k ON k.thread_id = c.thread_id AND k.checkpoint_ns = c.checkpoint_ns
                 AND k.checkpoint_id = c.last_id
            ORDER BY c.thread_id, c.checkpoint_ns"""
        params: list[Any] = []
        if limit is not None:
            query += f" LIMIT {self.mark}"
            params.append(int(limit))
        return self.query(query, params)

    def checkpoint_rows(
        self, thread_id: str, checkpoint_ns: str, *, checkpoint_id: str | None = None, limit: int | None = None
    ) -> list[tuple[Any, ...]]:
        """``(checkpoint_id, parent id, metadata, tag, checkpoint)`` newest first.

        ``tag`` is None and ``checkpoint`` a decoded JSON value when the layout
        keeps checkpoints as JSON.
        """
        tag = "type" if self.layout.checkpoint_serde else "NULL"
        m = self.mark
        query = (
            f"SELECT checkpoint_id, parent_checkpoint_id, metadata, {tag}, checkpoint FROM {self.ref('checkpoints')} "
            f"WHERE thread_id = {m} AND checkpoint_ns = {m}"
        )
        params: list[Any] = [thread_id, checkpoint_ns]
        if checkpoint_id is not None:
            query += f" AND checkpoint_id = {m}"
            params.append(checkpoint_id)
        query += " ORDER BY checkpoint_id DESC"
        if limit is not None:
            query += f" LIMIT {m}"
            params.append(int(limit))
        out = []
        for cid, parent, meta, tag_, checkpoint in self.query(query, params):
            if not self.layout.checkpoint_serde:
                checkpoint = self.json_value(checkpoint)
            else:
                checkpoint = driver_value(checkpoint)
            out.append((cid, parent, meta, tag_, checkpoint))
        return out

    def json_value(self, raw: Any) -> Any:
        """A JSON column's value as Python data (drivers return text, bytes or decoded values)."""
        if isinstance(raw, _BYTES):
            raw = bytes(raw).decode("utf-8", errors="replace")
        if isinstance(raw, str):
            try:
                return json.loads(raw)
            except ValueError:
                return {"$error": "stored JSON is not valid"}
        return raw

    def channel_blobs(
        self, thread_id: str, checkpoint_ns: str, versions: Mapping[str, Any]
    ) -> list[tuple[str, Any, Any]]:
        """``(channel, tag, blob)`` of the given channel versions (JSON layouts only)."""
        if not versions or self.layout.blobs_table is None:
            return []
        m = self.mark
        pairs = " OR ".join([f"(channel = {m} AND version = {m})"] * len(versions))
        params: list[Any] = [thread_id, checkpoint_ns]
        for k, v in versions.items():
            params += [str(k), str(v)]
        rows = self.query(
            f"SELECT channel, type, {self.quote('blob')} FROM {self.ref(self.layout.blobs_table)} "
            f"WHERE thread_id = {m} AND checkpoint_ns = {m} AND ({pairs})",
            params,
        )
        return [(c, t, driver_value(b)) for c, t, b in rows]

    @abstractmethod
    def has_column(self, table: str, column: str) -> bool:
        """Whether ``table`` has ``column`` (read from the catalog)."""

    def pending_writes(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> list[tuple[Any, ...]]:
        """``(task_id, task_path, idx, channel, tag, blob)`` of one checkpoint."""
        lay, m = self.layout, self.mark
        task_path = "task_path" if self.has_column(lay.writes_table, "task_path") else "''"
        rows = self.query(
            f"SELECT task_id, {task_path}, idx, channel, type, {self.quote(lay.writes_blob)} "
            f"FROM {self.ref(lay.writes_table)} "
            f"WHERE thread_id = {m} AND checkpoint_ns = {m} AND checkpoint_id = {m} "
            # by position: databases from before task_path existed select '' instead
            "ORDER BY 2, 1, 3",
            [thread_id, checkpoint_ns, checkpoint_id],
        )
        return [(*r[:5], driver_value(r[5])) for r in rows]

    def iter_metadata(self, batch_size: int = 500) -> Iterator[Any]:
        """Every checkpoint's metadata as Python data (``$error`` when unreadable), page by page."""
        pk = ("thread_id", "checkpoint_ns", "checkpoint_id")
        after: tuple[Any, ...] | None = None
        while True:
            where, params = self._after(pk, after)
            page = self.query(
                f"SELECT thread_id, checkpoint_ns, checkpoint_id, metadata FROM {self.ref('checkpoints')}{where} "
                f"ORDER BY thread_id, checkpoint_ns, checkpoint_id LIMIT {self.mark}",
                [*params, batch_size],
            )
            if not page:
                return
            for *_pk, meta in page:
                yield None if meta is None else self.json_value(meta)
            after = tuple(page[-1][:3])

    def inline_primitives(self, batch_size: int = 500) -> dict[str, dict[str, int]]:
        """Channel -> JSON type -> count of values kept inline in checkpoint JSON (JSON layouts)."""
        out: dict[str, dict[str, int]] = {}
        if self.layout.checkpoint_serde or self.layout.blobs_table is None:
            return out
        m = self.mark
        pk = ("thread_id", "checkpoint_ns", "checkpoint_id")
        after: tuple[Any, ...] | None = None
        blobs = self.ref(self.layout.blobs_table)
        while True:
            where, params = self._after(pk, after)
            page = self.query(
                f"SELECT thread_id, checkpoint_ns, checkpoint_id, checkpoint FROM {self.ref('checkpoints')}{where} "
                f"ORDER BY thread_id, checkpoint_ns, checkpoint_id LIMIT {m}",
                [*params, batch_size],
            )
            if not page:
                return out
            for thread_id, ns, _cid, raw in page:
                doc = self.json_value(raw)
                values = doc.get("channel_values") if isinstance(doc, dict) else None
                versions = doc.get("channel_versions") if isinstance(doc, dict) else None
                if not isinstance(values, dict):
                    continue
                versions = versions if isinstance(versions, dict) else {}
                for channel, value in values.items():
                    # The delta-snapshot marker (inline true with a blob at the same
                    # version) is not data: the blob holds the value.
                    version = versions.get(channel)
                    if value is True and version is not None and self.query(
                        f"SELECT 1 FROM {blobs} WHERE thread_id = {m} AND checkpoint_ns = {m} "
                        f"AND channel = {m} AND version = {m} LIMIT 1",
                        [thread_id, ns, channel, str(version)],
                    ):
                        continue
                    kind = _json_type(value)
                    out.setdefault(channel, {}).setdefault(kind, 0)
                    out[channel][kind] += 1
            after = tuple(page[-1][:3])


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
