"""The reader's cache of short map keys (``make_key``): a key read from the cache is the
stored key's text, whatever its length and wherever two keys differ.

The cache hashes and compares a key by whole words (the last one overlapping the one
before it): every byte must count in the comparison, and none past the key be read.
"""

from __future__ import annotations

import ormsgpack
import pytest

from .conftest import assert_same_outcome, make_pair


@pytest.mark.parametrize("length", range(1, 27))
def test_keys_differing_in_any_one_byte_stay_apart(length):
    fast, pure = make_pair()
    base = bytes(0x61 + i % 26 for i in range(length))
    rows = []
    for at in range(length):
        other = base[:at] + b"Z" + base[at + 1 :]
        # one key right after the other, and each alone: hits and misses of one slot
        rows.append(ormsgpack.packb({base.decode(): 1, other.decode(): 2}))
        rows.append(ormsgpack.packb({other.decode(): 2}))
        rows.append(ormsgpack.packb([{base.decode(): 1}, {other.decode(): 3}]))
    for _ in range(2):
        for row in rows:
            assert_same_outcome(fast, pure, ("msgpack", row), repr(row[:40]))
            assert fast.loads(row) == pure.loads(row)


def test_a_key_at_the_end_of_the_row_reads_no_byte_past_it():
    fast, pure = make_pair()
    for length in range(1, 27):
        key = "k" * length
        body = ormsgpack.packb(key)
        row = b"\x81\x00" + body  # {0: key}: the key text is the row's last bytes
        row2 = b"\x81" + body + b"\x01"  # {key: 1}
        for data in (row, row2, row2[:-1], row2[:-2]):
            assert_same_outcome(fast, pure, ("msgpack", data), f"{length}")


def test_non_ascii_and_long_keys_are_read_by_text():
    fast, pure = make_pair()
    for key in ("é", "ab€", "x" * 24 + "é", "y" * 25, "z" * 40, "\x00" * 5, ""):
        row = ormsgpack.packb({key: 1, key + "!": 2})
        for _ in range(2):
            assert_same_outcome(fast, pure, ("msgpack", row), repr(key))
