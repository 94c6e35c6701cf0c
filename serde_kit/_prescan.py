"""A structural pass over a stored row, for the costs the msgpack engine cannot bound.

The engine (msgspec) builds every value in C. Three things it does not bound
are checked here, before it runs, by walking the row's msgpack headers
(string and binary payloads are skipped by their length, runs of numbers in
one step, ext payloads walked as the msgpack they hold):

- the number of maps and arrays in the row (:attr:`Limits.max_containers`):
  an empty map costs ~75 times its stored size once decoded;
- hash floods in maps whose keys are arrays (decoded as tuples) or floats,
  whose hashes are not keyed per process: one hash for every key makes
  building the dict quadratic (202 distinct doubles share one hash value);
- msgpack timestamps (ext -1), which the engine would turn into datetimes
  without asking: neither serde_kit nor LangGraph writes them.

The walk runs in Python, so :func:`check` first works at C speed: a map that
can flood has 16 entries or more (smaller ones cost a bounded amount per stored
byte however their keys collide), so it starts with a map16/map32 header byte,
found at memchr speed. Each such byte is tested for starting a value by a
descent from the row's value to it (msgspec reading, at C speed and building
nothing, the items of each container and typed value on the way), and each real
map's keys are read as raw items: string, int, nil and bool keys end there, array and float
keys are hashed
(colliding groups charged to the row's work meter, too large ones refused).
Rows with too many such bytes take the whole-row path (an estimate from counts
of header bytes, then a string-keys-only decode, then the walk). Nothing about
the keys' bytes is assumed: a colliding tuple key may start with any element
(``("", a, b)``: the empty string's hash is 0). Typed values used as map keys
are left to the decoder, which tracks the hashes of the values its ext hook
builds (:func:`check` says when).
"""

from __future__ import annotations

import bisect
import collections
import itertools
import re
import struct
import threading
from collections.abc import Callable
from typing import Any

import msgspec
import ormsgpack

from . import _stack, budget
from .errors import MalformedDataError, UnknownTagError
from .limits import Limits

__all__ = [
    "CHECKED_ENTRIES",
    "SMALL_ROW",
    "big_map_candidates",
    "check",
    "first_big_map",
    "flood_entries",
    "flood_work",
    "key_units",
    "pair_units",
    "may_hold_big_map",
    "scan",
]

