"""cProfile serde_kit on one benchmark payload and print where the time goes.

    .venv/bin/python bench/hotspots.py chat_500 loads
    .venv/bin/python bench/hotspots.py pending_writes_1000 dumps --top 25
    .venv/bin/python bench/hotspots.py enc_small_writes loads

Shares are of the total profiled time; ``tottime`` is time inside the function
itself (for ormsgpack.packb/unpackb that is the Rust engine plus whatever it
does not call back into Python), ``cumtime`` includes callees.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import payloads as P  # noqa: E402


def _target(payload: str, op: str) -> tuple[Callable[[], Any], int]:
    if payload.startswith("enc_"):
        from serde_kit import Serializer
        from serde_kit.crypto import EncryptedSerializer, Keyring

        enc = EncryptedSerializer(Serializer(), Keyring({"k1": P.ENC_KEY}, primary="k1"))
        items = P.pending_writes(1000) if payload == "enc_small_writes" else [P.encryption_payloads()[payload]]
    else:
        enc = P.contestants()["serde_kit"]
        enc = type("S", (), {"dumps_typed": staticmethod(enc.dumps), "loads_typed": staticmethod(enc.loads)})
        items = P.pending_writes(1000) if payload == "pending_writes_1000" else [P.serializer_payloads()[payload]]
    if op == "dumps":
        return (lambda: [enc.dumps_typed(v) for v in items]), len(items)
    stored = [enc.dumps_typed(v) for v in items]
    return (lambda: [enc.loads_typed(s) for s in stored]), len(items)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("payload")
    ap.add_argument("op", choices=["dumps", "loads"])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args()
    fn, _ = _target(args.payload, args.op)
    fn()  # warm caches
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.repeat):
        fn()
    prof.disable()
    stats = pstats.Stats(prof)
    total = stats.total_tt
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[: args.top]
    print(f"{args.payload} {args.op}: {total * 1e3 / args.repeat:.2f} ms per pass under cProfile\n")
    print(f"{'tottime%':>8} {'cumtime%':>8} {'calls/pass':>10}  function")
    for (file, line, name), (_cc, nc, tt, ct, _callers) in rows:
        where = f"{Path(file).name}:{line}" if line else file
        print(f"{100 * tt / total:7.1f}% {100 * ct / total:7.1f}% {nc / args.repeat:10.0f}  {name} ({where})")


if __name__ == "__main__":
    main()
