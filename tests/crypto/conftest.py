"""Fixtures for the crypto tests: keyrings, inner serializers, backends."""

from __future__ import annotations

import pytest
from crypto_helpers import INNER_FACTORIES, K1, K2
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from serde_kit.crypto import EncryptedSerializer, Keyring


@pytest.fixture(params=sorted(INNER_FACTORIES))
def inner(request):
    """Each inner serializer EncryptedSerializer must work around."""
    return INNER_FACTORIES[request.param]()


@pytest.fixture
def keyring() -> Keyring:
    return Keyring({"k1": K1, "k2": K2}, primary="k2")


@pytest.fixture(params=["cryptography", "pycryptodome"])
def backend(request) -> str:
    return request.param


@pytest.fixture
def enc(keyring: Keyring) -> EncryptedSerializer:
    return EncryptedSerializer(JsonPlusSerializer(), keyring)
