"""A structural pass over a stored row, for the costs the msgpack engine cannot bound.

The engine (msgspec) builds every value in C. Three things it does not bound
are checked here, before it runs, by walking the row's msgpack headers
(string and binary payloads are skipped by their length, runs of numbers in
one step, ext payloads walked as the msgpack they hold):

- the number of maps and arrays in the row (:attr:`Limits.max_containers`):
  an empty map costs ~75 times its stored size once decoded;
- hash floods in maps whose keys are arrays (decoded as tuples, whose hash is
  not keyed per process): one hash for every key makes building the dict
  quadratic;
- msgpack timestamps (ext -1), which the engine would turn into datetimes
  without asking: neither serde_kit nor LangGraph writes them.

The walk runs in Python, so :func:`check` first rules rows out at C speed: a
map that can hold more colliding keys than ``max_hash_collisions`` has more
entries than that, so it starts with a map16/map32 header (found at memchr
speed) whose count is that large (or whose count the rest of the row cannot
hold: the engine reads entries until the row ends); then what the keys after it
could cost if all collided (:func:`flood_work`) must exceed the row's allowance;
then a string-keys-only decode (of the parts that may hold such a header) must
fail. Most honest rows stop at the first or second step and none is walked.
Nothing about the keys' bytes is assumed: a colliding tuple key may start with
any element (``("", a, b)``: the empty string's hash is 0). Typed values used
as map keys are bounded by the same estimate, or else the decoder tracks the
hashes of the values its ext hook builds (:func:`check` says which).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import ormsgpack

from . import _stack, budget
from .errors import MalformedDataError, UnknownTagError
from .limits import Limits

__all__ = ["SMALL_ROW", "check", "first_big_map", "flood_entries", "flood_work", "may_hold_big_map", "scan"]

#: Rows shorter than this are not prescanned (but for a timestamp search): the
#: most keys of one hash they can hold (all tuples of 7 elements each 0 or "", whose
#: hashes are all 0: 128 keys of 9 bytes with their value) cost about a millisecond,
#: within the work meter's floor (``min_work``).
SMALL_ROW = 2000


def _classes() -> bytes:
    table = bytearray(b"." * 256)
    for b in (*range(0x80, 0xA0), 0xDC, 0xDD, 0xDE, 0xDF):
        table[b] = ord("C")  # any container header (for the container bound)
    return bytes(table)


_CLASSES = _classes()
_NOT_ARRAY_HEADER = bytes(b for b in range(256) if not (0x90 <= b <= 0x9F or b in (0xDC, 0xDD)))
_TIMESTAMP_LENGTHS = frozenset({4, 8, 12})
_MAX_HEADER_PROBES = 64
_TIMESTAMP_MESSAGE = "msgpack timestamp (ext code -1) in the stored value: not written by serde_kit or LangGraph"
_FIXED_SIZES = {
    0xC0: 1, 0xC2: 1, 0xC3: 1, 0xCA: 5, 0xCB: 9, 0xCC: 2, 0xCD: 3, 0xCE: 5, 0xCF: 9,
    0xD0: 2, 0xD1: 3, 0xD2: 5, 0xD3: 9,
}  # fmt: skip
_FIXEXT = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}
_EXT_HEADERS = (0xC7, 0xC8, 0xC9, *_FIXEXT)
_LENGTH_WIDTH = {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4, 0xC7: 1, 0xC8: 2, 0xC9: 4}
_CONTAINER_WIDTH = {0xDC: 2, 0xDD: 4, 0xDE: 2, 0xDF: 4}
_EXT_SIZED = (0xC7, 0xC8, 0xC9)
_KNOWN_EXT_CODES = range(0, 8)
_FIXINT_TABLE = bytes(0 if b < 0x80 or b >= 0xE0 else 1 for b in range(256))
# Header byte -> size of a number that starts with it (fixints are handled by class).
_SCALAR_WIDTH = {b: 1 for b in (*range(0x80), *range(0xE0, 0x100))} | {
    0xCA: 5, 0xCB: 9, 0xCC: 2, 0xCD: 3, 0xCE: 5, 0xCF: 9, 0xD0: 2, 0xD1: 3, 0xD2: 5, 0xD3: 9,
}  # fmt: skip


def _same_kind(data: bytes, pos: int, first: int, width: int, count: int) -> bool:
    """Whether the ``count`` numbers of ``width`` bytes from ``pos`` all start like ``first``."""
    if width == 1:
        return pos + count <= len(data) and data[pos : pos + count].translate(_FIXINT_TABLE).count(1) == 0
    return data[pos : pos + width * count : width] == bytes([first]) * count


def _uniform_run(data: bytes, pos: int, first: int, width: int, left: int) -> int:
    """How many of the next ``left`` values are numbers like the one at ``pos`` (at least 1).

    Galloping then bisecting keeps the cost linear in the run found.
    """
    good, step = 1, 2
    while good < left:
        probe = min(step, left)
        if not _same_kind(data, pos, first, width, probe):
            break
        good, step = probe, step * 2
    else:
        return good
    bad = min(step, left)
    while bad - good > 1:
        mid = (good + bad) // 2
        if _same_kind(data, pos, first, width, mid):
            good = mid
        else:
            bad = mid
    return good


def check(data: bytes, limits: Limits, *, in_decode: bool = False) -> bool:
    """Raise if ``data`` holds what the engine cannot bound; cheap for most rows.
    True when its maps may still hold typed keys that collide (values the ext hook
    builds: the decoder then counts their hashes), False when they cannot (no map
    big enough, keys cheap enough, or string keys only where a map may be big).

    Its Python walk is charged to the work meter of the decode call running on
    this thread; ``in_decode=True`` (the decoder) asks for that meter first
    (:class:`~serde_kit.budget.NeedsMeter`) when none is open, any other caller
    (the writer checking what its reader will read) gets one for this check.

    Only a map of more entries than ``max_hash_collisions`` can hold more
    colliding keys than that limit allows, and it starts with a map16/map32
    header whose count says so: :func:`first_big_map` finds the first place one
    may start, at memchr speed. A row with none is at most searched for a
    timestamp. Otherwise what every array key after that place could cost if
    all of them collided (:func:`flood_work`, from counts of header bytes) is
    held to the row's allowance; a row over it is read by ormsgpack with string
    keys only (C speed, ext payloads read only where such a map may be). Only a
    row where that finds a non-string key, or that may exceed
    :attr:`Limits.max_containers`, is walked by :func:`scan`, which checks the
    keys of every map.
    """
    size = len(data)
    if size > limits.max_containers:
        if data.translate(_CLASSES).count(b"C") > limits.max_containers:
            _walk(data, limits, in_decode)
            return True
    entries = flood_entries(limits)
    start = first_big_map(data, entries)
    if start >= 0 and _may_flood(data, start, limits):
        if _in_c(lambda row: _plain_keys(row, entries), data):
            return False  # every map that may be big has string keys only: no typed key either
        _walk(data, limits, in_decode)
        return True
    if _may_hold_timestamp(data) and not _in_c(_no_timestamp, data):
        _walk(data, limits, in_decode)  # ormsgpack could not read it: the walk finds what is wrong
    return False


#: Nesting ormsgpack (which recurses on the C stack, ~600 bytes a level, up to its own
#: limit of 1024) reads on the caller's thread: safe on the smallest stack supported.
_C_STACK_NESTING = 400
_NOT_CONTAINER_HEADER = bytes(b for b in range(256) if not (0x80 <= b <= 0x9F or 0xDC <= b <= 0xDF))


def _in_c(check: Callable[[bytes], bool], data: bytes) -> bool:
    """``check(data)`` (an ormsgpack pass), on the big-stack helper thread when the row
    holds enough container headers to nest deeper than a small thread stack holds."""
    if len(data) < _C_STACK_NESTING or len(data.translate(None, _NOT_CONTAINER_HEADER)) < _C_STACK_NESTING:
        return check(data)
    return _stack.on_big_stack(check, data)


def _walk(data: bytes, limits: Limits, in_decode: bool) -> None:
    """:func:`scan`, charged to the call's work meter (it runs in Python)."""
    work = len(data) * budget.WALK_UNITS_PER_BYTE
    if in_decode or budget.current() is not None:
        budget.charge(work, "the prescan's walk over the row")
    else:
        budget.Meter(len(data), limits).charge(work, "the prescan's walk over the row")
    scan(data, limits)


