"""Keyring: construction, env and file formats, every error case, secrecy."""

from __future__ import annotations

import base64
import copy
import os
import pickle
import stat
from pathlib import Path

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from serde_kit.crypto import EncryptedSerializer, Keyring, load_keyring
from serde_kit.errors import ConfigError, KeyringError, UnknownKeyError
from tests.support.crypto_helpers import K1, K2, K3, LEGACY_TEXT

B1, B2, B3 = (base64.b64encode(k).decode() for k in (K1, K2, K3))
URLSAFE = base64.urlsafe_b64encode(bytes([0xFB]) * 32).decode()  # '-' and '_': not standard base64
SECRETS = [K1, K2, K3, B1, B2, B3, K1.hex(), K2.hex()]


def assert_no_secret(text: str) -> None:
    for s in SECRETS:
        needle = s.decode("latin-1") if isinstance(s, bytes) else s
        assert needle not in text
    for b in (B1, B2, B3):
        assert b[:12] not in text  # not even a prefix


# -- construction ---------------------------------------------------------------------


def test_basic_queries() -> None:
    kr = Keyring({"k1": K1, "k2": K2}, primary="k2")
    assert kr.primary_id == "k2"
    assert kr.ids == ["k1", "k2"]
    assert kr.key("k1") == K1 and kr.key("k2") == K2
    assert kr.legacy_key is None
    assert "k1" in kr and "k9" not in kr and len(kr) == 2
    with pytest.raises(UnknownKeyError, match="'k9'") as exc:
        kr.key("k9")
    assert exc.value.key_id == "k9"


def test_repr_never_shows_keys() -> None:
    kr = Keyring({"k1": K1, "k2": K2}, primary="k2")
    assert repr(kr) == "Keyring(primary='k2', ids=['k1', 'k2'])"
    assert str(kr) == repr(kr)
    with_legacy = kr.with_legacy_key(LEGACY_TEXT.encode())
    assert repr(with_legacy) == "Keyring(primary='k2', ids=['k1', 'k2'], legacy_key=True)"
    assert LEGACY_TEXT not in repr(with_legacy)
    serde = EncryptedSerializer(JsonPlusSerializer(), with_legacy)
    assert_no_secret(repr(serde))
    assert LEGACY_TEXT not in repr(serde)


@pytest.mark.parametrize("attempt", [pickle.dumps, copy.copy, copy.deepcopy])
def test_pickle_and_copy_refused(attempt) -> None:
    kr = Keyring({"k1": K1}, primary="k1")
    with pytest.raises(TypeError, match="secret"):
        attempt(kr)


@pytest.mark.parametrize("attempt", [pickle.dumps, copy.deepcopy])
def test_serializer_pickle_and_deepcopy_refused(attempt) -> None:
    serde = EncryptedSerializer(JsonPlusSerializer(), Keyring({"k1": K1}, primary="k1"))
    with pytest.raises(TypeError, match="secret"):
        attempt(serde)


def test_serializer_shallow_copy_shares_the_keyring() -> None:
    # BaseCheckpointSaver.with_allowlist shallow-copies savers; that must keep working.
    kr = Keyring({"k1": K1}, primary="k1")
    serde = EncryptedSerializer(JsonPlusSerializer(), kr)
    clone = copy.copy(serde)
    assert clone.keyring is kr
    assert clone.loads_typed(serde.dumps_typed([1])) == [1]


@pytest.mark.parametrize(
    ("keys", "primary", "match"),
    [
        ({}, "k1", "empty"),
        ({"k1": K1}, "k2", "primary key id 'k2'"),
        ({"k1": K1[:16]}, "k1", "16 bytes; AES-256 needs exactly 32"),
        ({"k1": K1 + b"x"}, "k1", "33 bytes"),
        ({"k1": "not bytes"}, "k1", "must be bytes"),
        ({"bad id": K1}, "bad id", "not valid"),
        ({"": K1}, "", "not valid"),
        ({"k" * 65: K1}, "k" * 65, "not valid"),
        ({"k/1": K1}, "k/1", "not valid"),
        ({"ké": K1}, "ké", "not valid"),
    ],
)
def test_constructor_errors(keys, primary, match) -> None:
    with pytest.raises(KeyringError, match=match) as exc:
        Keyring(keys, primary=primary)
    assert_no_secret(str(exc.value))


