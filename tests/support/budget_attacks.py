"""Hostile rows, one builder per attack class of the decode budget.

Shared by tests/test_decode_budget.py (each must end in a typed error) and
bench/attacks.py (each must cost time and memory linear in its size).
"""

from __future__ import annotations

import itertools
import json
import math
import random
import struct
import uuid

import ormsgpack

OPT = ormsgpack.OPT_NON_STR_KEYS
_MASK = (1 << 64) - 1
_XX1, _XX2, _XX5 = 11400714785074694791, 14029467366897019727, 2870177450012600261


def pack(value: object) -> bytes:
    return ormsgpack.packb(value, option=OPT)


def ext(code: int, payload: object) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, pack(payload))


def row(code: int, payload: object) -> bytes:
    return pack(ext(code, payload))


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _rotr(x: int, r: int) -> int:
    return ((x >> r) | (x << (64 - r))) & _MASK


def _mix(acc: int, lane: int) -> int:
    # One step of CPython's (3.8+, 64-bit) tuple hash: it is not keyed per process.
    return (_rotl((acc + lane * _XX2) & _MASK, 31) * _XX1) & _MASK


def colliding_int_pairs(count: int, prefix: tuple[int, ...] = ()) -> list[tuple[int, int]]:
    """``count`` distinct int pairs whose tuples (after ``prefix``, small ints) all hash
    like ``prefix + (1, 2)``."""
    start = _XX5
    for lane in prefix:
        start = _mix(start, lane)
    want = _rotr((_mix(_mix(start, 1), 2) * pow(_XX1, -1, 1 << 64)) & _MASK, 31)
    inverse = pow(_XX2, -1, 1 << 64)
    pairs: list[tuple[int, int]] = []
    a = 0
    while len(pairs) < count:
        b = (want - _mix(start, a)) * inverse & _MASK
        if b < (1 << 61) - 1:  # hash(b) == b, and b fits msgpack's uint64
            pairs.append((a, b))
        a += 1
    return pairs


def fraction_exponent() -> bytes:
    return row(0, ["fractions", "Fraction", "1e999999999"])


def fraction_kwargs() -> bytes:
    return row(2, ["fractions", "Fraction", {"numerator": "1e999999999"}])


def fraction_json() -> bytes:
    return json.dumps({"lc": 2, "type": "constructor", "id": ["fractions", "Fraction"], "args": ["1e999999999"]}).encode()


def big_int(hex_digits: int) -> ormsgpack.Ext:
    return ext(1, ["builtins", "int", ["f" * hex_digits, 16]])


def fraction_gcd(hex_digits: int = 400_000) -> bytes:
    return row(1, ["fractions", "Fraction", [big_int(hex_digits), big_int(hex_digits - 1)]])


def _chunk_fields(args_length: int) -> dict:
    return {
        "content": "",
        "tool_call_chunks": [
            {"name": "f", "args": '{"a"' + " " * args_length, "id": "1", "index": 0, "type": "tool_call_chunk"}
        ],
    }


def chunk_ext5(args_length: int = 40_000) -> bytes:
    return row(5, ["langchain_core.messages.ai", "AIMessageChunk", _chunk_fields(args_length), "model_validate_json"])


def chunk_ext2(args_length: int = 40_000) -> bytes:
    return row(2, ["langchain_core.messages.ai", "AIMessageChunk", _chunk_fields(args_length)])


def chunk_lc1(args_length: int = 40_000) -> bytes:
    envelope = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "AIMessageChunk"],
        "kwargs": _chunk_fields(args_length),
    }
    return json.dumps(envelope).encode()


def numpy_long_shape(dims: int = 60_000) -> bytes:
    return row(6, ["<f8", [1] * dims, "C", b"\0" * 8])


def numpy_huge_shape(dims: int = 300) -> bytes:
    return row(6, ["<f8", [2**64 - 1] * dims, "C", b""])


def numpy_void(size: int = 1 << 30) -> bytes:
    return row(0, ["numpy", "void", size])


def numpy_zero_itemsize(count: int = 1 << 20) -> bytes:
    return row(6, ["|S0", [count], "C", b""])


