"""Per-row cost of row binding: EncryptedSerializer dumps+loads, unbound vs bound, same run.

    .venv/bin/python bench/binding.py [--rounds 9] [--rows 2000]

Contestants, interleaved round by round (order rotated) so background load hits
them alike; each figure is the best round, per row (one dumps_typed + one
loads_typed):

- ``unbound-A`` and ``unbound-B``: the same unbound serializer twice — the A/A
  control; their ratio shows how much noise a ratio of this run carries.
- ``bound``: inside one ``row_scope`` (v2 header with the identity, scope check).
- ``bound+scope``: a ContextVar set/reset around each call, as BoundSaver does
  per saver call (an upper bound: the wrapper sets it once per call, not per row).

Values: a small channel value (a short dict) and a 4 KiB string.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from serde_kit import EncryptedSerializer, Keyring, Serializer  # noqa: E402
from serde_kit.crypto.binding import SCOPE, BindingScope, row_scope  # noqa: E402

THREAD = "0b6a3c2e-4f7d-4a51-9c8e-2d1f0e9b7a63"  # a uuid4-sized thread id


def _contestants(serde: EncryptedSerializer, value: object, rows: int) -> dict:
    def unbound() -> None:
        d, ld = serde.dumps_typed, serde.loads_typed
        for _ in range(rows):
            ld(d(value))

    def bound() -> None:
        d, ld = serde.dumps_typed, serde.loads_typed
        with row_scope(THREAD, ""):
            for _ in range(rows):
                ld(d(value))

    def bound_scope() -> None:
        d, ld = serde.dumps_typed, serde.loads_typed
        for _ in range(rows):
            token = SCOPE.set(BindingScope(THREAD, ""))
            try:
                ld(d(value))
            finally:
                SCOPE.reset(token)

    return {"unbound-A": unbound, "unbound-B": unbound, "bound": bound, "bound+scope": bound_scope}


def _run(name: str, value: object, rounds: int, rows: int) -> None:
    serde = EncryptedSerializer(Serializer(), Keyring({"k1": bytes(range(32))}, primary="k1"))
    fns = _contestants(serde, value, rows)
    names = list(fns)
    best = {n: float("inf") for n in names}
    for n in names:  # warm-up
        fns[n]()
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            t0 = time.perf_counter()
            fns[n]()
            best[n] = min(best[n], (time.perf_counter() - t0) / rows)
    base = best["unbound-A"]
    print(f"\n{name}  ({rows} rows x {rounds} rounds, best round)")
    print(f"  {'contestant':<12} {'us/row':>8} {'vs unbound-A':>13} {'added us':>9}")
    for n in names:
        us = best[n] * 1e6
        print(f"  {n:<12} {us:8.2f} {best[n] / base:13.3f} {us - base * 1e6:9.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--rows", type=int, default=2000)
    args = ap.parse_args()
    _run("small value {'role': 'user', 'n': 3}", {"role": "user", "n": 3}, args.rounds, args.rows)
    _run("4 KiB str", "x" * 4096, args.rounds, args.rows)


if __name__ == "__main__":
    main()
