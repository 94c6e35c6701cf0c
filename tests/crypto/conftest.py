"""Fixtures for the crypto tests: keyrings, inner serializers, backends."""

from __future__ import annotations

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from serde_kit.crypto import EncryptedSerializer, Keyring
from tests.support.crypto_helpers import INNER_FACTORIES, K1, K2


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


@pytest.fixture(scope="module")
def kms_endpoint():
    """URL of a running local AWS KMS (moto_server, started per test module, not left running)."""
    from tests.support.kms_server import KmsServer, KmsStartError

    server = KmsServer()
    try:
        server.start()
    except KmsStartError as e:
        pytest.fail(f"could not start the local KMS:\n{e}", pytrace=False)
    try:
        yield server.endpoint
    finally:
        server.stop()


@pytest.fixture
def kms_client(kms_endpoint, monkeypatch):
    """A boto3 KMS client on the local endpoint (dummy credentials, fixed region)."""
    import boto3

    for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    return boto3.client(
        "kms",
        endpoint_url=kms_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
