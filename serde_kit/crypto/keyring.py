"""Keyring: named AES-256 keys, one primary that encrypts, all of them decrypt.

Key ids are public (they are written in every blob's header); key material is
secret and never appears in ``repr``, error messages, pickles or copies.

Formats
-------
Inline, in the environment variable ``SERDE_KIT_KEYRING``::

    SERDE_KIT_KEYRING="k2:<base64 key>,k1:<base64 key>"

Key file, named by ``SERDE_KIT_KEYRING_FILE`` (must be ``chmod 600``): the same
entries, one per line; ``#`` starts a comment; blank lines are ignored::

    # serde_kit keyring - first entry is the primary
    k2:<base64 key>
    k1:<base64 key>

In both, the FIRST entry is the primary (the key new rows are encrypted under);
the others only decrypt.  A key id is 1..64 characters from ``[A-Za-z0-9._-]``;
a key is 32 random bytes written in standard base64 (with ``=`` padding).
``serde-kit keygen`` prints a fresh entry.

The key of LangGraph's own ``EncryptedSerializer`` (environment variable
``LANGGRAPH_AES_KEY``: the raw 16/24/32-character text, not base64) can be held
as ``legacy_key``; it is only ever used to read ``+aes`` rows.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import os
import secrets
import shlex
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from serde_kit.errors import KeyringError, UnknownKeyError

from .blob import LEGACY_KEY_ID, check_key_id
from .secret import SecretBytes, scrubbed

if TYPE_CHECKING:
    from .wrapping import KeyWrapper

__all__ = [
    "ENV_VAR",
    "FILE_ENV_VAR",
    "KEY_SIZE",
    "KMS_ENV_VAR",
    "LEGACY_ENV_VAR",
    "LEGACY_KEY_ID",
    "Keyring",
    "keyring_configured",
    "load_keyring",
]

ENV_VAR = "SERDE_KIT_KEYRING"
FILE_ENV_VAR = "SERDE_KIT_KEYRING_FILE"
LEGACY_ENV_VAR = "LANGGRAPH_AES_KEY"
#: AWS KMS key (id, ARN or alias) that unwraps ``id:kms:...`` entries when no ``kms=`` is given.
KMS_ENV_VAR = "SERDE_KIT_KMS_KEY"
#: The pseudo key id named by errors about ``+aes`` rows (LangGraph's stock format).
KEY_SIZE = 32
#: Marks a key-file entry whose key is wrapped by a KMS: ``id:kms:<base64 wrapped key>``.
WRAPPED_MARK = "kms:"
_LEGACY_SIZES = (16, 24, 32)
_ID_RULE = "1..64 characters from [A-Za-z0-9._-]"
_KEYGEN_HINT = "run `serde-kit keygen` for a fresh entry"


def _check_key(key_id: str, key: object, where: str) -> SecretBytes:
    if isinstance(key, SecretBytes):
        key = key.reveal()
    if not isinstance(key, (bytes, bytearray)):
        raise KeyringError(
            f"key {key_id!r}{where} must be bytes, got {type(key).__name__}"
        )
    if len(key) != KEY_SIZE:
        raise KeyringError(
            f"key {key_id!r}{where} is {len(key)} bytes; AES-256 needs exactly {KEY_SIZE} "
            f"random bytes ({_KEYGEN_HINT})"
        )
    return SecretBytes(key)


def _check_legacy_key(key: object) -> SecretBytes | None:
    if key is None:
        return None
    if isinstance(key, SecretBytes):
        key = key.reveal()
    if not isinstance(key, (bytes, bytearray)):
        raise KeyringError(f"legacy_key must be bytes, got {type(key).__name__}")
    if len(key) not in _LEGACY_SIZES:
        raise KeyringError(
            f"legacy key ({LEGACY_ENV_VAR}) is {len(key)} bytes; LangGraph's "
            "EncryptedSerializer used 16, 24 or 32 bytes: set it to the exact value "
            "the application used"
        )
    return SecretBytes(key)


class Keyring:
    """Named AES-256 keys: ``primary`` encrypts, every key decrypts.

    Immutable: :meth:`with_key`, :meth:`promote` and :meth:`without` return a
    new keyring.  Raises :class:`~serde_kit.errors.KeyringError` for an empty
    keyring, bad ids, keys that are not 32 bytes, or a primary it lacks.
    Pickling and copying are refused (``TypeError``) so key material does not
    travel by accident.
    """

    __slots__ = ("_keys", "_primary", "_legacy")

    def __init__(
        self,
        keys: Mapping[str, bytes | SecretBytes],
        *,
        primary: str,
        legacy_key: bytes | SecretBytes | None = None,
    ) -> None:
        try:
            self._init(keys, primary, legacy_key)
            return
        except BaseException as e:  # any type, not only ours (a KMS plug-in raises its own)
            err = scrubbed(e)
        del keys, legacy_key  # key material: not in the frame the error is raised from
        raise err

    def _init(self, keys: Mapping[str, bytes | SecretBytes], primary: str, legacy_key: object) -> None:
        if not isinstance(keys, Mapping):
            raise KeyringError(f"keys must be a mapping of id to bytes, got {type(keys).__name__}")
        checked: dict[str, SecretBytes] = {}
        for key_id, key in keys.items():
            if not check_key_id(key_id):
                raise KeyringError(f"key id {key_id!r} is not valid: use {_ID_RULE}")
            checked[key_id] = _check_key(key_id, key, "")
        if not checked:
            raise KeyringError(f"keyring is empty: it needs at least one key ({_KEYGEN_HINT})")
        if primary not in checked:
            raise KeyringError(
                f"primary key id {primary!r} is not among the keyring's ids {sorted(checked)}"
            )
        self._keys = checked
        self._primary = primary
        self._legacy = _check_legacy_key(legacy_key)

    # -- construction -----------------------------------------------------------------

    @classmethod
    def generate(cls, key_id: str | None = None) -> Keyring:
        """A keyring holding one new random key (from ``os.urandom``), which is primary.

        The default id is ``k<UTC date>-<time>-<4 hex>``, e.g. ``k20261130-141502-9f3a``.
        """
        if key_id is None:
            now = _dt.datetime.now(_dt.timezone.utc)
            key_id = f"k{now:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
        return cls({key_id: os.urandom(KEY_SIZE)}, primary=key_id)

    @classmethod
    def from_env(
        cls,
        var: str = ENV_VAR,
        *,
        environ: Mapping[str, str] | None = None,
        legacy_var: str | None = LEGACY_ENV_VAR,
        kms: KeyWrapper | None = None,
    ) -> Keyring:
        """Parse the inline keyring in environment variable ``var``.

        Also takes ``legacy_var`` (``LANGGRAPH_AES_KEY``) as the legacy key when it
        is set; pass ``legacy_var=None`` to ignore it.  ``environ`` defaults to
        ``os.environ``.  ``kms`` unwraps ``id:kms:<wrapped>`` entries
        (:mod:`serde_kit.crypto.kms`).  Raises :class:`~serde_kit.errors.KeyringError`
        when the variable is missing or malformed; the error's traceback holds no
        frame with key material.
        """
        try:
            return cls._from_env(var, environ, legacy_var, kms)
        except BaseException as e:  # any type, not only ours (a KMS plug-in raises its own)
            err = scrubbed(e)
        del environ
        raise err

    @classmethod
    def _from_env(
        cls,
        var: str,
        environ: Mapping[str, str] | None,
        legacy_var: str | None,
        kms: KeyWrapper | None,
    ) -> Keyring:
        env = os.environ if environ is None else environ
        text = env.get(var)
        if text is None:
            raise KeyringError(
                f"environment variable {var} is not set: set it to 'id:<base64 key>' entries "
                f"separated by commas, first = primary ({_KEYGEN_HINT})"
            )
        keys, primary = _parse_entries(text, source=f"{var}", kms=kms)
        return cls(keys, primary=primary, legacy_key=_legacy_from_env(env, legacy_var))

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], *, kms: KeyWrapper | None = None
    ) -> Keyring:
        """Read a key file: one ``id:<base64 key>`` per line, ``#`` comments, first = primary.

        Entries ``id:kms:<base64 wrapped key>`` are unwrapped once, here, by
        ``kms``.  Refuses (:class:`~serde_kit.errors.KeyringError`) a missing file,
        one that group or others may read or write (``chmod 600``), one owned by
        another user than the effective one or root, and one whose path as given
        passes through a directory group or others may write (without the sticky
        bit) or another user's directory or symlink: every component is checked
        with ``lstat``, links followed where they point, as ssh's StrictModes does.
        """
        try:
            return cls._from_file(path, kms)
        except BaseException as e:  # any type, not only ours (a KMS plug-in raises its own)
            err = scrubbed(e)
        raise err

    @classmethod
    def _from_file(cls, path: str | os.PathLike[str], kms: KeyWrapper | None) -> Keyring:
        p = Path(path)
        try:
            # O_NONBLOCK: a FIFO in place of the file must not hang us (it fails S_ISREG below).
            fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            raise KeyringError(
                f"key file {str(p)!r} does not exist: point {FILE_ENV_VAR} at an existing "
                f"file or create one ({_KEYGEN_HINT})"
            ) from None
        except OSError as e:
            raise KeyringError(f"cannot open key file {str(p)!r}: {e.strerror}") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise KeyringError(f"key file {str(p)!r} is not a regular file")
            if os.name == "posix":
                _check_file_access(p, st)
            with os.fdopen(fd, "rb", closefd=False) as f:
                raw = f.read()
        except OSError as e:
            raise KeyringError(f"cannot read key file {str(p)!r}: {e.strerror}") from None
        finally:
            os.close(fd)
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            raise KeyringError(
                f"key file {str(p)!r} is not ASCII text: write 'id:<base64 key>' lines"
            ) from None
        keys, primary = _parse_entries(text, source=f"key file {str(p)!r}", kms=kms)
        return cls(keys, primary=primary)

    # -- queries ----------------------------------------------------------------------

    @property
    def primary_id(self) -> str:
        """The id of the key new rows are encrypted under."""
        return self._primary

    @property
    def ids(self) -> list[str]:
        """All key ids, sorted."""
        return sorted(self._keys)

    @property
    def legacy_key(self) -> bytes | None:
        """LangGraph's ``LANGGRAPH_AES_KEY`` bytes, for reading ``+aes`` rows, or None."""
        return None if self._legacy is None else self._legacy.reveal()

    def key(self, key_id: str) -> bytes:
        """The key called ``key_id``; :class:`~serde_kit.errors.UnknownKeyError` if absent."""
        try:
            return self._keys[key_id].reveal()
        except (KeyError, TypeError):
            _unknown(key_id, self.ids)

    def __contains__(self, key_id: object) -> bool:
        return key_id in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    # -- derivation -------------------------------------------------------------------

    def with_key(self, key_id: str, key: bytes, *, primary: bool = False) -> Keyring:
        """A copy with ``key_id`` added (and made primary when ``primary=True``).

        Adding an id that already exists with different key material is refused.
        """
        new: SecretBytes | None = None
        try:
            new = _check_key(key_id, key, "")
        except BaseException as e:  # any type, not only ours (a KMS plug-in raises its own)
            err = scrubbed(e)
        else:
            if key_id not in self._keys or self._keys[key_id] == new:
                keys = {**self._keys, key_id: new}
                return Keyring(
                    keys, primary=key_id if primary else self._primary, legacy_key=self._legacy
                )
            err = KeyringError(
                f"key id {key_id!r} is already in the keyring with different key material; "
                "pick a new id (ids must stay unique forever: old rows name them)"
            )
        del key, new
        raise err

    def promote(self, key_id: str) -> Keyring:
        """A copy whose primary is ``key_id`` (which must already be present)."""
        if key_id not in self._keys:
            _unknown(key_id, self.ids)
        return Keyring(self._keys, primary=key_id, legacy_key=self._legacy)

    def without(self, key_id: str) -> Keyring:
        """A copy without ``key_id``; refuses to remove the primary."""
        if key_id not in self._keys:
            _unknown(key_id, self.ids)
        if key_id == self._primary:
            raise KeyringError(
                f"cannot remove {key_id!r}: it is the primary key; promote another key first"
            )
        keys = {k: v for k, v in self._keys.items() if k != key_id}
        return Keyring(keys, primary=self._primary, legacy_key=self._legacy)

    def with_legacy_key(self, legacy_key: bytes | SecretBytes | None) -> Keyring:
        """A copy holding ``legacy_key`` (LangGraph's ``LANGGRAPH_AES_KEY`` bytes), or none."""
        try:
            return Keyring(self._keys, primary=self._primary, legacy_key=legacy_key)
        except BaseException as e:  # any type, not only ours (a KMS plug-in raises its own)
            err = scrubbed(e)
        del legacy_key
        raise err

    # -- output -----------------------------------------------------------------------

    def _ordered_ids(self) -> list[str]:
        return [self._primary] + [k for k in self.ids if k != self._primary]

    def to_env_value(self) -> str:
        """The inline form for ``SERDE_KIT_KEYRING`` (primary first). Contains secrets."""
        return ",".join(
            f"{k}:{base64.b64encode(self._keys[k].reveal()).decode('ascii')}"
            for k in self._ordered_ids()
        )

    def to_file_text(self, *, kms: KeyWrapper | None = None) -> str:
        """The key-file form :meth:`to_file` writes, primary first. Contains secrets unless ``kms`` wraps them.

        With ``kms`` every key is wrapped (``id:kms:<base64 wrapped key>``).  The
        legacy key is not included (it lives in ``LANGGRAPH_AES_KEY``).
        """
        lines = ["# serde_kit keyring: first entry is the primary. Keep this file chmod 600."]
        if kms is None:
            lines += [
                f"{k}:{base64.b64encode(self._keys[k].reveal()).decode('ascii')}"
                for k in self._ordered_ids()
            ]
        else:
            from .wrapping import wrapped_entry

            lines += [wrapped_entry(k, self._keys[k].reveal(), kms) for k in self._ordered_ids()]
        return "\n".join(lines) + "\n"

    def to_file(self, path: str | os.PathLike[str], *, kms: KeyWrapper | None = None) -> None:
        """Write the key-file form to ``path`` with mode 0600, atomically.

        With ``kms`` every key is written wrapped (``id:kms:<base64 wrapped key>``),
        so the file holds no key in the clear.  The legacy key is not written (it
        lives in ``LANGGRAPH_AES_KEY``).
        """
        p = Path(path)
        data = self.to_file_text(kms=kms).encode("ascii")
        # mkstemp creates the file 0600, so the key never sits in a wider-mode file.
        try:
            fd, tmp = tempfile.mkstemp(prefix=".keyring-", dir=p.parent)
        except OSError as e:
            raise KeyringError(
                f"cannot write key file {str(p)!r}: {e.strerror}; check that the directory "
                "exists and is writable"
            ) from None
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, p)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def __repr__(self) -> str:
        legacy = ", legacy_key=True" if self._legacy is not None else ""
        return f"Keyring(primary={self._primary!r}, ids={self.ids!r}{legacy})"

    # -- refuse to travel -------------------------------------------------------------

    def __reduce_ex__(self, protocol: object) -> NoReturn:
        raise TypeError("Keyring holds secret keys and cannot be pickled")

    def __reduce__(self) -> NoReturn:
        raise TypeError("Keyring holds secret keys and cannot be pickled")

    def __copy__(self) -> NoReturn:
        raise TypeError("Keyring holds secret keys and cannot be copied; it is immutable, share it")

    def __deepcopy__(self, memo: object) -> NoReturn:
        raise TypeError("Keyring holds secret keys and cannot be copied; it is immutable, share it")


