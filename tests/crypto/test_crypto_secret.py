"""Keys out of reach: redacted holders, errors whose frames hold no key, strict key files, env removal."""

from __future__ import annotations

import base64
import copy
import functools
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from serde_kit import Serializer
from serde_kit.crypto import EncryptedSerializer, Keyring, load_keyring
from serde_kit.crypto.secret import SecretBytes
from serde_kit.errors import (
    ConfigError,
    DecryptionError,
    KeyringError,
    MalformedDataError,
    SerdeError,
    UnknownKeyError,
)
from tests.support.crypto_helpers import K1, K2, LEGACY_TEXT

B1, B2 = (base64.b64encode(k).decode() for k in (K1, K2))
GOOD = f"k1:{B1},k2:{B2}"
SECRET_BYTES = [K1, K2, LEGACY_TEXT.encode()]
SECRET_TEXT = [B1, B2, LEGACY_TEXT, K1.hex(), K2.hex(), repr(K1)[2:-1], repr(K2)[2:-1]]


def _frames(exc: BaseException) -> list:
    """Every frame of ``exc``'s traceback and of the exceptions chained to it."""
    frames, stack, seen = [], [exc], set()
    while stack:
        e = stack.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        tb = e.__traceback__
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
        stack += [e.__context__, e.__cause__]
    return frames


def _leaks(value: object) -> bool:
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        return any(s in raw for s in SECRET_BYTES) or any(t.encode() in raw for t in SECRET_TEXT)
    try:
        text = value if isinstance(value, str) else repr(value)
    except Exception:  # noqa: BLE001 - a half-built object; its repr shows nothing then
        return False
    return any(t in text for t in SECRET_TEXT)


def assert_no_key_in_frames(exc: BaseException) -> None:
    # The test's own frame holds the secrets it passed in; every other frame must not.
    frames = [f for f in _frames(exc) if f.f_code.co_filename != __file__]
    assert frames, "the error has no library frame to inspect"
    for frame in frames:
        for name, value in frame.f_locals.items():
            assert not _leaks(value), (
                f"{frame.f_code.co_filename}:{frame.f_code.co_name} local {name!r} holds key material"
            )
    assert not _leaks(str(exc))


def _raised(fn, *args, **kwargs) -> SerdeError:
    with pytest.raises(SerdeError) as info:
        fn(*args, **kwargs)
    return info.value


# -- redaction -------------------------------------------------------------------------


def test_secret_bytes_are_redacted_and_do_not_travel() -> None:
    s = SecretBytes(K1)
    assert s.reveal() == K1 and len(s) == 32
    assert B1 not in repr(s) and repr(K1) not in str(s) and "redacted" in repr(s)
    with pytest.raises(TypeError):
        pickle.dumps(s)
    assert copy.deepcopy(s) is s
    assert SecretBytes(K1) == s and SecretBytes(K2) != s


def test_keyring_internals_show_no_key() -> None:
    kr = Keyring({"k1": K1, "k2": K2}, primary="k2", legacy_key=LEGACY_TEXT.encode())
    for shown in (repr(kr), str(kr), repr(kr._keys), repr(kr._legacy)):
        assert not _leaks(shown)
    assert kr.key("k1") == K1 and kr.legacy_key == LEGACY_TEXT.encode()


# -- error frames ----------------------------------------------------------------------


BAD_ENVS = {
    "bad base64": f"{GOOD},k3:not*base64",
    "short key": f"{GOOD},k3:{base64.b64encode(b'short').decode()}",
    "duplicate id": f"{GOOD},k1:{B2}",
    "no colon": f"{GOOD},junk",
    "key in place of id": f"{GOOD},{B1}x:{B2}",
}


@pytest.mark.parametrize("text", list(BAD_ENVS.values()), ids=list(BAD_ENVS))
def test_keyring_parse_errors_leave_no_key_in_any_frame(text: str, monkeypatch, tmp_path: Path) -> None:
    env = {"SERDE_KIT_KEYRING": text, "LANGGRAPH_AES_KEY": LEGACY_TEXT}
    assert_no_key_in_frames(_raised(load_keyring, environ=env))
    assert_no_key_in_frames(_raised(Keyring.from_env, environ=env))
    monkeypatch.setenv("SERDE_KIT_KEYRING", text)
    monkeypatch.setenv("LANGGRAPH_AES_KEY", LEGACY_TEXT)
    assert_no_key_in_frames(_raised(load_keyring))  # os.environ itself must not be in a frame
    path = tmp_path / "keys"
    path.write_text(text.replace(",", "\n"))
    path.chmod(0o600)
    assert_no_key_in_frames(_raised(Keyring.from_file, path))
    monkeypatch.delenv("SERDE_KIT_KEYRING")
    monkeypatch.setenv("SERDE_KIT_KEYRING_FILE", str(path))
    assert_no_key_in_frames(_raised(load_keyring))


