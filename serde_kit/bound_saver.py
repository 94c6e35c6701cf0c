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
``checkpoints`` JSONB go through the encrypted serializer instead.  The JSONB
itself stays plaintext and editable, so each checkpoint written this way also
carries a sealed, bound *manifest* (one more blob, in the pseudo channel
:data:`MANIFEST_CHANNEL`): its checkpoint id, every channel's version, which
channels hold a value, and the primitive values.  On read the manifest must be
one the serializer decrypted in this call (not a JSONB value), must name this
checkpoint, and the channel versions and values must match it: a plaintext value
put in the JSONB, a channel pointed at a version without its blob, or a blob
row deleted is refused (:class:`~serde_kit.errors.RowBindingError`).  DeltaChannel
history is then read by LangGraph's ancestor walk through the checked
``get_tuple`` (PostgresSaver's fast path reads the JSONB unchecked).  With
``require_bound=True`` a checkpoint without a manifest is refused too (older
checkpoints: see SECURITY.md).  The manifest channel is removed from what the
wrapper returns.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)

from serde_kit.crypto.binding import SCOPE, BindingScope, RowIdentity
from serde_kit.crypto.encrypted import EncryptedSerializer, SealedValue
from serde_kit.errors import ConfigError, RowBindingError

__all__ = ["MANIFEST_CHANNEL", "BoundSaver", "bind_rows"]

_PRIMITIVES = (str, int, float, bool)

#: The pseudo channel holding a sealed checkpoint's manifest (``seal_inline``).
MANIFEST_CHANNEL = "__serde_kit_manifest__"
_MANIFEST_MARK = "serde_kit.manifest/1"

#: The wrapped saver's channel-version type (LangGraph's ``V``: int, float or str).
V = TypeVar("V", int, float, str)


def _scope(
    config: RunnableConfig | None, require_bound: bool, *, partial: bool = False, record: bool = False
) -> BindingScope:
    configurable = (config or {}).get("configurable") or {}
    thread_id = configurable.get("thread_id")
    ns = configurable.get("checkpoint_ns")
    if not partial and ns is None:
        ns = ""
    return BindingScope(
        None if thread_id is None else str(thread_id), ns, require_bound=require_bound, record=record
    )


def _same_primitive(a: Any, b: Any) -> bool:
    return type(a) is type(b) and (a == b or (a != a and b != b))  # NaN equals itself here


def _forged(what: str) -> RowBindingError:
    return RowBindingError(
        f"checkpoint JSONB does not match its sealed manifest ({what}): the row was edited "
        "in the database; refusing it"
    )


def _unsealed(tup: CheckpointTuple, scope: BindingScope, require_manifest: bool) -> CheckpointTuple:
    """``tup`` checked against its sealed manifest and without it (see the module docstring)."""
    checkpoint: Any = tup.checkpoint
    values = dict(checkpoint.get("channel_values") or {})
    versions = dict(checkpoint.get("channel_versions") or {})
    manifest = values.pop(MANIFEST_CHANNEL, None)
    had_version = versions.pop(MANIFEST_CHANNEL, None) is not None
    if manifest is None and not had_version:
        if require_manifest:
            raise RowBindingError(
                "checkpoint carries no sealed manifest: it was written without "
                "bind_rows(..., seal_inline=True), or its JSONB was edited; with require_bound=True "
                "only checkpoints written through the wrapper are read"
            )
        return tup
    decoded = scope.decoded
    if decoded is not None:  # seal_inline: verify, else only strip
        if manifest is None:
            raise _forged("the manifest's blob is missing")
        if decoded.get(id(manifest)) is not manifest:
            raise _forged("the manifest is not a sealed value")
        if not isinstance(manifest, dict) or manifest.get("mark") != _MANIFEST_MARK:
            raise _forged("the manifest is not one serde_kit wrote")
        row_id = tup.config.get("configurable", {}).get("checkpoint_id")
        if manifest.get("checkpoint_id") != row_id:
            raise _forged("the manifest belongs to another checkpoint")
        if manifest.get("versions") != versions:
            raise _forged("channel versions differ")
        held = manifest.get("values")
        primitives = manifest.get("primitives")
        if not isinstance(held, list) or not isinstance(primitives, dict):
            raise _forged("the manifest is not one serde_kit wrote")
        if not set(held) <= set(values):
            raise _forged("a channel lost its blob")
        for channel, value in values.items():
            if channel in primitives:
                if not _same_primitive(value, primitives[channel]):
                    raise _forged(f"channel {channel!r} holds another value")
            elif decoded.get(id(value)) is not value:
                raise _forged(f"channel {channel!r} holds a value that is not sealed")
            elif channel not in held and (value is None or isinstance(value, _PRIMITIVES)):
                # A blob a later checkpoint wrote at this (sealed) version -- a DeltaChannel
                # snapshot -- is an object; a bare primitive the JSONB could alias by identity is not.
                raise _forged(f"channel {channel!r} holds a value it did not hold")
    unsealed: Any = {**checkpoint, "channel_values": values, "channel_versions": versions}
    return tup._replace(checkpoint=unsealed)