def may_hold_big_map(data: bytes, entries: int) -> bool:
    """Whether ``data`` may hold a map of ``entries`` entries or more (see :func:`first_big_map`)."""
    return first_big_map(data, entries) >= 0


def first_big_map(data: bytes, entries: int) -> int:
    """Where the first map of ``entries`` entries or more in ``data`` may start; -1 for none.

    Such a map starts with a map16 (0xde) or map32 (0xdf) header whose count is
    that large; smaller maps cannot flood. The header bytes are found at memchr
    speed; text rarely holds them (in UTF-8 they lead only U+0780-U+07FF), so a
    row where they are common (binary data, numbers) is a candidate from the first.
    Each entry takes at least two bytes, so a header whose count the rest of the
    row cannot hold (a stray byte in binary data, mostly) is no candidate. No map
    that can flood starts before the position returned, so the checks that follow
    need only look at the row from there.
    """
    size = len(data)
    first = -1
    for head, width in ((0xDE, 2), (0xDF, 4)):
        pos = data.find(head)
        start = pos
        seen = 0
        while pos >= 0 and (first < 0 or pos < first):
            seen += 1
            if seen > _MAX_HEADER_PROBES:
                first = start if first < 0 else min(first, start)
                break
            count = int.from_bytes(data[pos + 1 : pos + 1 + width], "big")
            # The engine reads a map's entries until the row ends, so a header whose
            # count the rest cannot hold still builds as many as fit (two bytes each).
            if min(count, (size - pos - 1 - width) // 2) >= entries:
                first = pos
                break
            pos = data.find(head, pos + 1)
    return first


def flood_entries(limits: Limits) -> int:
    """Entries a map needs to hold more colliding keys than ``max_hash_collisions``."""
    return limits.max_hash_collisions + 1


#: Work units (about a nanosecond each, as the meter's) of building a dict whose
#: array keys collide: each new key is compared with every earlier one sharing its
#: hash, at a fixed cost per pair, plus per element compared (a key of arrays of at
#: most 15 elements holds at most 15 per array header), per typed value among them
#: (compared in Python: a UUID's ``__eq__``) and per byte of a long string. Measured:
#: 1,999 two-int keys 0.1 s; 1,999 keys of 100 ints sharing 98, 1.7-3.5 s.
FLOOD_UNITS_PER_PAIR = 50
FLOOD_UNITS_PER_ELEMENT = 10
FLOOD_UNITS_PER_TYPED_VALUE = 300
FLOOD_UNITS_PER_BYTE = 1
#: Rows this large skip the estimate (one more pass over the bytes) for the C-speed
#: check, which is as cheap there and exact.
_ESTIMATE_MAX_BYTES = 1 << 16


def flood_work(array_headers: int, ext_headers: int, size: int) -> int:
    """Work units at most spent building the maps of a stretch of ``size`` stored bytes
    holding ``array_headers`` array headers (fixarrays: long keys are not estimated)
    and ``ext_headers`` typed values, if every key that can collide (arrays, typed
    values) did.

    Each key belongs to one map, so such keys number at most the headers and the
    pairs compared at most half their square, whatever the maps. Comparing two keys
    costs at most the smaller one's elements, less than their mean: so all pairs
    together cost at most half the keys times every key's elements (at most 15 per
    array header, each typed value, each byte of a long string).
    """
    keys = array_headers + ext_headers
    pairs = keys * keys // 2
    elements = 15 * FLOOD_UNITS_PER_ELEMENT * array_headers + FLOOD_UNITS_PER_TYPED_VALUE * ext_headers
    return pairs * FLOOD_UNITS_PER_PAIR + keys * (elements + FLOOD_UNITS_PER_BYTE * size) // 2


def _may_flood(data: bytes, start: int, limits: Limits) -> bool:
    """Whether the maps that may start at ``start`` or later (none before it holds
    enough entries) could cost more than the row's allowance if all their array keys
    collided; long keys (16 elements or more: an array16/array32 header) are compared
    at a cost the estimate does not bound, so more than ``max_hash_collisions`` of
    them always count as a possible flood."""
    size = len(data)
    if size - start > _ESTIMATE_MAX_BYTES:
        return True
    rest = data[start:] if start else data
    if rest.count(0xDC) + rest.count(0xDD) > limits.max_hash_collisions:
        return True
    allowance = max(limits.min_work, limits.max_work_per_byte * size)
    exts = sum(map(rest.count, _EXT_HEADERS))
    return flood_work(len(rest.translate(None, _NOT_ARRAY_HEADER)), exts, len(rest)) > allowance


def _plain_keys(data: bytes, entries: int) -> bool:
    """Whether every map key in ``data`` is a string, and no ext a timestamp, in every
    part (the row, ext payloads) that may hold a map of ``entries`` entries; parts that
    cannot are only searched for a timestamp. False when ormsgpack cannot tell (the
    walk then decides)."""
    return _read_in_c(data, 0, entries)


def _no_timestamp(data: bytes) -> bool:
    """Whether ``data`` (ext payloads included) holds no msgpack timestamp, found exactly
    by one C-speed decode that takes map keys of any type (the caller found no map big
    enough to flood); raises :class:`UnknownTagError` for a timestamp, False when
    ormsgpack cannot read it."""
    return _read_in_c(data, ormsgpack.OPT_NON_STR_KEYS, 0)


def _read_in_c(data: bytes, option: int, entries: int) -> bool:
    if entries and not _may_hold_timestamp(data):
        return _string_keys_in_c(data, entries)
    return _read_in_c_checked(data, option, entries)


def _string_keys_in_c(data: bytes, entries: int) -> bool:
    """:func:`_read_in_c` with string keys for a row that holds no timestamp: ext payloads
    are collected by a C method (``list.insert(code, payload)``: no Python frame per
    ext) and read only where a map of ``entries`` entries may be."""
    pending = [data]
    while pending:
        found: list[bytes] = []
        try:
            ormsgpack.unpackb(pending.pop(), ext_hook=found.insert)
        except Exception as exc:
            if not _cut_short(exc):
                return False
        pending.extend(part for part in found if (0xDE in part or 0xDF in part) and may_hold_big_map(part, entries))
    return True


def _cut_short(exc: Exception) -> bool:
    """Whether ormsgpack stopped only because the bytes ended. It reads entries in order,
    as the engine does, so every map key before that point was a string: the engine
    builds nothing more before it stops there too (and reports the row truncated)."""
    return str(exc) == "unexpected end of file"


def _read_in_c_checked(data: bytes, option: int, entries: int) -> bool:
    """One ormsgpack decode of ``data`` and of the ext payloads it holds (collected, not
    built) with ``option``; with ``entries``, a payload that cannot hold a map that big
    is read with any keys if it may hold a timestamp, and else not at all.
    :class:`UnknownTagError` at a timestamp, False when ormsgpack refuses the bytes."""
    pending = [(data, option)]
    found: list[tuple[bytes, int]] = []
    timestamp = []
    any_keys = ormsgpack.OPT_NON_STR_KEYS

    def collect(code: int, payload: bytes) -> None:
        if code == -1:
            timestamp.append(True)
            raise ValueError("timestamp")
        if 0 <= code <= 7:
            # (memchr first: most payloads hold neither byte, and this runs once per ext)
            if not entries or (0xDE in payload or 0xDF in payload) and may_hold_big_map(payload, entries):
                found.append((payload, option))
            elif 255 in payload and _may_hold_timestamp(payload):
                found.append((payload, any_keys))

    while pending:
        part, part_option = pending.pop()
        try:
            ormsgpack.unpackb(part, ext_hook=collect, option=part_option)
        except Exception as exc:
            if timestamp:
                raise UnknownTagError(_TIMESTAMP_MESSAGE) from None
            if not (part_option == 0 and _cut_short(exc)):
                return False
        pending.extend(found)
        found.clear()
    return True


def _may_hold_timestamp(data: bytes) -> bool:
    # A timestamp is an ext of type -1 (0xff) with a length of 4, 8 or 12.
    pos = data.find(b"\xff")
    seen = 0
    while pos >= 0:
        seen += 1
        if seen > 64:
            return True  # a binary-heavy row: let the walk decide
        if pos >= 1 and data[pos - 1] in (0xD6, 0xD7):
            return True
        for head, width in ((0xC7, 1), (0xC8, 2), (0xC9, 4)):
            at = pos - 1 - width
            if at >= 0 and data[at] == head and int.from_bytes(data[at + 1 : pos], "big") in _TIMESTAMP_LENGTHS:
                return True
        pos = data.find(b"\xff", pos + 1)
    return False


def scan(data: bytes, limits: Limits) -> None:
    """Raise if ``data`` holds too many containers, a hash-flooded map or a timestamp.

    Malformed structure found on the way raises :class:`MalformedDataError`;
    anything else malformed is left to the decoder, which reports it.
    """
    view = memoryview(data)
    end = len(data)
    max_containers = limits.max_containers
    containers = 0
    pos = 0
    # Frame: [values left, is map, array-key spans or None, ext depth, region end or -1, key span or None]
    stack: list[list[Any]] = [[1, False, None, 0, -1, None]]
    while stack:
        frame = stack[-1]
        left = frame[0]
        if left == 0:
            stack.pop()
            if frame[5] is not None:
                frame[5][1] = pos
            if frame[2] is not None and len(frame[2]) > limits.max_hash_collisions:
                _check_key_collisions(view, frame[2], limits)
            if frame[4] >= 0:
                if pos > frame[4]:
                    raise MalformedDataError("an ext payload is shorter than the value it holds")
                pos = frame[4]
            continue
        if pos >= end:
            raise MalformedDataError("stored value is truncated")
        first = data[pos]
        is_map = frame[1]
        if not is_map and left > 1:
            width = _SCALAR_WIDTH.get(first)
            if width is not None:
                # A run of numbers (an array of ints or floats) in a few C-speed steps.
                run = _uniform_run(data, pos, first, width, left)
                frame[0], pos = left - run, pos + run * width
                continue
        is_key = is_map and left % 2 == 0
        frame[0] = left - 1
        if first <= 0x7F or first >= 0xE0:
            pos += 1
            continue
        if first <= 0x9F:  # fixmap, fixarray
            count, pos, opens_map = first & 0x0F, pos + 1, first <= 0x8F
        elif first <= 0xBF:  # fixstr
            pos += 1 + (first & 0x1F)
            continue
        elif first in _FIXED_SIZES:
            pos += _FIXED_SIZES[first]
            continue
        elif first in _CONTAINER_WIDTH:
            width = _CONTAINER_WIDTH[first]
            count = int.from_bytes(data[pos + 1 : pos + 1 + width], "big")
            pos, opens_map = pos + 1 + width, first >= 0xDE
        elif first in _FIXEXT or first in _EXT_SIZED:
            if first in _FIXEXT:
                length, head = _FIXEXT[first], 2
            else:
                width = _LENGTH_WIDTH[first]
                length = int.from_bytes(data[pos + 1 : pos + 1 + width], "big")
                head = 2 + width
            code = int.from_bytes(data[pos + head - 1 : pos + head], "big", signed=True)
            start, pos = pos + head, pos + head + length
            if code == -1:
                raise UnknownTagError(_TIMESTAMP_MESSAGE)
            if code in _KNOWN_EXT_CODES:
                depth = frame[3] + 1
                if depth > limits.max_ext_depth:
                    raise limits.refuse("max_ext_depth", "typed values nested in one another", depth)
                if pos > end:
                    raise MalformedDataError("stored value is truncated")
                stack.append([1, False, None, depth, pos, None])
                pos = start
            continue
        elif first in _LENGTH_WIDTH:  # bin and str with a length
            width = _LENGTH_WIDTH[first]
            pos += 1 + width + int.from_bytes(data[pos + 1 : pos + 1 + width], "big")
            continue
        else:  # 0xC1, never used
            raise MalformedDataError(f"byte 0x{first:02x} at offset {pos} is not valid msgpack")
        containers += 1
        if containers > max_containers:
            raise limits.refuse("max_containers", "maps and arrays in the row", f"more than {max_containers}")
        key_span = None
        if is_key and not opens_map:
            spans = frame[2]
            if spans is None:
                spans = frame[2] = []
            key_span = [pos - 1 if first <= 0x9F else pos - 1 - _CONTAINER_WIDTH[first], -1]
            spans.append(key_span)
        stack.append([count * 2 if opens_map else count, opens_map, None, frame[3], -1, key_span])


_KEY_DECODER = msgspec.msgpack.Decoder(ext_hook=lambda code, data: (code, bytes(data)))


def _check_key_collisions(view: memoryview, spans: list[list[int]], limits: Limits) -> None:
    """Raise when too many of one map's array keys (given as byte spans) share a hash."""
    try:
        keys = [_as_key(_KEY_DECODER.decode(view[start:stop])) for start, stop in spans]
    except (msgspec.DecodeError, TypeError, RecursionError) as exc:
        raise MalformedDataError(f"a map key is not valid msgpack: {exc}") from None
    try:
        budget.check_hash_collisions(keys, limits, "map keys")
    except TypeError:  # an array key holding a map: msgspec would refuse it too
        raise MalformedDataError("not valid msgpack data: map keys must be hashable (an array key holds a map)") from None


def _as_key(value: Any) -> Any:
    # An array decoded on its own is a list; in key position the engine makes it a tuple.
    return tuple(_as_key(item) for item in value) if type(value) is list else value
