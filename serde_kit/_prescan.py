"""A structural pass over a stored row, for the costs the msgpack engine cannot bound.

The engine (msgspec) builds every value in C. Three things it does not bound
are checked here, before it runs, by walking the row's msgpack headers
(string and binary payloads are skipped by their length, ext payloads are
walked as the msgpack they hold):

- the number of values in the row (:attr:`Limits.max_elements`): decoded
  containers cost up to ~75 times their stored size;
- hash floods in maps whose keys are arrays (decoded as tuples, whose hash is
  not keyed): all keys of one hash make building the dict quadratic;
- msgpack timestamps (ext -1), which the engine would turn into datetimes
  without asking: neither serde_kit nor LangGraph writes them.

The walk runs in Python, so :func:`needed` decides from cheap whole-row
searches whether a row could hold any of these at all; honest rows of
ordinary size skip it.
"""

from __future__ import annotations

import collections
from typing import Any

import msgspec

from .errors import MalformedDataError, UnknownTagError
from .limits import Limits

__all__ = ["FLOOD_KEYS", "needed", "scan", "check_hash_collisions"]

#: Maps with fewer non-str keys than this cannot cost much even if every key
#: collides (~0.1 s at worst), so rows with fewer array/ext headers are not walked.
FLOOD_KEYS = 1000

# Byte values that can start an array or an ext: a row with fewer of them than
# FLOOD_KEYS cannot hold a map with that many array or ext keys.
_KEY_HEADER_BYTES = bytes(
    1 if 0x90 <= b <= 0x9F or b in (0xDC, 0xDD, 0xC7, 0xC8, 0xC9) or 0xD4 <= b <= 0xD8 else 0
    for b in range(256)
)
# Every encoding of an ext of type -1 with a timestamp's length (4, 8 or 12 bytes).
_TIMESTAMP_HEADERS = (
    b"\xd6\xff",
    b"\xd7\xff",
    *(b"\xc7" + bytes([n]) + b"\xff" for n in (4, 8, 12)),
    *(b"\xc8\x00" + bytes([n]) + b"\xff" for n in (4, 8, 12)),
    *(b"\xc9\x00\x00\x00" + bytes([n]) + b"\xff" for n in (4, 8, 12)),
)
_FIXED_SIZES = {
    0xC0: 1, 0xC2: 1, 0xC3: 1, 0xCA: 5, 0xCB: 9, 0xCC: 2, 0xCD: 3, 0xCE: 5, 0xCF: 9,
    0xD0: 2, 0xD1: 3, 0xD2: 5, 0xD3: 9,
}  # fmt: skip
_FIXEXT = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}
_LENGTH_WIDTH = {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4, 0xC7: 1, 0xC8: 2, 0xC9: 4}
_CONTAINER_WIDTH = {0xDC: 2, 0xDD: 4, 0xDE: 2, 0xDF: 4}
_KNOWN_EXT_CODES = range(0, 8)


def needed(data: bytes, limits: Limits) -> bool:
    """Whether ``data`` could exceed what :func:`scan` checks (cheap, C-speed searches)."""
    size = len(data)
    if size > limits.max_elements:
        return True
    if b"\xff" in data and any(header in data for header in _TIMESTAMP_HEADERS):
        return True
    return size >= 3 * FLOOD_KEYS and data.translate(_KEY_HEADER_BYTES).count(1) >= FLOOD_KEYS