def test_bad_legacy_key_and_bad_constructor_args_leave_no_key() -> None:
    env = {"SERDE_KIT_KEYRING": GOOD, "LANGGRAPH_AES_KEY": LEGACY_TEXT + "x"}
    assert_no_key_in_frames(_raised(load_keyring, environ=env))
    assert_no_key_in_frames(_raised(Keyring, {"k1": K1, "k2": K2, "k3": b"short"}, primary="k1"))
    assert_no_key_in_frames(_raised(Keyring, {"k1": K1, "k2": K2}, primary="k9"))
    kr = Keyring({"k1": K1}, primary="k1")
    assert_no_key_in_frames(_raised(kr.with_key, "k1", K2))
    assert_no_key_in_frames(_raised(kr.with_key, "k2", K2[:5]))
    assert_no_key_in_frames(_raised(kr.with_legacy_key, LEGACY_TEXT.encode() + b"x"))


class _FailingKms:
    """A KeyWrapper plug-in whose service fails the way a network client does."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def wrap(self, key: bytes, *, key_id: str) -> bytes:
        raise AssertionError("not used")

    def unwrap(self, wrapped: bytes, *, key_id: str) -> bytes:
        try:
            raise OSError("socket closed")  # chained below, as client libraries do
        except OSError:
            raise self.error  # noqa: B904


def _holds_key(value: object, depth: int = 0) -> bool:
    """``value`` is, holds or shows key material (SecretBytes and containers included)."""
    if isinstance(value, SecretBytes):
        return value.reveal() in SECRET_BYTES
    if depth < 4 and isinstance(value, dict):
        return any(_holds_key(k, depth + 1) or _holds_key(v, depth + 1) for k, v in value.items())
    if depth < 4 and isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_key(v, depth + 1) for v in value)
    return _leaks(value)


#: A mixed keyring: a plain key first (decoded, in ``keys``, when the second entry
#: is unwrapped), then a KMS-wrapped one.
MIXED = f"k1:{B1}\nk2:kms:{base64.b64encode(b'wrapped-bytes').decode()}\n"
FAILURES = [ConnectionError("kms unreachable"), TimeoutError("kms timed out"), KeyboardInterrupt()]


@pytest.mark.parametrize("error", FAILURES, ids=lambda e: type(e).__name__)
def test_a_failing_kms_plug_in_leaves_no_key_in_any_frame(
    error: BaseException, monkeypatch, tmp_path: Path
) -> None:
    """Every exception type is scrubbed, not only serde_kit's: the plug-in's own error
    keeps its type (callers retry on ConnectionError) but no frame below the raise
    point (_from_file, _parse_entries, _load_keyring, _from_env) holds the plain key."""
    kms = _FailingKms(error)
    path = tmp_path / "keys"
    path.write_text(MIXED)
    path.chmod(0o600)
    inline = {"SERDE_KIT_KEYRING": MIXED.strip().replace("\n", ","), "LANGGRAPH_AES_KEY": LEGACY_TEXT}
    calls = [
        functools.partial(load_keyring, environ=dict(inline), kms=kms),
        functools.partial(Keyring.from_env, environ=dict(inline), kms=kms),
        functools.partial(Keyring.from_file, path, kms=kms),
        functools.partial(load_keyring, environ={"SERDE_KIT_KEYRING_FILE": str(path)}, kms=kms),
    ]
    monkeypatch.setenv("SERDE_KIT_KEYRING", inline["SERDE_KIT_KEYRING"])
    calls.append(functools.partial(load_keyring, kms=kms))  # os.environ itself must not be in a frame
    for call in calls:
        with pytest.raises(type(error)) as info:
            call()
        assert info.value is error
        frames = [f for f in _frames(info.value) if f.f_code.co_filename != __file__]
        names = {f.f_code.co_name for f in frames}
        assert "_parse_entries" in names and "_unwrap" in names  # the traceback still says where
        for frame in frames:
            for name, value in frame.f_locals.items():
                assert not _holds_key(value), (
                    f"{frame.f_code.co_filename}:{frame.f_code.co_name} local {name!r} holds key material"
                )


def _legacy_row(value: object) -> tuple[str, bytes]:
    from Crypto.Cipher import AES

    tag, data = Serializer().dumps_typed(value)
    cipher = AES.new(LEGACY_TEXT.encode(), AES.MODE_EAX)
    ct, mac = cipher.encrypt_and_digest(data)
    return tag + "+aes", cipher.nonce + mac + ct


def test_decrypt_errors_leave_no_key_in_any_frame(backend: str) -> None:
    env = {"SERDE_KIT_KEYRING": GOOD, "LANGGRAPH_AES_KEY": LEGACY_TEXT}
    serde = EncryptedSerializer(Serializer(), load_keyring(environ=env), backend=backend)
    tag, blob = _legacy_row({"x": 1})
    tampered_legacy = (tag, blob[:-1] + bytes([blob[-1] ^ 1]))
    # Under k2, not the primary (k1): reencrypt must open it too.
    row = EncryptedSerializer(Serializer(), Keyring({"k2": K2}, primary="k2")).dumps_typed({"x": 1})
    tampered = (row[0], row[1][:-1] + bytes([row[1][-1] ^ 1]))
    cases = [
        (tampered_legacy, DecryptionError),
        ((tag, blob[:20]), MalformedDataError),
        (tampered, DecryptionError),
        (("msgpack+aesgcm", b"\x01\x02k9" + bytes(40)), UnknownKeyError),
    ]
    for bad, kind in cases:
        reencrypt = functools.partial(serde.reencrypt, upgrade_legacy=True)
        for call in (serde.loads_typed, serde.decrypt_row, reencrypt):
            err = _raised(call, bad)
            assert isinstance(err, kind)
            assert_no_key_in_frames(err)
    assert serde.loads_typed((tag, blob)) == {"x": 1}


# -- key files -------------------------------------------------------------------------


def _key_file(directory: Path, mode: int = 0o600) -> Path:
    directory.mkdir(mode=0o700, exist_ok=True)
    path = directory / "keys"
    path.write_text(GOOD.replace(",", "\n") + "\n")
    path.chmod(mode)
    return path


def test_a_key_file_we_own_in_our_own_directory_loads(tmp_path: Path) -> None:
    assert Keyring.from_file(_key_file(tmp_path / "d")).ids == ["k1", "k2"]


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o660])
def test_a_group_or_world_accessible_key_file_is_refused(tmp_path: Path, mode: int) -> None:
    path = _key_file(tmp_path / "d", mode)
    with pytest.raises(KeyringError, match="chmod 600"):
        Keyring.from_file(path)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_a_key_file_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    path = _key_file(tmp_path / "d")
    os.chown(path, 65534, 65534)
    with pytest.raises(KeyringError, match=r"owned by uid 65534.*chown"):
        Keyring.from_file(path)


def test_owner_check_uses_the_effective_user(tmp_path: Path, monkeypatch) -> None:
    # Runs as any user: pretend to be someone else, so our own file belongs to "another user".
    path = _key_file(tmp_path / "d")
    if os.geteuid() == 0:
        os.chown(path, 65534, 65534)  # root-owned files are always accepted: give it away
    owner = os.stat(path).st_uid
    monkeypatch.setattr(os, "geteuid", lambda: owner + 1)
    with pytest.raises(KeyringError, match="owned by uid"):
        Keyring.from_file(path)


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777])
def test_a_key_file_in_a_directory_others_can_write_is_refused(tmp_path: Path, mode: int) -> None:
    d = tmp_path / "d"
    path = _key_file(d)
    d.chmod(mode)
    with pytest.raises(KeyringError, match=r"writable by group/others.*chmod go-w"):
        Keyring.from_file(path)


def test_a_sticky_shared_directory_is_accepted(tmp_path: Path) -> None:
    d = tmp_path / "d"
    path = _key_file(d)
    d.chmod(0o1777)  # like /tmp: others may create files but not replace ours
    assert Keyring.from_file(path).ids == ["k1", "k2"]


def test_a_writable_directory_further_up_is_refused(tmp_path: Path) -> None:
    up = tmp_path / "up"
    up.mkdir(mode=0o700)
    path = _key_file(up / "d")
    up.chmod(0o777)
    with pytest.raises(KeyringError, match="writable by group/others"):
        Keyring.from_file(path)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory to another user")
def test_a_directory_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "d"
    path = _key_file(d)
    os.chown(d, 65534, 65534)
    with pytest.raises(KeyringError, match="owned by uid 65534"):
        Keyring.from_file(path)


def test_a_symlink_is_checked_where_it_points(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    real = _key_file(bad)
    bad.chmod(0o777)
    good = tmp_path / "good"
    good.mkdir(mode=0o700)
    (good / "keys").symlink_to(real)
    with pytest.raises(KeyringError, match="writable by group/others"):
        Keyring.from_file(good / "keys")


def test_a_symlink_in_a_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    """The path as given is checked, not only where it ends: whoever can write the
    link's directory can re-point the link at an old keyring whose key leaked."""
    real = _key_file(tmp_path / "good")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (shared / "keys").symlink_to(real)
    with pytest.raises(KeyringError, match=r"shared'.*writable by group/others \(mode 777\).*chmod go-w") as info:
        Keyring.from_file(shared / "keys")
    assert isinstance(info.value, ConfigError)
    with pytest.raises(KeyringError, match="shared"):
        load_keyring(environ={"SERDE_KIT_KEYRING_FILE": str(shared / "keys")})
    assert Keyring.from_file(real).ids == ["k1", "k2"]  # the file itself is fine


