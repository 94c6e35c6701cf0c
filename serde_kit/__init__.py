"""serde_kit: safe, exact, fast serialization and operable encryption for LangGraph savers."""

__version__ = "0.1.0"  # the package version: pyproject.toml reads it from here

from .allowlist import Allowlist as Allowlist
from .crypto import EncryptedSerializer as EncryptedSerializer, Keyring as Keyring, load_keyring as load_keyring
from .errors import (
    BlockedTypeError as BlockedTypeError,
    ConfigError as ConfigError,
    CryptoError as CryptoError,
    DecodeError as DecodeError,
    DecryptionError as DecryptionError,
    EncodeError as EncodeError,
    KeyringError as KeyringError,
    LenientDecodeWarning as LenientDecodeWarning,
    LimitExceededError as LimitExceededError,
    MainModuleTypeWarning as MainModuleTypeWarning,
    MalformedDataError as MalformedDataError,
    PlaintextRefusedError as PlaintextRefusedError,
    RebuildError as RebuildError,
    RowBindingError as RowBindingError,
    SerdeError as SerdeError,
    SerdeWarning as SerdeWarning,
    StoreError as StoreError,
    UnknownKeyError as UnknownKeyError,
    UnknownTagError as UnknownTagError,
)
from .limits import Limits as Limits
from .serializer import Serializer as Serializer

__all__ = [
    "__version__",
    "Allowlist",
    "BlockedTypeError",
    "ConfigError",
    "CryptoError",
    "DecodeError",
    "DecryptionError",
    "EncodeError",
    "EncryptedSerializer",
    "Keyring",
    "KeyringError",
    "LenientDecodeWarning",
    "LimitExceededError",
    "Limits",
    "MainModuleTypeWarning",
    "MalformedDataError",
    "PlaintextRefusedError",
    "RebuildError",
    "RowBindingError",
    "SerdeError",
    "SerdeWarning",
    "Serializer",
    "StoreError",
    "UnknownKeyError",
    "UnknownTagError",
    "load_keyring",
]