def _unknown(key_id: object, ids: list[str]) -> NoReturn:
    raise UnknownKeyError(
        f"key id {key_id!r} is not in the keyring (it has {ids}); add that key to "
        f"{ENV_VAR} / {FILE_ENV_VAR}",
        key_id=str(key_id),
    )


def _entries(text: str) -> Iterable[str]:
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        for part in line.split(","):
            part = part.strip()
            if part:
                yield part


#: Symlinks followed while checking a key file's path (the kernel's own limit is 40).
MAX_SYMLINKS = 40


def _check_file_access(p: Path, st: os.stat_result) -> None:
    """StrictModes for a key file: owner, mode, and every component of its path.

    The file we opened is ``st``.  Its path is then walked as given, one
    component at a time with ``lstat`` (as the kernel resolves it): every
    directory passed through, every symlink followed (and the directories its
    target passes through) must be owned by this user or root, and every
    directory must be closed to writes by group and others unless sticky.
    Whoever can write one of them could re-point the path at another file.
    """
    euid = os.geteuid()
    if st.st_uid not in (euid, 0):
        raise KeyringError(
            f"key file {str(p)!r} is owned by uid {st.st_uid}, not by this process's user "
            f"(uid {euid}) or root; run: chown {euid} {shlex.quote(str(p))}"
        )
    if st.st_mode & 0o077:
        raise KeyringError(
            f"key file {str(p)!r} is readable or writable by group/others "
            f"(mode {st.st_mode & 0o777:o}); run: chmod 600 {shlex.quote(str(p))}"
        )
    final = _walk_path(p, euid)
    if (final.st_dev, final.st_ino) != (st.st_dev, st.st_ino):
        raise KeyringError(
            f"key file {str(p)!r} changed while it was read (its path now names another file); "
            "check who can write the directories on its path, then retry"
        )


