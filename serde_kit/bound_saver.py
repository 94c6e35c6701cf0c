"""BoundSaver: a checkpoint-saver wrapper that binds every encrypted row to its thread.

``bind_rows(saver)`` wraps any LangGraph ``BaseCheckpointSaver`` whose ``serde``
is a :class:`~serde_kit.crypto.EncryptedSerializer`.  Around each call it sets
the call's row identity (``thread_id`` and ``checkpoint_ns`` from the config) as
the binding scope (:mod:`serde_kit.crypto.binding`), so blobs written through it
name their thread in the authenticated header and a blob read back for another
thread, or outside the wrapper, raises :class:`~serde_kit.errors.RowBindingError`.

Which calls carry which identity (langgraph-checkpoint 4.3, sqlite 3.1, postgres 3.2):

- ``put``/``put_writes``/``get_tuple``/``get_delta_channel_history``: thread id and
  namespace from ``config["configurable"]`` (namespace defaults to ``""``).
- ``list``: whatever the filter config gives (possibly nothing).  Bound rows are
  then accepted for any thread/namespace the filter leaves open, and each tuple
  returned is checked afterwards: every bound blob decoded since the previous
  tuple must name this tuple's own thread and namespace.  When that does not
  hold (a saver also decodes rows it then skips, as InMemorySaver does for its
  metadata filter), the tuple is read again with ``get_tuple`` under its full
  identity, which refuses a moved blob (after the listing ends: a saver may hold
  a lock while it lists).
- checkpoint id, channel and task id are *not* bound: the savers decode many
  rows per call (all channels, all writes of all tasks, parents) without telling
  the serializer which row a blob came from, so no wrapper can know them.  One
  check stands in for the checkpoint id where the saver seals the whole
  checkpoint (SqliteSaver, InMemorySaver): the ``id`` inside the decrypted
  checkpoint must be the row's ``checkpoint_id``.

``seal_inline=True`` (PostgreSQL savers only) makes the ``None``/``str``/``int``/
``float``/``bool`` channel values that PostgresSaver keeps inline in the
``checkpoints`` JSONB go through the encrypted serializer instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from serde_kit.crypto.binding import SCOPE, BindingScope, RowIdentity
from serde_kit.crypto.encrypted import EncryptedSerializer, SealedValue
from serde_kit.errors import ConfigError, RowBindingError

__all__ = ["BoundSaver", "bind_rows"]

_PRIMITIVES = (str, int, float, bool)


def _scope(config: Any, require_bound: bool, *, partial: bool = False) -> BindingScope:
    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    ns = configurable.get("checkpoint_ns")
    if not partial and ns is None:
        ns = ""
    return BindingScope(
        None if thread_id is None else str(thread_id), ns, require_bound=require_bound
    )


def _only_own(scope: BindingScope, tup: Any) -> bool:
    """True when every bound blob decoded since the last tuple names ``tup``'s identity."""
    seen = scope.seen
    if not seen:
        return True
    conf = tup.config["configurable"]
    own = RowIdentity(str(conf["thread_id"]), conf.get("checkpoint_ns", ""))
    ok = all(identity == own for identity in seen)
    seen.clear()
    return ok


def _same_checkpoint(tup: Any) -> Any:
    """Refuse a row whose checkpoint body names another checkpoint id.

    SqliteSaver and InMemorySaver keep the whole checkpoint (its ``id`` included)
    in one encrypted blob, so this catches one checkpoint's blob pasted into
    another row of the same thread.  (PostgresSaver keeps the body in plaintext
    JSONB: there the check holds by construction and proves nothing.)
    """
    if tup is None:
        return None
    row_id = tup.config["configurable"].get("checkpoint_id")
    body_id = tup.checkpoint.get("id") if isinstance(tup.checkpoint, dict) else None
    if row_id is not None and body_id is not None and row_id != body_id:
        raise RowBindingError(
            "checkpoint row holds the body of another checkpoint (it was copied or moved "
            "there); refusing it"
        )
    return tup


def _is_postgres(saver: BaseCheckpointSaver) -> bool:
    try:
        from langgraph.checkpoint.postgres.base import BasePostgresSaver
    except ImportError:
        return False
    return isinstance(saver, BasePostgresSaver)


def _overrides(saver: BaseCheckpointSaver, name: str) -> bool:
    return getattr(type(saver), name, None) is not getattr(BaseCheckpointSaver, name, None)


