"""Benchmark payloads and the contestants that serialize them.

Shared by bench/compare.py (interleaved comparison table) and the
pytest-benchmark suites (bench/test_bench_*.py). Everything is built from a
fixed seed so runs are comparable.
"""

from __future__ import annotations

import os
import pickle
import random
import sys
import uuid
from collections import deque
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from enum import Enum
from pathlib import Path, PurePosixPath
from typing import Any, Callable
from zoneinfo import ZoneInfo

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # a script: the test types are imported as tests.support.*
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import ormsgpack  # noqa: E402

from tests.support import strategy_types as T  # noqa: E402

KIB = 1024
MIB = 1024 * KIB
_WORDS = "the quick brown fox jumps over a lazy dog while agents call tools and graphs resume".split()


def _text(rng: random.Random, n: int) -> str:
    out, size = [], 0
    while size < n:
        w = rng.choice(_WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n]


def chat_checkpoint(n_messages: int, *, seed: int = 1) -> dict[str, Any]:
    """A LangGraph checkpoint dict whose ``messages`` channel holds a chat with tool calls."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    rng = random.Random(seed)
    msgs: list[Any] = [SystemMessage(content=_text(rng, 800), id=str(uuid.UUID(int=rng.getrandbits(128))))]
    while len(msgs) < n_messages:
        k = len(msgs) % 3
        mid = str(uuid.UUID(int=rng.getrandbits(128)))
        if k == 1:
            msgs.append(HumanMessage(content=_text(rng, rng.randrange(50, 2000)), id=mid))
        elif k == 2:
            call_id = f"call_{rng.getrandbits(64):x}"
            msgs.append(
                AIMessage(
                    content=_text(rng, rng.randrange(0, 1500)),
                    id=mid,
                    tool_calls=[{"name": "search", "args": {"query": _text(rng, 60), "k": 5}, "id": call_id}],
                    usage_metadata={"input_tokens": 900, "output_tokens": 120, "total_tokens": 1020},
                    response_metadata={"model_name": "m-1", "finish_reason": "tool_calls"},
                )
            )
        else:
            msgs.append(ToolMessage(content=_text(rng, rng.randrange(100, 4000)), tool_call_id=f"call_{k}", id=mid))
    msgs = msgs[:n_messages]
    return {
        "v": 4,
        "ts": "2024-06-01T12:00:00.000000+00:00",
        "id": "1ef4f797-8335-6428-8001-8a1503f9b875",
        "channel_values": {"messages": msgs, "summary": _text(rng, 300), "step_count": n_messages},
        "channel_versions": {"__start__": "00000002.0.5", "messages": f"{n_messages:08d}.0.3", "summary": "00000003.0.1"},
        "versions_seen": {"agent": {"messages": "00000002.0.5"}, "tools": {"messages": "00000003.0.2"}},
        "updated_channels": ["messages"],
    }


def _rows(n: int, seed: int) -> list[tuple]:
    rng = random.Random(seed)
    base = datetime(2024, 1, 1, tzinfo=timezone.utc)
    return [
        (i, _text(rng, 24), rng.random() * 100, [rng.choice(_WORDS) for _ in range(3)], base + timedelta(minutes=i))
        for i in range(n)
    ]


def pydantic_state(n: int = 200) -> Any:
    """A nested pydantic v2 state: a table model holding ``n`` row models."""
    return T.TableModel(title="orders", rows=[T.RowModel(id=i, name=s, score=f, tags=t, when=w) for i, s, f, t, w in _rows(n, 2)])


def dataclass_state(n: int = 200) -> Any:
    """The same data as :func:`pydantic_state`, as dataclasses."""
    return T.Table(title="orders", rows=[T.Row(i, s, f, t, w) for i, s, f, t, w in _rows(n, 2)])


def pending_writes(n: int = 1000) -> list[Any]:
    """``n`` small pending-write values, each serialized by its own call."""
    rng = random.Random(3)
    out: list[Any] = []
    for i in range(n):
        k = i % 5
        if k == 0:
            out.append({"counter": i})
        elif k == 1:
            out.append(_text(rng, 40))
        elif k == 2:
            out.append(["node_a", {"route": "tools", "n": i}])
        elif k == 3:
            out.append(i * 7)
        else:
            out.append({"messages": [{"role": "user", "content": _text(rng, 60)}], "step": i})
    return out


class _Level(Enum):
    LOW = 1
    HIGH = 2


def mixed_stdlib() -> dict[str, Any]:
    """A dict of mixed stdlib types (no user classes)."""
    rng = random.Random(4)
    return {
        "created": [datetime(2024, 1, 1, 12, i, tzinfo=ZoneInfo("Europe/Berlin")) for i in range(20)],
        "naive": [datetime(2023, 5, 1, 8, i) for i in range(20)],
        "dates": [date(2024, 1, 1) + timedelta(days=i) for i in range(20)],
        "ids": [uuid.UUID(int=rng.getrandbits(128)) for _ in range(50)],
        "amounts": [Decimal(f"{rng.randrange(10**6)}.{rng.randrange(100):02d}") for _ in range(50)],
        "tags": {f"tag{i}" for i in range(30)},
        "frozen": frozenset(range(30)),
        "pairs": [(i, str(i)) for i in range(50)],
        "by_id": {i: {"x": i, "y": (i, i + 1)} for i in range(50)},
        "queue": deque(range(40), maxlen=64),
        "paths": [Path("/var/data", f"f{i}.bin") for i in range(10)],
        "durations": [timedelta(seconds=i * 37) for i in range(20)],
        "floats": [rng.random() for _ in range(100)],
        "text": _text(rng, 2000),
        "blob": rng.randbytes(512),
    }


def arrays() -> dict[str, np.ndarray]:
    """float64 arrays of 1 KiB, 1 MiB and 64 MiB: C order, Fortran order, non-contiguous."""
    out = {}
    rng = np.random.default_rng(5)
    for label, nbytes in (("1KiB", KIB), ("1MiB", MIB), ("64MiB", 64 * MIB)):
        n = nbytes // 8
        rows = 16 if n >= 256 else 8
        c = rng.standard_normal(n).reshape(rows, n // rows)
        out[f"numpy_{label}_C"] = c
        out[f"numpy_{label}_F"] = np.asfortranarray(c)
        # Every other column of a twice-as-wide array: same element count, not contiguous.
        wide = rng.standard_normal(2 * n).reshape(rows, 2 * n // rows)
        out[f"numpy_{label}_strided"] = wide[:, ::2]
    return out


# --- contestants --------------------------------------------------------------

RAW_OPT = ormsgpack.OPT_SERIALIZE_PYDANTIC | ormsgpack.OPT_SERIALIZE_NUMPY | ormsgpack.OPT_NON_STR_KEYS


def _raw_default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):  # non-C-contiguous arrays: lossy like the rest of raw mode
        return obj.tolist()
    if isinstance(obj, (set, frozenset, deque)):
        return list(obj)
    if isinstance(obj, (uuid.UUID, Decimal, Path, PurePosixPath)):
        return str(obj)
    if isinstance(obj, (date, timedelta, Enum)):
        return str(obj)
    raise TypeError(type(obj).__name__)


@dataclass(frozen=True)
class Contestant:
    name: str
    dumps: Callable[[Any], Any]
    loads: Callable[[Any], Any]
    size: Callable[[Any], int]


def contestants() -> dict[str, Contestant]:
    """serde_kit, the stock JsonPlusSerializer (twice: the A/A control), pickle protocol 5 and raw (lossy) ormsgpack."""
    import logging

    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from serde_kit import Serializer

    logging.getLogger("langgraph").setLevel(logging.ERROR)  # stock warns per unregistered type
    ours = Serializer(allow=T.USER_TYPES)
    stock = JsonPlusSerializer()
    stock_again = JsonPlusSerializer()
    return {
        "serde_kit": Contestant("serde_kit", ours.dumps_typed, ours.loads_typed, lambda d: len(d[1])),
        "stock": Contestant("stock", stock.dumps_typed, stock.loads_typed, lambda d: len(d[1])),
        # A/A control: the same stock serializer again; its ratio to "stock" is the run's noise.
        "stock_aa": Contestant("stock_aa", stock_again.dumps_typed, stock_again.loads_typed, lambda d: len(d[1])),
        "pickle5": Contestant("pickle5", lambda v: pickle.dumps(v, protocol=5), pickle.loads, len),
        "ormsgpack": Contestant(
            "ormsgpack",
            lambda v: ormsgpack.packb(v, option=RAW_OPT, default=_raw_default),
            lambda b: ormsgpack.unpackb(b, option=ormsgpack.OPT_NON_STR_KEYS),
            len,
        ),
    }


ENC_KEY = bytes(range(32))


def _baseline_crypto(rev: str) -> Any:
    """serde_kit.crypto as it was at git revision ``rev``, imported as its own package.

    The package's own modules import each other relatively, so the copy runs its
    own encrypted/aesgcm/blob code (errors come from the current serde_kit).
    """
    import importlib
    import subprocess
    import tarfile
    import tempfile

    name = "serde_kit_crypto_" + "".join(ch for ch in rev if ch.isalnum())[:12]
    if name in sys.modules:
        return sys.modules[name]
    tmp = Path(tempfile.mkdtemp(prefix="bench-base-"))
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", rev, "serde_kit/crypto"],
        check=True, capture_output=True,
    ).stdout
    with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
        tar.extractall(tmp, filter="data")
    (tmp / "serde_kit" / "crypto").rename(tmp / name)
    sys.path.insert(0, str(tmp))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp))


def encryption_contestants(baseline: str | None = None) -> dict[str, Contestant]:
    """serde_kit's EncryptedSerializer (AES-256-GCM), the stock one (pycryptodome AES-EAX) and raw AES-GCM.

    ``baseline``: a git revision whose serde_kit.crypto runs as the extra
    contestant ``serde_kit_base`` (before/after in one interleaved run).
    """
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer as StockEncrypted

    from serde_kit import Serializer
    from serde_kit.crypto import EncryptedSerializer, Keyring

    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    ours = EncryptedSerializer(Serializer(), Keyring({"k1": ENC_KEY}, primary="k1"))
    stock = StockEncrypted.from_pycryptodome_aes(key=ENC_KEY)
    stock_again = StockEncrypted.from_pycryptodome_aes(key=ENC_KEY)
    raw, raw_again = AESGCM(ENC_KEY), AESGCM(ENC_KEY)

    def raw_contestant(name: str, cipher: AESGCM) -> Contestant:
        def seal(blob: bytes) -> tuple[bytes, bytes]:
            nonce = os.urandom(12)
            return nonce, cipher.encrypt(nonce, blob, None)

        def open_(sealed: tuple[bytes, bytes]) -> bytes:
            return cipher.decrypt(sealed[0], sealed[1], None)

        return Contestant(name, seal, open_, lambda d: len(d[1]))

    out = {"serde_kit": Contestant("serde_kit", ours.dumps_typed, ours.loads_typed, lambda d: len(d[1]))}
    if baseline:
        base = _baseline_crypto(baseline)
        then = base.EncryptedSerializer(Serializer(), base.Keyring({"k1": ENC_KEY}, primary="k1"))
        out["serde_kit_base"] = Contestant("serde_kit_base", then.dumps_typed, then.loads_typed, lambda d: len(d[1]))
    out.update({
        "stock": Contestant("stock", stock.dumps_typed, stock.loads_typed, lambda d: len(d[1])),
        # A/A control: the same stock serializer again; its ratio to "stock" is the run's noise.
        "stock_aa": Contestant("stock_aa", stock_again.dumps_typed, stock_again.loads_typed, lambda d: len(d[1])),
        # The hardware anchor: cryptography's AES-GCM alone, a fresh nonce per call, in the same run,
        # twice (raw_aa / raw_aesgcm is the anchor's own noise).
        "raw_aesgcm": raw_contestant("raw_aesgcm", raw),
        "raw_aa": raw_contestant("raw_aa", raw_again),
    })  # fmt: skip
    return out


def encryption_floor(inner: Any) -> Contestant:
    """``inner`` plus AES-GCM as serde_kit's v1 rows need it, inlined: the floor for an encrypted serializer.

    Same bytes as ``EncryptedSerializer(inner, Keyring({"k1": ENC_KEY}, primary="k1"))``
    writes (v1 header, AAD, random nonce), for inner tag ``msgpack``, with no checks.
    """
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from serde_kit.crypto.blob import build_header, make_aad

    header = build_header("k1")
    start = len(header) + 12
    aads = {t: make_aad(t, header) for t in ("msgpack", "bytes")}
    cipher = AESGCM(ENC_KEY)
    encrypt, decrypt, urandom = cipher.encrypt, cipher.decrypt, os.urandom
    inner_dumps, inner_loads = inner.dumps_typed, inner.loads_typed

    def dumps(value: Any) -> tuple[str, bytes]:
        tag, data = inner_dumps(value)
        nonce = urandom(12)
        return tag + "+aesgcm", b"".join((header, nonce, encrypt(nonce, data, aads[tag])))

    def loads(row: tuple[str, bytes]) -> Any:
        inner_tag = row[0][:-7]
        blob = row[1]
        return inner_loads((inner_tag, decrypt(blob[start - 12 : start], blob[start:], aads[inner_tag])))

    return Contestant("floor", dumps, loads, lambda d: len(d[1]))


def serializer_payloads(*, include_numpy: bool = True, include_other: bool = True) -> dict[str, Any]:
    """Name -> value for the serializer comparison."""
    out: dict[str, Any] = {}
    if include_other:
        out["chat_10"] = chat_checkpoint(10)
        out["chat_500"] = chat_checkpoint(500)
        out["pydantic_200"] = pydantic_state(200)
        out["dataclass_200"] = dataclass_state(200)
        out["mixed_stdlib"] = mixed_stdlib()
    if include_numpy:
        out.update(arrays())
    return out


def encryption_payloads() -> dict[str, bytes]:
    rng = random.Random(6)
    return {"enc_1KiB": rng.randbytes(KIB), "enc_1MiB": rng.randbytes(MIB), "enc_64MiB": rng.randbytes(64 * MIB)}
