"""Errors that carry no secret in their traceback frames.

Error reporters (sentry-sdk by default, many loggers on request) record the
local variables of every frame in a traceback.  A keyring that fails to parse
would otherwise leave the keyring text in the parser's frames, and a database
that cannot be opened its DSN, password included, in the frames of the code
that parsed it and of the driver that tried to connect.

:func:`detached` strips an error of its traceback and chained exceptions, so
raising it again from a frame that holds no secret records nothing more;
:func:`scrubbed` does that for serde_kit's own errors and, for any other
exception (a plug-in's ``ConnectionError``, a ``KeyboardInterrupt``), keeps the
type and the traceback's lines but empties the local variables of every
finished frame in it; :func:`scrubs_frames` wraps a function whose arguments
hold a secret so that every exception leaves it that way.
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from serde_kit.errors import SerdeError

__all__ = ["detached", "scrubbed", "scrubs_frames"]

_E = TypeVar("_E", bound=BaseException)
_P = ParamSpec("_P")
_R = TypeVar("_R")


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
    it, has its local variables cleared: a frame below the raise point (the
    keyring text, a decoded key, a DSN) is no longer reachable.  Use it like
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


def scrubs_frames(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """``func`` whose every exception leaves :func:`scrubbed`, with no frame that holds its arguments.

    For functions given a secret (a DSN with its password): the frames below
    are cleared or dropped, and the wrapper forgets the arguments before it
    raises, so the traceback's frames hold neither the secret nor an object
    that holds it.
    """

    @functools.wraps(func)
    def without_secret_frames(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return func(*args, **kwargs)
        except BaseException as e:
            err = scrubbed(e)
        del args, kwargs
        raise err

    return without_secret_frames
