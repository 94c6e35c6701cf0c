"""One rule for "a keyring is configured", and keyring text made in memory."""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path
from typing import Any

import pytest

from serde_kit.crypto import Keyring, load_keyring
from serde_kit.crypto.keyring import keyring_configured
from serde_kit.errors import KeyringError
from serde_kit.tools.inspect import keyring_from_env
from serde_kit.tools.keygen import keygen, keygen_wrapped
from tests.support.crypto_helpers import K1, K2

INLINE = f"k1:{base64.b64encode(K1).decode()}"
LEGACY = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize(
    ("environ", "configured"),
    [
        ({}, False),
        ({"LANGGRAPH_AES_KEY": LEGACY}, False),  # the legacy key alone is not a keyring
        ({"SERDE_KIT_KEYRING": INLINE}, True),
        ({"SERDE_KIT_KEYRING": ""}, True),  # set but broken: load_keyring says what is wrong
        ({"SERDE_KIT_KEYRING_FILE": ""}, True),
        ({"SERDE_KIT_KEYRING": INLINE, "LANGGRAPH_AES_KEY": LEGACY}, True),
    ],
)
def test_load_keyring_and_the_inspect_tools_follow_one_rule(environ: dict[str, str], configured: bool) -> None:
    assert keyring_configured(environ) is configured
    if configured:
        try:
            expected: Any = load_keyring(environ=environ).ids
        except KeyringError as exc:
            with pytest.raises(KeyringError, match=str(exc)[:30]):
                keyring_from_env(environ)
            return
        found = keyring_from_env(environ)
        assert found is not None and found.ids == expected
        return
    with pytest.raises(KeyringError, match="no keyring configured"):
        load_keyring(environ=environ)
    shown = keyring_from_env(environ)
    if "LANGGRAPH_AES_KEY" in environ:  # inspection still reads LangGraph's +aes rows
        assert shown is not None and shown.legacy_key is not None
    else:
        assert shown is None


def test_file_text_is_what_to_file_writes(tmp_path: Path) -> None:
    ring = Keyring({"k1": K1, "k2": K2}, primary="k2")
    ring.to_file(tmp_path / "ring")
    assert ring.to_file_text() == (tmp_path / "ring").read_text()
    assert Keyring.from_file(tmp_path / "ring").ids == ring.ids


def test_keygen_text_never_touches_the_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("keygen wrote a temporary file")

    for name in ("mkstemp", "mkdtemp", "TemporaryDirectory", "NamedTemporaryFile"):
        monkeypatch.setattr(tempfile, name, refuse)
    _, ring = keygen("k3", extend=Keyring({"k1": K1}, primary="k1"))
    text = ring.to_file_text()
    assert text.splitlines()[1].startswith("k3:") and text.splitlines()[2].startswith("k1:")

    class Reversing:  # a KeyWrapper: the protocol is all keygen needs
        def wrap(self, key: bytes, *, key_id: str) -> bytes:
            return key[::-1]

        def unwrap(self, wrapped: bytes, *, key_id: str) -> bytes:
            return wrapped[::-1]

    new_id, entries = keygen_wrapped(Reversing(), "k4", extend=Keyring({"k1": K1}, primary="k1"))
    assert new_id == "k4" and [e.split(":")[:2] for e in entries] == [["k4", "kms"], ["k1", "kms"]]