class BoundSaver(BaseCheckpointSaver):
    """Wraps ``saver`` so each encrypted row is bound to its thread id and namespace.

    Use :func:`bind_rows` to build one.  Other attributes (``setup``, ``conn``...)
    are the wrapped saver's.  ``copy_thread`` is not offered: a raw copy of bound
    rows would not open on the target thread.
    """

    def __init__(
        self,
        saver: BaseCheckpointSaver,
        *,
        seal_inline: bool = False,
        require_bound: bool = False,
    ) -> None:
        if not isinstance(saver, BaseCheckpointSaver):
            raise TypeError(f"bind_rows needs a BaseCheckpointSaver, got {type(saver).__name__}")
        if not isinstance(saver.serde, EncryptedSerializer):
            raise ConfigError(
                f"row binding needs the saver's serde to be serde_kit's EncryptedSerializer, "
                f"got {type(saver.serde).__name__}: build the saver with "
                "serde=EncryptedSerializer(...)"
            )
        if seal_inline and not _is_postgres(saver):
            raise ConfigError(
                f"seal_inline is for PostgreSQL savers (they keep primitive channel values inline); "
                f"{type(saver).__name__} already passes every channel value through serde"
            )
        super().__init__(serde=saver.serde)
        self._saver = saver
        self._seal_inline = bool(seal_inline)
        self._require_bound = bool(require_bound)

    @property
    def saver(self) -> BaseCheckpointSaver:
        """The wrapped saver."""
        return self._saver

    @property
    def config_specs(self) -> list:
        return self._saver.config_specs

    def __getattr__(self, name: str) -> Any:
        # Only called for names not found on the wrapper: setup(), conn, lock, ...
        if name.startswith("__") or name == "_saver":
            raise AttributeError(name)
        return getattr(self._saver, name)

    def __repr__(self) -> str:
        return (
            f"BoundSaver({type(self._saver).__name__}, seal_inline={self._seal_inline}, "
            f"require_bound={self._require_bound})"
        )

    # -- helpers ----------------------------------------------------------------------

    def _sealed(self, checkpoint: Any, new_versions: Any) -> tuple[Any, Any]:
        """Wrap inline primitives so PostgresSaver stores them as encrypted blobs."""
        values = checkpoint["channel_values"]
        prims = [k for k, v in values.items() if v is None or isinstance(v, _PRIMITIVES)]
        if not prims:
            return checkpoint, new_versions
        copy = checkpoint.copy()
        copy["channel_values"] = {
            k: SealedValue(v) if k in prims else v for k, v in values.items()
        }
        # A primitive whose channel did not change this step was stored inline by an
        # earlier checkpoint (possibly written before seal_inline): write its blob
        # now (the upsert does nothing when it exists) so the value is not lost.
        versions = dict(new_versions)
        channel_versions = checkpoint.get("channel_versions", {})
        for k in prims:
            if k not in versions and k in channel_versions:
                versions[k] = channel_versions[k]
        return copy, versions

    # -- sync -------------------------------------------------------------------------

    def get_tuple(self, config: Any) -> Any:
        token = SCOPE.set(_scope(config, self._require_bound))
        try:
            tup = self._saver.get_tuple(config)
        finally:
            SCOPE.reset(token)
        return _same_checkpoint(tup)

    def list(
        self,
        config: Any,
        *,
        filter: dict[str, Any] | None = None,
        before: Any = None,
        limit: int | None = None,
    ) -> Iterator[Any]:
        scope = _scope(config, self._require_bound, partial=True)
        token = SCOPE.set(scope)
        try:
            it = iter(self._saver.list(config, filter=filter, before=before, limit=limit))
        finally:
            SCOPE.reset(token)
        held: list[tuple[Any, bool]] = []
        try:
            while True:
                token = SCOPE.set(scope)
                try:
                    tup = next(it, None)
                finally:
                    SCOPE.reset(token)
                if tup is None:
                    break
                ok = _only_own(scope, tup)
                if held or not ok:
                    # Re-reading needs the saver, which its own list() may hold locked
                    # (SqliteSaver does): finish the listing first, then settle.
                    held.append((tup, ok))
                    continue
                yield _same_checkpoint(tup)
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()
        for tup, ok in held:
            if not ok:
                tup = self.get_tuple(tup.config)
                if tup is None:  # deleted in between
                    continue
            yield _same_checkpoint(tup)

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        if self._seal_inline:
            checkpoint, new_versions = self._sealed(checkpoint, new_versions)
        token = SCOPE.set(_scope(config, self._require_bound))
        try:
            return self._saver.put(config, checkpoint, metadata, new_versions)
        finally:
            SCOPE.reset(token)

    def put_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        token = SCOPE.set(_scope(config, self._require_bound))
        try:
            self._saver.put_writes(config, writes, task_id, task_path)
        finally:
            SCOPE.reset(token)

    def delete_thread(self, thread_id: str) -> None:
        self._saver.delete_thread(thread_id)

    def get_delta_channel_history(self, *, config: Any, channels: Sequence[str]) -> Any:
        token = SCOPE.set(_scope(config, self._require_bound))
        try:
            return self._saver.get_delta_channel_history(config=config, channels=channels)
        finally:
            SCOPE.reset(token)

    def get_next_version(self, current: Any, channel: Any) -> Any:
        return self._saver.get_next_version(current, channel)

    # -- async ------------------------------------------------------------------------

    async def aget_tuple(self, config: Any) -> Any:
        token = SCOPE.set(_scope(config, self._require_bound))
        try:
            tup = await self._saver.aget_tuple(config)
        finally:
            SCOPE.reset(token)
        return _same_checkpoint(tup)

    async def alist(
        self,
        config: Any,
        *,
        filter: dict[str, Any] | None = None,
        before: Any = None,
        limit: int | None = None,
    ) -> AsyncIterator[Any]:
        scope = _scope(config, self._require_bound, partial=True)
        token = SCOPE.set(scope)
        try:
            it = self._saver.alist(config, filter=filter, before=before, limit=limit).__aiter__()
        finally:
            SCOPE.reset(token)
        held: list[tuple[Any, bool]] = []
        try:
            while True:
                # Set and reset within one step: the scope never stays set across a yield.
                token = SCOPE.set(scope)
                try:
                    try:
                        tup = await it.__anext__()
                    except StopAsyncIteration:
                        break
                finally:
                    SCOPE.reset(token)
                ok = _only_own(scope, tup)
                if held or not ok:
                    held.append((tup, ok))  # settled after the listing (see list())
                    continue
                yield _same_checkpoint(tup)
        finally:
            aclose = getattr(it, "aclose", None)
            if aclose is not None:
                await aclose()
        for tup, ok in held:
            if not ok:
                tup = await self.aget_tuple(tup.config)
                if tup is None:  # deleted in between
                    continue
            yield _same_checkpoint(tup)

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        if self._seal_inline:
            checkpoint, new_versions = self._sealed(checkpoint, new_versions)
        token = SCOPE.set(_scope(config, self._require_bound))
        try:
            return await self._saver.aput(config, checkpoint, metadata, new_versions)
        finally:
            SCOPE.reset(token)

    async def aput_writes(
        self, config: Any, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        token = SCOPE.set(_scope(config, self._require_bound))
        try:
            await self._saver.aput_writes(config, writes, task_id, task_path)
        finally:
            SCOPE.reset(token)

    async def adelete_thread(self, thread_id: str) -> None:
        await self._saver.adelete_thread(thread_id)

    async def aget_delta_channel_history(self, *, config: Any, channels: Sequence[str]) -> Any:
        token = SCOPE.set(_scope(config, self._require_bound))
        try:
            return await self._saver.aget_delta_channel_history(config=config, channels=channels)
        finally:
            SCOPE.reset(token)


class _PruningBoundSaver(BoundSaver):
    """BoundSaver for savers that implement ``prune`` (no row is decoded: pass-through)."""

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._saver.prune(thread_ids, strategy=strategy)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._saver.aprune(thread_ids, strategy=strategy)


class _RunDeletingBoundSaver(BoundSaver):
    """BoundSaver for savers that implement ``delete_for_runs`` (pass-through)."""

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._saver.delete_for_runs(run_ids)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._saver.adelete_for_runs(run_ids)


class _FullBoundSaver(_PruningBoundSaver, _RunDeletingBoundSaver):
    """BoundSaver for savers that implement both ``prune`` and ``delete_for_runs``."""


def bind_rows(
    saver: BaseCheckpointSaver,
    *,
    seal_inline: bool = False,
    require_bound: bool = False,
) -> BoundSaver:
    """Wrap ``saver`` so every encrypted row it writes is bound to its thread and namespace.

    ``saver.serde`` must be a :class:`~serde_kit.crypto.EncryptedSerializer`
    (:class:`~serde_kit.errors.ConfigError` otherwise).  ``seal_inline=True``
    (PostgreSQL savers) encrypts the primitive channel values they keep inline.
    ``require_bound=True`` refuses unbound rows (turn it on once every stored
    row has been bound).  Prune and delete-for-runs are passed through when the
    saver implements them; ``copy_thread`` is not offered.
    """
    prune = _overrides(saver, "aprune") or _overrides(saver, "prune")
    runs = _overrides(saver, "adelete_for_runs") or _overrides(saver, "delete_for_runs")
    cls: type[BoundSaver]
    if prune and runs:
        cls = _FullBoundSaver
    elif prune:
        cls = _PruningBoundSaver
    elif runs:
        cls = _RunDeletingBoundSaver
    else:
        cls = BoundSaver
    return cls(saver, seal_inline=seal_inline, require_bound=require_bound)