@pytest.mark.parametrize("legacy", [b"short", b"x" * 33, "0123456789abcdef"])
def test_legacy_key_size_and_type(legacy) -> None:
    with pytest.raises(KeyringError, match="legacy"):
        Keyring({"k1": K1}, primary="k1", legacy_key=legacy)


@pytest.mark.parametrize("size", [16, 24, 32])
def test_legacy_key_sizes_accepted(size: int) -> None:
    kr = Keyring({"k1": K1}, primary="k1", legacy_key=b"a" * size)
    assert kr.legacy_key == b"a" * size


def test_max_length_id_and_all_allowed_characters() -> None:
    key_id = ("Az09._-" * 10)[:64]
    kr = Keyring({key_id: K1}, primary=key_id)
    assert kr.primary_id == key_id


# -- derivation -----------------------------------------------------------------------


def test_with_key_promote_without() -> None:
    kr = Keyring({"k1": K1}, primary="k1")
    kr2 = kr.with_key("k2", K2)
    assert (kr2.primary_id, kr2.ids) == ("k1", ["k1", "k2"])
    assert kr.ids == ["k1"]  # immutable
    kr3 = kr2.with_key("k3", K3, primary=True)
    assert kr3.primary_id == "k3"
    assert kr3.promote("k2").primary_id == "k2"
    assert kr3.without("k1").ids == ["k2", "k3"]
    with pytest.raises(KeyringError, match="primary"):
        kr3.without("k3")
    with pytest.raises(UnknownKeyError):
        kr3.without("k9")
    with pytest.raises(UnknownKeyError):
        kr3.promote("k9")
    with pytest.raises(KeyringError, match="already in the keyring") as exc:
        kr3.with_key("k1", K2)
    assert_no_secret(str(exc.value))
    assert kr3.with_key("k1", K1).ids == kr3.ids  # same material: no-op
    legacy = kr3.with_legacy_key(LEGACY_TEXT.encode())
    assert legacy.promote("k1").without("k3").legacy_key == LEGACY_TEXT.encode()


def test_generate() -> None:
    a, b = Keyring.generate(), Keyring.generate()
    assert a.primary_id != b.primary_id
    assert a.primary_id.startswith("k") and len(a.ids) == 1
    assert a.key(a.primary_id) != b.key(b.primary_id)
    assert len(a.key(a.primary_id)) == 32
    named = Keyring.generate("prod-1")
    assert named.ids == ["prod-1"]
    with pytest.raises(KeyringError):
        Keyring.generate("no spaces")


# -- env format -----------------------------------------------------------------------


def test_env_value_round_trip_primary_first() -> None:
    kr = Keyring({"k1": K1, "k3": K3, "k2": K2}, primary="k2")
    value = kr.to_env_value()
    assert value == f"k2:{B2},k1:{B1},k3:{B3}"
    back = Keyring.from_env(environ={"SERDE_KIT_KEYRING": value})
    assert (back.primary_id, back.ids) == ("k2", ["k1", "k2", "k3"])
    assert all(back.key(i) == kr.key(i) for i in kr.ids)


def test_from_env_whitespace_and_custom_var() -> None:
    env = {"MY_KEYS": f"  k2 : {B2} ,\n k1:{B1} , "}
    kr = Keyring.from_env("MY_KEYS", environ=env)
    assert (kr.primary_id, kr.ids) == ("k2", ["k1", "k2"])


def test_from_env_reads_legacy_key() -> None:
    env = {"SERDE_KIT_KEYRING": f"k1:{B1}", "LANGGRAPH_AES_KEY": LEGACY_TEXT}
    assert Keyring.from_env(environ=env).legacy_key == LEGACY_TEXT.encode()
    assert Keyring.from_env(environ=env, legacy_var=None).legacy_key is None


