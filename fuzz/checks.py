"""What each harness checks for one input, importable without atheris instrumentation.

The harnesses hand these to libFuzzer (``_common.fuzz``); tests/test_fuzz_regressions.py
replays every saved finding (fuzz/regressions/<harness>/*) through the same
function, so a fixed bug stays fixed.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from typing import Any

import _common

from tests.support import strategy_types as T

logging.getLogger("langgraph").setLevel(logging.ERROR)  # the stock reader logs every unregistered type

K1 = bytes(range(32))
K2 = bytes(range(100, 132))
LEGACY_KEY = b"0123456789abcdef0123456789abcdef"  # the raw bytes of a LANGGRAPH_AES_KEY text
ENC_TAGS = [
    "msgpack+aesgcm", "bytes+aesgcm", "null+aesgcm", "bytearray+aesgcm", "json+aesgcm",
    "msgpack+aes", "bytes+aes", "msgpack", "bytes", "msgpack+aesgcm+x", "+aesgcm", "msgpack+rot13",
]  # fmt: skip

_cache: dict[str, Any] = {}


def _serializers() -> dict[str, Any]:
    if not _cache:
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

        from serde_kit import Limits, Serializer
        from serde_kit.crypto import EncryptedSerializer, Keyring

        inner = Serializer(allow=T.USER_TYPES)
        ring = Keyring({"k1": K1, "k2": K2}, primary="k2", legacy_key=LEGACY_KEY)
        _cache.update(
            strict=inner,
            lenient=Serializer(allow=T.USER_TYPES, lenient=True),
            stock=(JsonPlusSerializer(allowed_msgpack_modules=True), JsonPlusSerializer(allowed_msgpack_modules=None)),
            enc=EncryptedSerializer(inner, ring),
            enc_plain=EncryptedSerializer(inner, ring, allow_plaintext=True),
            ring=ring,
        )
        small = Limits(**SMALL_LIMITS)
        _cache.update(
            strict_small=Serializer(allow=T.USER_TYPES, limits=small),
            lenient_small=Serializer(allow=T.USER_TYPES, lenient=True, limits=small),
        )
    return _cache


#: Limits small enough that a row of at most 4 KiB (the campaigns' -max_len) crosses them:
#: the compiled reader's decode_checked hands a row to the prescan when its own counts of
#: maps and arrays pass max_containers, or of hashable typed values pass max_hash_collisions;
#: the prescan says to track hashes (the row is read again by the tracking reader) only for
#: a map of more than max_hash_collisions entries whose keys could cost more than the row's
#: allowance if they collided, which min_work keeps out of reach of small rows at its
#: default. At the defaults (10^6 containers, 64 values, 5 M units) few fuzz inputs get
#: there. max_containers also lowers the decoder's small-row bound (rows above it take
#: decode_checked rather than LoadsTyped's small-row read).
SMALL_LIMITS = {"max_containers": 64, "max_hash_collisions": 4, "max_ext_depth": 8, "min_work": 20_000}


def uses_small_limits(data: bytes) -> bool:
    """Whether an input reads with :data:`SMALL_LIMITS`: a quarter of the first byte's values,
    none of those the seed writers use by default (``_common.join_tagged`` writes 0..9, and
    lenient seeds add 128): the byte's tens digit, mod 4, is 3 (30..39, 70..79, 110..119,
    150..159, 190..199, 230..239). The tag (byte mod 10) and lenient (byte >= 128) keep their
    meaning."""
    return bool(data) and (data[0] // 10) % 4 == 3


def decoding_serializer(data: bytes) -> Any:
    """The serializer an input of the decode, resource and cost harnesses reads with."""
    s = _serializers()
    lenient = bool(data and data[0] >= 128)
    small = "_small" if uses_small_limits(data) else ""
    return s[("lenient" if lenient else "strict") + small]


def check_decode(data: bytes) -> None:
    """Arbitrary tag + bytes: only SerdeError may escape loads_typed."""
    from serde_kit.crypto.rows import classify_row
    from serde_kit.errors import SerdeError

    tag, payload = _common.split_tagged(data)
    serde = decoding_serializer(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lenient mode warns by design
        try:
            serde.loads_typed((tag, payload))
        except SerdeError:
            pass


#: A row may cost at most this much CPU time (the decode budget keeps honest and
#: hostile rows far below it; instrumentation makes the harness slower than real use).
MAX_CPU_SECONDS = 1.0
#: Peak RSS may grow by at most max(10 x the input size, this floor): RSS moves in
#: pages and allocator arenas, so below a few MiB it says nothing about one input.
RSS_FLOOR_BYTES = 8 << 20


def _peak_rss_bytes() -> int:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def check_resources(data: bytes) -> None:
    """As :func:`check_decode`, and the row may cost neither > 1 s of CPU nor a peak RSS
    growth beyond 10x its size (above the floor)."""
    import time

    before = _peak_rss_bytes()
    started = time.process_time()
    check_decode(data)
    spent = time.process_time() - started
    grown = _peak_rss_bytes() - before
    if spent > MAX_CPU_SECONDS:
        raise AssertionError(f"a {len(data)}-byte row took {spent:.2f} s of CPU to decode")
    if grown > max(10 * len(data), RSS_FLOOR_BYTES):
        raise AssertionError(f"a {len(data)}-byte row grew peak RSS by {grown >> 20} MiB")


def check_roundtrip(data: bytes) -> None:
    """Build a value from the bytes; exact round trip; the stock readers read our bytes."""
    import atheris
    import values

    from tests.support.compare import assert_same

    s = _serializers()
    value = values.build(atheris.FuzzedDataProvider(data))
    stored = s["strict"].dumps_typed(value)
    assert_same(value, s["strict"].loads_typed(stored))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for reader in s["stock"]:
            reader.loads_typed(stored)


_ROW_KINDS = {"aesgcm", "legacy", "plaintext", "unknown", "empty", "stray"}


def check_encrypted(data: bytes) -> None:
    """Mutated encrypted rows: only SerdeError (crypto or header/inner decode errors) may
    escape loads_typed and reencrypt; classify_row (header only) never raises."""
    from serde_kit.crypto.rows import classify_row
    from serde_kit.errors import SerdeError

    s = _serializers()
    tag, blob = _common.split_tagged(data, ENC_TAGS)
    serde = s["enc_plain"] if data and data[0] >= 128 else s["enc"]
    info = classify_row(tag, blob)
    if info.kind not in _ROW_KINDS:
        raise AssertionError(f"classify_row gave kind {info.kind!r}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            serde.loads_typed((tag, blob))
        except SerdeError:
            pass
        try:
            serde.reencrypt((tag, blob), encrypt_plaintext=True, upgrade_legacy=True)
        except SerdeError:
            pass


_native_pairs: dict[tuple[bool, bool], Any] = {}


def check_native(data: bytes) -> None:
    """Arbitrary tag + bytes: the compiled reader and the pure path give identical values
    and types, or raise the same SerdeError subclass (tests/native/conftest.py). Both read
    with ``loads_typed`` (the compiled ``LoadsTyped`` on the native side), with the default
    limits or, for a quarter of the first byte's values, :data:`SMALL_LIMITS`."""
    if not _native_pairs:
        from serde_kit import Limits
        from tests.native.conftest import make_pair

        small = Limits(**SMALL_LIMITS)
        for lenient in (False, True):
            _native_pairs[lenient, False] = make_pair(allow=T.USER_TYPES, lenient=lenient)
            _native_pairs[lenient, True] = make_pair(allow=T.USER_TYPES, lenient=lenient, limits=small)
    from tests.native.conftest import assert_same_outcome

    lenient, small = bool(data and data[0] >= 128), uses_small_limits(data)
    fast, pure = _native_pairs[lenient, small]
    row = _common.split_tagged(data)
    # Process-wide caches both paths share (numpy's parsed dtypes, whose first parse of a
    # deprecated alias such as "<a4" warns) are met warm by both: a third serializer, whose
    # own warn-once sets the compared ones do not share, reads the row first.
    _warm_caches(lenient, small, row)
    assert_same_outcome(fast, pure, row, "fuzz input")


