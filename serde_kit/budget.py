"""The work meter: one per decode call, charged by every step whose cost the row's
size alone does not bound.

Per-item limits (:class:`~serde_kit.limits.Limits`) bound one pattern, one
number, one argument; a row may hold many. So a decode call (a msgpack row
checked in full, a legacy json row, a tools render) opens one :class:`Meter`
whose allowance is proportional to the row's size, with a floor for small
rows, and the costly steps charge it in work units (about a nanosecond of CPU
each): regex compilation, incomplete partial JSON, big-number arithmetic, hash
collisions, prescan walking, json containers, class resolution. When the
allowance is spent the call ends in a :class:`~serde_kit.errors.LimitExceededError`
naming ``max_work_per_byte``.

Small rows take a path with no meter at all (most rows hold nothing costly): a
costly step that finds no open meter raises :class:`NeedsMeter`, and the caller
reads the row again with one. Honest rows pay nothing for the meter.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from .errors import LimitExceededError
from .limits import Limits

__all__ = ["Meter", "NeedsMeter", "charge", "metered"]


class NeedsMeter(BaseException):
    """Raised by a costly step outside a metered call; the small-row path catches it and
    reads the row again with a meter. A BaseException so that no ``except Exception``
    between the step and that path (msgspec's hooks, rebuild wrappers) turns it into
    another error."""


class Meter:
    """The work one decode call may still do."""

    __slots__ = ("left", "allowance", "limits")

    def __init__(self, size: int, limits: Limits) -> None:
        self.allowance = max(limits.min_work, limits.max_work_per_byte * size)
        self.left = self.allowance
        self.limits = limits

    def charge(self, units: int, what: str) -> None:
        """Spend ``units``; raise :class:`LimitExceededError` once the allowance is spent."""
        self.left -= units
        if self.left < 0:
            raise LimitExceededError(
                f"decoding this stored value needs more work than its size allows ({what}: the "
                f"row's allowance of {self.allowance} work units is spent; decode limit "
                f"max_work_per_byte={self.limits.max_work_per_byte}, min_work={self.limits.min_work}); "
                "if you trust this data, raise it: Serializer(limits=Limits(max_work_per_byte=...))",
                limit="max_work_per_byte",
            )


_state = threading.local()


def current() -> Meter | None:
    """The meter of the decode call running on this thread, if any."""
    meter: Meter | None = getattr(_state, "meter", None)
    return meter


def charge(units: int, what: str) -> None:
    """Charge the current call's meter; :class:`NeedsMeter` when none is open."""
    meter: Meter | None = getattr(_state, "meter", None)
    if meter is None:
        raise NeedsMeter
    meter.charge(units, what)


@contextmanager
def metered(size: int, limits: Limits) -> Iterator[Meter]:
    """Open a meter for a call decoding ``size`` stored bytes (nested calls share the
    outer call's meter: their rows are part of its row)."""
    outer: Meter | None = getattr(_state, "meter", None)
    if outer is not None:
        yield outer
        return
    meter = Meter(size, limits)
    _state.meter = meter
    try:
        yield meter
    finally:
        _state.meter = None


@contextmanager
def adopted(meter: Meter | None) -> Iterator[None]:
    """Make ``meter`` the current one on this thread (a helper thread running part of
    the call that opened it)."""
    outer: Meter | None = getattr(_state, "meter", None)
    _state.meter = meter
    try:
        yield
    finally:
        _state.meter = outer
