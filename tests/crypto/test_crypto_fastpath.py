"""The one-frame read/write paths of EncryptedSerializer (issue 10): same bytes, same refusals.

``dumps_typed``/``loads_typed`` keep a plan per tag (header, AAD, the cipher's
own methods) once a tag was sealed or opened; large rows are sealed straight into
their output buffer and opened from a memoryview.  These tests pin that the
plans change nothing a reader can see: the wire bytes, fresh nonces (also across
``os.fork``), and every typed refusal once a plan is warm.
"""

from __future__ import annotations

import os
import sys

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from serde_kit import Serializer
from serde_kit.crypto import EncryptedSerializer, Keyring, row_scope
from serde_kit.crypto.blob import NONCE_SIZE, build_header, parse_blob
from serde_kit.crypto.encrypted import _LARGE
from serde_kit.errors import (
    DecryptionError,
    MalformedDataError,
    RowBindingError,
    UnknownKeyError,
    UnknownTagError,
)
from tests.support.crypto_helpers import K1, K2, K3

KEYRING = Keyring({"k1": K1, "k2": K2}, primary="k1")
HEADER = build_header("k1")
# A size on each side of the large-row threshold, and one well past it.
SIZES = [0, 1, 100, _LARGE - 1, _LARGE, _LARGE + 17, 4 * _LARGE + 3]


def _serde(backend: str = "cryptography", keyring: Keyring = KEYRING) -> EncryptedSerializer:
    return EncryptedSerializer(Serializer(), keyring, backend=backend)


def _nonce(blob: bytes) -> bytes:
    return bytes(parse_blob(blob).nonce)


@pytest.mark.parametrize("size", SIZES)
def test_fast_path_rows_are_the_documented_bytes(size: int, backend: str) -> None:
    serde = _serde(backend)
    value = bytes(range(256)) * (size // 256) + bytes(size % 256)
    serde.dumps_typed(b"warm the plan")
    tag, blob = serde.dumps_typed(value)
    assert type(blob) is bytes
    # Sealing the inner bytes again through the pinned-nonce seam, on a serializer
    # that never took the fast path, gives the same bytes.
    inner_tag, inner = Serializer().dumps_typed(value)
    fresh = _serde(backend)
    assert fresh._seal_row(inner_tag, inner, _nonce(blob)) == (tag, blob)
    # And every reader reads it: a fresh serializer, the other backend, this one warm.
    other = "pycryptodome" if backend == "cryptography" else "cryptography"
    for reader in (_serde(backend), _serde(other), serde, serde):
        assert reader.loads_typed((tag, blob)) == value


@pytest.mark.parametrize("size", [10, _LARGE + 5])
def test_bound_fast_path_rows_are_the_documented_bytes(size: int, backend: str) -> None:
    serde = _serde(backend)
    value = b"b" * size
    with row_scope("t-1", "ns"):
        serde.dumps_typed(b"warm")
        tag, blob = serde.dumps_typed(value)
        parsed = parse_blob(blob)
        assert tuple(parsed.binding or ()) == ("t-1", "ns")
        inner_tag, inner = Serializer().dumps_typed(value)
        identity = parsed.binding
        assert identity is not None
        assert _serde(backend)._seal_row(inner_tag, inner, _nonce(blob), identity) == (tag, blob)
        assert _serde(backend).loads_typed((tag, blob)) == value
        assert serde.loads_typed((tag, blob)) == value
    with pytest.raises(RowBindingError):
        serde.loads_typed((tag, blob))


def test_rows_read_by_the_stock_inner_serializer_path_too() -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), KEYRING)
    rows = [serde.dumps_typed({"n": i, "blob": b"x" * (i * 5000)}) for i in range(6)]
    fresh = EncryptedSerializer(JsonPlusSerializer(), KEYRING)
    assert [fresh.loads_typed(r) for r in rows] == [{"n": i, "blob": b"x" * (i * 5000)} for i in range(6)]


def test_nonces_are_fresh_over_many_rows_and_instances() -> None:
    a, b = _serde(), _serde()
    nonces = [_nonce(s.dumps_typed("same value")[1]) for _ in range(5000) for s in (a, b)]
    nonces += [_nonce(a.dumps_typed(b"z" * (_LARGE + 1))[1]) for _ in range(50)]
    assert all(len(n) == NONCE_SIZE for n in nonces)
    assert len(set(nonces)) == len(nonces)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_nonces_are_fresh_across_fork() -> None:
    """A forked child and its parent never seal with the same nonce (state copied by fork)."""
    serde = _serde()
    before = {_nonce(serde.dumps_typed("v")[1]) for _ in range(100)}
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: write its nonces to the pipe and leave without cleanup
        try:
            data = b"".join(_nonce(serde.dumps_typed("v")[1]) for _ in range(2000))
            with os.fdopen(write_end, "wb") as out:
                out.write(data)
        finally:
            os._exit(0)
    os.close(write_end)
    parent = [_nonce(serde.dumps_typed("v")[1]) for _ in range(2000)]
    with os.fdopen(read_end, "rb") as inp:
        raw = inp.read()
    os.waitpid(pid, 0)
    child = [raw[i : i + NONCE_SIZE] for i in range(0, len(raw), NONCE_SIZE)]
    assert len(child) == 2000
    everything = list(before) + parent + child
    assert len(set(everything)) == len(everything)


@pytest.fixture(params=[10, _LARGE + 9], ids=["small", "large"])
def warm(request, backend: str) -> tuple[EncryptedSerializer, tuple[str, bytes], bytes]:
    """A serializer whose read plan for its row's tag is warm, the row, and its value."""
    serde = _serde(backend)
    value = b"v" * request.param
    row = serde.dumps_typed(value)
    assert serde.loads_typed(row) == value
    return serde, row, value