#: Rows shorter than this are not prescanned (but for a timestamp search): the
#: most keys of one hash they can hold (all tuples of 7 elements each 0 or "", whose
#: hashes are all 0: 128 keys of 9 bytes with their value) cost about a millisecond,
#: within the work meter's floor (``min_work``); so do the at most 199 float keys of
#: one hash it can hold (ten bytes an entry: ~0.5 ms).
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
    builds: the decoder then counts their hashes), False when they cannot.

    Its Python work is charged to the work meter of the decode call running on
    this thread; ``in_decode=True`` (the decoder) asks for that meter first
    (:class:`~serde_kit.budget.NeedsMeter`) when none is open, any other caller
    (the writer checking what its reader will read) gets one for this check.

    A map of fewer than :data:`CHECKED_ENTRIES` entries (a fixmap) costs at most
    a bounded multiple of its size however its keys collide (:func:`flood_work`
    per byte, within the meter's allowance); a larger one starts with a
    map16/map32 header whose count says so, found at memchr speed by
    :func:`big_map_candidates`. Where a row holds a few such bytes, each is
    tested for being a real header (:func:`_maps_at`: most are bytes inside a
    number or a string), and each real one's keys are checked
    exactly (:func:`_check_map_keys`: string, int, nil and bool keys are cheap;
    array, float and typed keys are hashed, colliding ones charged to the meter and more than
    ``max_hash_collisions`` of one hash refused). A row with more candidates, or
    one the descent cannot read (or not within its allowance), takes the whole-row path: what every array,
    typed and float key after the first candidate could cost if all collided (:func:`flood_work`)
    against the row's allowance, then a string-keys-only decode (C speed), and
    only if that finds a non-string key, the walk (:func:`scan`, metered).
    """
    size = len(data)
    if size > limits.max_containers:
        if data.translate(_CLASSES).count(b"C") > limits.max_containers:
            _walk(data, limits, in_decode)
            return True
    # (A lowered max_hash_collisions has smaller maps checked too.)
    entries = min(CHECKED_ENTRIES, flood_entries(limits))
    candidates = big_map_candidates(data, entries)
    retried, _retry.row = _retry.row is data, None
    if candidates:
        too_many = len(candidates) > _candidate_cap(size)
        verdict = _UNKNOWN if too_many or retried else _checked_in_c(data, candidates, limits)
        if verdict is _UNKNOWN:
            if _may_flood(data, candidates[0], limits):
                if _in_c(lambda row: _plain_keys(row, entries), data):
                    return False  # every map that may be big has string keys only: no typed key either
                if in_decode and budget.current() is None:
                    # The walk's charge asks the decoder for a meter (NeedsMeter), and it calls
                    # again with this row: that call goes straight to the walk.
                    _retry.row = data
                _walk(data, limits, in_decode)
                return True
            typed = True  # not read: typed keys stay counted by the decoder
        else:
            units, typed = verdict
            if units:
                _charge(units, "comparing map keys that share a hash value", data, limits, in_decode)
    else:
        typed = False
    if _may_hold_timestamp(data) and not _in_c(_no_timestamp, data):
        _walk(data, limits, in_decode)  # ormsgpack could not read it: the walk finds what is wrong
        return True
    return typed


#: Maps of this many entries or more (a map16 or map32 header) are checked; smaller
#: ones (fixmaps) cost at most 105 key comparisons each, bounded per stored byte.
CHECKED_ENTRIES = 16
#: Rows with more candidate headers than this take the whole-row path (each candidate
#: costs a descent from the row's value to it).
_MAX_CANDIDATES = 8
#: ... and one more per this many bytes of the row.
_BYTES_PER_CANDIDATE = 512
#: ... and never more than this many (each costs Python steps and a few C-speed scans).
_MOST_CANDIDATES = 128
_UNKNOWN: Any = object()
_TRAILING = re.compile(r"MessagePack data is malformed: trailing characters \(byte (\d+)\)")
_SKIP = msgspec.msgpack.Decoder(type=msgspec.Raw)
_RAW_ITEMS = msgspec.msgpack.Decoder(type=list[msgspec.Raw])
# Keys whose hashes cannot be aimed beyond a bound: strings (keyed per process), nil and
# bool (one key each), ints (at most 13 of msgpack's share a hash). Floats are not among
# them: 202 distinct doubles share one hash (tests/support/budget_attacks.py says why).
_CHEAP_KEYS = msgspec.msgpack.Decoder(type=list[str | int | bool | None])
_EXT_HEAD_SIZE = {0xC7: 3, 0xC8: 4, 0xC9: 6, 0xD4: 2, 0xD5: 2, 0xD6: 2, 0xD7: 2, 0xD8: 2}


class _Retry(threading.local):
    row: bytes | None = None


_retry = _Retry()  # the row whose check stopped for a meter, on this thread


def _charge(units: int, what: str, data: bytes, limits: Limits, in_decode: bool) -> None:
    if in_decode or budget.current() is not None:
        budget.charge(units, what)
    else:
        budget.Meter(len(data), limits).charge(units, what)


def _candidate_cap(size: int) -> int:
    return min(_MOST_CANDIDATES, _MAX_CANDIDATES + size // _BYTES_PER_CANDIDATE)


def big_map_candidates(data: bytes, entries: int) -> list[int]:
    """Every place a map of ``entries`` entries or more may start in ``data`` (ext payloads
    included), in order; past :func:`_candidate_cap` of them, the list is cut one longer.

    Such a map starts with a map16 (0xde) or map32 (0xdf) header whose count is
    that large and whose entries (two bytes each at least) the rest of the row can
    hold (the engine reads entries until the row ends, so an over-declared count
    builds as many as fit). The header bytes are found at memchr speed.
    """
    size = len(data)
    most = _candidate_cap(size)
    found: list[int] = []
    for head, width in ((0xDE, 2), (0xDF, 4)):
        pos = data.find(head)
        while pos >= 0 and len(found) <= most:
            count = int.from_bytes(data[pos + 1 : pos + 1 + width], "big")
            if min(count, (size - pos - 1 - width) // 2) >= entries:
                found.append(pos)
            pos = data.find(head, pos + 1)
    found.sort()
    return found


def _checked_in_c(data: bytes, candidates: list[int], limits: Limits) -> Any:
    """(units, typed) for the real maps among ``candidates``: the work their colliding keys
    cost, and whether any key holds a typed value; ``_UNKNOWN`` when the descent
    cannot tell. Raises when a map holds too many keys of one hash."""
    if _stack.recursion_limit() > _stack.SAFE_RECURSION_LIMIT and not _stack.shallow(data):
        return _stack.on_big_stack(_check_candidates, data, candidates, limits)
    return _check_candidates(data, candidates, limits)


def _check_candidates(data: bytes, candidates: list[int], limits: Limits) -> Any:
    units, typed = 0, False
    try:
        maps = _maps_at(data, candidates)
    except _Unreadable:
        return _UNKNOWN
    for found_map in maps:
        found = _check_map_keys(found_map, 0, limits)
        if found is _UNKNOWN:
            return _UNKNOWN
        units += found[0]
        typed = typed or found[1]
    return units, typed


class _Unreadable(Exception):
    """A buffer the C-speed skip cannot read to its end, or a descent past its allowance."""


_TOO_DEEP = "too deep"


def _skip_error(buf: bytes | bytearray | memoryview) -> str | None:
    """The C-speed skip's complaint about ``buf`` (None: one well-formed value)."""
    try:
        _SKIP.decode(buf)
    except msgspec.DecodeError as exc:
        return str(exc)
    except RecursionError:
        return _TOO_DEEP
    return None


#: The descent of :func:`_maps_at` reads at most this many bytes per byte of the row
#: (each container or typed value on the way to a candidate is read whole, at C speed),
#: plus :data:`_DESCENT_FLOOR`, and takes at most this many steps (a Python step and a
#: raw read each, ~2 us) per candidate, plus :data:`_DESCENT_STEPS_FLOOR`: the candidates
#: of honest rows share most of their way (the bench payloads take 6-13 steps for 5-14
#: candidates); rows that need more take the whole-row path, whose cost is metered.
_DESCENT_BYTES_PER_BYTE = 32
_DESCENT_FLOOR = 1 << 16
#: ... where each item read counts as this many bytes (a raw item costs ~80 ns to read and
#: place, a byte ~0.3 ns to skip): at most ~20 ns a stored byte in all.
_DESCENT_BYTES_PER_ITEM = 128
_DESCENT_STEPS_PER_CANDIDATE = 2
_DESCENT_STEPS_FLOOR = 16
_ARRAY_HEAD_SIZE = {0xDC: 3, 0xDD: 5} | {head: 1 for head in range(0x90, 0xA0)}
_MAP_HEAD_SIZE = {0xDE: 3, 0xDF: 5} | {head: 1 for head in range(0x80, 0x90)}
_HOLDERS = frozenset(_ARRAY_HEAD_SIZE) | frozenset(_MAP_HEAD_SIZE) | frozenset(_EXT_HEAD_SIZE)  # values holding values


def _maps_at(data: bytes, candidates: list[int]) -> list[memoryview]:
    """The maps the decoder builds that start at one of ``candidates`` (sorted offsets of
    map16/map32 header bytes in ``data``), each as the buffer of exactly that map.

    A descent from the row's value to each candidate, reading only what lies on the way:
    a container's items as raw values (msgspec, C speed, nothing built) and their
    offsets from their lengths, then the item holding the candidate; an ext of a code
    the decoder reads as msgpack, its payload's value. A candidate where an item starts
    is a real map; one inside a string, a number, binary data or another ext's payload
    is none. Bytes after a buffer's value are not read by the decoder (it refuses them
    after building the value), so a candidate there is none either. Raises
    :class:`_Unreadable` for a buffer the engine would refuse before its end (the
    whole-row path decides then) or past the descent's allowance.
    """
    found: list[memoryview] = []
    allowance = _DESCENT_BYTES_PER_BYTE * len(data) + _DESCENT_FLOOR
    steps = _DESCENT_STEPS_PER_CANDIDATE * len(candidates) + _DESCENT_STEPS_FLOOR
    todo: list[tuple[memoryview, list[int], bool]] = [(memoryview(data), candidates, False)]
    while todo:
        value, places, exact = todo.pop()  # exact: value is one value (an item), not a buffer
        steps -= 1
        allowance -= len(value)
        if steps < 0 or allowance < 0:
            raise _Unreadable
        if places[0] == 0:  # only where a buffer starts: items are looked at before they go here
            found.append(_one_value(value))  # a map16/map32 header where a value starts
            places = places[1:]
            if not places:
                continue
        head = value[0]
        if head in _EXT_HEAD_SIZE:
            size = _EXT_HEAD_SIZE[head]
            end = size + (_FIXEXT[head] if head in _FIXEXT else int.from_bytes(value[1 : size - 1], "big"))
            if end > len(value):
                raise _Unreadable  # an ext cut short: the engine refuses the buffer
            if int.from_bytes(value[size - 1 : size], "big", signed=True) in _KNOWN_EXT_CODES:
                inside = [at - size for at in places if size <= at < end]
                if inside:
                    todo.append((value[size:end], inside, False))
            continue  # else a payload the decoder does not read as msgpack
        if head in _ARRAY_HEAD_SIZE:
            first = _ARRAY_HEAD_SIZE[head]
            count = int.from_bytes(value[1:first], "big") if first > 1 else head & 0x0F
        elif head in _MAP_HEAD_SIZE:
            first = _MAP_HEAD_SIZE[head]
            count = 2 * (int.from_bytes(value[1:first], "big") if first > 1 else head & 0x0F)
        else:
            continue  # a string, a number, binary data: it holds no value
        allowance -= _DESCENT_BYTES_PER_ITEM * count  # before reading them
        if allowance < 0 or count > len(value):  # (more items than bytes: cut short)
            raise _Unreadable
        if head in _ARRAY_HEAD_SIZE:
            items: list[Any] = _items(value, exact)
        else:
            found_items = _map_items_in_place(value, first, count // 2, exact)
            items = found_items if found_items is not None else _map_items(value, first, count, exact)
        starts = list(itertools.accumulate(map(len, items), initial=first))
        held: dict[int, list[int]] = {}
        for at in places:
            index = bisect.bisect_right(starts, at) - 1
            if 0 <= index < len(items):  # else inside the header's count, or after the value
                held.setdefault(index, []).append(at - starts[index])
        for index, inner in held.items():
            item = memoryview(items[index])
            if inner[0] == 0:
                found.append(item)  # an item that starts with a map16/map32 header: a map
                del inner[0]
            if inner and item[0] in _HOLDERS:
                todo.append((item, inner, True))
    return found


def _one_value(buf: memoryview) -> memoryview:
    """The value the decoder reads from the start of ``buf`` (the row, or an ext's payload)."""
    complaint = _skip_error(buf)
    if complaint is None:
        return buf
    trailing = _TRAILING.fullmatch(complaint)
    if trailing is None:
        raise _Unreadable  # truncated, malformed, or too deep for the skip: the whole-row path
    return buf[: int(trailing.group(1))]


#: A map on the way this large (bytes) whose entries average at least
#: :data:`_IN_PLACE_BYTES_PER_ENTRY` is read in place when its keys are strings: a copy
#: this large is fresh memory on every call (~0.5 ns a byte in page faults, which
#: doubled the check of an 800 KB chat row), a Python step per entry ~400 ns.
_IN_PLACE_MIN_BYTES = 1 << 17
_IN_PLACE_BYTES_PER_ENTRY = 1024
_STR_KEYED = msgspec.msgpack.Decoder(type=dict[str, msgspec.Raw])
_STR_LENGTH_WIDTH = {0xD9: 1, 0xDA: 2, 0xDB: 4}


def _map_items(value: memoryview, first: int, count: int, exact: bool) -> list[msgspec.Raw]:
    """The ``count`` items (keys and values) of the map at the start of ``value``, whose
    entries start at ``first``, as raw values: read as an array of them (a copy)."""
    return _items(b"\xdd" + count.to_bytes(4, "big") + value[first:], exact)


def _map_items_in_place(value: memoryview, first: int, entries: int, exact: bool) -> list[memoryview] | None:
    """As :func:`_map_items`, as slices of ``value`` (no copy), for a big map of few
    entries whose keys are distinct strings; None for any other map (or one the
    engine refuses: :func:`_map_items` then says how)."""
    if len(value) < _IN_PLACE_MIN_BYTES or entries > len(value) // _IN_PLACE_BYTES_PER_ENTRY:
        return None
    end = len(value)
    try:
        fields = _STR_KEYED.decode(value)
    except msgspec.DecodeError as exc:  # (a key that is not a string: a ValidationError, one of these)
        trailing = None if exact else _TRAILING.fullmatch(str(exc))
        if trailing is None:
            return None
        end = int(trailing.group(1))
        try:
            fields = _STR_KEYED.decode(value[:end])
        except (msgspec.DecodeError, RecursionError):
            return None
    except RecursionError:
        return None
    if len(fields) != entries:
        return None  # a key stored twice: the dict kept one
    # The engine read exactly this: after the header, each key (a string: its own header
    # says its length) then its value (a raw value of known length).
    items: list[memoryview] = []
    at = first
    for raw in fields.values():
        head = value[at]
        if 0xA0 <= head <= 0xBF:
            size = 1 + (head & 0x1F)
        elif head in _STR_LENGTH_WIDTH:
            width = _STR_LENGTH_WIDTH[head]
            size = 1 + width + int.from_bytes(value[at + 1 : at + 1 + width], "big")
        else:
            return None
        items.append(value[at : at + size])
        at += size
        items.append(value[at : at + len(raw)])
        at += len(raw)
    return items if at == end else None


def _items(container: bytes | memoryview, exact: bool) -> list[msgspec.Raw]:
    """The items of the container at the start of ``container``, as raw values; unless
    ``exact`` (an item already read whole), bytes after it are cut off as the decoder
    leaves them unread."""
    try:
        return _RAW_ITEMS.decode(container)
    except msgspec.DecodeError as exc:
        trailing = None if exact else _TRAILING.fullmatch(str(exc))
        if trailing is None:
            raise _Unreadable from None  # truncated or malformed: the whole-row path
        return _RAW_ITEMS.decode(memoryview(container)[: int(trailing.group(1))])
    except RecursionError:
        raise _Unreadable from None


def _check_map_keys(buf: bytes | memoryview, pos: int, limits: Limits) -> Any:
    """(units, typed) for the map whose header is at ``buf[pos]``: what comparing its keys
    that share a hash costs, and whether a key holds a typed value. ``_UNKNOWN`` for a
    map that does not parse (a count beyond the row: the walk reports it). Raises when
    more than ``max_hash_collisions`` keys share one hash."""
    complaint = _skip_error(memoryview(buf)[pos:])
    if complaint is None:
        end = len(buf)
    else:
        trailing = _TRAILING.fullmatch(complaint)
        if trailing is None:
            return _UNKNOWN
        end = pos + int(trailing.group(1))
    width = 2 if buf[pos] == 0xDE else 4
    count = int.from_bytes(buf[pos + 1 : pos + 1 + width], "big")
    # The entries as an array of 2 x count values: keys at the even places.
    items = _RAW_ITEMS.decode(b"\xdd" + (2 * count).to_bytes(4, "big") + buf[pos + 1 + width : end])
    keys = b"\xdd" + count.to_bytes(4, "big") + b"".join(items[0::2])
    try:
        _CHEAP_KEYS.decode(keys)
        return 0, False  # hashes not aimed (strings) or few per value (ints, nil, bool)
    except (msgspec.ValidationError, msgspec.DecodeError):
        pass
    typed: list[int] = []

    def typed_key(code: int, data: memoryview) -> _Ext:
        typed.append(code)
        return _Ext(code, data)

    try:
        values = msgspec.msgpack.Decoder(ext_hook=typed_key).decode(keys)
    except (msgspec.DecodeError, RecursionError):
        return _UNKNOWN
    # Arrays as keys become tuples (one holding an array cannot be hashed: the engine
    # refuses it too, and so does hashing it here).
    return _collision_units([tuple(key) if type(key) is list else key for key in values], limits, bool(typed))


def _collision_units(keys: list[Any], limits: Limits, typed: bool) -> Any:
    """(units, typed): what comparing the ``keys`` of one map that share a hash costs
    (:func:`key_units` of the smaller key, per pair), and ``typed``; raises past
    ``max_hash_collisions`` keys of one hash (or for a key that cannot be hashed, as
    the engine would)."""
    try:
        hashes = list(map(hash, keys))
    except TypeError:  # a key holding a map or an array: msgspec refuses it too
        raise MalformedDataError(
            "not valid msgpack data: map keys must be hashable (a key holds a map or an array)"
        ) from None
    units = 0
    if len(set(hashes)) == len(hashes):
        return units, typed  # no two keys share a hash: none is compared
    counts = collections.Counter(hashes)
    shared = {found for found, count in counts.items() if count > 1}
    groups: dict[int, list[Any]] = {}
    for value, found in zip(keys, hashes, strict=True):
        if found in shared:
            groups.setdefault(found, []).append(value)
    for group in groups.values():
        distinct = _distinct(group, limits)
        costs = sorted(map(pair_units, distinct))
        # Each pair costs about the smaller key: the i-th smallest is the smaller of len - 1 - i pairs.
        units += sum(cost * (len(costs) - 1 - i) for i, cost in enumerate(costs))
        # A key stored again is compared with the distinct ones before it finds itself.
        units += (len(group) - len(distinct)) * sum(costs)
    return units, typed


def _distinct(group: list[Any], limits: Limits) -> list[Any]:
    """The distinct keys of ``group`` (keys sharing one hash: equal ones are one key of the
    map, as the dict keeps them); raises past ``max_hash_collisions`` of them, before
    comparing more (each new key is compared with those found so far)."""
    if len(group) <= limits.max_hash_collisions:
        return list(dict.fromkeys(group))
    found: dict[Any, None] = {}
    for key in group:
        found[key] = None
        if len(found) > limits.max_hash_collisions:
            more = f"more than {limits.max_hash_collisions}"
            raise limits.refuse("max_hash_collisions", "map keys sharing one hash value", more)
    return list(found)


def pair_units(key: Any) -> int:
    """Work units of one comparison, building a dict, of ``key`` with an equal-hashed key
    of at least its cost: :data:`FLOOD_UNITS_PER_NUMBER_PAIR` for a number (int, float,
    bool, nil), else :data:`FLOOD_UNITS_PER_PAIR` and :func:`key_units`."""
    if type(key) in _NUMBERS:
        return FLOOD_UNITS_PER_NUMBER_PAIR
    return FLOOD_UNITS_PER_PAIR + key_units(key)


_NUMBERS = frozenset({int, float, bool, type(None)})


def key_units(key: Any) -> int:
    """Work units of comparing ``key`` (as the prescan decodes it: typed values as
    ``(code, payload)``) with an equal-hashed key of at least its size."""
    items = key if type(key) is tuple else (key,)
    units = 0
    for item in items:
        if type(item) is _Ext:  # a typed value: compared in Python
            units += FLOOD_UNITS_PER_TYPED_VALUE + FLOOD_UNITS_PER_BYTE * len(item.payload)
        elif type(item) in (str, bytes):
            units += FLOOD_UNITS_PER_ELEMENT + FLOOD_UNITS_PER_BYTE * len(item)
        else:
            units += FLOOD_UNITS_PER_ELEMENT
    return units


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
    """:func:`scan`, charged to the call's work meter (it runs in Python), and then what
    comparing the keys it found sharing a hash costs."""
    if in_decode or budget.current() is not None:
        meter = budget.current()
        budget.charge(len(data) * budget.WALK_UNITS_PER_BYTE, "the prescan's walk over the row")
    else:
        meter = budget.Meter(len(data), limits)
        meter.charge(len(data) * budget.WALK_UNITS_PER_BYTE, "the prescan's walk over the row")
    units = scan(data, limits)
    if units and meter is not None:
        meter.charge(units, "comparing map keys that share a hash value")


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
#: ... and per pair of number keys (floats: 202 distinct doubles share one hash), all
#: told: measured 20-25 ns a pair, msgspec building maps of 15, 64 and 202 colliding
#: doubles against the same maps of random ones.
FLOOD_UNITS_PER_NUMBER_PAIR = 25
FLOOD_UNITS_PER_ELEMENT = 10
FLOOD_UNITS_PER_TYPED_VALUE = 300
FLOOD_UNITS_PER_BYTE = 1
#: Rows this large skip the estimate (one more pass over the bytes) for the C-speed
#: check, which is as cheap there and exact.
_ESTIMATE_MAX_BYTES = 1 << 16


#: The most distinct msgpack numbers sharing one hash value: 202 doubles and 13 ints.
MOST_NUMBERS_OF_ONE_HASH = 215


def flood_work(array_headers: int, ext_headers: int, size: int, floats: int = 0) -> int:
    """Work units at most spent building the maps of a stretch of ``size`` stored bytes
    holding ``array_headers`` array headers (fixarrays: long keys are not estimated)
    and ``ext_headers`` typed values, if every key that can collide (arrays, typed
    values) did.

    Each key belongs to one map, so such keys number at most the headers and the
    pairs compared at most half their square, whatever the maps. Comparing two keys
    costs at most the smaller one's elements, less than their mean: so all pairs
    together cost at most half the keys times every key's elements (at most 15 per
    array header, each typed value, each byte of a long string). A float key (of
    ``floats`` float headers) shares its hash with at most
    :data:`MOST_NUMBERS_OF_ONE_HASH` numbers, and may share it with any array or typed key.
    """
    keys = array_headers + ext_headers
    pairs = keys * keys // 2
    elements = 15 * FLOOD_UNITS_PER_ELEMENT * array_headers + FLOOD_UNITS_PER_TYPED_VALUE * ext_headers
    number_pairs = floats * min(floats, MOST_NUMBERS_OF_ONE_HASH) // 2
    mixed = floats * keys * FLOOD_UNITS_PER_PAIR
    return (
        pairs * FLOOD_UNITS_PER_PAIR
        + keys * (elements + FLOOD_UNITS_PER_BYTE * size) // 2
        + number_pairs * FLOOD_UNITS_PER_NUMBER_PAIR
        + mixed
    )


def _may_flood(data: bytes, start: int, limits: Limits) -> bool:
    """Whether the maps that may start at ``start`` or later (none before it holds
    enough entries) could cost more than the row's allowance if all their array, typed
    and float keys collided; long keys (16 elements or more: an array16/array32 header) are compared
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
    floats = rest.count(0xCB) + rest.count(0xCA)
    return flood_work(len(rest.translate(None, _NOT_ARRAY_HEADER)), exts, len(rest), floats) > allowance


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


def scan(data: bytes, limits: Limits) -> int:
    """Raise if ``data`` holds too many containers, a hash-flooded map or a timestamp;
    return the work units its maps' array and float keys that share a hash cost to compare.

    Malformed structure found on the way raises :class:`MalformedDataError`;
    anything else malformed is left to the decoder, which reports it.
    """
    view = memoryview(data)
    end = len(data)
    max_containers = limits.max_containers
    containers = 0
    units = 0
    pos = 0
    # Frame: [values left, is map, array-key spans and float keys or None, ext depth, region end or -1,
    # key span or None, whether float keys are checked (a map of as many entries as check() checks)]
    stack: list[list[Any]] = [[1, False, None, 0, -1, None, False]]
    float_entries = min(CHECKED_ENTRIES, flood_entries(limits))
    while stack:
        frame = stack[-1]
        left = frame[0]
        if left == 0:
            stack.pop()
            if frame[5] is not None:
                frame[5][1] = pos
            if frame[2] is not None and len(frame[2]) > 1 and not _ints_only(frame[2]):
                units += _check_key_collisions(view, frame[2], limits)
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
        if is_key and frame[6] and (first == 0xCB or first == 0xCA):  # a float key: its hash can be aimed
            spans = frame[2]
            if spans is None:
                spans = frame[2] = []
            if pos + (9 if first == 0xCB else 5) > end:
                raise MalformedDataError("stored value is truncated")  # not a bare struct.error
            if first == 0xCB:
                spans.append(_FLOAT64.unpack_from(data, pos + 1)[0])
                pos += 9
            else:
                spans.append(_FLOAT32.unpack_from(data, pos + 1)[0])
                pos += 5
            continue
        if is_key and frame[6] and (first <= 0x7F or first >= 0xE0 or 0xCC <= first <= 0xD3):
            # An int key where float keys are checked: equal numbers hash alike (2 and 2.0),
            # so up to 13 ints join each group of floats sharing a hash.
            size = 1 if first <= 0x7F or first >= 0xE0 else _FIXED_SIZES[first]
            if pos + size > end:
                raise MalformedDataError("stored value is truncated")
            spans = frame[2]
            if spans is None:
                spans = frame[2] = []
            if size == 1:
                spans.append(first if first <= 0x7F else first - 0x100)
            else:
                spans.append(int.from_bytes(data[pos + 1 : pos + size], "big", signed=first >= 0xD0))
            pos += size
            continue
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
                stack.append([1, False, None, depth, pos, None, False])
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
        floats = opens_map and count >= float_entries
        stack.append([count * 2 if opens_map else count, opens_map, None, frame[3], -1, key_span, floats])
    return units


class _Ext:
    """A typed value in a map key, as the prescan sees it: its code and payload (the value
    the ext hook builds, and so its hash, is the decoder's to count)."""

    __slots__ = ("code", "payload")

    def __init__(self, code: int, payload: memoryview) -> None:
        self.code, self.payload = code, bytes(payload)


_KEY_DECODER = msgspec.msgpack.Decoder(ext_hook=_Ext)
_FLOAT64 = struct.Struct(">d")
_FLOAT32 = struct.Struct(">f")


def _ints_only(spans: list[Any]) -> bool:
    """Whether a map's collected keys are ints alone: at most 13 of msgpack's share a hash,
    so they cost a bounded amount, as the candidate check (``_CHEAP_KEYS``) takes them.
    They are collected because they join the groups of float keys sharing their hash."""
    return all(type(span) is int for span in spans)


def _check_key_collisions(view: memoryview, spans: list[Any], limits: Limits) -> int:
    """Work units of comparing one map's array keys (given as byte spans), float and int
    keys (given as their values) that share a hash; raises when more than
    ``max_hash_collisions`` of them do."""
    try:
        keys = [span if type(span) is not list else _as_key(_KEY_DECODER.decode(view[span[0] : span[1]])) for span in spans]
    except (msgspec.DecodeError, TypeError, RecursionError) as exc:
        raise MalformedDataError(f"a map key is not valid msgpack: {exc}") from None
    units: int = _collision_units(keys, limits, False)[0]
    return units


def _as_key(value: Any) -> Any:
    # An array decoded on its own is a list; in key position the engine makes it a tuple.
    return tuple(_as_key(item) for item in value) if type(value) is list else value
