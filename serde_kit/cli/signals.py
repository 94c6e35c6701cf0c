"""SIGTERM handled like Ctrl-C while a writing command runs: the open batch rolls back."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Terminated", "sigterm_interrupts", "terminated"]

_state = {"terminated": False}


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM arrives."""


def _handler(signum: int, frame: Any) -> None:
    _state["terminated"] = True
    raise Terminated()


def terminated() -> bool:
    """Whether the last :func:`sigterm_interrupts` block was ended by SIGTERM."""
    return _state["terminated"]


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (a KeyboardInterrupt)."""
    _state["terminated"] = False
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