_warmers: dict[tuple[bool, bool], Any] = {}


def _warm_caches(lenient: bool, small: bool, row: tuple[str, bytes]) -> None:
    from serde_kit import Limits, Serializer

    if (lenient, small) not in _warmers:
        limits = Limits(**SMALL_LIMITS) if small else Limits()
        _warmers[lenient, small] = Serializer(allow=T.USER_TYPES, lenient=lenient, limits=limits)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _warmers[lenient, small].loads_typed(row)
        except Exception:
            pass  # what the compared reads raise is checked there


def warm_up() -> None:
    """Import and build everything before fuzzing starts, so the first input is not
    charged (against the per-input timeout) for importing langgraph and friends."""
    import values  # noqa: F401

    from serde_kit import native
    from tests.support import compare  # noqa: F401

    serializers = _serializers()
    # In the campaign's log (fuzz/run.sh keeps it under FUZZ_WORK): which code it fuzzed.
    print(f"fuzz: {native.reason()}", file=sys.stderr, flush=True)
    if os.environ.get("SERDE_KIT_NATIVE") == "1":
        # A native campaign must not quietly fuzz the pure path (reader not built, or
        # SERDE_KIT_PURE_PYTHON also set): its executions would be recorded for the wrong code.
        for name in ("strict", "lenient"):
            engine = type(serializers[name]._decoder.engine).__name__
            if engine != "Reader":
                raise SystemExit(f"SERDE_KIT_NATIVE=1 but the {name} serializer reads with {engine}, not the Reader")


CHECKS = {
    "fuzz_decode": check_decode,
    "fuzz_resources": check_resources,
    "fuzz_roundtrip": check_roundtrip,
    "fuzz_encrypted": check_encrypted,
    "fuzz_native": check_native,
}


# --- cost ratio ---------------------------------------------------------------