def _check_directory(d: str, dst: os.stat_result, p: Path, euid: int) -> None:
    if dst.st_uid not in (euid, 0):
        raise KeyringError(
            f"directory {d!r} on the path of key file {str(p)!r} is owned by uid {dst.st_uid}, "
            f"not by this process's user (uid {euid}) or root; move the key file to a "
            "directory you own"
        )
    if dst.st_mode & 0o022 and not dst.st_mode & stat.S_ISVTX:
        raise KeyringError(
            f"directory {d!r} on the path of key file {str(p)!r} is writable by group/others "
            f"(mode {dst.st_mode & 0o777:o}), who could replace the file or a link to it; "
            f"run: chmod go-w {shlex.quote(d)}, or set {FILE_ENV_VAR} to a path that does not pass through it"
        )


def _lstat(path: str, p: Path) -> os.stat_result:
    try:
        return os.lstat(path)
    except OSError as e:
        raise KeyringError(f"cannot check {path!r} on the path of key file {str(p)!r}: {e.strerror}") from None


def _walk_path(p: Path, euid: int) -> os.stat_result:
    """Resolve ``p`` component by component as the kernel does, checking each; the file's lstat."""
    text = os.fspath(p)
    pending = text.split("/")
    current = "/" if text.startswith("/") else os.getcwd()
    for d in _ancestors(current):  # the directories the relative path starts from
        _check_directory(d, _lstat(d, p), p, euid)
    links = 0
    last: os.stat_result | None = None
    while pending:
        name = pending.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            current = os.path.dirname(current) or "/"  # current is resolved: its parent is real
            last = None
            continue
        path = os.path.join(current, name)
        lst = _lstat(path, p)
        if stat.S_ISLNK(lst.st_mode):
            links += 1
            if links > MAX_SYMLINKS:
                raise KeyringError(f"key file {str(p)!r}: more than {MAX_SYMLINKS} symlinks on its path")
            if lst.st_uid not in (euid, 0):
                raise KeyringError(
                    f"symlink {path!r} on the path of key file {str(p)!r} is owned by uid {lst.st_uid}, "
                    f"not by this process's user (uid {euid}) or root, who could re-point it; "
                    f"set {FILE_ENV_VAR} to the real file's path"
                )
            target = os.readlink(path)
            if target.startswith("/"):
                current = "/"
                _check_directory("/", _lstat("/", p), p, euid)
            pending = target.split("/") + pending
            continue
        if pending and any(part not in ("", ".") for part in pending):
            if not stat.S_ISDIR(lst.st_mode):
                raise KeyringError(f"{path!r} on the path of key file {str(p)!r} is not a directory")
            _check_directory(path, lst, p, euid)
        current = path
        last = lst
    if last is None:
        last = _lstat(current, p)
    return last


