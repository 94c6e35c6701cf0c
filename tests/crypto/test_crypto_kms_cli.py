"""``serde-kit keygen --kms-key`` and the key lifecycle with a KMS-wrapped keyring, on the local KMS.

The KMS is moto's server mode (started per module by conftest.py); the CLI
reaches it through the usual AWS variables, as an operator's would.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from serde_kit import Serializer
from serde_kit.cli import main
from serde_kit.crypto import AwsKms, EncryptedSerializer, Keyring, load_keyring
from serde_kit.crypto.blob import blob_key_id
from serde_kit.errors import KeyringError

K1 = bytes(range(32))
KEY_VARS = ("SERDE_KIT_KEYRING", "SERDE_KIT_KEYRING_FILE", "SERDE_KIT_KMS_KEY", "LANGGRAPH_AES_KEY")


@pytest.fixture
def kms_arn(kms_client: Any, kms_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new KMS key, and the AWS variables that point boto3 (in the CLI) at the local KMS."""
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", kms_endpoint)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    return str(kms_client.create_key(Description="serde_kit CLI KEK")["KeyMetadata"]["Arn"])


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


class _State(TypedDict):
    text: str


def _write_db(path: Path, keyring: Keyring, threads: int) -> None:
    def step(state: _State) -> dict[str, str]:
        return {"text": state["text"] + "!"}

    builder = StateGraph(_State)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        graph = builder.compile(checkpointer=SqliteSaver(conn, serde=EncryptedSerializer(Serializer(), keyring)))
        for i in range(threads):
            graph.invoke({"text": f"t{i}"}, {"configurable": {"thread_id": f"t{i}"}})
    finally:
        conn.close()


def _key_ids(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT checkpoint FROM checkpoints UNION ALL SELECT value FROM writes").fetchall()
    return {blob_key_id(blob) for (blob,) in rows if blob}


def test_keygen_kms_key_prints_only_wrapped_entries(capsys, kms_arn: str, kms_client: Any) -> None:
    code, out, err = _run(capsys, "keygen", "--id", "k5", "--kms-key", kms_arn)
    assert code == 0, err
    env_line = next(line for line in out.splitlines() if line.startswith("SERDE_KIT_KEYRING="))
    value = env_line.split("=", 1)[1]
    assert value.startswith("k5:kms:") and "," not in value
    assert f"k5:kms:{value.split(':', 2)[2]}" in out.splitlines()  # the key-file form: the same entry
    kms = AwsKms(kms_arn, client=kms_client)
    keyring = load_keyring(environ={"SERDE_KIT_KEYRING": value}, kms=kms)
    assert keyring.ids == ["k5"]
    # the data key itself appears nowhere in what was printed
    assert base64.b64encode(keyring.key("k5")).decode() not in out
    # and without the KMS the entry does not load
    with pytest.raises(KeyringError, match="kms"):
        load_keyring(environ={"SERDE_KIT_KEYRING": value})


def test_keygen_kms_key_file_and_the_lifecycle_on_a_wrapped_keyring(
    capsys, tmp_path: Path, kms_arn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "app.db"
    _write_db(db, Keyring({"k1": K1}, primary="k1"), threads=3)
    assert _key_ids(db) == {"k1"}
    # A new primary wrapped by the KMS key, the old (plain) key kept after it and wrapped too.
    monkeypatch.setenv("SERDE_KIT_KEYRING", Keyring({"k1": K1}, primary="k1").to_env_value())
    keys = tmp_path / "keys"
    code, out, err = _run(capsys, "keygen", "--id", "k2", "--extend", "--kms-key", kms_arn, "--file", str(keys))
    assert code == 0, err
    assert "wrapped" in out and "SERDE_KIT_KMS_KEY" in out
    text = keys.read_text()
    assert "k2:kms:" in text and "k1:kms:" in text
    assert base64.b64encode(K1).decode() not in text
    assert (keys.stat().st_mode & 0o777) == 0o600
    # The tools load it unchanged, through SERDE_KIT_KMS_KEY.
    monkeypatch.delenv("SERDE_KIT_KEYRING")
    monkeypatch.setenv("SERDE_KIT_KEYRING_FILE", str(keys))
    monkeypatch.setenv("SERDE_KIT_KMS_KEY", kms_arn)
    code, out, err = _run(capsys, "status", "--sqlite", str(db), "--verify", "-q")
    assert code == 0, err
    assert "primary k2" in out and "key k1" in out
    code, out, err = _run(capsys, "rotate", "--sqlite", str(db), "--apply", "-q")
    assert code == 0, out + err
    assert _key_ids(db) == {"k2"}
    code, out, err = _run(capsys, "status", "--sqlite", str(db), "--verify", "--json", "-q")
    assert code == 0, err
    assert set(json.loads(out)["total"]["by_key"]) == {"k2"}
    code, out, err = _run(capsys, "retire", "--sqlite", str(db), "k1", "-q")
    assert code == 0 and out.startswith("safe")


def test_keygen_kms_key_refused_by_the_kms_is_one_line(capsys, kms_arn: str) -> None:
    code, out, err = _run(capsys, "keygen", "--kms-key", kms_arn + "-gone")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "KeyringError" in err and "kms:Encrypt" in err


def test_keygen_kms_key_without_a_region_is_one_line(capsys, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # No AWS settings at all (as on a laptop without ~/.aws): a clear error, not botocore's traceback.
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    code, out, err = _run(capsys, "keygen", "--kms-key", "arn:aws:kms:eu-west-1:111122223333:key/none")
    assert code != 0 and out == ""
    assert err.count("\n") == 1 and "AWS_REGION" in err and "Traceback" not in err