def regex_classes(length: int = 8192, flags: int = 2) -> bytes:
    unit = "[\x00-\U0010ffff]"
    return row(1, ["re", "compile", [unit * (length // len(unit)), flags]])


def regex_debug() -> bytes:
    return row(1, ["re", "compile", ["a", 128]])


def flood_entries(count: int = 20_000) -> bytes:
    """The msgpack entries of a map whose ``count`` keys are int pairs sharing one hash.

    Written entry by entry: building that dict in Python first would itself be the
    quadratic flood.
    """
    return b"".join(pack(list(pair)) + pack(0) for pair in colliding_int_pairs(count))


def map16(count: int, entries: bytes) -> bytes:
    return b"\xde" + count.to_bytes(2, "big") + entries


def flood_map(count: int = 20_000) -> bytes:
    return map16(count, flood_entries(count))


def flood_frozenset(count: int = 20_000) -> bytes:
    return row(0, ["builtins", "frozenset", [list(pair) for pair in colliding_int_pairs(count)]])


def flood_big_ints(count: int = 20_000) -> bytes:
    prime = (1 << 61) - 1
    items = [ext(1, ["builtins", "int", [format(k * prime, "x"), 16]]) for k in range(1, count + 1)]
    return row(0, ["builtins", "set", items])


def flood_uuids(count: int = 30_000) -> bytes:
    prime = (1 << 61) - 1
    items = [ext(0, ["uuid", "UUID", uuid.UUID(int=k * prime + 7).hex]) for k in range(1, count + 1)]
    return row(0, ["builtins", "frozenset", items])


def flood_uuid_keys(count: int = 30_000) -> bytes:
    """A plain map whose keys are typed values (UUID exts) sharing one hash."""
    prime = (1 << 61) - 1
    keys = [pack(ext(0, ["uuid", "UUID", uuid.UUID(int=k * prime + 7).hex])) for k in range(1, count + 1)]
    return b"\xdf" + count.to_bytes(4, "big") + b"".join(key + b"\x00" for key in keys)


def exts_at_depth(depth: int = 6, count: int = 100_000) -> bytes:
    """``count`` three-byte exts (delta snapshots of 1) inside ``depth`` nested tuples."""
    data = b"\xdd" + count.to_bytes(4, "big") + b"\xd4\x07\x01" * count
    for _ in range(depth):
        envelope = pack("builtins")
        data = b"\x93" + envelope + pack("tuple") + b"\x91" + data
        data = _ext_bytes(0, data)
    return data


def _ext_bytes(code: int, payload: bytes) -> bytes:
    return b"\xc9" + len(payload).to_bytes(4, "big") + bytes([code]) + payload


def deep_in_every_level(levels: int = 6, arrays: int = 1000) -> bytes:
    """Arrays nested ``arrays`` deep inside each of ``levels`` nested tuples (a ~7 KB row)."""
    data = pack(1)
    for _ in range(levels):
        inner = b"\x91" * arrays + data
        data = _ext_bytes(0, b"\x93" + pack("builtins") + pack("tuple") + b"\x91" + inner)
    return data


def empty_maps(size: int) -> bytes:
    """An array of ``size`` empty maps: ~75 bytes of dicts per stored byte."""
    return b"\xdd" + size.to_bytes(4, "big") + b"\x80" * size


def forged_names(length: int = 1 << 20) -> bytes:
    return row(0, ["evil\n2026-12-01 INFO audit PASSED\x1b[2J", "X" * length, 1])


# --- issue 19: names, meters, unvalidated models -------------------------------

#: (ext code, module, subscripted name, argument): standard types under a name form
#: their fixed rebuilders do not know.
SUBSCRIPTED_STANDARD = [
    (0, "fractions", "Fraction[x]", "1e999999999"),
    (0, "numpy", "void[x]", 1 << 30),
    (1, "re", "compile[x]", ["a", 128]),
    (0, "builtins", "SystemExit[x]", "boom"),
    (1, "decimal", "Decimal[x]", ["1e999999999"]),
]


def subscripted_standard(code: int, module: str, name: str, arg: object) -> bytes:
    return row(code, [module, name, arg])


def subscripted_fraction_json() -> bytes:
    return json.dumps(
        {"lc": 2, "type": "constructor", "id": ["fractions", "Fraction[x]"], "args": ["1e999999999"]}
    ).encode()


def distinct_message_names(count: int = 6000) -> bytes:
    """``count`` AIMessages, each under its own subscripted name."""
    fields = {"content": "hi", "type": "ai"}
    return pack([ext(5, ["langchain_core.messages.ai", f"AIMessage[{i}]", fields, "model_validate_json"]) for i in range(count)])


def flood_long_keys(count: int = 1999, length: int = 100) -> bytes:
    """A map of ``count`` (fewer than the prescan's flood size) tuple keys of ``length``
    ints sharing one hash: every insertion compares the whole shared prefix."""
    prefix = tuple(range(length - 2))
    # Keys whose numbers hold no byte the prefilter looks for (0xff timestamps, map and
    # array headers): only the map's own header and its keys' headers remain.
    stray = set(range(0x90, 0xA0)) | {0xDC, 0xDD, 0xDE, 0xDF, 0xFF}
    keys = [key for pair in colliding_int_pairs(3 * count, prefix) if not stray & set(pack(list(pair))[1:]) and b"\xff" not in (key := pack([*prefix, *pair]))]
    return map16(count, b"".join(key + pack(0) for key in keys[:count]))


def regex_many(count: int = 16) -> bytes:
    """``count`` distinct IGNORECASE patterns, each within the per-pattern limits."""
    unit = "[\x00-\U0010ffff]"
    return pack([ext(1, ["re", "compile", [unit * 16 + str(i), 2]]) for i in range(count)])


def partial_json_many(count: int = 10, args_length: int = 4096 - 4) -> bytes:
    return pack([ext(2, ["langchain_core.messages.ai", "AIMessageChunk", _chunk_fields(args_length)]) for _ in range(count)])


def fraction_many(count: int = 4, digits: int = 99_000) -> bytes:
    import random

    rng = random.Random(7)
    hex_digits = int(digits / 1.2042)
    parts = [[big_int_of(rng.getrandbits(4 * hex_digits)), big_int_of(rng.getrandbits(4 * hex_digits - 8))] for _ in range(count)]
    return pack([ext(1, ["fractions", "Fraction", pair]) for pair in parts])


def big_int_of(value: int) -> ormsgpack.Ext:
    return ext(1, ["builtins", "int", [format(value, "x"), 16]])


def json_empty_objects(count: int) -> bytes:
    return b"[" + b",".join([b"{}"] * count) + b"]"


# Models a plaintext-row writer may store with fields that fail validation.
import typing as _typing  # noqa: E402

import pydantic as _pydantic  # noqa: E402


class Approval(_pydantic.BaseModel):
    """A four-eyes approval: amount positive, a known kind, two different approvers."""

    model_config = _pydantic.ConfigDict(extra="allow")
    _is_admin: bool = _pydantic.PrivateAttr(False)
    amount: _pydantic.PositiveInt
    kind: _typing.Literal["refund", "credit"]
    maker: str
    checker: str

    @_pydantic.model_validator(mode="after")
    def four_eyes(self) -> "Approval":
        if self.maker == self.checker:
            raise ValueError("maker and checker must differ")
        return self


class Ledger(_pydantic.BaseModel):
    approval: Approval


def model_row(cls: type, fields: dict) -> bytes:
    return row(5, [cls.__module__, cls.__qualname__, fields, "model_validate_json"])


GOOD_APPROVAL = {"amount": 5, "kind": "refund", "maker": "ann", "checker": "bob"}
#: (what is bypassed, the stored fields, the first failing field)
UNVALIDATED_APPROVALS = [
    ("PositiveInt", {**GOOD_APPROVAL, "amount": -5}, "amount"),
    ("Literal", {**GOOD_APPROVAL, "kind": "wire"}, "kind"),
    ("model_validator", {**GOOD_APPROVAL, "checker": "ann"}, "maker and checker"),
    ("required field", {k: v for k, v in GOOD_APPROVAL.items() if k != "checker"}, "checker"),
]


def token_ids_with_an_int_key(count: int = 240_000) -> bytes:
    """An honest-looking row: ``{1: [token ids]}``, ids of every width, some holding 0xff
    bytes (a ~715 KB list)."""
    import random

    rng = random.Random(5)
    ids: list[int] = []
    while len(ids) < count:
        token = rng.randrange(1 << rng.choice((7, 8, 16, 17)))
        # No stray map or array16/32 header bytes: those make any row a flood candidate.
        if not {0xDC, 0xDD, 0xDE, 0xDF} & set(token.to_bytes(4, "big")):
            ids.append(token)
    return pack({1: ids})


def deep_with_timestamp_bait(depth: int = 1000) -> bytes:
    """Arrays nested ``depth`` deep beside 0xff bytes: the prescan's exact timestamp
    check reads it with ormsgpack, which recurses on the C stack."""
    return b"\x92" + b"\x91" * depth + b"\x01" + pack(b"\xff" * 100)


def deep_with_long_key_bait(depth: int = 1000) -> bytes:
    """Arrays nested ``depth`` deep beside a big map and array16 headers: the prescan's
    string-keys check reads it with ormsgpack."""
    big_map = b"\xde" + (70).to_bytes(2, "big") + b"".join(pack(f"k{i}") + b"\x00" for i in range(70))
    arrays = b"\xdc" + (70).to_bytes(2, "big") + b"\xdc\x00\x00" * 70
    return b"\x94" + big_map + b"\x91" * depth + b"\x01" + arrays + pack("x" * 6000)


# --- floods the byte-level prefilter once let through ---------------------------

#: Bytes the prescan's C-speed prefilter looks for (timestamps, map and array headers):
#: an attacker keeps them out of the numbers so that only the map's own header is left.
_PREFILTER_BYTES = set(range(0x90, 0xA0)) | {0xDC, 0xDD, 0xDE, 0xDF, 0xFF}


def colliding_keys_after(prefix: tuple, count: int) -> list[tuple]:
    """``count`` distinct keys ``prefix + (a, b)`` sharing one hash, whose numbers hold no
    byte of _PREFILTER_BYTES. ``prefix`` holds values whose hash is not keyed per
    process: ``""`` and ``b""`` hash to 0, like the int 0."""
    lanes = tuple(hash(item) for item in prefix)
    keys = []
    for a, b in colliding_int_pairs(12 * count, lanes):
        if not _PREFILTER_BYTES & set(pack([a, b])[1:]):
            keys.append((*prefix, a, b))
            if len(keys) == count:
                return keys
    raise AssertionError("not enough clean pairs")


def flood_keys_led_by_empty_text(count: int = 20_000) -> bytes:
    """A map of ``count`` keys ``("", a, b)`` sharing one hash: no key starts with a
    number, so a prefilter counting array headers followed by a number misses it."""
    entries = b"".join(pack(list(key)) + pack(0) for key in colliding_keys_after(("",), count))
    return b"\xdf" + count.to_bytes(4, "big") + entries


def flood_map_declaring_more_than_it_holds(count: int = 20_000) -> bytes:
    """A map32 header declaring far more entries than the row holds, then ``count``
    colliding entries: the engine builds them all before it finds the row truncated."""
    entries = b"".join(pack(list(key)) + pack(0) for key in colliding_keys_after((), count))
    return b"\xdf" + (10**9).to_bytes(4, "big") + entries


def map_of(keys: list, header: bytes | None = None) -> bytes:
    """A map (map16 header) of ``keys``, each with the value 0, written entry by entry."""
    return b"\xde" + len(keys).to_bytes(2, "big") + b"".join(pack(list(key)) + pack(0) for key in keys)


def small_flood_map(count: int = 1999, prefix: tuple = ()) -> bytes:
    """A map of ``count`` short colliding keys (fewer than the 2,000 entries the prefilter
    once required): ~0.1 s for a 30 KB row, quadratic in ``count``."""
    return map_of(colliding_keys_after(prefix, count))


def many_small_flood_maps(maps: int = 40, count: int = 300) -> bytes:
    """An array of ``maps`` maps of ``count`` colliding keys each (the same keys in each:
    every map is its own dict, so each costs its own quadratic build)."""
    one = small_flood_map(count)
    return b"\xdc" + maps.to_bytes(2, "big") + one * maps


def small_flood_uuid_keys(count: int = 200) -> bytes:
    """A map of ``count`` UUID keys sharing one hash (each compared in Python)."""
    prime = (1 << 61) - 1
    keys = [pack(ext(0, ["uuid", "UUID", uuid.UUID(int=k * prime + 7).hex])) for k in range(1, count + 1)]
    return b"\xde" + count.to_bytes(2, "big") + b"".join(key + b"\x00" for key in keys)


def long_colliding_keys(count: int, length: int = 300) -> list[list[int]]:
    """``count`` keys of ``length`` ints (a shared prefix of 3-byte ints, each a new object
    when decoded, then a colliding pair): every pair compares the whole prefix."""
    prefix = tuple(range(1000, 1000 + length - 2))
    return [[*prefix, a, b] for a, b in colliding_int_pairs(count, prefix)[:count]]


def maps_of_long_colliding_keys(maps: int = 10, count: int = 64, length: int = 300, header: int = 0xDE) -> bytes:
    """An array of ``maps`` maps of ``count`` (at most ``max_hash_collisions``) long keys
    sharing one hash: no map breaks the collision limit, but pairs x key length costs far
    more per stored byte than an honest row (issue 19, round 3)."""
    keys = long_colliding_keys(count, length)
    entries = b"".join(pack(key) + pack(0) for key in keys)
    if header == 0xDE:
        one = b"\xde" + count.to_bytes(2, "big") + entries
    elif header == 0xDF:
        one = b"\xdf" + count.to_bytes(4, "big") + entries
    else:
        one = bytes([0x80 | count]) + entries  # a fixmap: count at most 15
    return b"\xdd" + maps.to_bytes(4, "big") + one * maps


def in_tuple_ext(inner: bytes) -> bytes:
    """``inner`` (stored msgpack) as the one item of a typed tuple (an ext 0 envelope)."""
    payload = b"\x93" + pack("builtins") + pack("tuple") + b"\x91" + inner
    return b"\xc9" + len(payload).to_bytes(4, "big") + b"\x00" + payload


# --- floats as map keys (issue 19, round 3) -------------------------------------------
# A double is m * 2**e (m odd, below 2**53; e from -1074 while e + bitlen(m) <= 1024) and
# hashes as m * 2**(e mod 61) mod 2**61-1, that is m's 61-bit word rotated left by e mod 61:
# not keyed per process. The doubles of one hash h are, for every rotation k of h whose
# 61-bit word is odd and below 2**53 (a set bit with 8 clear bits above it, cyclically),
# m = h rotated right by k with each exponent e = k (mod 61) in range: ~34 of them. At
# most six set bits of 61 can each have 8 clear bits above them (6 * 9 <= 61 < 7 * 9), and
# any other set bit only lengthens the mantissas (fewer exponents): so the largest groups
# are the six-bit words with gaps of 9 or more, and counting all of them (every gap
# pattern, every rotation: :func:`largest_float_group` with ``gap`` 9) gives 202 at most.
_MODULUS = (1 << 61) - 1
_SIX_BITS_9_APART = sum(1 << (9 * i) for i in range(6))


def _rotr61(word: int, shift: int) -> int:
    return ((word >> shift) | (word << (61 - shift))) & _MODULUS


def doubles_with_hash(word: int) -> list[float]:
    """Every positive double whose hash is ``word`` (0 < word < 2**61 - 1), ascending."""
    found = []
    for shift in range(61):
        mantissa = _rotr61(word, shift)
        if mantissa & 1 and mantissa < (1 << 53):
            exponent = -1074 + (shift + 1074) % 61
            while exponent + mantissa.bit_length() <= 1024:
                found.append(math.ldexp(mantissa, exponent))
                exponent += 61
    return sorted(found)


def largest_float_group(gap: int) -> int:
    """The most distinct doubles sharing one hash value among the six-bit words whose set
    bits are ``gap`` or more apart: with ``gap`` 9, every candidate (see above), so 202."""
    best = 0
    for gaps in itertools.product(range(gap, 61 - 5 * gap + 1), repeat=5):
        if 61 - sum(gaps) < gap:
            continue
        word = sum(1 << bit for bit in itertools.accumulate((0, *gaps)))
        for shift in range(61):
            best = max(best, len(doubles_with_hash(_rotr61(word, shift))))
    return best


def colliding_floats(count: int, word: int = _SIX_BITS_9_APART) -> list[float]:
    """``count`` distinct doubles (at most 202) that all hash as ``word``."""
    found = doubles_with_hash(word)
    if count > len(found):
        raise ValueError(f"only {len(found)} doubles hash as {word:#x}")
    return found[:count]


def float_key_entries(keys: list[float]) -> bytes:
    """The entries of a map whose keys are ``keys`` (float64), each with the value 0."""
    return b"".join(b"\xcb" + struct.pack(">d", key) + b"\x00" for key in keys)


def float_key_map(keys: list[float], header: int = 0xDE) -> bytes:
    """A map of float ``keys`` behind a map16 (0xde), map32 (0xdf) or fixmap (0x80) header."""
    entries = float_key_entries(keys)
    if header == 0xDE:
        return b"\xde" + len(keys).to_bytes(2, "big") + entries
    if header == 0xDF:
        return b"\xdf" + len(keys).to_bytes(4, "big") + entries
    assert len(keys) <= 15
    return bytes([0x80 | len(keys)]) + entries


def float_flood_map(count: int = 202, header: int = 0xDE) -> bytes:
    """One map of ``count`` float keys sharing one hash."""
    return float_key_map(colliding_floats(count), header)


def many_float_flood_maps(maps: int = 1000, count: int = 64, header: int = 0xDE) -> bytes:
    """An array of ``maps`` maps of ``count`` (at most ``max_hash_collisions``) float keys
    sharing one hash: no map breaks the collision limit, every map costs its own
    quadratic build. ``header`` 0x80 makes fixmaps (``count`` at most 15)."""
    one = float_key_map(colliding_floats(count), header)
    return b"\xdd" + maps.to_bytes(4, "big") + one * maps


def honest_float_maps(maps: int = 1000, count: int = 64, header: int = 0xDE, seed: int = 19) -> bytes:
    """:func:`many_float_flood_maps` with random float keys: the honest row of its size."""
    rng = random.Random(seed)
    parts = [float_key_map([rng.uniform(-1e6, 1e6) for _ in range(count)], header) for _ in range(maps)]
    return b"\xdd" + maps.to_bytes(4, "big") + b"".join(parts)


def after_padding(inner: bytes, padding: int = 100_000) -> bytes:
    """``inner`` after a long string in a two-item array (the map far into the row)."""
    return b"\x92" + pack("x" * padding) + inner


def msgpack_ints_with_hash(value: int) -> list[int]:
    """Every msgpack int (-2**63 to 2**64 - 1) whose hash is ``value``."""
    found = []
    for residue in {abs(value), 1} if value == -2 else {abs(value)}:
        step = residue
        while step < 1 << 64:
            if hash(step) == value and step < 1 << 64:
                found.append(step)
            if -step >= -(1 << 63) and hash(-step) == value:
                found.append(-step)
            step += _MODULUS
    return sorted(set(found))


# --- the candidate check's descent (issue 19, round 4) -------------------------------------
# Real map16 headers the check must find by descending through every container on the way:
# the most candidates a row may have (128, from 61 KB up), each on a path of its own.


def _sixteen_int_entries() -> bytes:
    return b"\xde\x00\x10" + b"".join(bytes([i, i]) for i in range(16))


def real_maps_at_depth(depth: int = 30, maps: int = 128, pad: int = 62_000) -> bytes:
    """``[pad bytes, [m1, ..., m128]]`` where each map of 16 int entries sits at the bottom
    of ``depth`` one-item arrays of its own."""
    chain = _sixteen_int_entries()
    for _ in range(depth):
        chain = b"\x91" + chain
    body = chain * maps
    filler = b"\x00" * max(0, pad - len(body))
    return b"\x92\xc6" + len(filler).to_bytes(4, "big") + filler + b"\xdc" + maps.to_bytes(2, "big") + body


def real_maps_in_long_arrays(maps: int = 128, items: int = 2000) -> bytes:
    """``maps`` arrays of ``items`` nils, each ending with a map of 16 int entries."""
    one = b"\xdd" + (items + 1).to_bytes(4, "big") + b"\xc0" * items + _sixteen_int_entries()
    return b"\xdc" + maps.to_bytes(2, "big") + one * maps


def zone_keys(keys: list[str]) -> bytes:
    """An array of ZoneInfo exts (ext 0, ``["zoneinfo", "ZoneInfo", key]``), one per key."""
    exts = []
    for key in keys:
        payload = pack(["zoneinfo", "ZoneInfo", key])
        exts.append(b"\xc8" + len(payload).to_bytes(2, "big") + b"\x00" + payload)
    return b"\xdd" + len(exts).to_bytes(4, "big") + b"".join(exts)
