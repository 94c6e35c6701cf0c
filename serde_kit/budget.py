"""The work meter: one per decode call, charged by every step whose cost the row's
size alone does not bound.

Per-item limits (:class:`~serde_kit.limits.Limits`) bound one pattern, one
number, one argument; a row may hold many. So a decode call (a msgpack row
checked in full, a legacy json row, a tools render) opens one :class:`Meter`
whose allowance is proportional to the row's size, with a floor for small
rows, and the costly steps charge it in work units (about a nanosecond of CPU
each): regex compilation, incomplete partial JSON, big-number arithmetic, hash
collisions, prescan walking, json containers, class resolution, time zone lookups. When the
allowance is spent the call ends in a :class:`~serde_kit.errors.LimitExceededError`
naming ``max_work_per_byte``.

Small rows take a path with no meter at all (most rows hold nothing costly): a
costly step that finds no open meter raises :class:`NeedsMeter`, and the caller
reads the row again with one. Honest rows pay nothing for the meter.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .errors import LimitExceededError
from .limits import Limits

__all__ = ["Meter", "NeedsMeter", "charge", "check_hash_collisions", "metered"]


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


class _State(threading.local):
    # A class default: a thread that never opened a meter finds None without a failed
    # lookup (the compiled reader's loads_typed reads it on every checked row).
    meter: Meter | None = None


_state = _State()


def local_state() -> threading.local:
    """The thread-local whose ``meter`` attribute is :func:`current` (the compiled reader
    reads it without a Python call)."""
    return _state


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


def open_meter(size: int, limits: Limits) -> bool:
    """Open a meter for a call decoding ``size`` stored bytes, unless one is open on this
    thread (a nested call: its row is part of the outer one's). True when it opened one,
    which the caller then closes with :func:`close_meter` (``metered`` in one frame less)."""
    if getattr(_state, "meter", None) is not None:
        return False
    _state.meter = Meter(size, limits)
    return True


def close_meter() -> None:
    _state.meter = None


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


# --- what each costly step is charged (work units: about a nanosecond each) ----

#: Steps estimated below this are not charged: their cost per stored byte is then
#: bounded anyway, and honest rows never need the meter for them.
FREE_UNITS = 50_000
#: langchain-core's partial JSON parser retries json.loads once per character it strips:
#: quadratic in the argument's length, with a call's overhead per character.
PARTIAL_JSON_UNITS_PER_CHAR_SQUARED = 5
PARTIAL_JSON_UNITS_PER_CHAR = 6_000


def partial_json_units(length: int) -> int:
    """Estimated cost of re-parsing an incomplete JSON argument of ``length`` characters."""
    return length * (length * PARTIAL_JSON_UNITS_PER_CHAR_SQUARED + PARTIAL_JSON_UNITS_PER_CHAR)
#: Fraction() reduces by gcd: quadratic in the bits of its parts.
GCD_BITS_SQUARED_PER_UNIT = 1000
#: Compiling a character class walks its code points (several times with IGNORECASE).
REGEX_UNITS_PER_CHAR = 500
REGEX_UNITS_PER_CLASS = 10_000
REGEX_UNITS_PER_CLASS_IGNORECASE = 150_000
REGEX_UNITS_PER_CODE_POINT = 2
REGEX_UNITS_PER_CODE_POINT_IGNORECASE = 5
#: A time zone key this process has not loaded: ZoneInfo searches its paths on disk and
#: the tzdata package (~40 us when found, ~65 us when not; it keeps only zones some
#: value still holds, so a key read again later is searched again). The error path of a
#: key not found (importlib's failure, the chained errors, lenient mode's placeholder)
#: costs ~250 us more.
ZONE_LOOKUP_UNITS = 100_000
ZONE_MISSING_UNITS = 300_000
#: The prescan's walk in Python, per stored byte.
WALK_UNITS_PER_BYTE = 16


def charge_over_free(units: int, what: str) -> None:
    """:func:`charge` a step estimated at ``units``, unless it is cheap enough to be free."""
    if units > FREE_UNITS:
        charge(units, what)


def regex_units(pattern: str | bytes, flags: int) -> int:
    """Estimated cost of ``re.compile(pattern, flags)``: its length, its character
    classes, and the code points they span (parsed, not compiled)."""
    import re

    ignorecase = bool(flags & re.IGNORECASE)
    per_class = REGEX_UNITS_PER_CLASS_IGNORECASE if ignorecase else REGEX_UNITS_PER_CLASS
    per_point = REGEX_UNITS_PER_CODE_POINT_IGNORECASE if ignorecase else REGEX_UNITS_PER_CODE_POINT
    units = REGEX_UNITS_PER_CHAR * len(pattern)
    try:
        from re import _parser  # type: ignore[attr-defined]  # the stdlib's own pattern parser

        tree = _parser.parse(pattern, flags & ~re.DEBUG)
    except Exception:
        # Unparsable (re.compile will say why) or another Python: every "[" a full class.
        brackets = pattern.count("[") if isinstance(pattern, str) else pattern.count(b"[")
        return units + brackets * (per_class + per_point * 0x110000)
    classes, points = _class_spans(tree)
    return units + classes * per_class + points * per_point


def _class_spans(tree: object) -> tuple[int, int]:
    """Character classes in a parsed pattern, and the code points their ranges span."""
    from re import _constants  # type: ignore[attr-defined]

    classes = points = 0
    pending: list[object] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, (list, tuple)) or type(node).__name__ == "SubPattern":
            items = list(node)  # type: ignore[call-overload]
            if len(items) == 2 and items[0] is _constants.IN and isinstance(items[1], list):
                classes += 1
                for op, av in items[1]:
                    if op is _constants.RANGE:
                        points += av[1] - av[0] + 1
                    else:  # a literal, or a category (\w, \d: compiled as one test)
                        points += 1
                continue
            pending.extend(items)
    return classes, points


def check_hash_collisions(items: Any, limits: Limits, what: str) -> None:
    """Raise :class:`LimitExceededError` when too many ``items`` share one hash value
    (:attr:`Limits.max_hash_collisions`): building a set or dict of them would be quadratic.

    Strings are skipped: their hash is keyed per process, so stored data cannot
    aim at it. Unhashable items raise ``TypeError``, as building the set would.
    """
    allowed = limits.max_hash_collisions
    if len(items) <= allowed:
        return
    hashes = [hash(item) for item in items if type(item) is not str]
    if len(hashes) <= allowed:
        return
    worst = collections.Counter(hashes).most_common(1)[0][1]
    if worst > allowed:
        raise limits.refuse("max_hash_collisions", f"{what} sharing one hash value", worst)