def test_a_link_further_along_a_chain_of_links_is_checked_too(tmp_path: Path) -> None:
    real = _key_file(tmp_path / "good")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (shared / "hop").symlink_to(real)
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    (mine / "keys").symlink_to(shared / "hop")  # our link, in our directory, to a link in a 0777 one
    with pytest.raises(KeyringError, match="shared"):
        Keyring.from_file(mine / "keys")


def test_a_directory_link_on_the_way_is_checked_where_it_points(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    real = _key_file(tmp_path / "shared" / "sub")
    (tmp_path / "shared").chmod(0o777)
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    (mine / "dir").symlink_to(tmp_path / "shared" / "sub")
    with pytest.raises(KeyringError, match="shared"):
        Keyring.from_file(mine / "dir" / real.name)


def test_relative_paths_links_and_dot_dot_that_stay_safe_load(tmp_path: Path, monkeypatch) -> None:
    real = _key_file(tmp_path / "good")
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    (mine / "sub").mkdir(mode=0o700)
    (mine / "keys").symlink_to("../good/keys")  # relative target
    monkeypatch.chdir(mine / "sub")
    for path in ("../keys", "../sub/../keys", str(real), "../../good/./keys"):
        assert Keyring.from_file(path).ids == ["k1", "k2"], path


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a symlink to another user")
def test_a_symlink_owned_by_another_user_in_a_sticky_directory_is_refused(tmp_path: Path) -> None:
    real = _key_file(tmp_path / "good")
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)  # like /tmp: anyone may create a link here, under their own name
    (sticky / "keys").symlink_to(real)
    os.lchown(sticky / "keys", 65534, 65534)
    with pytest.raises(KeyringError, match=r"symlink .* is owned by uid 65534"):
        Keyring.from_file(sticky / "keys")