def test_from_env_uses_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERDE_KIT_KEYRING", f"k7:{B3}")
    monkeypatch.delenv("LANGGRAPH_AES_KEY", raising=False)
    kr = Keyring.from_env()
    assert kr.primary_id == "k7" and kr.key("k7") == K3


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("", "holds no keys"),
        (" , ,", "holds no keys"),
        (B1, "entry 1 is not of the form"),
        (f"k1:{B1},{B2}", "entry 2 is not of the form"),
        (f"k1:{B1},k1:{B2}", "'k1' appears twice"),
        (f"bad id:{B1}", "entry 1 has an invalid key id"),
        (f"{B1}:k1", "entry 1 has an invalid key id"),  # swapped: the key must not be echoed
        (f"k1:{B1[:-2]}", "not valid standard base64"),
        (f"k1:{B1.replace('A', '-')}", "not valid standard base64"),
        (f"k1:{URLSAFE}", "not valid standard base64"),
        (f"k1:{base64.b64encode(K1[:16]).decode()}", "16 bytes; AES-256 needs exactly 32"),
        (f"k1:{base64.b64encode(K1 * 2).decode()}", "64 bytes"),
    ],
)
def test_env_errors_say_how_to_fix_and_hide_keys(value: str, match: str) -> None:
    with pytest.raises(KeyringError, match=match) as exc:
        Keyring.from_env(environ={"SERDE_KIT_KEYRING": value})
    assert "SERDE_KIT_KEYRING" in str(exc.value)
    assert_no_secret(str(exc.value))


def test_env_missing_says_what_to_set() -> None:
    with pytest.raises(KeyringError, match="SERDE_KIT_KEYRING is not set.*serde-kit keygen"):
        Keyring.from_env(environ={})


def test_bad_legacy_env_value() -> None:
    env = {"SERDE_KIT_KEYRING": f"k1:{B1}", "LANGGRAPH_AES_KEY": "too short"}
    with pytest.raises(KeyringError, match="LANGGRAPH_AES_KEY") as exc:
        load_keyring(environ=env)
    assert "too short" not in str(exc.value)


# -- key file -------------------------------------------------------------------------


def _write(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    os.chmod(path, mode)
    return path


def test_file_round_trip_mode_0600(tmp_path: Path) -> None:
    kr = Keyring({"k1": K1, "k2": K2}, primary="k1").with_legacy_key(LEGACY_TEXT.encode())
    path = tmp_path / "keys"
    kr.to_file(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    back = Keyring.from_file(path)
    assert (back.primary_id, back.ids) == ("k1", ["k1", "k2"])
    assert back.key("k2") == K2
    assert back.legacy_key is None  # the legacy key lives in LANGGRAPH_AES_KEY only
    assert LEGACY_TEXT not in path.read_text()
    assert list(tmp_path.iterdir()) == [path]  # no temp file left behind


def test_to_file_replaces_a_wide_mode_file_with_0600(tmp_path: Path) -> None:
    path = _write(tmp_path / "keys", "old", 0o644)
    Keyring({"k1": K1}, primary="k1").to_file(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert Keyring.from_file(path).ids == ["k1"]


def test_file_comments_blank_lines_first_is_primary(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "keys",
        f"# production keys\n\nk3:{B3}   # current\n  k1:{B1}\n# retired: k0\n",
    )
    kr = Keyring.from_file(str(path))
    assert (kr.primary_id, kr.ids) == ("k3", ["k1", "k3"])


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o660, 0o606, 0o700 | 0o004])
def test_file_readable_by_others_refused(tmp_path: Path, mode: int) -> None:
    path = _write(tmp_path / "keys", f"k1:{B1}\n", mode)
    with pytest.raises(KeyringError, match=f"chmod 600 {path}") as exc:
        Keyring.from_file(path)
    assert_no_secret(str(exc.value))


def test_file_owner_only_modes_accepted(tmp_path: Path) -> None:
    for mode in (0o600, 0o400):
        path = _write(tmp_path / f"keys{mode:o}", f"k1:{B1}\n", mode)
        assert Keyring.from_file(path).ids == ["k1"]


def test_file_missing(tmp_path: Path) -> None:
    with pytest.raises(KeyringError, match="does not exist.*SERDE_KIT_KEYRING_FILE"):
        Keyring.from_file(tmp_path / "nope")


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("# only a comment\n", "holds no keys"),
        (f"k1:{B1}\nk1:{B2}\n", "appears twice"),
        (f"k1 {B1}\n", "not of the form"),
        (f"k1:{B1[:21]}\n", "base64"),
        (f"k1:{base64.b64encode(bytes(24)).decode()}\n", "24 bytes"),
    ],
)
def test_file_content_errors(tmp_path: Path, text: str, match: str) -> None:
    path = _write(tmp_path / "keys", text)
    with pytest.raises(KeyringError, match=match) as exc:
        Keyring.from_file(path)
    assert "key file" in str(exc.value)
    assert_no_secret(str(exc.value))


