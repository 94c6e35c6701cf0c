"""dumps of the payload set: serde_kit against the stock JsonPlusSerializer (twice: the A/A control) and pickle 5.

    .venv/bin/python bench/write_path.py                     # thread CPU time, interleaved rounds
    .venv/bin/python bench/write_path.py --rounds 11 --only chat_10
    valgrind --tool=callgrind --dump-before=time_sleep --callgrind-out-file=/tmp/cgw.%p \\
        .venv/bin/python bench/write_path.py --instructions chat_10 [CALLS]
    .venv/bin/python bench/write_path.py --report /tmp/cgw.<pid>

Time mode: each round times every contestant on each payload one after another
(rotating the order), best round per contestant, "x stock" = stock time / its time.
Instruction mode (load independent): under callgrind each contestant's CALLS dumps
run between two ``time.sleep(0)`` calls, so ``--dump-before=time_sleep`` writes one
profile part per contestant (setup first, then ORDER); ``--report`` prints
instructions per call from those parts.
"""

from __future__ import annotations

import argparse
import gc
import glob
import math
import pickle
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import payloads as P  # noqa: E402

#: The payload set of issue 23's write-path target (numpy: one small, one large C-order array).
PAYLOADS = (
    "chat_10", "chat_500", "pydantic_200", "dataclass_200", "mixed_stdlib",
    "numpy_1KiB_C", "numpy_1MiB_C", "pending_writes_1000",
)  # fmt: skip
NAMES = ("stock", "stock_aa", "pickle5", "serde_kit")
ORDER = ("stock", "pickle5", "serde_kit")


def calls(only: str | None = None) -> dict[str, dict[str, Callable[[], Any]]]:
    """payload -> contestant -> one dumps pass (pending writes: 1000 calls)."""
    cs = P.contestants()
    wanted = PAYLOADS if only is None else (only,)
    values = P.serializer_payloads(include_numpy=False, include_other=any(not n.startswith(("numpy", "pending")) for n in wanted))
    if any(n.startswith("numpy") for n in wanted):
        values.update(P.arrays())  # the same arrays as compare.py (64 MiB ones included, unused here)
    values["pending_writes_1000"] = P.pending_writes(1000)
    out: dict[str, dict[str, Callable[[], Any]]] = {}
    for name in PAYLOADS:
        if only is not None and name != only:
            continue
        value = values[name]
        row: dict[str, Callable[[], Any]] = {}
        for who in NAMES:
            dumps = cs[who].dumps
            if name == "pending_writes_1000":
                row[who] = lambda d=dumps, v=value: [d(x) for x in v] and None
            else:
                row[who] = lambda d=dumps, v=value: d(v)
        out[name] = row
    return out


def _time(fn: Callable[[], Any], number: int) -> float:
    gc.collect()
    t0 = time.thread_time()
    for _ in range(number):
        fn()
    return (time.thread_time() - t0) / number


def timed(rounds: int, min_time: float, only: str | None) -> None:
    rows = calls(only)
    numbers: dict[str, dict[str, int]] = {}
    for name, fns in rows.items():
        numbers[name] = {}
        for who, fn in fns.items():
            fn()
            number = 1
            while True:
                t0 = time.perf_counter()
                for _ in range(number):
                    fn()
                if time.perf_counter() - t0 >= min_time or number >= 1 << 16:
                    break
                number *= 4
            numbers[name][who] = number
    best = {name: dict.fromkeys(NAMES, math.inf) for name in rows}
    for r in range(rounds):
        for name, fns in rows.items():
            order = list(NAMES[r % len(NAMES) :] + NAMES[: r % len(NAMES)])
            for who in order:
                best[name][who] = min(best[name][who], _time(fns[who], numbers[name][who]))
    print(f"{'payload':<22}" + "".join(f"{n + ' us':>14}" for n in NAMES) + f"{'A/A':>7}{'pickle5 x':>10}{'serde_kit x':>12}")
    ratios: dict[str, list[float]] = {"aa": [], "pickle5": [], "serde_kit": []}
    for name, t in best.items():
        stock = t["stock"]
        line = f"{name:<22}" + "".join(f"{t[n] * 1e6:>14.1f}" for n in NAMES)
        for label, width in (("aa", 7), ("pickle5", 10), ("serde_kit", 12)):
            v = stock / t["stock_aa" if label == "aa" else label]
            ratios[label].append(v)
            line += f"{v:>{width}.2f}"
        print(line)
    geo = {k: math.exp(sum(map(math.log, v)) / len(v)) for k, v in ratios.items()}
    print(f"geomean x stock: A/A {geo['aa']:.3f}  pickle5 {geo['pickle5']:.2f}  serde_kit {geo['serde_kit']:.2f}")


def instructions(payload: str, number: int, order: tuple[str, ...] = ORDER) -> None:
    fns = calls(payload)[payload]
    for who in order:
        fns[who]()  # warm: type tables, imports
    time.sleep(0)  # part 1 ends: setup
    for who in order:
        fn = fns[who]
        for _ in range(number):
            fn()
        time.sleep(0)  # part ends: this contestant
    print(f"{payload} calls={number} parts: setup {' '.join(order)}", file=sys.stderr)


def report(prefix: str, number: int, order: tuple[str, ...] = ORDER) -> None:
    parts = sorted(glob.glob(prefix + ".*"), key=lambda p: int(p.rsplit(".", 1)[1]))
    totals = []
    for part in parts:
        text = Path(part).read_text(errors="replace")
        found = re.search(r"^summary: (\d+)", text, re.M) or re.search(r"^totals: (\d+)", text, re.M)
        totals.append(int(found.group(1)) if found else 0)
    per = dict(zip(order, (t / number for t in totals[1 : 1 + len(order)])))
    line = "  ".join(f"{who} {v:,.0f}" for who, v in per.items())
    if len(per) == len(ORDER):
        line += f"  pickle5/serde_kit {per['pickle5'] / per['serde_kit']:.2f}  stock/serde_kit {per['stock'] / per['serde_kit']:.2f}"
    print(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--min-time", type=float, default=0.05)
    ap.add_argument("--only", choices=PAYLOADS)
    ap.add_argument("--instructions", metavar="PAYLOAD", choices=PAYLOADS)
    ap.add_argument("--report", metavar="PREFIX")
    ap.add_argument("--who", default=",".join(ORDER), help="contestants in instruction mode (comma-separated, same for --report)")
    ap.add_argument("number", nargs="?", type=int, default=10, help="calls per contestant (instruction mode)")
    args = ap.parse_args()
    order = tuple(args.who.split(","))
    if args.report:
        report(args.report, args.number, order)
    elif args.instructions:
        instructions(args.instructions, args.number, order)
    else:
        timed(args.rounds, args.min_time, args.only)


if __name__ == "__main__":
    main()