def test_tampering_is_refused_with_a_warm_plan(warm) -> None:
    serde, (tag, blob), _ = warm
    for i in (len(HEADER), len(HEADER) + NONCE_SIZE, len(blob) // 2, len(blob) - 1):
        bad = bytearray(blob)
        bad[i] ^= 0x40
        with pytest.raises(DecryptionError, match="^authentication failed under key id "):
            serde.loads_typed((tag, bytes(bad)))
    with pytest.raises(DecryptionError):
        serde.loads_typed(("json+aesgcm", blob))  # relabelled: the AAD names the inner tag
    with pytest.raises(DecryptionError):
        serde.loads_typed((tag, blob[:-1]))


def test_truncated_rows_stay_malformed_with_a_warm_plan(warm) -> None:
    serde, (tag, blob), _ = warm
    for cut in (len(HEADER) + NONCE_SIZE + 15, len(HEADER) + 3, 1):
        with pytest.raises(MalformedDataError):
            serde.loads_typed((tag, blob[:cut]))


def test_other_keys_and_unknown_keys_with_a_warm_plan(warm) -> None:
    serde, (tag, blob), value = warm
    # A row under the keyring's other key reads (the plan's header does not match it).
    old = _serde(keyring=KEYRING.promote("k2")).dumps_typed(value)
    assert serde.loads_typed(old) == value
    assert serde.loads_typed((tag, blob)) == value
    # A row under a key the keyring lacks is an UnknownKeyError, not an auth failure.
    foreign = _serde(keyring=Keyring({"k3": K3}, primary="k3")).dumps_typed(value)
    with pytest.raises(UnknownKeyError):
        serde.loads_typed(foreign)


def test_the_primary_keys_header_takes_the_read_plan() -> None:
    """Old-key rows read first do not keep the primary's rows off the one-frame path."""
    old = _serde(keyring=KEYRING.promote("k2")).dumps_typed("old")
    tag = old[0]
    reader = _serde()
    assert reader.loads_typed(old) == "old"
    assert reader._open_plans[tag][0] == build_header("k2")
    new = _serde().dumps_typed("new")
    assert reader.loads_typed(new) == "new"
    assert reader._open_plans[tag][0] == HEADER
    assert reader.loads_typed(old) == "old"  # the old key's rows still read
    assert reader._open_plans[tag][0] == HEADER
    writer = _serde()
    writer.loads_typed(old)
    row = writer.dumps_typed("mine")
    assert writer._open_plans[tag][0] == HEADER
    assert writer.loads_typed(row) == "mine"


def test_binding_refusals_hold_with_a_warm_plan(warm) -> None:
    serde, row, value = warm
    with row_scope("t-1", "", require_bound=True):
        with pytest.raises(RowBindingError):
            serde.loads_typed(row)  # a v1 row where bound rows are required
    with row_scope("t-1", ""):
        bound = serde.dumps_typed(value)
        assert serde.loads_typed(row) == value  # v1 rows still read inside a scope
    with pytest.raises(RowBindingError):
        serde.loads_typed(bound)  # a bound row outside a bound call


def test_odd_tags_and_blob_types_with_a_warm_plan(warm) -> None:
    serde, (tag, blob), value = warm
    with pytest.raises(UnknownTagError):
        serde.loads_typed((["msgpack+aesgcm"], blob))  # type: ignore[arg-type]
    with pytest.raises(UnknownTagError):
        serde.loads_typed((tag + "+x", blob))
    with pytest.raises(MalformedDataError):
        serde.loads_typed((tag, "not bytes"))  # type: ignore[arg-type]

    class Tag(str):
        pass

    for stored in (bytearray(blob), memoryview(blob)):
        assert serde.loads_typed((tag, stored)) == value  # type: ignore[arg-type]
    assert serde.loads_typed((Tag(tag), blob)) == value


def test_large_buffers_from_the_inner_serializer_are_sealed_as_their_bytes() -> None:
    class ViewInner:
        def __init__(self, kind: type) -> None:
            self.kind = kind

        def dumps_typed(self, obj: object) -> tuple[str, object]:
            return "bytes", self.kind(bytes(obj))  # type: ignore[call-overload]

        def loads_typed(self, data: tuple[str, bytes]) -> bytes:
            return bytes(data[1])

    value = bytes(range(256)) * (_LARGE // 64)
    expected = None
    for kind in (memoryview, bytearray, bytes):
        serde = EncryptedSerializer(ViewInner(kind), KEYRING)  # type: ignore[arg-type]
        tag, blob = serde.dumps_typed(value)
        tag, blob = serde.dumps_typed(value)  # the second write takes the warm plan
        assert type(blob) is bytes
        assert len(blob) == len(HEADER) + NONCE_SIZE + len(value) + 16
        assert serde.loads_typed((tag, blob)) == value
        resealed = serde._seal_row("bytes", value, _nonce(blob))
        assert resealed == (tag, blob)
        expected = expected or tag
        assert tag == expected == "bytes+aesgcm"


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="CPython's BytesIO buffer sharing")
def test_large_rows_are_one_buffer() -> None:
    """The sealed row is the BytesIO's own bytes: writable views are all released."""
    serde = _serde()
    tag, blob = serde.dumps_typed(b"q" * (_LARGE * 2))
    assert sys.getrefcount(blob) == 2  # only this frame's name (and getrefcount's argument)
    assert serde.loads_typed((tag, blob)) == b"q" * (_LARGE * 2)