def _ancestors(directory: str) -> list[str]:
    """``directory`` (absolute, resolved) and every directory above it, root first."""
    out = [directory]
    while out[-1] != "/":
        out.append(os.path.dirname(out[-1]) or "/")
    return out[::-1]


def _unwrap(key_id: str, rest: str, n: int, source: str, kms: KeyWrapper | None) -> bytes:
    if kms is None:
        raise KeyringError(
            f"{source}: key {key_id!r} (entry {n}) is wrapped by a KMS; load the keyring "
            "with kms=... (for AWS: serde_kit.crypto.kms.AwsKms(key_arn))"
        )
    try:
        wrapped = base64.b64decode(rest[len(WRAPPED_MARK) :].strip(), validate=True)
    except (binascii.Error, ValueError):
        raise KeyringError(
            f"{source}: wrapped key {key_id!r} (entry {n}) is not valid standard base64"
        ) from None
    return kms.unwrap(wrapped, key_id=key_id)


def _parse_entries(
    text: str, *, source: str, kms: KeyWrapper | None = None
) -> tuple[dict[str, SecretBytes], str]:
    """Parse ``id:base64`` entries; messages name entries by position and id, never key bytes."""
    keys: dict[str, SecretBytes] = {}
    primary: str | None = None
    for n, entry in enumerate(_entries(text), start=1):
        key_id, sep, b64 = entry.partition(":")
        key_id, b64 = key_id.strip(), b64.strip()
        if not sep:
            raise KeyringError(
                f"{source}: entry {n} is not of the form 'id:<base64 key>'"
            )
        if not check_key_id(key_id):
            # The id is not echoed: a mangled entry could put key material in its place.
            raise KeyringError(
                f"{source}: entry {n} has an invalid key id; use {_ID_RULE} before the ':'"
            )
        if key_id in keys:
            raise KeyringError(
                f"{source}: key id {key_id!r} appears twice; every id must be unique"
            )
        if b64.startswith(WRAPPED_MARK):
            keys[key_id] = _check_key(
                key_id, _unwrap(key_id, b64, n, source, kms), f" in {source} (entry {n})"
            )
            primary = key_id if primary is None else primary
            continue
        try:
            key = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError):
            raise KeyringError(
                f"{source}: key {key_id!r} (entry {n}) is not valid standard base64 "
                f"(A-Z a-z 0-9 + / with = padding); {_KEYGEN_HINT}"
            ) from None
        keys[key_id] = _check_key(key_id, key, f" in {source} (entry {n})")
        if primary is None:
            primary = key_id
    if primary is None:
        raise KeyringError(
            f"{source} holds no keys: add 'id:<base64 key>' entries, first = primary "
            f"({_KEYGEN_HINT})"
        )
    return keys, primary


