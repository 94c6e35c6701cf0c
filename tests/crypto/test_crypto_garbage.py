"""Arbitrary stored rows: only serde_kit's typed errors come out, classify never raises."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from serde_kit import Serializer
from serde_kit.crypto import EncryptedSerializer, Keyring
from serde_kit.crypto.rows import classify_row
from serde_kit.errors import SerdeError
from tests.support.crypto_helpers import K1, K2, LEGACY_TEXT

SERDE = EncryptedSerializer(
    Serializer(), Keyring({"k1": K1, "k2": K2}, primary="k2", legacy_key=LEGACY_TEXT.encode())
)

tags = st.one_of(
    st.sampled_from(["msgpack+aesgcm", "bytes+aesgcm", "null+aesgcm", "msgpack+aes", "msgpack", "+aesgcm"]),
    st.text(max_size=20),
)
headers = st.one_of(
    st.just(b""),
    st.sampled_from([b"\x01\x02k1", b"\x01\x02k2", b"\x01\x02k9", b"\x01\x40" + b"k" * 64]),
    st.binary(max_size=4),
)
blobs = st.one_of(st.binary(max_size=200), st.tuples(headers, st.binary(max_size=120)).map(b"".join))


@settings(max_examples=400, deadline=None)
@given(tag=tags, blob=blobs)
def test_garbage_rows_raise_only_typed_errors(tag: str, blob: bytes) -> None:
    info = classify_row(tag, blob)
    assert info.kind in {"aesgcm", "legacy", "plaintext", "unknown", "empty"}
    for call in (
        lambda: SERDE.loads_typed((tag, blob)),
        lambda: SERDE.decrypt_row((tag, blob)),
        lambda: SERDE.reencrypt((tag, blob), encrypt_plaintext=True, upgrade_legacy=True),
    ):
        try:
            call()
        except SerdeError:
            pass


@pytest.mark.parametrize("blob", [None, 0, "text", [b"x"]])
@pytest.mark.parametrize("tag", ["msgpack+aesgcm", "msgpack+aes", "msgpack", None, 7])
def test_wrong_python_types_in_rows(tag: object, blob: object) -> None:
    classify_row(tag, blob)
    with pytest.raises(SerdeError):
        SERDE.loads_typed((tag, blob))  # type: ignore[arg-type]


def test_unencodable_or_huge_tags() -> None:
    tag, blob = SERDE.dumps_typed({"a": 1})
    with pytest.raises(SerdeError):
        SERDE.loads_typed(("\udcff+aesgcm", blob))  # lone surrogate: fails authentication
    with pytest.raises(SerdeError) as exc:
        SERDE.loads_typed(("x" * 10_000, b""))
    assert len(str(exc.value)) < 500