def test_the_fix_a_key_file_error_prints_is_quoted_for_the_shell(tmp_path: Path) -> None:
    """The `run: chmod go-w DIR` line names a path: pasted, it changes the mode and runs nothing else."""
    shared = tmp_path / "a $(touch pwned) b"
    real = _key_file(shared)
    shared.chmod(0o777)
    with pytest.raises(KeyringError) as info:
        Keyring.from_file(real)
    command = str(info.value).split("run: ", 1)[1].split(", or set", 1)[0]
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, timeout=30)
    assert not (tmp_path / "pwned").exists()
    assert shared.stat().st_mode & 0o777 == 0o755  # the quoted command did what it says
    assert Keyring.from_file(real).ids == ["k1", "k2"]


# -- environment -----------------------------------------------------------------------


def test_remove_from_environ_takes_the_variables_out_of_the_process(monkeypatch) -> None:
    monkeypatch.setenv("SERDE_KIT_KEYRING", GOOD)
    monkeypatch.setenv("LANGGRAPH_AES_KEY", LEGACY_TEXT)
    kr = load_keyring(remove_from_environ=True)
    assert kr.ids == ["k1", "k2"] and kr.legacy_key == LEGACY_TEXT.encode()
    assert "SERDE_KIT_KEYRING" not in os.environ and "LANGGRAPH_AES_KEY" not in os.environ
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(sorted(k for k in os.environ if 'KEY' in k))"],
        capture_output=True, text=True, check=True,
    )
    assert "SERDE_KIT_KEYRING" not in child.stdout and "LANGGRAPH_AES_KEY" not in child.stdout


def test_by_default_the_variables_stay_and_failures_remove_nothing(monkeypatch) -> None:
    monkeypatch.setenv("SERDE_KIT_KEYRING", GOOD)
    load_keyring()
    assert os.environ["SERDE_KIT_KEYRING"] == GOOD
    monkeypatch.setenv("SERDE_KIT_KEYRING", "broken")
    with pytest.raises(KeyringError):
        load_keyring(remove_from_environ=True)
    assert os.environ["SERDE_KIT_KEYRING"] == "broken"  # nothing lost: the operator can fix it


def test_remove_from_environ_works_on_a_given_mapping() -> None:
    env = {"SERDE_KIT_KEYRING": GOOD, "OTHER": "x"}
    load_keyring(environ=env, remove_from_environ=True)
    assert env == {"OTHER": "x"}
