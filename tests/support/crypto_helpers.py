"""Constants and helpers shared by the crypto tests (imported by name: test files sit beside it)."""

from __future__ import annotations

import json
from pathlib import Path

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

VECTORS = Path(__file__).resolve().parents[1] / "crypto" / "vectors"

K1 = bytes(range(32))
K2 = bytes(range(32, 64))
K3 = bytes(range(64, 96))
LEGACY_TEXT = "0123456789abcdef"  # a LANGGRAPH_AES_KEY value as the stock class reads it


def load_vectors(name: str) -> list[dict[str, str]]:
    return json.loads((VECTORS / name).read_text())


def serde_kit_serializer():
    from serde_kit import Serializer

    return Serializer()


INNER_FACTORIES = {
    "serde_kit.Serializer": serde_kit_serializer,
    "JsonPlusSerializer": JsonPlusSerializer,
}