def _legacy_from_env(env: Mapping[str, str], var: str | None) -> SecretBytes | None:
    if var is None:
        return None
    text = env.get(var)
    if not text:
        return None
    # LangGraph uses the variable's text itself as the key (key_str.encode()), not base64.
    return _check_legacy_key(text.encode("utf-8"))


def keyring_configured(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment configures a keyring: the one rule :func:`load_keyring`, the tools and the CLI share.

    True when ``SERDE_KIT_KEYRING`` or ``SERDE_KIT_KEYRING_FILE`` is set, even to
    an empty or broken value (:func:`load_keyring` then says what is wrong).
    ``LANGGRAPH_AES_KEY`` alone configures only the legacy key, not a keyring.
    """
    env = os.environ if environ is None else environ
    return ENV_VAR in env or FILE_ENV_VAR in env


def load_keyring(
    *,
    environ: Mapping[str, str] | None = None,
    kms: KeyWrapper | None = None,
    remove_from_environ: bool = False,
) -> Keyring:
    """The application's keyring, from the environment.

    ``SERDE_KIT_KEYRING`` (inline) or ``SERDE_KIT_KEYRING_FILE`` (path to a 0600
    key file) — exactly one of them.  ``LANGGRAPH_AES_KEY``, when set, becomes the
    legacy key for reading rows written by LangGraph's EncryptedSerializer.
    ``kms`` unwraps KMS-wrapped entries (:mod:`serde_kit.crypto.kms`); without
    it, ``SERDE_KIT_KMS_KEY`` (an AWS KMS key id, ARN or alias; region,
    credentials and endpoint from the usual AWS variables) does, so tools that
    call ``load_keyring()`` work unchanged with wrapped keyrings.
    ``remove_from_environ=True`` deletes the three variables from ``environ``
    (``os.environ``: also from the process environment, so subprocesses do not
    inherit them) once the keyring has loaded.
    Raises :class:`~serde_kit.errors.KeyringError` saying what to set; its
    traceback holds no frame with key material.
    """
    try:
        keyring = _load_keyring(environ, kms)
    except BaseException as e:  # any type, not only ours (a KMS plug-in raises its own)
        err = scrubbed(e)
    else:
        if remove_from_environ:
            env = os.environ if environ is None else environ
            for var in (ENV_VAR, FILE_ENV_VAR, LEGACY_ENV_VAR):
                env.pop(var, None)  # type: ignore[attr-defined]
        return keyring
    del environ
    raise err


def _load_keyring(environ: Mapping[str, str] | None, kms: KeyWrapper | None) -> Keyring:
    env = os.environ if environ is None else environ
    if not keyring_configured(env):
        raise KeyringError(
            f"no keyring configured: set {ENV_VAR}='id:<base64 key>' or {FILE_ENV_VAR}=<path "
            f"to a chmod 600 key file>; run `serde-kit keygen` to create a key"
        )
    if ENV_VAR in env and FILE_ENV_VAR in env:
        raise KeyringError(
            f"both {ENV_VAR} and {FILE_ENV_VAR} are set; set only one of them"
        )
    if kms is None and env.get(KMS_ENV_VAR):
        # The one place the keyring reaches a KMS integration: a plug-in edge, imported when asked for.
        from .kms import AwsKms

        kms = AwsKms(env[KMS_ENV_VAR])
    if ENV_VAR in env:
        return Keyring.from_env(ENV_VAR, environ=env, kms=kms)
    path = env[FILE_ENV_VAR]
    if not path.strip():
        raise KeyringError(f"{FILE_ENV_VAR} is set but empty: give the key file's path")
    kr = Keyring.from_file(path, kms=kms)
    return kr.with_legacy_key(_legacy_from_env(env, LEGACY_ENV_VAR))
