"""BoundSaver / bind_rows on InMemorySaver: what it wraps, refuses and passes through."""

from __future__ import annotations

import asyncio

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from serde_kit import EncryptedSerializer, Keyring, Serializer
from serde_kit.bound_saver import BoundSaver, bind_rows
from serde_kit.crypto.binding import RowIdentity, current_scope
from serde_kit.crypto.blob import blob_binding
from serde_kit.errors import ConfigError, RowBindingError

KEYRING = Keyring({"k1": bytes(range(32))}, primary="k1")


def _memory() -> InMemorySaver:
    return InMemorySaver(serde=EncryptedSerializer(Serializer(), KEYRING))


def _put(saver, thread: str, ns: str = "", *, value: object = None, source: str = "input") -> dict:
    cp = empty_checkpoint()
    cp["channel_values"] = {"secret": value if value is not None else f"{thread}-secret"}
    cp["channel_versions"] = {"secret": 1}
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ns}}
    return saver.put(config, cp, {"source": source, "step": 0}, {"secret": 1})


def test_bind_rows_needs_an_encrypted_serializer() -> None:
    with pytest.raises(ConfigError, match="EncryptedSerializer"):
        bind_rows(InMemorySaver(serde=Serializer()))
    with pytest.raises(TypeError):
        bind_rows(object())  # type: ignore[arg-type]


def test_rows_written_through_the_wrapper_are_bound() -> None:
    inner = _memory()
    saver = bind_rows(inner)
    assert isinstance(saver, BoundSaver) and saver.saver is inner
    _put(saver, "alice", "sub")
    stored_cp, stored_md, _ = next(iter(inner.storage["alice"]["sub"].values()))
    assert blob_binding(stored_cp[1]) == RowIdentity("alice", "sub")
    assert blob_binding(stored_md[1]) == RowIdentity("alice", "sub")
    blob = next(iter(inner.blobs.values()))
    assert blob_binding(blob[1]) == RowIdentity("alice", "sub")
    got = saver.get_tuple({"configurable": {"thread_id": "alice", "checkpoint_ns": "sub"}})
    assert got.checkpoint["channel_values"] == {"secret": "alice-secret"}
    assert current_scope() is None  # the scope never outlives the call


def test_the_unwrapped_saver_cannot_read_bound_rows() -> None:
    inner = _memory()
    _put(bind_rows(inner), "alice")
    with pytest.raises(RowBindingError, match="bind_rows"):
        inner.get_tuple({"configurable": {"thread_id": "alice"}})


def _move_thread(inner: InMemorySaver, src: str, dst: str) -> None:
    """What a storage-level attacker does to InMemorySaver: copy src's rows under dst."""
    for ns, cps in inner.storage[src].items():
        inner.storage[dst][ns].update(cps)
    for (thread, ns, ch, ver), blob in list(inner.blobs.items()):
        if thread == src:
            inner.blobs[(dst, ns, ch, ver)] = blob


def test_rows_moved_to_another_thread_are_refused_in_every_read() -> None:
    inner = _memory()
    saver = bind_rows(inner)
    _put(saver, "alice")
    _move_thread(inner, "alice", "mallory")
    with pytest.raises(RowBindingError):
        saver.get_tuple({"configurable": {"thread_id": "mallory"}})
    with pytest.raises(RowBindingError):
        list(saver.list({"configurable": {"thread_id": "mallory"}}))
    with pytest.raises(RowBindingError):
        list(saver.list(None))
    with pytest.raises(RowBindingError):
        asyncio.run(saver.aget_tuple({"configurable": {"thread_id": "mallory"}}))

    async def alist() -> list:
        return [t async for t in saver.alist(None)]

    with pytest.raises(RowBindingError):
        asyncio.run(alist())


def test_list_with_a_metadata_filter_across_threads_has_no_false_refusal() -> None:
    # InMemorySaver decodes the metadata of rows its filter then skips; those
    # identities must not count against the next row returned.
    saver = bind_rows(_memory())
    for i, thread in enumerate(["a", "b", "c", "d"]):
        _put(saver, thread, source="loop" if i % 2 else "input")
    got = [t.config["configurable"]["thread_id"] for t in saver.list(None, filter={"source": "loop"})]
    assert sorted(got) == ["b", "d"]

    async def alist() -> list:
        return [t async for t in saver.alist(None, filter={"source": "input"})]

    assert sorted(t.config["configurable"]["thread_id"] for t in asyncio.run(alist())) == ["a", "c"]


def test_namespaces_are_bound_too() -> None:
    inner = _memory()
    saver = bind_rows(inner)
    _put(saver, "alice", "")
    inner.storage["alice"]["child:1"].update(inner.storage["alice"][""])
    for (thread, ns, ch, ver), blob in list(inner.blobs.items()):
        inner.blobs[(thread, "child:1", ch, ver)] = blob
    with pytest.raises(RowBindingError):
        saver.get_tuple({"configurable": {"thread_id": "alice", "checkpoint_ns": "child:1"}})
    with pytest.raises(RowBindingError):
        list(saver.list({"configurable": {"thread_id": "alice"}}))


def test_a_body_from_another_checkpoint_of_the_thread_is_refused() -> None:
    inner = _memory()
    saver = bind_rows(inner)
    first = _put(saver, "alice", value="old")
    second = _put(saver, "alice", value="new")
    rows = inner.storage["alice"][""]
    old_id = first["configurable"]["checkpoint_id"]
    new_id = second["configurable"]["checkpoint_id"]
    rows[new_id] = (rows[old_id][0],) + tuple(rows[new_id][1:])
    with pytest.raises(RowBindingError, match="another checkpoint"):
        saver.get_tuple({"configurable": {"thread_id": "alice"}})


def test_extended_capabilities_follow_the_wrapped_saver() -> None:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    class Pruning(InMemorySaver):
        def prune(self, thread_ids, *, strategy="keep_latest"):
            self.pruned = (list(thread_ids), strategy)

    plain = bind_rows(_memory())
    assert type(plain).prune is BaseCheckpointSaver.prune
    assert type(plain).copy_thread is BaseCheckpointSaver.copy_thread
    p = Pruning(serde=EncryptedSerializer(Serializer(), KEYRING))
    wrapped = bind_rows(p)
    wrapped.prune(["t"], strategy="delete")
    assert p.pruned == (["t"], "delete")


def test_other_attributes_come_from_the_wrapped_saver() -> None:
    inner = _memory()
    saver = bind_rows(inner)
    assert saver.storage is inner.storage
    assert saver.get_next_version(None, None).startswith("0" * 31 + "1.")
    assert "InMemorySaver" in repr(saver)
    with pytest.raises(AttributeError):
        saver.no_such_attribute  # noqa: B018
