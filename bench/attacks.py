"""Cost of hostile rows against honest rows of similar size: time and peak memory per stored byte.

    .venv/bin/python bench/attacks.py                       # this checkout's serde_kit
    .venv/bin/python bench/attacks.py --serde-kit ../old    # another checkout (before/after)
    .venv/bin/python bench/attacks.py --only flood_map --timeout 120 --json out.json

Every case runs in a child process (so a hang is cut at ``--timeout`` and a
crash is reported, not suffered), decoding on a thread with a 2 MiB stack (what
glibc gives every thread under ``ulimit -s unlimited``). Reported per case:
outcome (value, or the error class), seconds, MB/s of stored bytes, and peak
RSS growth per stored byte. The attack rows are tests/support/budget_attacks.py.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: name -> (tag, expression building the row; ``A`` is tests/support/budget_attacks.py, ``S`` a Serializer, ``P`` bench/payloads.py)
CASES: dict[str, tuple[str, str]] = {
    "fraction_exponent": ("msgpack", "A.fraction_exponent()"),
    "fraction_json": ("json", "A.fraction_json()"),
    "fraction_gcd_400kB": ("msgpack", "A.fraction_gcd(400_000)"),
    "chunk_partial_json_40kB": ("msgpack", "A.chunk_ext5(40_000)"),
    "numpy_shape_60k_dims": ("msgpack", "A.numpy_long_shape(60_000)"),
    "numpy_void_1GiB": ("msgpack", "A.numpy_void(1 << 30)"),
    "numpy_S0_1M": ("msgpack", "A.numpy_zero_itemsize(1 << 20)"),
    "regex_8kB_ignorecase": ("msgpack", "A.regex_classes(8192, 2)"),
    "flood_map_20k": ("msgpack", "A.flood_map(20_000)"),
    "flood_frozenset_20k": ("msgpack", "A.flood_frozenset(20_000)"),
    "flood_big_ints_20k": ("msgpack", "A.flood_big_ints(20_000)"),
    "flood_uuids_30k": ("msgpack", "A.flood_uuids(30_000)"),
    "flood_uuid_keys_30k": ("msgpack", "A.flood_uuid_keys(30_000)"),
    "empty_maps_3MB": ("msgpack", "A.empty_maps(3_000_000)"),
    "exts_100k_at_depth_6": ("msgpack", "A.exts_at_depth(6, 100_000)"),
    "deep_6x1000_small_stack": ("msgpack", "A.deep_in_every_level(6, 1000)"),
    "empty_maps_30MB": ("msgpack", "A.empty_maps(30_000_000)"),
    "forged_name_1MB": ("msgpack", "A.forged_names(1 << 20)"),
    # issue 19, findings 1-6 (and the floods the prefilter once let through)
    "i19_1_fraction_subscript": ("msgpack", "A.subscripted_standard(*A.SUBSCRIPTED_STANDARD[0])"),
    "i19_1_numpy_void_subscript": ("msgpack", "A.subscripted_standard(*A.SUBSCRIPTED_STANDARD[1])"),
    "i19_1_fraction_subscript_json": ("json", "A.subscripted_fraction_json()"),
    "i19_2_message_names_6000": ("msgpack", "A.distinct_message_names(6000)"),
    "i19_3_regex_16_ignorecase": ("msgpack", "A.regex_many(16)"),
    "i19_3_partial_json_10x4096": ("msgpack", "A.partial_json_many(10)"),
    "i19_3_long_keys_1999x100": ("msgpack", "A.flood_long_keys(1999, 100)"),
    "i19_3_fractions_4x99k": ("msgpack", "A.fraction_many(4, 99_000)"),
    "i19_3_small_flood_1999": ("msgpack", "A.small_flood_map(1999)"),
    "i19_3_small_floods_40x300": ("msgpack", "A.many_small_flood_maps(40, 300)"),
    "i19_3_empty_string_keys_20k": ("msgpack", "A.flood_keys_led_by_empty_text(20_000)"),
    "i19_3_count_beyond_row_20k": ("msgpack", "A.flood_map_declaring_more_than_it_holds(20_000)"),
    "i19_4_json_empty_objects_18MB": ("json", "A.json_empty_objects(6_000_000)"),
    "i19_6_token_ids_int_key": ("msgpack", "A.token_ids_with_an_int_key()"),
    # issue 19, round 3: maps of at most max_hash_collisions long colliding keys
    "i19_r3_long_key_maps_10x64x300": ("msgpack", "A.maps_of_long_colliding_keys(10, 64, 300)"),
    "i19_r3_long_key_maps_300x64x20": ("msgpack", "A.maps_of_long_colliding_keys(300, 64, 20)"),
    "i19_r3_long_key_maps_in_ext": ("msgpack", "A.in_tuple_ext(A.maps_of_long_colliding_keys(10, 64, 300))"),
    "i19_r3_fixmaps_15_long_keys_x40": ("msgpack", "A.maps_of_long_colliding_keys(40, 15, 2000, 0x80)"),
    # issue 19, round 3: float map keys sharing one hash (202 doubles at most)
    "i19_r3_float_keys_202": ("msgpack", "A.float_flood_map()"),
    "i19_r3_float_keys_202_after_padding": ("msgpack", "A.after_padding(A.float_flood_map())"),
    "i19_r3_float_key_maps_1000x64": ("msgpack", "A.many_float_flood_maps(1000, 64)"),
    "i19_r3_float_key_map32s_1000x64": ("msgpack", "A.many_float_flood_maps(1000, 64, 0xDF)"),
    # issue 19 round 4: real maps the candidate check reaches only through many containers
    "i19_r4_real_maps_128_at_depth_15": ("msgpack", "A.real_maps_at_depth(15)"),
    "i19_r4_real_maps_128_at_depth_30": ("msgpack", "A.real_maps_at_depth(30)"),
    "i19_r4_real_maps_128_in_arrays_of_2000": ("msgpack", "A.real_maps_in_long_arrays(128, 2000)"),
    # issue 19 round 5: time zones ZoneInfo searches the disk for on every read
    "i19_r5_zone_keys_every_zone": ("msgpack", "A.zone_keys(sorted(__import__('zoneinfo').available_timezones()))"),
    "i19_r5_zone_keys_every_zone_x4": ("msgpack", "A.zone_keys(sorted(__import__('zoneinfo').available_timezones()) * 4)"),
    "i19_r3_float_key_maps_in_ext": ("msgpack", "A.in_tuple_ext(A.many_float_flood_maps(1000, 64))"),
    "i19_r3_float_key_maps_300x202": ("msgpack", "A.many_float_flood_maps(300, 202)"),
    "i19_r3_float_fixmaps_15_x5000": ("msgpack", "A.many_float_flood_maps(5000, 15, 0x80)"),
    # honest rows of comparable sizes
    "honest_chat_500": ("msgpack", "S.dumps(P.chat_checkpoint(500))"),
    "honest_zones_3_x_600": ("msgpack", "A.zone_keys(['UTC', 'Europe/Paris', 'America/New_York'] * 600)"),
    "honest_chat_20": ("msgpack", "S.dumps(P.chat_checkpoint(20))"),
    "honest_set_20k_ints": ("msgpack", "S.dumps(set(range(20_000)))"),
    "honest_uuids_30k": ("msgpack", "S.dumps(frozenset(__import__('uuid').UUID(int=i) for i in range(30_000)))"),
    "honest_cjk_text_1MB": ("msgpack", "S.dumps({'notes': ['\\u4e2d\\u6587\\u6587\\u672c' * 50] * 1300})"),
    "honest_array_8MB": ("msgpack", "S.dumps(__import__('numpy').ones(1 << 20))"),
    "honest_list_1M_ints": ("msgpack", "S.dumps(list(range(1_000_000)))"),
    "honest_floats_1M": ("msgpack", "S.dumps([i / 7 for i in range(1_000_000)])"),
    "honest_tuple_keys_1999": ("msgpack", "A.pack({(i, i * 7): i for i in range(1999)})"),
    "honest_long_key_maps_10x64x300": ("msgpack", "A.pack([{tuple(range(1000 + i, 1300 + i)): 0 for i in range(64)}] * 10)"),
    "honest_float_key_maps_1000x64": ("msgpack", "A.honest_float_maps(1000, 64)"),
    "honest_float_fixmaps_15_x5000": ("msgpack", "A.honest_float_maps(5000, 15, 0x80)"),
    "honest_token_ids_no_int_key": ("msgpack", "S.dumps({'1': A.ormsgpack.unpackb(A.token_ids_with_an_int_key(), option=A.OPT)[1]})"),
    "honest_cjk_chat_200": ("msgpack", "S.dumps({'messages': [{'role': 'user', 'content': '\u4f60\u597d\u4e16\u754c' * 40, 'id': str(i)} for i in range(200)]})"),
}

_CHILD = r"""
import json, resource, sys, threading, time
sys.path[:0] = [{serde_kit!r}, {repo!r}, {repo!r} + "/bench"]
# An editable install's import hook would find this checkout's serde_kit first.
sys.meta_path = [finder for finder in sys.meta_path if "editable" not in repr(finder).lower()]
import serde_kit  # before bench/payloads.py, which puts this repository first on sys.path
from tests.support import budget_attacks as A
import payloads as P
from serde_kit import Serializer
S = Serializer()
data = {expr}
tag = {tag!r}
out = {{"bytes": len(data), "serde_kit": __import__("serde_kit").__file__}}
def run():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    try:
        S.loads_typed((tag, data))
        out["outcome"] = "value"
    except Exception as exc:
        out["outcome"] = type(exc).__name__
    out["seconds"] = time.perf_counter() - start
    out["rss_growth"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
threading.stack_size(2 << 20)
thread = threading.Thread(target=run)
thread.start()
thread.join()
print(json.dumps(out))
"""


def run_case(name: str, serde_kit: Path, timeout: float) -> dict:
    tag, expr = CASES[name]
    env = {**os.environ, "PYTHONPATH": str(serde_kit)}
    script = _CHILD.format(repo=str(REPO), serde_kit=str(serde_kit), expr=expr, tag=tag)
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"outcome": f"killed after {timeout:.0f} s", "seconds": None}
    if done.returncode != 0:
        return {"outcome": f"crashed (exit {done.returncode})", "seconds": None, "stderr": done.stderr[-300:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--serde-kit", type=Path, default=REPO, help="checkout whose serde_kit to measure")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a case is killed")
    parser.add_argument("--only", nargs="*", default=None, help="case names")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args()
    results = {}
    print(f"{'case':28} {'bytes':>10} {'outcome':>26} {'seconds':>9} {'MB/s':>9} {'RSS B/B':>8}")
    for name in args.only or CASES:
        r = results[name] = run_case(name, args.serde_kit.resolve(), args.timeout)
        size = r.get("bytes")
        secs = r.get("seconds")
        rate = f"{size / secs / 1e6:9.1f}" if size and secs else f"{'-':>9}"
        rss = f"{r['rss_growth'] / size:8.1f}" if size and "rss_growth" in r else f"{'-':>8}"
        print(f"{name:28} {size or '-':>10} {r['outcome'][:26]:>26} {secs if secs is None else round(secs, 4)!s:>9} {rate} {rss}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