def _same_checkpoint(tup: CheckpointTuple) -> CheckpointTuple:
    """Refuse a row whose checkpoint body names another checkpoint id.

    SqliteSaver and InMemorySaver keep the whole checkpoint (its ``id`` included)
    in one encrypted blob, so this catches one checkpoint's blob pasted into
    another row of the same thread.  (PostgresSaver keeps the body in plaintext
    JSONB: there the check holds by construction and proves nothing.)
    """
    row_id = tup.config.get("configurable", {}).get("checkpoint_id")
    checkpoint: Any = tup.checkpoint
    body_id = checkpoint.get("id") if isinstance(checkpoint, dict) else None
    if row_id is not None and body_id is not None and row_id != body_id:
        raise RowBindingError(
            "checkpoint row holds the body of another checkpoint (it was copied or moved "
            "there); refusing it"
        )
    return tup


class _Listing:
    """The checks ``list``/``alist`` make on each tuple, shared by both.

    Every bound blob decoded since the previous tuple must name this tuple's own
    thread and namespace.  When that does not hold, or once a tuple has been held
    back, tuples are held (a saver may keep a lock while it lists) and settled
    after the listing ends: a held tuple that failed the check is read again
    under its full identity, which refuses a moved blob.
    """

    def __init__(self, scope: BindingScope, require_manifest: bool = False) -> None:
        self.scope = scope
        self.require_manifest = require_manifest
        #: ``(tuple, passed the check)``, in listing order
        self.held: list[tuple[CheckpointTuple, bool]] = []

    def take(self, tup: CheckpointTuple) -> CheckpointTuple | None:
        """``tup`` checked, to yield now; None when it is held for :attr:`held`."""
        ok = self._only_own(tup)
        if ok:
            tup = _unsealed(tup, self.scope, self.require_manifest)
        if self.scope.decoded is not None:
            # The saver decodes each tuple's blobs just before yielding it: what this
            # tuple's check needed is done, and a long listing keeps no history of it.
            self.scope.decoded.clear()
        if self.held or not ok:
            self.held.append((tup, ok))
            return None
        return _same_checkpoint(tup)

    def _only_own(self, tup: CheckpointTuple) -> bool:
        seen = self.scope.seen
        if not seen:
            return True
        conf = tup.config.get("configurable", {})
        own = RowIdentity(str(conf["thread_id"]), conf.get("checkpoint_ns", ""))
        ok = all(identity == own for identity in seen)
        seen.clear()
        return ok


def _is_postgres(saver: BaseCheckpointSaver[Any]) -> bool:
    try:
        from langgraph.checkpoint.postgres.base import BasePostgresSaver
    except ImportError:
        return False
    return isinstance(saver, BasePostgresSaver)


def _overrides(saver: BaseCheckpointSaver[Any], name: str) -> bool:
    return getattr(type(saver), name, None) is not getattr(BaseCheckpointSaver, name, None)


