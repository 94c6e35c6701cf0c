"""Row binding: the row identity a saver call is working on, carried to the encryption layer.

LangGraph's ``SerializerProtocol`` tells a serializer nothing about where a value
is stored.  :class:`serde_kit.bound_saver.BoundSaver` fills that gap: around every
saver call it sets a :class:`BindingScope` in a :class:`~contextvars.ContextVar`,
and :class:`~serde_kit.crypto.EncryptedSerializer` reads it:

- on write, a blob sealed inside a scope names its :class:`RowIdentity` (thread id
  and checkpoint namespace) in its header, which the AAD authenticates;
- on read, a bound blob opens only inside a scope that matches its identity;
  anything else raises :class:`~serde_kit.errors.RowBindingError`.

ContextVars follow ``await`` and ``asyncio`` tasks, and are per thread, so
concurrent calls on different threads or tasks never see each other's scope.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NamedTuple

__all__ = ["BindingScope", "RowIdentity", "current_scope", "row_scope"]


class RowIdentity(NamedTuple):
    """Where a row lives: its thread id and checkpoint namespace (``""`` for the root graph)."""

    thread_id: str
    checkpoint_ns: str = ""


class BindingScope:
    """The identity a saver call may read and write.

    ``thread_id``/``checkpoint_ns`` set to None mean "not known for this call" (a
    ``list`` across threads or namespaces): a bound blob is then accepted for any
    value of that part, and its authenticated identity is appended to ``seen`` so
    the caller can check it against the row it was returned for.
    ``require_bound`` refuses unbound (older) rows.  ``record=True`` makes the
    serializer record every value it decodes in the scope in ``decoded``, so the
    caller can tell a value that came out of an authenticated blob from one the
    saver read from plaintext storage (an equal value is not enough: only the
    same object is).
    """

    __slots__ = ("checkpoint_ns", "decoded", "require_bound", "seen", "thread_id")

    def __init__(
        self,
        thread_id: str | None,
        checkpoint_ns: str | None,
        *,
        require_bound: bool = False,
        record: bool = False,
    ) -> None:
        self.thread_id = thread_id
        self.checkpoint_ns = checkpoint_ns
        self.require_bound = require_bound
        partial = thread_id is None or checkpoint_ns is None
        self.seen: list[RowIdentity] | None = [] if partial else None
        #: id -> value of what the serializer decoded (the value kept, so its id stays its own)
        self.decoded: dict[int, object] | None = {} if record else None

    @property
    def identity(self) -> RowIdentity | None:
        """The full identity new blobs are bound to, or None when the scope is partial."""
        if self.thread_id is None or self.checkpoint_ns is None:
            return None
        return RowIdentity(self.thread_id, self.checkpoint_ns)

    def admits(self, identity: RowIdentity) -> bool:
        """True when a blob bound to ``identity`` may be read in this scope."""
        return (self.thread_id is None or self.thread_id == identity.thread_id) and (
            self.checkpoint_ns is None or self.checkpoint_ns == identity.checkpoint_ns
        )

    def __repr__(self) -> str:
        return (
            f"BindingScope(thread_id={self.thread_id!r}, checkpoint_ns={self.checkpoint_ns!r}, "
            f"require_bound={self.require_bound})"
        )


#: The scope of the saver call in progress on this thread/task, or None outside one.
SCOPE: ContextVar[BindingScope | None] = ContextVar("serde_kit_binding_scope", default=None)


def current_scope() -> BindingScope | None:
    """The binding scope in force here, or None outside a bound saver call."""
    return SCOPE.get()


@contextmanager
def row_scope(
    thread_id: str | None,
    checkpoint_ns: str | None = "",
    *,
    require_bound: bool = False,
) -> Iterator[BindingScope]:
    """Bind the serializer calls made inside the ``with`` block to one row identity.

    For savers :class:`~serde_kit.bound_saver.BoundSaver` does not cover: wrap each
    call that reads or writes rows of one thread in ``with row_scope(thread_id, ns):``.
    """
    scope = BindingScope(
        None if thread_id is None else str(thread_id),
        checkpoint_ns,
        require_bound=require_bound,
    )
    token = SCOPE.set(scope)
    try:
        yield scope
    finally:
        SCOPE.reset(token)
