"""``keygen``: a new random key, alone or as the new primary of an existing keyring."""

from __future__ import annotations

import tempfile
from pathlib import Path

from serde_kit.crypto import Keyring
from serde_kit.errors import KeyringError

__all__ = ["keyfile_text", "keygen"]


def keygen(key_id: str | None = None, *, extend: Keyring | None = None) -> tuple[str, Keyring]:
    """A new random key; returns ``(key_id, keyring)``.

    With ``extend``, the new key becomes the primary of a copy of that keyring
    (its keys stay, for decrypting old rows), which is what a rotation needs.
    Raises :class:`~serde_kit.errors.KeyringError` if the id is already there.
    """
    new = Keyring.generate(key_id)
    if extend is None:
        return new.primary_id, new
    if new.primary_id in extend:
        raise KeyringError(f"key id {new.primary_id!r} is already in the keyring; choose another --id")
    combined = extend.with_key(new.primary_id, new.key(new.primary_id), primary=True)
    return new.primary_id, combined


def keyfile_text(keyring: Keyring) -> str:
    """The key-file text of ``keyring`` (exactly what ``Keyring.to_file`` writes)."""
    with tempfile.TemporaryDirectory(prefix="serde-kit-keygen-") as d:
        path = Path(d) / "keyring"
        keyring.to_file(path)
        return path.read_text()
