"""Rotation as a table: who can decrypt what at each step of a key rollover."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from serde_kit.crypto import EncryptedSerializer, Keyring, blob_key_id
from serde_kit.errors import UnknownKeyError
from tests.support.crypto_helpers import K1, K2

OLD_PRIMARY = Keyring({"k1": K1}, primary="k1")
BOTH = OLD_PRIMARY.with_key("k2", K2)  # new key added, old still primary
NEW_PRIMARY = BOTH.promote("k2")
OLD_REMOVED = NEW_PRIMARY.without("k1")

STEPS = {
    "old_primary": OLD_PRIMARY,
    "both": BOTH,
    "new_primary": NEW_PRIMARY,
    "old_removed": OLD_REMOVED,
}

# step -> (key id new rows are written under, {row written at step: readable?})
TABLE = {
    "old_primary": ("k1", {"old_primary": True, "both": True, "new_primary": False, "old_removed": False}),
    "both": ("k1", {"old_primary": True, "both": True, "new_primary": True, "old_removed": True}),
    "new_primary": ("k2", {"old_primary": True, "both": True, "new_primary": True, "old_removed": True}),
    "old_removed": ("k2", {"old_primary": False, "both": False, "new_primary": True, "old_removed": True}),
}


@pytest.fixture(scope="module")
def rows() -> dict[str, tuple[str, bytes]]:
    return {
        step: EncryptedSerializer(JsonPlusSerializer(), kr).dumps_typed({"written_at": step})
        for step, kr in STEPS.items()
    }


@pytest.mark.parametrize("reader", list(TABLE))
def test_rotation_table(reader: str, rows: dict[str, tuple[str, bytes]]) -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), STEPS[reader])
    writes_under, readable = TABLE[reader]
    assert blob_key_id(serde.dumps_typed("new")[1]) == writes_under
    for written_at, ok in readable.items():
        row = rows[written_at]
        if ok:
            assert serde.loads_typed(row) == {"written_at": written_at}
        else:
            with pytest.raises(UnknownKeyError) as exc:
                serde.loads_typed(row)
            assert exc.value.key_id == blob_key_id(row[1])


def test_rotating_at_new_primary_makes_old_removed_read_everything(
    rows: dict[str, tuple[str, bytes]],
) -> None:
    rotator = EncryptedSerializer(JsonPlusSerializer(), NEW_PRIMARY)
    rotated = {}
    for step, row in rows.items():
        new = rotator.reencrypt(row)
        if blob_key_id(row[1]) == "k2":
            assert new is None  # already under the primary: decided from the header
            rotated[step] = row
        else:
            assert new is not None and blob_key_id(new[1]) == "k2"
            assert new[0] == row[0]
            rotated[step] = new
    final = EncryptedSerializer(JsonPlusSerializer(), OLD_REMOVED)
    for step, row in rotated.items():
        assert final.loads_typed(row) == {"written_at": step}
        assert final.reencrypt(row) is None  # idempotent


def test_reencrypt_keeps_inner_bytes_exactly(rows: dict[str, tuple[str, bytes]]) -> None:
    before = EncryptedSerializer(JsonPlusSerializer(), BOTH).decrypt_row(rows["old_primary"])
    new = EncryptedSerializer(JsonPlusSerializer(), NEW_PRIMARY).reencrypt(rows["old_primary"])
    assert new is not None
    after = EncryptedSerializer(JsonPlusSerializer(), OLD_REMOVED).decrypt_row(new)
    assert after == before


def test_reencrypt_without_the_old_key_raises(rows: dict[str, tuple[str, bytes]]) -> None:
    with pytest.raises(UnknownKeyError) as exc:
        EncryptedSerializer(JsonPlusSerializer(), OLD_REMOVED).reencrypt(rows["old_primary"])
    assert exc.value.key_id == "k1"
    assert "k1" in str(exc.value) and "SERDE_KIT_KEYRING" in str(exc.value)
