"""Room on the C stack for deeply nested values.

Writing: ormsgpack allows about a thousand nested containers per call and
recurses on the C stack, and each nested ext payload starts a new call. A few
such levels fit any thread's stack; for deeper values the rest of the work
moves to a helper thread with a large stack.

Reading: msgspec counts every nested container and ext against the
interpreter's recursion limit (~300 bytes of C stack each). Under the default
limit that fits a 512 KiB thread stack; when an application raises the limit
past :data:`SAFE_RECURSION_LIMIT`, each decode runs on one helper thread with
a stack sized for it. Either way hostile nesting ends in a typed error instead
of a crashed interpreter.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: Nested ext levels handled on the caller's own stack (~0.6 MB each at worst).
LEVELS_ON_CALLER_STACK = 6
_HELPER_STACK_BYTES = 256 * 1024 * 1024
#: Recursion limits up to this decode on the caller's own stack (1 MiB or more).
SAFE_RECURSION_LIMIT = 2000
_STACK_BYTES_PER_LEVEL = 2048
_lock = threading.Lock()


def on_big_stack(fn: Callable[..., T], *args: Any) -> T:
    """Run ``fn(*args)`` in a helper thread with a large stack and return its result."""
    results: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(fn(*args))
        except BaseException as exc:  # handed back to the caller's thread below
            errors.append(exc)

    stack_bytes = max(_HELPER_STACK_BYTES, min(sys.getrecursionlimit() * _STACK_BYTES_PER_LEVEL, 1 << 31))
    with _lock:
        previous = threading.stack_size(stack_bytes)
        try:
            thread = threading.Thread(target=run, name="serde_kit-deep-value", daemon=True)
            thread.start()
        finally:
            threading.stack_size(previous)
    thread.join()
    if errors:
        raise errors[0]
    return results[0]
