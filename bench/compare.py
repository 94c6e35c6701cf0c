"""Interleaved comparison: serde_kit vs stock JsonPlusSerializer, pickle 5 and raw ormsgpack.

    .venv/bin/python bench/compare.py                  # everything
    .venv/bin/python bench/compare.py --only numpy     # one group: serializer|numpy|writes|encryption
    .venv/bin/python bench/compare.py --json out.json  # also write the raw numbers

Each round times every contestant on the same payload one after another
(rotating the order), so background load hits them alike; the reported time
is the best of the rounds (per call). Ratios are "x faster than" (stock /
serde_kit) for the stock columns and "x slower than" (serde_kit / other) for
pickle and raw ormsgpack, where the targets are "within N x".
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import payloads as P  # noqa: E402


#: The clock every batch is timed with: wall time by default, or this thread's CPU
#: time (``--clock cpu``), which other processes on a shared machine do not move.
_clock: Callable[[], float] = time.perf_counter


def _minflt() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _time_calls(fn: Callable[[], Any], number: int) -> tuple[float, float]:
    """Seconds per call and minor page faults per call over ``number`` calls."""
    gc.collect()
    f0 = _minflt()
    t0 = _clock()
    for _ in range(number):
        fn()
    dt = _clock() - t0
    return dt / number, (_minflt() - f0) / number


def _calibrate(fn: Callable[[], Any], min_time: float) -> int:
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - t0 >= min_time or number >= 1 << 20:
            return number
        number *= 4


def measure(
    payload: Any, contestants: dict[str, P.Contestant], *, rounds: int, min_time: float, per_item: bool = False
) -> dict[str, dict[str, Any]]:
    """Best-of-``rounds`` dumps/loads seconds per call, output size, page faults per call.

    ``per_item``: ``payload`` is a list serialized one call per item (pending writes).
    """
    res: dict[str, dict[str, Any]] = {}
    names = list(contestants)
    dumped: dict[str, Any] = {}
    plans: dict[str, tuple[Callable[[], Any], Callable[[], Any], int, int]] = {}
    for name in names:
        c = contestants[name]
        try:
            if per_item:
                out = [c.dumps(v) for v in payload]
                [c.loads(d) for d in out]
                size = sum(c.size(d) for d in out)

                def d_fn(c=c):
                    for v in payload:
                        c.dumps(v)

                def l_fn(c=c, out=out):
                    for d in out:
                        c.loads(d)
            else:
                out = c.dumps(payload)
                c.loads(out)
                size = c.size(out)

                def d_fn(c=c):
                    c.dumps(payload)

                def l_fn(c=c, out=out):
                    c.loads(out)
        except Exception as e:  # raw ormsgpack cannot write everything; that is a result, not a crash
            res[name] = {"error": f"{type(e).__name__}: {e}"[:120]}
            continue
        dumped[name] = out
        plans[name] = (d_fn, l_fn, _calibrate(d_fn, min_time), _calibrate(l_fn, min_time))
        res[name] = {"size": size, "dumps": math.inf, "loads": math.inf, "dumps_minflt": math.inf, "loads_minflt": math.inf}
    live = [n for n in names if n in plans]
    for r in range(rounds):
        order = live[r % len(live):] + live[: r % len(live)] if live else []
        for name in order:
            d_fn, l_fn, dn, ln = plans[name]
            for op, fn, number in (("dumps", d_fn, dn), ("loads", l_fn, ln)):
                t, flt = _time_calls(fn, number)
                res[name][op] = min(res[name][op], t)
                res[name][op + "_minflt"] = min(res[name][op + "_minflt"], flt)
    del dumped
    return res


def _fmt_t(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:9.2f} us"
    if s < 1:
        return f"{s * 1e3:9.2f} ms"
    return f"{s:9.3f} s "


def _geomean(xs: list[float]) -> float:
    xs = [x for x in xs if x and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def _ratio(a: dict, b: dict, op: str) -> float:
    if "error" in a or "error" in b:
        return float("nan")
    return a[op] / b[op]


def report_serializer(results: dict[str, dict[str, dict[str, Any]]], per_item: set[str]) -> dict[str, Any]:
    print(f"\n{'payload':24} {'contestant':10} {'dumps':>12} {'loads':>12} {'size':>11} {'flt/d':>7} {'flt/l':>7}")
    for payload, res in results.items():
        for name, r in res.items():
            if "error" in r:
                print(f"{payload:24} {name:10} n/a ({r['error']})")
                continue
            unit = " (per 1000 calls)" if payload in per_item else ""
            print(
                f"{payload:24} {name:10} {_fmt_t(r['dumps'])} {_fmt_t(r['loads'])} {r['size']:11d} "
                f"{r['dumps_minflt']:7.1f} {r['loads_minflt']:7.1f}{unit}"
            )
    print(f"\n{'payload':24} {'dumps x stock':>13} {'loads x stock':>13} {'d/pickle5':>10} {'l/pickle5':>10} {'d/ormsgpack':>11} {'l/ormsgpack':>11}   A/A d l")
    summary: dict[str, Any] = {"per_payload": {}}
    for payload, res in results.items():
        ours = res["serde_kit"]
        row = {
            "dumps_speedup_vs_stock": _ratio(res["stock"], ours, "dumps"),
            "loads_speedup_vs_stock": _ratio(res["stock"], ours, "loads"),
            "dumps_vs_pickle5": _ratio(ours, res["pickle5"], "dumps"),
            "loads_vs_pickle5": _ratio(ours, res["pickle5"], "loads"),
            "dumps_vs_ormsgpack": _ratio(ours, res["ormsgpack"], "dumps"),
            "loads_vs_ormsgpack": _ratio(ours, res["ormsgpack"], "loads"),
        }
        extra = {
            "pickle5_dumps_vs_stock": _ratio(res["stock"], res["pickle5"], "dumps"),
            "pickle5_loads_vs_stock": _ratio(res["stock"], res["pickle5"], "loads"),
            "aa_dumps": _ratio(res["stock"], res["stock_aa"], "dumps") if "stock_aa" in res else float("nan"),
            "aa_loads": _ratio(res["stock"], res["stock_aa"], "loads") if "stock_aa" in res else float("nan"),
        }
        summary["per_payload"][payload] = {**row, **extra}
        print(
            f"{payload:24} " + " ".join(f"{v:>{w}.2f}" for v, w in zip(row.values(), (13, 13, 10, 10, 11, 11)))
            + f"   A/A {extra['aa_dumps']:.2f} {extra['aa_loads']:.2f}"
        )
    d = _geomean([r["dumps_speedup_vs_stock"] for r in summary["per_payload"].values()])
    lo = _geomean([r["loads_speedup_vs_stock"] for r in summary["per_payload"].values()])
    summary["geomean_dumps_speedup"], summary["geomean_loads_speedup"] = d, lo
    rows = summary["per_payload"].values()
    summary["geomean_pickle5_loads_speedup"] = _geomean([r["pickle5_loads_vs_stock"] for r in rows])
    summary["geomean_pickle5_dumps_speedup"] = _geomean([r["pickle5_dumps_vs_stock"] for r in rows])
    summary["geomean_aa"] = {"dumps": _geomean([r["aa_dumps"] for r in rows]), "loads": _geomean([r["aa_loads"] for r in rows])}
    print(
        f"pickle5 geomean vs stock: dumps {summary['geomean_pickle5_dumps_speedup']:.2f}x, loads {summary['geomean_pickle5_loads_speedup']:.2f}x; "
        f"A/A control (stock / stock again): dumps {summary['geomean_aa']['dumps']:.3f}, loads {summary['geomean_aa']['loads']:.3f}"
    )
    print(f"\ngeomean speedup vs stock over {len(results)} payloads: dumps {d:.2f}x, loads {lo:.2f}x")
    # The big-array payloads swing the overall geomean (one copy vs the stock's
    # three); the structured payloads on their own say how the codec itself does.
    other = [r for p, r in summary["per_payload"].items() if not p.startswith("numpy_")]
    if other and len(other) < len(summary["per_payload"]):
        d2 = _geomean([r["dumps_speedup_vs_stock"] for r in other])
        l2 = _geomean([r["loads_speedup_vs_stock"] for r in other])
        summary["geomean_non_numpy"] = {"dumps": d2, "loads": l2}
        print(f"geomean speedup vs stock over the {len(other)} non-numpy payloads: dumps {d2:.2f}x, loads {l2:.2f}x")
    return summary


def run_encryption(*, rounds: int, min_time: float, baseline: str | None = None) -> dict[str, Any]:
    """The encrypted serializers on random bytes and on the small writes.

    Contestants: serde_kit (and ``serde_kit_base``, the same code at git revision
    ``baseline``, when given), the stock EAX serializer twice (A/A), raw
    cryptography AES-GCM twice (the hardware anchor and its own A/A), and
    serde_kit's plain ``Serializer`` (``inner``: what encryption wraps).
    """
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from serde_kit import Serializer

    enc = P.encryption_contestants(baseline)
    plain = Serializer()
    inner = {
        "serde_kit": P.Contestant("inner", plain.dumps_typed, plain.loads_typed, lambda d: len(d[1])),
        "stock": P.Contestant("inner", JsonPlusSerializer().dumps_typed, JsonPlusSerializer().loads_typed, lambda d: len(d[1])),
    }
    out: dict[str, Any] = {}
    print(f"\n{'payload':14} {'contestant':14} {'encrypt':>12} {'decrypt':>12} {'enc GB/s':>9} {'dec GB/s':>9} {'flt/e':>8} {'flt/d':>8}")
    for name, blob in P.encryption_payloads().items():
        big = "64MiB" in name
        res = measure(blob, {**enc, "inner": inner["serde_kit"]}, rounds=min(rounds, 5) if big else rounds, min_time=0 if big else min_time)
        out[name] = res
        n = len(blob)
        for who, r in res.items():
            print(
                f"{name:14} {who:14} {_fmt_t(r['dumps'])} {_fmt_t(r['loads'])} {n / r['dumps'] / 1e9:9.2f} {n / r['loads'] / 1e9:9.2f} "
                f"{r['dumps_minflt']:8.1f} {r['loads_minflt']:8.1f}"
            )
        raw, aa = res["raw_aesgcm"], res["raw_aa"]
        line = f"  {name}: raw A/A {aa['dumps'] / raw['dumps']:.3f} {aa['loads'] / raw['loads']:.3f}"
        for who in ("serde_kit", "serde_kit_base"):
            if who in res:
                r = res[who]
                line += f"; {who} {raw['dumps'] / r['dumps'] * 100:.0f}%/{raw['loads'] / r['loads'] * 100:.0f}% of raw"
                # Without the inner serializer's own copy of the bytes: the encryption layer alone.
                ed, el = r["dumps"] - res["inner"]["dumps"], r["loads"] - res["inner"]["loads"]
                line += f" (layer alone {raw['dumps'] / ed * 100:.0f}%/{raw['loads'] / el * 100:.0f}%)"
        print(line)
    # Per-call overhead on small writes: encrypted minus the same inner serializer alone.
    writes = P.pending_writes(1000)
    both = {
        **{f"{k}+enc": v for k, v in enc.items() if not k.startswith("raw") and k != "stock_aa"},
        **{f"{k}_inner": v for k, v in inner.items()},
        # The floor: the inner serializer, os.urandom(12) and cryptography's AES-GCM with the
        # same header, AAD and join, inlined by hand (what raw AES-GCM costs per row right now).
        "floor+enc": P.encryption_floor(plain),
    }
    res = measure(writes, both, rounds=rounds, min_time=min_time, per_item=True)
    out["small_writes"] = res
    print("\nper-call encryption overhead on 1000 small writes (encrypted - inner alone):")
    for who, base in (("floor", "serde_kit"), ("serde_kit", "serde_kit"), ("serde_kit_base", "serde_kit"), ("stock", "stock")):
        if f"{who}+enc" not in res:
            continue
        d = (res[f"{who}+enc"]["dumps"] - res[f"{base}_inner"]["dumps"]) / len(writes)
        lo = (res[f"{who}+enc"]["loads"] - res[f"{base}_inner"]["loads"]) / len(writes)
        out[f"overhead_{who}"] = {"dumps": d, "loads": lo}
        print(f"  {who:14} encrypt +{d * 1e6:.2f} us/call, decrypt +{lo * 1e6:.2f} us/call")
    fl = out["overhead_floor"]
    for who in ("serde_kit", "serde_kit_base"):
        if f"overhead_{who}" in out:
            o = out[f"overhead_{who}"]
            print(f"  {who:14} above the floor: encrypt +{(o['dumps'] - fl['dumps']) * 1e6:.2f} us/call, decrypt +{(o['loads'] - fl['loads']) * 1e6:.2f} us/call")
    return out


def targets(ser: dict[str, Any] | None, enc: dict[str, Any] | None) -> list[tuple[str, str, bool]]:
    rows: list[tuple[str, str, bool]] = []
    if ser:
        pp = ser["per_payload"]
        d, lo = ser.get("geomean_dumps_speedup"), ser.get("geomean_loads_speedup")
        if d is not None:
            rows.append(("dumps geomean >= 3x stock", f"{d:.2f}x", d >= 3))
            rows.append(("loads geomean >= 2x stock", f"{lo:.2f}x", lo >= 2))
        if "geomean_non_numpy" in ser:
            g = ser["geomean_non_numpy"]
            rows.append(("(same, non-numpy payloads only) dumps >= 3x", f"{g['dumps']:.2f}x", g["dumps"] >= 3))
            rows.append(("(same, non-numpy payloads only) loads >= 2x", f"{g['loads']:.2f}x", g["loads"] >= 2))
        if d is not None and "geomean_pickle5_dumps_speedup" in ser:
            pk = ser["geomean_pickle5_dumps_speedup"]
            rows.append(("dumps geomean >= pickle5's dumps geomean", f"{d:.2f}/{pk:.2f}", d >= pk))
        if lo is not None and "geomean_pickle5_loads_speedup" in ser:
            pk = ser["geomean_pickle5_loads_speedup"]
            rows.append(("loads geomean >= pickle5's loads geomean", f"{lo:.2f}/{pk:.2f}", lo >= pk))
        for op in ("dumps", "loads"):
            worst = min(pp, key=lambda name: pp[name][f"{op}_speedup_vs_stock"])
            v = pp[worst][f"{op}_speedup_vs_stock"]
            rows.append((f"no payload's {op} below 1.0x stock (worst: {worst})", f"{v:.2f}x", v >= 1))
        for p in ("chat_10", "chat_500"):
            if p in pp:
                v = pp[p]["loads_vs_pickle5"]
                rows.append((f"{p} loads at least as fast as pickle5", f"{v:.2f}x", v <= 1))
        if "geomean_aa" in ser:
            aa = ser["geomean_aa"]
            worst_aa = max(abs(aa["dumps"] - 1), abs(aa["loads"] - 1))
            rows.append(("A/A control within 5% (the run is trustworthy)", f"{worst_aa * 100:.1f}%", worst_aa <= 0.05))
        for p in sorted(pp):
            if p.startswith(("numpy_1MiB", "numpy_64MiB")):
                for op in ("dumps", "loads"):
                    v = pp[p][f"{op}_vs_pickle5"]
                    rows.append((f"{p} {op} within 1.3x of pickle 5", f"{v:.2f}x", v <= 1.3))
    if enc:
        o = enc["overhead_serde_kit"]
        rows.append(("encrypt overhead <= 2 us per small write", f"{o['dumps'] * 1e6:.2f} us", o["dumps"] <= 2e-6))
        rows.append(("decrypt overhead <= 1.5 us per small write", f"{o['loads'] * 1e6:.2f} us", o["loads"] <= 1.5e-6))
        if "overhead_floor" in enc:
            # The same targets relative to this run's floor (inner + urandom + AES-GCM inlined):
            # the issue set 2.0/1.5 us with urandom+encrypt at ~1.4 us and decrypt at ~0.8 us.
            fl = enc["overhead_floor"]
            for op, what, allowed in (("dumps", "encrypt", 0.6e-6), ("loads", "decrypt", 0.7e-6)):
                above = o[op] - fl[op]
                rows.append((
                    f"(relative) {what} above the AES-GCM floor <= {allowed * 1e6:.1f} us",
                    f"{above * 1e6:+.2f} us", above <= allowed,
                ))  # fmt: skip
        # Throughput against cryptography's AES-GCM alone, measured in the same run:
        # what this machine's hardware can do, whatever machine it is.
        for size, op, label, bound in (
            ("enc_1MiB", "dumps", "encrypt at 1 MiB >= 90% of raw AES-GCM", 0.9),
            ("enc_1MiB", "loads", "decrypt at 1 MiB >= 90% of raw AES-GCM", 0.9),
            ("enc_64MiB", "loads", "decrypt at 64 MiB <= 1.5x raw AES-GCM time", 1 / 1.5),
        ):
            ours, raw = enc[size]["serde_kit"], enc[size]["raw_aesgcm"]
            share = raw[op] / ours[op]
            rows.append((label, f"{share * 100:.0f}% ({P.MIB * (64 if '64' in size else 1) / ours[op] / 1e9:.2f} GB/s)", share >= bound))
        for size in ("enc_1MiB", "enc_64MiB"):
            raw, aa = enc[size]["raw_aesgcm"], enc[size]["raw_aa"]
            worst = max(abs(aa["dumps"] / raw["dumps"] - 1), abs(aa["loads"] / raw["loads"] - 1))
            rows.append((f"raw AES-GCM A/A at {size[4:]} within 5% (the ratios hold)", f"{worst * 100:.1f}%", worst <= 0.05))
    print(f"\n{'target':52} {'measured':>12}  result")
    for name, val, ok in rows:
        print(f"{name:52} {val:>12}  {'met' if ok else 'MISSED'}")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["all", "serializer", "numpy", "writes", "encryption"], default="all")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--min-time", type=float, default=0.05, help="seconds per timed batch (small payloads)")
    ap.add_argument("--json", type=Path, help="write raw results here")
    ap.add_argument("--baseline", metavar="REV", help="encryption: also run serde_kit.crypto as of git revision REV")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="time batches by wall clock or by this thread's CPU time (steadier on a shared machine)")  # fmt: skip
    args = ap.parse_args(argv)
    global _clock
    _clock = time.thread_time if args.clock == "cpu" else time.perf_counter

    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpus; "
        f"MALLOC_MMAP_THRESHOLD_={os.environ.get('MALLOC_MMAP_THRESHOLD_', '(unset: glibc dynamic)')}; "
        f"best of {args.rounds} interleaved rounds; clock: {args.clock}"
    )
    want = args.only
    ser_results: dict[str, Any] = {}
    per_item: set[str] = set()
    if want in ("all", "serializer", "numpy", "writes"):
        cs = P.contestants()
        pl = P.serializer_payloads(include_numpy=want in ("all", "numpy"), include_other=want in ("all", "serializer"))
        for name, value in pl.items():
            big = name.startswith("numpy_64MiB")
            ser_results[name] = measure(value, cs, rounds=min(args.rounds, 5) if big else args.rounds, min_time=0 if big else args.min_time)
        if want in ("all", "writes", "serializer"):
            ser_results["pending_writes_1000"] = measure(P.pending_writes(1000), cs, rounds=args.rounds, min_time=args.min_time, per_item=True)
            per_item.add("pending_writes_1000")
    summary = report_serializer(ser_results, per_item) if ser_results else None
    if summary and want == "numpy":  # the geomean targets are about the full payload set
        summary.pop("geomean_dumps_speedup"), summary.pop("geomean_loads_speedup")
        summary.pop("geomean_non_numpy", None)
    enc = run_encryption(rounds=args.rounds, min_time=args.min_time, baseline=args.baseline) if want in ("all", "encryption") else None
    rows = targets(summary, enc)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {"env": {"MALLOC_MMAP_THRESHOLD_": os.environ.get("MALLOC_MMAP_THRESHOLD_")}, "serializer": ser_results,
                 "summary": summary, "encryption": enc, "targets": rows},
                indent=1, default=str,
            )
        )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
