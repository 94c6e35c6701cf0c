"""Keeping key material out of reach: a redacted holder, and errors that carry no secret frames.

Error reporters (sentry-sdk by default, many loggers on request) record the
local variables of every frame in a traceback.  A keyring that fails to parse
would otherwise leave the whole keyring text in the parser's frames, and a
failed legacy decrypt the legacy key.  :func:`detached` strips an error of its
traceback and chained exceptions, so raising it again from a frame that holds
no secret records nothing more; :func:`scrubbed` does that for serde_kit's own
errors and, for any other exception (a KMS plug-in's ``ConnectionError``, a
``KeyboardInterrupt``), keeps the type and the traceback's lines but empties the
local variables of every finished frame in it; :class:`SecretBytes` keeps key
bytes out of ``repr``/``str``/``vars`` of the objects that hold them.
"""

from __future__ import annotations

import hmac
import traceback
from typing import NoReturn, TypeVar

from serde_kit.errors import SerdeError

__all__ = ["SecretBytes", "detached", "scrubbed"]

_E = TypeVar("_E", bound=BaseException)


class SecretBytes:
    """Key bytes whose ``repr``/``str`` are redacted and which refuse to pickle or copy.

    :meth:`reveal` returns the bytes; call it where the key is used, not earlier.
    """

    __slots__ = ("_value",)

    def __init__(self, value: bytes | bytearray) -> None:
        self._value = bytes(value)

    def reveal(self) -> bytes:
        """The key bytes."""
        return self._value

    def __len__(self) -> int:
        return len(self._value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SecretBytes):
            return NotImplemented
        return hmac.compare_digest(self._value, other._value)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SecretBytes(<{len(self._value)} bytes redacted>)"

    __str__ = __repr__

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        raise TypeError("SecretBytes holds key material and cannot be pickled")

    def __copy__(self) -> SecretBytes:
        return self  # immutable

    def __deepcopy__(self, memo: object) -> SecretBytes:
        return self


def detached(err: _E) -> _E:
    """``err`` without its traceback and chained exceptions (their frames may hold secrets).

    Use it in the ``except`` block, then ``raise`` the result after deleting the
    local variables that hold secrets::

        try:
            return parse(text)
        except KeyringError as e:
            err = detached(e)
        del text
        raise err
    """
    err.__traceback__ = None
    err.__context__ = None
    err.__cause__ = None
    err.__suppress_context__ = True
    return err


def scrubbed(err: _E) -> _E:
    """``err`` made safe to raise again from a frame that holds no secret.

    A :class:`~serde_kit.errors.SerdeError` is :func:`detached` (its message says
    all there is).  Any other exception keeps its type (callers may retry on
    ``ConnectionError``) and its traceback's file and line numbers, but every
    finished frame in its traceback, and in those of the exceptions chained to
    it, has its local variables cleared: a key-loading frame below the raise
    point (the keyring text, a decoded key) is no longer reachable.  Use it like
    :func:`detached`, in an ``except BaseException`` block.
    """
    if isinstance(err, SerdeError):
        return detached(err)
    seen: set[int] = set()
    pending: list[BaseException | None] = [err]
    while pending:
        exc = pending.pop()
        if exc is None or id(exc) in seen:
            continue
        seen.add(id(exc))
        # frame.clear() on each frame; the ones still running (the caller's) are skipped.
        traceback.clear_frames(exc.__traceback__)
        pending += [exc.__context__, exc.__cause__]
        pending += list(getattr(exc, "exceptions", ()))  # an ExceptionGroup's members
    return err
