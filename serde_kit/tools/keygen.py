"""``keygen``: a new random key, alone or as the new primary of an existing keyring.

With a KMS (:mod:`serde_kit.crypto.kms`) the keys are returned only wrapped
(envelope encryption): the data key never appears in the clear in the output.
"""

from __future__ import annotations

from serde_kit.crypto import Keyring
from serde_kit.crypto.wrapping import KeyWrapper, wrapped_entry
from serde_kit.errors import KeyringError

__all__ = ["generate_wrapped_entry", "keygen", "keygen_wrapped"]


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


def keygen_wrapped(
    kms: KeyWrapper, key_id: str | None = None, *, extend: Keyring | None = None
) -> tuple[str, list[str]]:
    """A new random key wrapped by ``kms``; returns ``(key_id, entries)``, primary first.

    Each entry is ``id:kms:<base64 wrapped key>``.  With ``extend``, the new key
    is the primary and every key of ``extend`` follows, wrapped too.  One KMS
    call per key.  Raises :class:`~serde_kit.errors.KeyringError` when the id
    is taken or the KMS refuses.
    """
    if extend is None:
        entry = generate_wrapped_entry(kms, key_id)
        return entry.split(":", 1)[0], [entry]
    new_id, keyring = keygen(key_id, extend=extend)
    text = keyring.to_file_text(kms=kms)
    return new_id, [line for line in text.splitlines() if line and not line.startswith("#")]


def generate_wrapped_entry(kms: KeyWrapper, key_id: str | None = None) -> str:
    """A new random data key, returned only wrapped, as a keyring entry (for ``keygen --kms-key``).

    The id defaults as in :meth:`Keyring.generate <serde_kit.crypto.Keyring.generate>`.
    """
    keyring = Keyring.generate(key_id)
    return wrapped_entry(keyring.primary_id, keyring.key(keyring.primary_id), kms)
