"""Encryption for serde_kit: AES-256-GCM with key ids, a keyring, row binding, KMS-wrapped keys,
and LangGraph's EAX read path."""

from .binding import RowIdentity as RowIdentity, row_scope as row_scope
from .blob import (
    CIPHER_NAME as CIPHER_NAME,
    LEGACY_CIPHER_NAME as LEGACY_CIPHER_NAME,
    blob_binding as blob_binding,
    blob_key_id as blob_key_id,
)
from .encrypted import EncryptedSerializer as EncryptedSerializer
from .keyring import LEGACY_KEY_ID as LEGACY_KEY_ID, Keyring as Keyring, load_keyring as load_keyring
from .kms import AwsKms as AwsKms
from .rows import RowInfo as RowInfo, RowKind as RowKind, classify_row as classify_row
from .secret import SecretBytes as SecretBytes
from .wrapping import KeyWrapper as KeyWrapper

__all__ = [
    "CIPHER_NAME",
    "LEGACY_CIPHER_NAME",
    "LEGACY_KEY_ID",
    "AwsKms",
    "EncryptedSerializer",
    "KeyWrapper",
    "Keyring",
    "RowIdentity",
    "RowInfo",
    "RowKind",
    "SecretBytes",
    "blob_binding",
    "blob_key_id",
    "classify_row",
    "load_keyring",
    "row_scope",
]