def scan(data: bytes, limits: Limits) -> None:
    """Raise if ``data`` holds too many values, a hash-flooded map or a timestamp.

    Malformed structure found on the way raises :class:`MalformedDataError`;
    anything else malformed is left to the decoder, which reports it.
    """
    view = memoryview(data)
    end = len(data)
    max_elements = limits.max_elements
    elements = 0
    pos = 0
    # Frame: [values left, is map, array-key spans or None, ext depth, region end or -1, key span or None]
    stack: list[list[Any]] = [[1, False, None, 0, -1, None]]
    while stack:
        frame = stack[-1]
        if frame[0] == 0:
            stack.pop()
            if frame[5] is not None:
                frame[5][1] = pos
            if frame[2] is not None and len(frame[2]) > limits.max_hash_collisions:
                check_key_collisions(view, frame[2], limits)
            if frame[4] >= 0:
                if pos > frame[4]:
                    raise MalformedDataError("an ext payload is shorter than the value it holds")
                pos = frame[4]
            continue
        is_key = frame[1] and frame[0] % 2 == 0
        frame[0] -= 1
        if pos >= end:
            raise MalformedDataError("stored value is truncated")
        elements += 1
        if elements > max_elements:
            raise limits.refuse("max_elements", "number of values in the row", f"more than {max_elements}")
        first = data[pos]
        depth = frame[3]
        if first <= 0x7F or first >= 0xE0:
            pos += 1
            continue
        if first <= 0x9F:  # fixmap, fixarray
            count, pos, is_map = first & 0x0F, pos + 1, first <= 0x8F
        elif first <= 0xBF:  # fixstr
            pos += 1 + (first & 0x1F)
            continue
        elif first in _FIXED_SIZES:
            pos += _FIXED_SIZES[first]
            continue
        elif first in _CONTAINER_WIDTH:
            width = _CONTAINER_WIDTH[first]
            count = int.from_bytes(data[pos + 1 : pos + 1 + width], "big")
            pos, is_map = pos + 1 + width, first >= 0xDE
        elif first in _FIXEXT or first in (0xC7, 0xC8, 0xC9):
            if is_key:
                raise MalformedDataError("a map key holds a typed value (msgpack ext); map keys must be plain")
            if first in _FIXEXT:
                length, head = _FIXEXT[first], 1
            else:
                head = _LENGTH_WIDTH[first]
                length = int.from_bytes(data[pos + 1 : pos + 1 + head], "big")
                head += 1
            code = int.from_bytes(data[pos + head : pos + head + 1], "big", signed=True)
            start, pos = pos + head + 1, pos + head + 1 + length
            if code == -1:
                raise UnknownTagError(
                    "msgpack timestamp (ext code -1) in the stored value: not written by serde_kit or LangGraph"
                )
            if code in _KNOWN_EXT_CODES:
                if depth + 1 > limits.max_ext_depth:
                    raise limits.refuse("max_ext_depth", "typed values nested in one another", depth + 1)
                if pos > end:
                    raise MalformedDataError("stored value is truncated")
                stack.append([1, False, None, depth + 1, pos, None])
                pos = start
            continue
        elif first in _LENGTH_WIDTH:  # bin and str with a length
            width = _LENGTH_WIDTH[first]
            pos += 1 + width + int.from_bytes(data[pos + 1 : pos + 1 + width], "big")
            continue
        else:  # 0xC1, never used
            raise MalformedDataError(f"byte 0x{first:02x} at offset {pos} is not valid msgpack")
        # A container: count values follow (twice as many for a map).
        key_span = None
        if is_key and not is_map:
            spans = frame[2]
            if spans is None:
                spans = frame[2] = []
            key_span = [pos - 1 if first <= 0x9F else pos - 1 - _CONTAINER_WIDTH[first], -1]
            spans.append(key_span)
        stack.append([count * 2 if is_map else count, is_map, None, depth, -1, key_span])


_KEY_DECODER = msgspec.msgpack.Decoder(ext_hook=lambda code, data: (code, bytes(data)))


def check_key_collisions(view: memoryview, spans: list[list[int]], limits: Limits) -> None:
    """Raise when too many of one map's array keys (given as byte spans) share a hash."""
    try:
        keys = [_as_key(_KEY_DECODER.decode(view[start:stop])) for start, stop in spans]
    except (msgspec.DecodeError, TypeError, RecursionError) as exc:
        raise MalformedDataError(f"a map key is not valid msgpack: {exc}") from None
    check_hash_collisions(keys, limits, "map keys")


def _as_key(value: Any) -> Any:
    # An array decoded on its own is a list; in key position the engine makes it a tuple.
    return tuple(_as_key(item) for item in value) if type(value) is list else value


def check_hash_collisions(items: Any, limits: Limits, what: str) -> None:
    """Raise :class:`LimitExceededError` when too many ``items`` share one hash value.

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
