"""KMS-wrapped keyrings against a real local AWS KMS endpoint (moto_server, started by the fixture)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from serde_kit import Serializer
from serde_kit.crypto import EncryptedSerializer, Keyring, load_keyring
from serde_kit.crypto.kms import AwsKms, KeyWrapper, wrapped_entry
from serde_kit.errors import ConfigError, KeyringError
from serde_kit.tools.keygen import generate_wrapped_entry
from tests.support.crypto_helpers import K1, K2


@pytest.fixture
def kms(kms_client) -> AwsKms:
    arn = kms_client.create_key(Description="serde_kit test KEK")["KeyMetadata"]["Arn"]
    return AwsKms(arn, client=kms_client)


class Counting:
    """A KeyWrapper that counts the calls it passes on (and shows the protocol is all a KMS needs)."""

    def __init__(self, inner: KeyWrapper) -> None:
        self.inner, self.wraps, self.unwraps = inner, 0, 0

    def wrap(self, key: bytes, *, key_id: str) -> bytes:
        self.wraps += 1
        return self.inner.wrap(key, key_id=key_id)

    def unwrap(self, wrapped: bytes, *, key_id: str) -> bytes:
        self.unwraps += 1
        return self.inner.unwrap(wrapped, key_id=key_id)


def _wrapped_file(tmp_path: Path, kms: KeyWrapper) -> Path:
    path = tmp_path / "keys"
    Keyring({"k1": K1, "k2": K2}, primary="k2").to_file(path, kms=kms)
    return path


def test_the_protocol_is_satisfied(kms: AwsKms) -> None:
    assert isinstance(kms, KeyWrapper) and isinstance(Counting(kms), KeyWrapper)


def test_a_wrapped_key_file_holds_no_key_and_loads_with_the_kms(tmp_path: Path, kms: AwsKms) -> None:
    path = _wrapped_file(tmp_path, kms)
    text = path.read_text()
    assert "k2:kms:" in text and "k1:kms:" in text
    for key in (K1, K2):
        assert base64.b64encode(key).decode() not in text
    kr = Keyring.from_file(path, kms=kms)
    assert kr.primary_id == "k2" and kr.key("k1") == K1 and kr.key("k2") == K2
    assert load_keyring(environ={"SERDE_KIT_KEYRING_FILE": str(path)}, kms=kms).key("k2") == K2


def test_rows_written_with_plain_keys_read_with_the_wrapped_keyring(tmp_path: Path, kms: AwsKms) -> None:
    plain = EncryptedSerializer(Serializer(), Keyring({"k1": K1, "k2": K2}, primary="k2"))
    row = plain.dumps_typed({"state": [1, 2]})
    wrapped = EncryptedSerializer(Serializer(), Keyring.from_file(_wrapped_file(tmp_path, kms), kms=kms))
    assert wrapped.loads_typed(row) == {"state": [1, 2]}


def test_keys_are_unwrapped_once_at_load_never_per_row(tmp_path: Path, kms: AwsKms) -> None:
    counting = Counting(kms)
    path = _wrapped_file(tmp_path, counting)
    assert counting.wraps == 2
    serde = EncryptedSerializer(Serializer(), Keyring.from_file(path, kms=counting))
    assert counting.unwraps == 2
    for i in range(50):
        assert serde.loads_typed(serde.dumps_typed(i)) == i
    assert counting.unwraps == 2


def test_wrapped_entries_inline_in_the_environment(kms: AwsKms) -> None:
    entry = generate_wrapped_entry(kms, "k9")
    assert entry.startswith("k9:kms:")
    kr = load_keyring(environ={"SERDE_KIT_KEYRING": entry}, kms=kms)
    assert kr.ids == ["k9"] and len(kr.key("k9")) == 32


def test_a_wrapped_entry_without_a_kms_is_a_clear_error(tmp_path: Path, kms: AwsKms) -> None:
    with pytest.raises(KeyringError, match=r"entry 1\) is wrapped by a KMS; load the keyring with kms="):
        Keyring.from_file(_wrapped_file(tmp_path, kms))


def test_a_wrapped_entry_moved_to_another_id_does_not_unwrap(kms: AwsKms) -> None:
    # The serde_kit key id is in the KMS encryption context.
    entry = wrapped_entry("k1", K1, kms)
    moved = "k2" + entry[2:]
    with pytest.raises(KeyringError, match=r"could not unwrap key 'k2'.*InvalidCiphertextException"):
        load_keyring(environ={"SERDE_KIT_KEYRING": moved}, kms=kms)


def test_a_tampered_or_garbled_wrapped_entry_is_refused(kms: AwsKms) -> None:
    entry = wrapped_entry("k1", K1, kms)
    raw = bytearray(base64.b64decode(entry.split(":", 2)[2]))
    raw[-1] ^= 1
    tampered = "k1:kms:" + base64.b64encode(bytes(raw)).decode()
    with pytest.raises(KeyringError, match="could not unwrap key 'k1'"):
        load_keyring(environ={"SERDE_KIT_KEYRING": tampered}, kms=kms)
    with pytest.raises(KeyringError, match="not valid standard base64"):
        load_keyring(environ={"SERDE_KIT_KEYRING": "k1:kms:***"}, kms=kms)


def test_unwrapping_with_another_kms_key_is_refused(tmp_path: Path, kms: AwsKms, kms_client) -> None:
    path = _wrapped_file(tmp_path, kms)
    other = AwsKms(kms_client.create_key()["KeyMetadata"]["Arn"], client=kms_client)
    with pytest.raises(KeyringError, match="could not unwrap"):
        Keyring.from_file(path, kms=other)


def test_a_wrapped_data_key_of_the_wrong_size_is_refused(kms: AwsKms) -> None:
    entry = wrapped_entry("k1", b"sixteen byte key", kms)
    with pytest.raises(KeyringError, match="is 16 bytes; AES-256 needs exactly 32"):
        load_keyring(environ={"SERDE_KIT_KEYRING": entry}, kms=kms)


def test_an_unreachable_kms_is_a_clear_error(kms_client) -> None:
    import boto3

    from tests.support.kms_server import _free_port

    dead = boto3.client(
        "kms",
        endpoint_url=f"http://127.0.0.1:{_free_port()}",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=__import__("botocore.config", fromlist=["Config"]).Config(
            retries={"max_attempts": 1}, connect_timeout=5
        ),
    )
    with pytest.raises(KeyringError, match=r"could not wrap key 'k1'.*EndpointConnectionError"):
        wrapped_entry("k1", K1, AwsKms("alias/x", client=dead))


def test_aws_kms_needs_a_key_id() -> None:
    with pytest.raises(ConfigError, match="KMS key id"):
        AwsKms("")


def test_the_kms_key_variable_lets_tools_load_a_wrapped_keyring_unchanged(
    tmp_path: Path, kms: AwsKms, kms_endpoint: str, monkeypatch
) -> None:
    # What status/rotate/retire do: load_keyring() with nothing but the environment.
    path = _wrapped_file(tmp_path, kms)
    for var, value in {
        "SERDE_KIT_KEYRING_FILE": str(path),
        "SERDE_KIT_KMS_KEY": kms.key_id,
        "AWS_ENDPOINT_URL_KMS": kms_endpoint,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(var, value)
    kr = load_keyring(remove_from_environ=True)
    assert kr.key("k2") == K2 and kr.key("k1") == K1
    monkeypatch.delenv("SERDE_KIT_KMS_KEY")
    monkeypatch.setenv("SERDE_KIT_KEYRING_FILE", str(path))
    with pytest.raises(KeyringError, match="wrapped by a KMS"):
        load_keyring()
