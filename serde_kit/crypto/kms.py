"""AWS KMS for KMS-wrapped keyrings (envelope encryption): a leaf module, imported by nothing but the door.

A key-file (or ``SERDE_KIT_KEYRING``) entry ``id:kms:<base64 wrapped key>``
holds a 32-byte data key encrypted by a key-encryption key that never leaves
the KMS.  :meth:`Keyring.from_file(path, kms=...) <serde_kit.crypto.Keyring.from_file>`
and :func:`~serde_kit.crypto.load_keyring` unwrap each entry once, at load;
rows are then sealed and opened with the data keys in memory, never with a KMS
call per row.

Any KMS plugs in through :class:`~serde_kit.crypto.wrapping.KeyWrapper` (two
methods).  :class:`AwsKms` is the AWS implementation (``pip install 'serde-kit[kms]'``); it binds the
serde_kit key id into the KMS encryption context, so a wrapped entry moved to
another id does not unwrap.
"""

from __future__ import annotations

from typing import Any

from serde_kit._text import install_hint
from serde_kit.errors import ConfigError, KeyringError

from .wrapping import (
    KeyWrapper as KeyWrapper,  # where it was first defined
    wrapped_entry as wrapped_entry,
)

__all__ = ["CONTEXT_KEY", "AwsKms", "KeyWrapper", "wrapped_entry"]

#: The encryption-context entry naming the serde_kit key id a data key belongs to.
CONTEXT_KEY = "serde_kit_key_id"


class AwsKms:
    """AWS KMS as a :class:`KeyWrapper`, through boto3.

    ``key_id`` is the KMS key (id, ARN or ``alias/...``) that wraps new keys and
    that unwrapping is pinned to.  ``client`` is a boto3 KMS client; without one
    it is built from ``region_name``/``endpoint_url`` and the usual AWS
    credentials chain.  Raises :class:`~serde_kit.errors.ConfigError` if boto3
    is missing.
    """

    def __init__(
        self,
        key_id: str,
        *,
        client: Any = None,
        region_name: str | None = None,
        endpoint_url: str | None = None,
    ) -> None:
        if not isinstance(key_id, str) or not key_id:
            raise ConfigError("AwsKms needs the KMS key id, ARN or alias that wraps the keys")
        try:
            import boto3
            import botocore.exceptions
        except ImportError:
            raise ConfigError(
                "AWS KMS keyrings need boto3: " + install_hint("kms")
            ) from None
        self._errors = (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError)
        self.key_id = key_id
        try:
            self._client = client or boto3.client(
                "kms", region_name=region_name, endpoint_url=endpoint_url
            )
        except self._errors as exc:
            raise ConfigError(
                f"could not set up the AWS KMS client ({type(exc).__name__}): set AWS_REGION "
                "(or AWS_DEFAULT_REGION, or region_name=) and the usual AWS credentials"
            ) from None

    def __repr__(self) -> str:
        return f"AwsKms(key_id={self.key_id!r})"

    def _fail(self, action: str, key_id: str, error: BaseException) -> KeyringError:
        code = getattr(error, "response", {}).get("Error", {}).get("Code") or type(error).__name__
        return KeyringError(
            f"AWS KMS could not {action} key {key_id!r} with KMS key {self.key_id!r} ({code}); "
            "check the KMS key, the region and this process's kms:Encrypt/kms:Decrypt permission"
        )

    def wrap(self, key: bytes, *, key_id: str) -> bytes:
        """Encrypt ``key`` under the KMS key, with ``key_id`` in the encryption context."""
        try:
            out = self._client.encrypt(
                KeyId=self.key_id, Plaintext=bytes(key), EncryptionContext={CONTEXT_KEY: key_id}
            )
        except self._errors as e:
            raise self._fail("wrap", key_id, e) from None
        return bytes(out["CiphertextBlob"])

    def unwrap(self, wrapped: bytes, *, key_id: str) -> bytes:
        """Decrypt a wrapped data key; :class:`~serde_kit.errors.KeyringError` if KMS refuses."""
        try:
            out = self._client.decrypt(
                CiphertextBlob=bytes(wrapped),
                KeyId=self.key_id,
                EncryptionContext={CONTEXT_KEY: key_id},
            )
        except self._errors as e:
            raise self._fail("unwrap", key_id, e) from None
        return bytes(out["Plaintext"])
