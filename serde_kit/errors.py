"""Every error serde_kit raises on purpose.

Catch :class:`SerdeError` to catch them all, or a subclass to catch one kind.
Each subclass also derives from the nearest builtin, so code written against
plain ``TypeError``/``ValueError`` keeps working::

    SerdeError
    ├── EncodeError (TypeError)          no faithful encoding for a value, or beyond the reader's limit (.limit)
    ├── DecodeError (ValueError)         the stored bytes cannot be turned back into data
    │   ├── MalformedDataError           truncated/garbled bytes, trailing bytes, too deep
    │   ├── UnknownTagError              type tag or ext code we do not know
    │   ├── BlockedTypeError             type not in the allowlist (.module, .name)
    │   ├── RebuildError                 allowed type failed to construct (.module, .name)
    │   └── LimitExceededError           the row exceeds a decode limit (.limit)
    ├── ConfigError (ValueError)         bad allowlist entry / config file / env var
    │   └── KeyringError                 bad key material, ids, key file or primary
    ├── CryptoError (ValueError)
    │   ├── DecryptionError              authentication failed (no detail, on purpose)
    │   ├── UnknownKeyError              header names a key id we lack (.key_id)
    │   ├── PlaintextRefusedError        unencrypted row where encryption is required
    │   └── RowBindingError              bound row read for another thread/namespace or
    │                                    outside a bound saver call; unbound row where
    │                                    binding is required
    └── StoreError (RuntimeError)        the database failed or refused (busy, gone, denied, full)

    SerdeWarning (UserWarning)
    ├── LenientDecodeWarning             lenient mode returned a raw payload instead of a type
    └── MainModuleTypeWarning            a class of the script run directly (__main__) was written
"""

from __future__ import annotations

__all__ = [
    "BlockedTypeError",
    "ConfigError",
    "CryptoError",
    "DecodeError",
    "DecryptionError",
    "EncodeError",
    "KeyringError",
    "LenientDecodeWarning",
    "LimitExceededError",
    "MainModuleTypeWarning",
    "MalformedDataError",
    "PlaintextRefusedError",
    "RebuildError",
    "RowBindingError",
    "SerdeError",
    "SerdeWarning",
    "StoreError",
    "UnknownKeyError",
    "UnknownTagError",
]


class SerdeError(Exception):
    """Base class of every error serde_kit raises on purpose."""


class EncodeError(SerdeError, TypeError):
    """A value has no faithful encoding, or its row would exceed its reader's limit (``.limit``,
    else None); nothing was written."""

    def __init__(self, message: str, *, limit: str | None = None) -> None:
        super().__init__(message)
        self.limit = limit


class DecodeError(SerdeError, ValueError):
    """Stored bytes could not be turned back into the value they hold."""


class MalformedDataError(DecodeError):
    """The bytes are not valid data: truncated, garbled, trailing bytes or too deep."""


class UnknownTagError(DecodeError):
    """A type tag or msgpack ext code this serializer does not know."""


class BlockedTypeError(DecodeError):
    """The data names a type the allowlist does not allow.

    ``module`` and ``name`` say which; the message shows the line that allows it.
    """

    def __init__(self, message: str, *, module: str, name: str) -> None:
        super().__init__(message)
        self.module = module
        self.name = name


class RebuildError(DecodeError):
    """An allowed type was found but could not be constructed from its payload."""

    def __init__(self, message: str, *, module: str, name: str) -> None:
        super().__init__(message)
        self.module = module
        self.name = name


class LimitExceededError(DecodeError):
    """The stored row would cost more than the decode budget allows (see :class:`serde_kit.Limits`).

    ``limit`` names the :class:`~serde_kit.Limits` field; the message says how to raise it.
    """

    def __init__(self, message: str, *, limit: str) -> None:
        super().__init__(message)
        self.limit = limit


class ConfigError(SerdeError, ValueError):
    """Configuration (allowlist entries, config file, environment variable) is invalid."""


class KeyringError(ConfigError):
    """Key material, key ids, a key file or the choice of primary key is invalid."""


class CryptoError(SerdeError, ValueError):
    """Base class for encryption failures."""


class DecryptionError(CryptoError):
    """Authentication failed: wrong key, tampered bytes or a relabelled row.

    The message carries no detail on purpose.
    """


class UnknownKeyError(CryptoError):
    """The blob names a key id that the keyring does not hold (``key_id``)."""

    def __init__(self, message: str, *, key_id: str) -> None:
        super().__init__(message)
        self.key_id = key_id


class PlaintextRefusedError(CryptoError):
    """An unencrypted row was read where encryption is required."""


class RowBindingError(CryptoError):
    """A row's binding does not fit the saver call reading or writing it.

    Raised for a bound row read for another thread or namespace (it was moved
    there), a bound row read outside a bound saver call, and an unbound row read
    where ``require_bound`` is on.
    """


class StoreError(SerdeError, RuntimeError):
    """The database failed or refused an operation; the message says what to do.

    Raised by the tools' database layer for a lost connection, a lock held past
    the timeout, a full disk, a missing permission or a read-only file.  The
    open batch was rolled back, so a rerun resumes where this run stopped.
    ``transient`` is True when simply retrying may succeed (a lock, a deadlock,
    a lost connection).
    """

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class SerdeWarning(UserWarning):
    """Base class of the warnings serde_kit emits."""


class LenientDecodeWarning(SerdeWarning):
    """Lenient mode returned a raw payload in place of a type it could not rebuild."""


class MainModuleTypeWarning(SerdeWarning):
    """A class defined in the script run directly (``__main__``) was written.

    It is stored as ``__main__:Name``, which no other process can import: move the
    class into a module of its own.  Warned once per class and process.
    """
