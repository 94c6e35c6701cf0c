"""Room on the C stack for deeply nested values.

Writing: ormsgpack allows about a thousand nested containers per call and
recurses on the C stack, and each nested ext payload starts a new call. A few
such levels fit any thread's stack; for deeper values the rest of the work
moves to a helper thread with a large stack.

Reading: msgspec counts every nested container and ext against the
interpreter's recursion limit (~300 bytes of C stack each). Under the default
limit that fits a 512 KiB thread stack (:data:`SMALLEST_THREAD_STACK`, the
smallest a caller's thread may have); when an application raises the limit
past :data:`SAFE_RECURSION_LIMIT`, each decode runs on a helper thread with a
stack sized for it. Either way hostile nesting ends in a typed error instead
of a crashed interpreter.

The helper thread is started once and reused (one per stack size in use; a
larger recursion limit replaces it with a larger one), so a deep value costs a
hand-over, not a thread start. When no helper can start (an address-space cap,
a thread limit) the call raises :class:`HelperThreadError`.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import SerdeError

T = TypeVar("T")

#: Nested ext levels handled on the caller's own stack (~0.6 MB each at worst).
LEVELS_ON_CALLER_STACK = 6
_HELPER_STACK_BYTES = 256 * 1024 * 1024
#: Recursion limits up to this decode on the caller's own stack (1 MiB or more).
SAFE_RECURSION_LIMIT = 2000
#: The smallest thread stack serde_kit decodes on under the default recursion limit.
SMALLEST_THREAD_STACK = 512 * 1024
_STACK_BYTES_PER_LEVEL = 2048
#: From Python 3.12, C code (msgspec, ormsgpack, the compiled reader) is held to a
#: recursion limit of the interpreter's own, not to ``sys.getrecursionlimit()``: about
#: 1,500 levels on 3.12 and 10,000 on 3.13 (msgspec reads 9,000 nested arrays there, and
#: overflows a 512 KiB thread stack doing so). Later versions are taken to be like 3.13.
_C_RECURSION_LIMIT = 0 if sys.version_info < (3, 12) else 1500 if sys.version_info < (3, 13) else 10_000
_lock = threading.Lock()


def recursion_limit() -> int:
    """How deep the decoding engines may recurse on this interpreter: the recursion limit,
    or the limit Python 3.12+ holds C code to when that is higher."""
    return max(sys.getrecursionlimit(), _C_RECURSION_LIMIT)


class HelperThreadError(SerdeError, RuntimeError):
    """No helper thread with a large enough stack could start for a deeply nested value."""


class _Helper:
    """A daemon thread with a big stack that runs submitted calls one at a time."""

    def __init__(self, stack_bytes: int) -> None:
        self.stack_bytes = stack_bytes
        self.jobs: queue.SimpleQueue[tuple[Callable[[], Any], list[Any], threading.Event] | None] = queue.SimpleQueue()
        previous = threading.stack_size(stack_bytes)
        try:
            self.thread = threading.Thread(target=self._run, name="serde_kit-deep-value", daemon=True)
            self.thread.start()
        finally:
            threading.stack_size(previous)

    def _run(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            call, box, done = job
            try:
                box.append((True, call()))
            except BaseException as exc:  # handed back to the caller's thread
                box.append((False, exc))
            finally:
                done.set()


_helper: _Helper | None = None


def _helper_for(stack_bytes: int) -> _Helper:
    global _helper
    with _lock:
        helper = _helper
        if helper is not None and helper.stack_bytes >= stack_bytes and helper.thread.is_alive():
            return helper
        try:
            fresh = _Helper(stack_bytes)
        except (RuntimeError, MemoryError, ValueError) as exc:
            raise HelperThreadError(
                f"a deeply nested value needs a helper thread with a {stack_bytes >> 20} MiB stack "
                f"(sized for sys.getrecursionlimit() = {sys.getrecursionlimit()}), and none could "
                f"start ({exc}); lower the recursion limit to {SAFE_RECURSION_LIMIT} or less, or allow "
                "the process more address space or threads"
            ) from None
        if helper is not None:
            helper.jobs.put(None)  # the smaller one ends after what it is running
        _helper = fresh
        return fresh


#: Bytes that can open a nesting level: map and array headers, ext headers.
_NOT_NESTING = bytes(
    b for b in range(256) if not (0x80 <= b <= 0x9F or 0xDC <= b <= 0xDF or 0xC7 <= b <= 0xC9 or 0xD4 <= b <= 0xD8)
)
#: Recursion levels one nesting byte may cost at most (an ext level: its envelope, the
#: hook's and the rebuilder's frames).
_LEVELS_PER_NESTING_BYTE = 4


def shallow(data: bytes) -> bool:
    """Whether ``data`` cannot nest deeper than the caller's own stack holds whatever the
    recursion limit: each level needs a header byte, so a row with few of them can be
    decoded in place (one translate pass instead of a hand-over to the helper thread)."""
    limit = SAFE_RECURSION_LIMIT // _LEVELS_PER_NESTING_BYTE
    return len(data) < limit or len(data.translate(None, _NOT_NESTING)) < limit


def on_big_stack(fn: Callable[..., T], *args: Any) -> T:
    """Run ``fn(*args)`` on the helper thread with a large stack and return its result."""
    helper = _helper
    if helper is not None and threading.current_thread() is helper.thread:
        return fn(*args)  # already there (a nested call)
    stack_bytes = max(_HELPER_STACK_BYTES, min(recursion_limit() * _STACK_BYTES_PER_LEVEL, 1 << 31))
    helper = _helper_for(stack_bytes)
    box: list[Any] = []
    done = threading.Event()
    helper.jobs.put((lambda: fn(*args), box, done))
    done.wait()
    ok, result = box[0]
    if not ok:
        raise result
    return result  # type: ignore[no-any-return]
