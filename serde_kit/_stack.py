"""Room on the C stack for deeply nested values.

ormsgpack allows about a thousand nested containers per call and recurses on
the C stack, and each nested ext payload starts a new call. A few such levels
fit any thread's stack; for deeper values the rest of the work moves to a
helper thread with a large stack, so hostile nesting ends in a typed error
instead of a crashed interpreter.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: Nested ext levels handled on the caller's own stack (~0.6 MB each at worst).
LEVELS_ON_CALLER_STACK = 6
_HELPER_STACK_BYTES = 256 * 1024 * 1024
_lock = threading.Lock()


def on_big_stack(fn: Callable[..., T], *args: Any) -> T:
    """Run ``fn(*args)`` in a helper thread with a large stack and return its result."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, fn(*args)))
        except BaseException as exc:  # handed back to the caller's thread below
            outcome.append((False, exc))

    with _lock:
        previous = threading.stack_size(_HELPER_STACK_BYTES)
        try:
            thread = threading.Thread(target=run, name="serde_kit-deep-value", daemon=True)
            thread.start()
        finally:
            threading.stack_size(previous)
    thread.join()
    ok, value = outcome[0]
    if ok:
        return value
    raise value
