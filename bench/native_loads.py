"""loads of the payload set on both read paths: the compiled reader vs the pure path,
against the stock JsonPlusSerializer (twice: the A/A control) and pickle protocol 5.

    .venv/bin/python bench/native_loads.py               # thread CPU time, interleaved rounds
    .venv/bin/python bench/native_loads.py --rounds 11

Each round times every contestant on each payload one after another (rotating the
order); the best round per contestant is reported, as microseconds per call, and
as "x stock" (stock time / contestant time; higher is faster).
"""

from __future__ import annotations

import argparse
import gc
import math
import pickle
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import payloads as P  # noqa: E402


def _serializers() -> dict[str, Any]:
    import logging

    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from serde_kit import Serializer, native
    from tests.support import strategy_types as T

    logging.getLogger("langgraph").setLevel(logging.ERROR)
    before = native.ACTIVE
    try:
        native.ACTIVE = "python"
        pure = Serializer(allow=T.USER_TYPES)
        native.ACTIVE = "native" if native.AVAILABLE else "python"
        fast = Serializer(allow=T.USER_TYPES)
    finally:
        native.ACTIVE = before
    return {"stock": JsonPlusSerializer(), "stock_aa": JsonPlusSerializer(), "pure": pure, "native": fast}


def _rows(only: str | None = None) -> dict[str, tuple[Callable[[], Any], ...]]:
    """payload -> (one call per contestant, in the order of NAMES); just ``only`` when given."""
    sers = _serializers()
    values = P.serializer_payloads(include_numpy=only is None or "numpy" in only, include_other=only is None or "numpy" not in only)
    values = {k: v for k, v in values.items() if "64MiB" not in k and (only is None or k == only)}
    out: dict[str, tuple[Callable[[], Any], ...]] = {}
    writer = sers["pure"]
    for name, value in values.items():
        stored = writer.dumps_typed(value)
        stock_stored = sers["stock"].dumps_typed(value)
        pickled = pickle.dumps(value, protocol=5)
        out[name] = (
            lambda s=stock_stored: sers["stock"].loads_typed(s),
            lambda s=stock_stored: sers["stock_aa"].loads_typed(s),
            lambda b=pickled: pickle.loads(b),
            lambda s=stored: sers["pure"].loads_typed(s),
            lambda s=stored: sers["native"].loads_typed(s),
        )
    if only is not None and only != "pending_writes_1000":
        return out
    writes = P.pending_writes(1000)
    stored_w = [writer.dumps_typed(v) for v in writes]
    stock_w = [sers["stock"].dumps_typed(v) for v in writes]
    pickled_w = [pickle.dumps(v, protocol=5) for v in writes]

    def each(loads: Callable[[Any], Any], rows: list[Any]) -> Callable[[], None]:
        return lambda: [loads(r) for r in rows] and None

    out["pending_writes_1000"] = (
        each(sers["stock"].loads_typed, stock_w),
        each(sers["stock_aa"].loads_typed, stock_w),
        each(pickle.loads, pickled_w),
        each(sers["pure"].loads_typed, stored_w),
        each(sers["native"].loads_typed, stored_w),
    )
    return out


NAMES = ("stock", "stock_aa", "pickle5", "pure", "native")


def _time(fn: Callable[[], Any], number: int) -> float:
    gc.collect()
    t0 = time.thread_time()
    for _ in range(number):
        fn()
    return (time.thread_time() - t0) / number


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--min-time", type=float, default=0.05)
    args = ap.parse_args()
    rows = _rows()
    best: dict[str, list[float]] = {name: [math.inf] * len(NAMES) for name in rows}
    numbers: dict[str, list[int]] = {}
    for name, calls in rows.items():
        numbers[name] = []
        for fn in calls:
            fn()  # warm: caches, the reader's table
            number = 1
            while True:
                t0 = time.perf_counter()
                for _ in range(number):
                    fn()
                if time.perf_counter() - t0 >= args.min_time or number >= 1 << 16:
                    break
                number *= 4
            numbers[name].append(number)
    for r in range(args.rounds):
        for name, calls in rows.items():
            order = list(range(len(NAMES)))
            order = order[r % len(order) :] + order[: r % len(order)]
            for i in order:
                best[name][i] = min(best[name][i], _time(calls[i], numbers[name][i]))
    print(f"{'payload':<22}" + "".join(f"{n + ' us':>13}" for n in NAMES) + f"{'A/A':>7}{'pickle5 x':>10}{'pure x':>8}{'native x':>10}")
    ratios: dict[str, list[float]] = {"pickle5": [], "pure": [], "native": []}
    for name, times in best.items():
        stock = times[0]
        row = f"{name:<22}" + "".join(f"{t * 1e6:>13.1f}" for t in times)
        row += f"{stock / times[1]:>7.2f}"
        for label, i in (("pickle5", 2), ("pure", 3), ("native", 4)):
            ratios[label].append(stock / times[i])
            row += f"{stock / times[i]:>{10 if label != 'pure' else 8}.2f}"
        print(row)
    geo = {k: math.exp(sum(map(math.log, v)) / len(v)) for k, v in ratios.items()}
    print(f"geomean x stock: pickle5 {geo['pickle5']:.2f}  pure {geo['pure']:.2f}  native {geo['native']:.2f}")


if __name__ == "__main__":
    main()