#: The issue-19 target: no row of N bytes costs more than this times an honest row of N bytes.
MAX_COST_RATIO = 20.0
#: Below this the meter's floor is what bounds a row: the ratio is taken against
#: max(honest cost, floor / MAX_COST_RATIO). Limits.min_work (3,000,000 units, ~3 ms of
#: work on an idle machine) stays below it with room for a loaded one: at 5,000,000 a
#: 712-byte row of one 540-character incomplete tool-call argument, charged 4.7 M units,
#: took 5.7 ms on a machine at load 4 (regressions/fuzz_cost/partial-json-at-the-floor).
FLOOR_SECONDS = 0.005
_HONEST_CPU: dict[int, float] = {}


def _cpu_seconds(call: Any, repeat: int = 1) -> float:
    """The least thread CPU time of ``repeat`` runs of ``call`` (other processes do not move
    it), with the cyclic garbage collector paused: a collection's cost depends on every
    object the fuzzing process holds, not on the row that happens to trigger it."""
    import gc
    import time

    best = float("inf")
    gc.disable()
    try:
        for _ in range(repeat):
            started = time.thread_time()
            call()
            best = min(best, time.thread_time() - started)
    finally:
        gc.enable()
    return best


def honest_row(size: int) -> bytes:
    """An honest msgpack row of about ``size`` bytes: a LangGraph checkpoint of chat
    messages, tool calls, ids and timestamps, as the bench payloads hold."""
    import importlib.util
    import sys

    # bench/ is scripts, not a package: load the module by path.
    payloads = sys.modules.get("bench_payloads")
    if payloads is None:
        spec = importlib.util.spec_from_file_location("bench_payloads", _common.REPO / "bench" / "payloads.py")
        assert spec is not None and spec.loader is not None
        payloads = sys.modules["bench_payloads"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(payloads)
    serde = _serializers()["strict"]
    messages = 1
    while True:
        row = serde.dumps(payloads.chat_checkpoint(messages, seed=3))
        if len(row) >= size or messages > 4096:
            return row
        messages *= 2


def honest_cpu(size: int) -> float:
    """CPU seconds an honest row of ``size`` bytes takes to decode here (per size bucket,
    measured once per process: the least of several runs, scaled to the size)."""
    bucket = max(1024, 1 << max(0, size - 1).bit_length())
    if bucket not in _HONEST_CPU:
        serde = _serializers()["strict"]
        row = honest_row(bucket)
        per_byte = _cpu_seconds(lambda: serde.loads(row), repeat=7) / len(row)
        _HONEST_CPU[bucket] = per_byte * bucket
    return _HONEST_CPU[bucket] * size / bucket


def cost_ratio(data: bytes) -> float:
    """The decode CPU of this input's row over that of an honest row of its size
    (floored at FLOOR_SECONDS / MAX_COST_RATIO)."""
    from serde_kit.errors import SerdeError

    tag, payload = _common.split_tagged(data)
    serde = decoding_serializer(data)

    def decode() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                serde.loads_typed((tag, payload))
            except SerdeError:
                pass

    spent = _cpu_seconds(decode)
    return spent / max(honest_cpu(len(payload)), FLOOR_SECONDS / MAX_COST_RATIO)


#: In-process ratios above this are confirmed by the uninstrumented worker (atheris'
#: instrumentation slows serde_kit's Python code several times more than the C engines).
_CONFIRM_ABOVE = MAX_COST_RATIO / 4
_worker: list[Any] = []


def uninstrumented_ratio(data: bytes) -> float:
    """:func:`cost_ratio` of ``data`` measured by a worker process that runs serde_kit
    uninstrumented (the least of three measurements)."""
    import struct
    import subprocess
    import sys

    if not _worker or _worker[0].poll() is not None:
        _worker[:] = [
            subprocess.Popen(
                [sys.executable, str(_common.REPO / "fuzz" / "cost_worker.py")],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        ]
    proc = _worker[0]
    proc.stdin.write(struct.pack(">I", len(data)) + data)
    proc.stdin.flush()
    return float(proc.stdout.readline())


def check_cost_ratio(data: bytes) -> None:
    """As :func:`check_decode`, and the row may cost at most MAX_COST_RATIO times an honest
    row of its size, as measured without instrumentation (see :func:`uninstrumented_ratio`)."""
    if cost_ratio(data) > _CONFIRM_ABOVE:
        worst = uninstrumented_ratio(data)
        if worst > MAX_COST_RATIO:
            message = f"a {len(data)}-byte row cost {worst:.1f}x an honest row of its size"
            if os.environ.get("FUZZ_COST_REPORT_ONLY") == "1":
                # The test suite's smoke: a CPU-time ratio is a benchmark figure, not a pass/fail
                # on a shared machine; the campaign (fuzz/run.sh) is where it fails.
                print(f"cost ratio above {MAX_COST_RATIO:.0f}x: {message}", file=sys.stderr)
                return
            raise AssertionError(message)


CHECKS["fuzz_cost"] = check_cost_ratio
