"""pytest-benchmark: serde_kit EncryptedSerializer (AES-256-GCM) vs the stock one (AES-EAX)."""

from __future__ import annotations

from typing import Any

import pytest

import payloads as P

ENC = P.encryption_contestants()
BLOBS = {k: v for k, v in P.encryption_payloads().items() if "64MiB" not in k}
SMALL = {"counter": 7, "route": "tools"}


@pytest.mark.parametrize("who", list(ENC))
@pytest.mark.parametrize("payload", list(BLOBS))
def test_encrypt(benchmark: Any, payload: str, who: str) -> None:
    benchmark.group = f"encrypt {payload}"
    benchmark(ENC[who].dumps, BLOBS[payload])


@pytest.mark.parametrize("who", list(ENC))
@pytest.mark.parametrize("payload", list(BLOBS))
def test_decrypt(benchmark: Any, payload: str, who: str) -> None:
    row = ENC[who].dumps(BLOBS[payload])
    benchmark.group = f"decrypt {payload}"
    benchmark(ENC[who].loads, row)


@pytest.mark.parametrize("who", list(ENC))
def test_small_write_round_trip(benchmark: Any, who: str) -> None:
    c = ENC[who]
    benchmark.group = "small write encrypt+decrypt"
    benchmark(lambda: c.loads(c.dumps(SMALL)))