def test_file_not_ascii(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_bytes(b"k1:\xff\xfe\n")
    os.chmod(path, 0o600)
    with pytest.raises(KeyringError, match="not ASCII"):
        Keyring.from_file(path)


# -- load_keyring ---------------------------------------------------------------------


def test_load_keyring_inline() -> None:
    kr = load_keyring(environ={"SERDE_KIT_KEYRING": f"k2:{B2},k1:{B1}"})
    assert (kr.primary_id, kr.ids, kr.legacy_key) == ("k2", ["k1", "k2"], None)


def test_load_keyring_file_with_legacy(tmp_path: Path) -> None:
    path = _write(tmp_path / "keys", f"k1:{B1}\n")
    kr = load_keyring(
        environ={"SERDE_KIT_KEYRING_FILE": str(path), "LANGGRAPH_AES_KEY": LEGACY_TEXT}
    )
    assert kr.ids == ["k1"] and kr.legacy_key == LEGACY_TEXT.encode()


def test_load_keyring_nothing_set_says_what_to_do() -> None:
    with pytest.raises(KeyringError) as exc:
        load_keyring(environ={"LANGGRAPH_AES_KEY": LEGACY_TEXT})
    msg = str(exc.value)
    assert "SERDE_KIT_KEYRING" in msg and "SERDE_KIT_KEYRING_FILE" in msg
    assert "serde-kit keygen" in msg
    assert isinstance(exc.value, ConfigError)


def test_load_keyring_both_set_is_ambiguous(tmp_path: Path) -> None:
    path = _write(tmp_path / "keys", f"k1:{B1}\n")
    with pytest.raises(KeyringError, match="only one"):
        load_keyring(environ={"SERDE_KIT_KEYRING": f"k1:{B1}", "SERDE_KIT_KEYRING_FILE": str(path)})


def test_load_keyring_empty_file_var() -> None:
    with pytest.raises(KeyringError, match="empty"):
        load_keyring(environ={"SERDE_KIT_KEYRING_FILE": ""})


def test_encrypted_serializer_defaults_to_load_keyring(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERDE_KIT_KEYRING", f"k2:{B2},k1:{B1}")
    monkeypatch.delenv("SERDE_KIT_KEYRING_FILE", raising=False)
    monkeypatch.setenv("LANGGRAPH_AES_KEY", LEGACY_TEXT)
    serde = EncryptedSerializer(JsonPlusSerializer())
    assert serde.keyring.primary_id == "k2"
    assert serde.keyring.legacy_key == LEGACY_TEXT.encode()
    monkeypatch.delenv("SERDE_KIT_KEYRING")
    with pytest.raises(KeyringError, match="no keyring configured"):
        EncryptedSerializer(JsonPlusSerializer())


def test_to_file_into_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(KeyringError, match="cannot write key file"):
        Keyring({"k1": K1}, primary="k1").to_file(tmp_path / "nope" / "keys")


def test_file_is_a_directory(tmp_path: Path) -> None:
    d = tmp_path / "keys.d"
    d.mkdir(mode=0o700)
    with pytest.raises(KeyringError, match="not a regular file"):
        Keyring.from_file(d)


def test_file_is_a_fifo_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "keys.fifo"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(KeyringError, match="not a regular file"):
        Keyring.from_file(fifo)


def test_file_through_a_symlink(tmp_path: Path) -> None:
    # Secret mounts (e.g. Kubernetes) expose key files through symlinks.
    target = _write(tmp_path / "real", f"k1:{B1}\n")
    link = tmp_path / "link"
    link.symlink_to(target)
    assert Keyring.from_file(link).ids == ["k1"]