class BoundSaver(BaseCheckpointSaver[V], Generic[V]):
    """Wraps ``saver`` so each encrypted row is bound to its thread id and namespace.

    Use :func:`bind_rows` to build one.  Other attributes (``setup``, ``conn``...)
    are the wrapped saver's.  ``copy_thread`` is not offered: a raw copy of bound
    rows would not open on the target thread.
    """

    def __init__(
        self,
        saver: BaseCheckpointSaver[V],
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
            if type(saver).__module__.startswith("langgraph.checkpoint.mysql"):
                raise ConfigError(
                    f"seal_inline is implemented for PostgreSQL savers only: {type(saver).__name__} keeps "
                    "None/str/int/float/bool channel values inline in plaintext JSON; bind_rows(saver) "
                    "without it still binds every encrypted row"
                )
            raise ConfigError(
                f"seal_inline is for PostgreSQL savers (they keep primitive channel values inline); "
                f"{type(saver).__name__} already passes every channel value through serde"
            )
        super().__init__(serde=saver.serde)
        self._saver: BaseCheckpointSaver[V] = saver
        self._seal_inline = bool(seal_inline)
        self._require_bound = bool(require_bound)
        #: every checkpoint read must carry a sealed manifest
        self._requires_manifest = self._seal_inline and self._require_bound

    @property
    def saver(self) -> BaseCheckpointSaver[V]:
        """The wrapped saver."""
        return self._saver

    @property
    def config_specs(self) -> list[Any]:
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

    @contextmanager
    def _bound(self, scope: BindingScope | RunnableConfig | None) -> Iterator[None]:
        """The binding scope of one saver call (a config's full identity, or ``scope``)."""
        if not isinstance(scope, BindingScope):
            scope = _scope(scope, self._require_bound)
        token = SCOPE.set(scope)
        try:
            yield
        finally:
            SCOPE.reset(token)

    def _read_scope(self, config: RunnableConfig | None, *, partial: bool = False) -> BindingScope:
        """The scope of a read; with ``seal_inline`` it records what it decodes for :func:`_unsealed`."""
        return _scope(config, self._require_bound, partial=partial, record=self._seal_inline)

    def _sealed(self, checkpoint: Checkpoint, new_versions: ChannelVersions) -> tuple[Checkpoint, ChannelVersions]:
        """Wrap inline primitives so PostgresSaver stores them as encrypted blobs, and add the
        checkpoint's sealed manifest (``seal_inline``)."""
        if not self._seal_inline:
            return checkpoint, new_versions
        values = checkpoint["channel_values"]
        prims = [k for k, v in values.items() if v is None or isinstance(v, _PRIMITIVES)]
        copy = checkpoint.copy()
        copy["channel_values"] = {
            k: SealedValue(v) if k in prims else v for k, v in values.items()
        }
        channel_versions = dict(checkpoint.get("channel_versions", {}))
        manifest = {
            "mark": _MANIFEST_MARK,
            "checkpoint_id": checkpoint["id"],
            "versions": channel_versions,
            "values": sorted(values),
            "primitives": {k: values[k] for k in prims},
        }
        # A version of its own per checkpoint, sorting below LangGraph's ("0000...1.0.x").
        manifest_version = f"0.manifest.{checkpoint['id']}"
        copy["channel_values"][MANIFEST_CHANNEL] = SealedValue(manifest)
        copy["channel_versions"] = {**channel_versions, MANIFEST_CHANNEL: manifest_version}
        # A primitive whose channel did not change this step was stored inline by an
        # earlier checkpoint (possibly written before seal_inline): write its blob
        # now (the upsert does nothing when it exists) so the value is not lost.
        versions = dict(new_versions)
        for k in prims:
            if k not in versions and k in channel_versions:
                versions[k] = channel_versions[k]
        versions[MANIFEST_CHANNEL] = manifest_version
        return copy, versions

    # -- sync -------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        scope = self._read_scope(config)
        with self._bound(scope):
            tup = self._saver.get_tuple(config)
        return None if tup is None else _same_checkpoint(_unsealed(tup, scope, self._requires_manifest))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        listing = _Listing(self._read_scope(config, partial=True), self._requires_manifest)
        with self._bound(listing.scope):
            it = iter(self._saver.list(config, filter=filter, before=before, limit=limit))
        try:
            while True:
                # Set and reset within one step: the scope never stays set across a yield.
                with self._bound(listing.scope):
                    tup = next(it, None)
                if tup is None:
                    break
                checked = listing.take(tup)
                if checked is not None:
                    yield checked
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()
        for tup, ok in listing.held:
            settled = tup if ok else self.get_tuple(tup.config)
            if settled is not None:  # None: deleted in between
                yield _same_checkpoint(settled)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        checkpoint, new_versions = self._sealed(checkpoint, new_versions)
        with self._bound(config):
            return self._saver.put(config, checkpoint, metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        with self._bound(config):
            self._saver.put_writes(config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        self._saver.delete_thread(thread_id)

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        if self._seal_inline:
            # PostgresSaver's fast path reads each ancestor's seed straight from the JSONB,
            # past the manifest check; LangGraph's own walk reads every ancestor through
            # this wrapper's get_tuple, which checks it.
            return BaseCheckpointSaver.get_delta_channel_history(self, config=config, channels=channels)
        with self._bound(config):
            return self._saver.get_delta_channel_history(config=config, channels=channels)

    def get_next_version(self, current: V | None, channel: None) -> V:
        return self._saver.get_next_version(current, channel)

    # -- async ------------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        scope = self._read_scope(config)
        with self._bound(scope):
            tup = await self._saver.aget_tuple(config)
        return None if tup is None else _same_checkpoint(_unsealed(tup, scope, self._requires_manifest))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        listing = _Listing(self._read_scope(config, partial=True), self._requires_manifest)
        with self._bound(listing.scope):
            it = self._saver.alist(config, filter=filter, before=before, limit=limit).__aiter__()
        try:
            while True:
                with self._bound(listing.scope):
                    try:
                        tup = await it.__anext__()
                    except StopAsyncIteration:
                        break
                checked = listing.take(tup)
                if checked is not None:
                    yield checked
        finally:
            aclose = getattr(it, "aclose", None)
            if aclose is not None:
                await aclose()
        for tup, ok in listing.held:
            settled = tup if ok else await self.aget_tuple(tup.config)
            if settled is not None:  # None: deleted in between
                yield _same_checkpoint(settled)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        checkpoint, new_versions = self._sealed(checkpoint, new_versions)
        with self._bound(config):
            return await self._saver.aput(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        with self._bound(config):
            await self._saver.aput_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await self._saver.adelete_thread(thread_id)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        if self._seal_inline:  # every ancestor through the checked aget_tuple (see the sync method)
            return await BaseCheckpointSaver.aget_delta_channel_history(self, config=config, channels=channels)
        with self._bound(config):
            return await self._saver.aget_delta_channel_history(config=config, channels=channels)


class _PruningBoundSaver(BoundSaver[V]):
    """BoundSaver for savers that implement ``prune`` (no row is decoded: pass-through)."""

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._saver.prune(thread_ids, strategy=strategy)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._saver.aprune(thread_ids, strategy=strategy)


class _RunDeletingBoundSaver(BoundSaver[V]):
    """BoundSaver for savers that implement ``delete_for_runs`` (pass-through)."""

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._saver.delete_for_runs(run_ids)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._saver.adelete_for_runs(run_ids)


class _FullBoundSaver(_PruningBoundSaver[V], _RunDeletingBoundSaver[V]):
    """BoundSaver for savers that implement both ``prune`` and ``delete_for_runs``."""


def bind_rows(
    saver: BaseCheckpointSaver[V],
    *,
    seal_inline: bool = False,
    require_bound: bool = False,
) -> BoundSaver[V]:
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
    cls: type[BoundSaver[Any]]
    if prune and runs:
        cls = _FullBoundSaver
    elif prune:
        cls = _PruningBoundSaver
    elif runs:
        cls = _RunDeletingBoundSaver
    else:
        cls = BoundSaver
    return cls(saver, seal_inline=seal_inline, require_bound=require_bound)
