"""The decode budget: every attack class of the security review ends in a typed error.

Each test feeds the hostile bytes of one finding (tests/support/budget_attacks.py) and
checks the error and the limit it names; honest values next to each attack
still decode exactly. None of these depends on the machine's speed: a
regression would hang, and pytest-timeout would report it.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
import threading
import uuid
import warnings
from fractions import Fraction
from pathlib import Path

import pytest

from serde_kit import (
    Allowlist,
    BlockedTypeError,
    ConfigError,
    DecodeError,
    LenientDecodeWarning,
    LimitExceededError,
    Limits,
    MalformedDataError,
    RebuildError,
    SerdeWarning,
    Serializer,
    UnknownTagError,
)
from tests.support import budget_attacks as attack

SERDE = Serializer()

REPO = Path(__file__).resolve().parent.parent  # the children import tests.support.budget_attacks from here


def refused(data: bytes, limit: str, *, tag: str = "msgpack", serde: Serializer = SERDE) -> LimitExceededError:
    with pytest.raises(LimitExceededError) as info:
        serde.loads_typed((tag, data))
    assert info.value.limit == limit
    assert f"Limits({limit}=" in str(info.value)
    return info.value


# --- 1. Fraction -------------------------------------------------------------


@pytest.mark.parametrize("data", [attack.fraction_exponent(), attack.fraction_kwargs()], ids=["ext0", "ext2"])
def test_fraction_is_built_only_by_its_fixed_rebuilder(data):
    with pytest.raises(RebuildError, match="fractions.Fraction is not stored with ext code"):
        SERDE.loads(data)


def test_fraction_from_a_legacy_json_row_goes_through_the_fixed_rebuilder():
    with pytest.raises(RebuildError, match="fractions.Fraction"):
        SERDE.loads_typed(("json", attack.fraction_json()))


def test_fraction_with_huge_parts_is_refused_before_gcd():
    error = refused(attack.fraction_gcd(), "max_number_digits")
    assert "int" in str(error)


def test_fractions_within_the_budget_round_trip():
    value = Fraction(3**5000, 7**4000)
    assert SERDE.loads(SERDE.dumps(value)) == value


# --- 2. AIMessageChunk ---------------------------------------------------------


@pytest.mark.parametrize(
    "tag, data",
    [("msgpack", attack.chunk_ext5()), ("msgpack", attack.chunk_ext2()), ("json", attack.chunk_lc1())],
    ids=["ext5", "ext2", "lc1"],
)
def test_partial_tool_call_json_is_bounded(tag, data):
    refused(data, "max_partial_json", tag=tag)


def test_long_complete_tool_call_arguments_still_read():
    from langchain_core.messages import AIMessageChunk

    args = '{"code": "' + "x = 1\\n" * 5000 + '"}'
    chunk = AIMessageChunk(content="", tool_call_chunks=[{"name": "write", "args": args, "id": "1", "index": 0}])
    back = SERDE.loads(SERDE.dumps(chunk))
    assert back == chunk
    assert back.tool_calls[0]["args"]["code"].startswith("x = 1")


# --- 3. numpy shape --------------------------------------------------------------


def test_numpy_shape_longer_than_numpys_limit_is_refused_before_multiplying():
    with pytest.raises(RebuildError, match="at most 64 dimensions"):
        SERDE.loads(attack.numpy_long_shape())


def test_numpy_shape_with_too_many_elements_is_refused():
    refused(attack.numpy_huge_shape(dims=3), "max_array_elements")


def test_inspect_renderer_refuses_long_shapes_with_a_typed_error():
    from serde_kit.tools.render import render_msgpack

    for data in (attack.numpy_long_shape(), attack.numpy_huge_shape()):
        with pytest.raises(DecodeError):
            render_msgpack(data)


def test_inspect_renderer_holds_rows_to_the_same_budget():
    from serde_kit.tools.render import render_msgpack

    with pytest.raises(LimitExceededError) as info:
        render_msgpack(attack.flood_map())
    assert info.value.limit == "max_hash_collisions"
    with pytest.raises(LimitExceededError):
        render_msgpack(attack.empty_maps(2000), limits=Limits(max_containers=1000))


# --- 4. numpy memory -------------------------------------------------------------


def test_numpy_void_size_is_not_taken_from_the_row():
    with pytest.raises(RebuildError, match="0-d array"):
        SERDE.loads(attack.numpy_void())


def test_zero_itemsize_dtype_with_elements_is_refused():
    with pytest.raises(RebuildError, match="has no size"):
        SERDE.loads(attack.numpy_zero_itemsize())


def test_arrays_without_data_come_back_zeroed_not_uninitialized():
    np = pytest.importorskip("numpy")
    empty_record = np.zeros(5, dtype=np.dtype([]))
    back = SERDE.loads(SERDE.dumps(empty_record))
    assert back.shape == (5,) and back.nbytes == 0
    void = np.zeros((), dtype="V4")[()]
    assert SERDE.loads(SERDE.dumps(void)) == void


# --- 5. re.compile ---------------------------------------------------------------


def test_long_regex_patterns_are_refused():
    refused(attack.regex_classes(), "max_regex_length")


def test_many_character_classes_are_refused():
    refused(attack.regex_classes(length=1000), "max_regex_classes")


def test_re_debug_is_refused_and_prints_nothing(capsys):
    refused(attack.regex_debug(), "regex_flags")
    assert capsys.readouterr().out == ""


def test_ordinary_patterns_round_trip():
    import re

    for pattern in (re.compile(r"[a-z]+@[a-z]+\.com", re.I), re.compile(rb"\d{3}-\d{4}", re.M)):
        assert SERDE.loads(SERDE.dumps(pattern)) == pattern


# --- 6. hash flooding ------------------------------------------------------------


def test_colliding_pairs_really_collide():
    pairs = attack.colliding_int_pairs(50)
    assert len(set(pairs)) == 50
    assert len({hash(pair) for pair in pairs}) == 1


@pytest.mark.parametrize(
    "data",
    [attack.flood_map(), attack.flood_frozenset(), attack.flood_big_ints(), attack.flood_uuids(), attack.flood_uuid_keys()],
    ids=["plain-map-tuple-keys", "frozenset-pairs", "set-big-ints", "frozenset-uuids", "plain-map-uuid-keys"],
)
def test_hash_floods_are_refused_before_building(data):
    refused(data, "max_hash_collisions")


def _as_map32(map16: bytes) -> bytes:
    assert map16[0] == 0xDE
    return b"\xdf" + int.from_bytes(map16[1:3], "big").to_bytes(4, "big") + map16[3:]


_FLOOD = attack.flood_entries()


def _ext32(code: int, payload: bytes) -> bytes:
    return b"\xc9" + len(payload).to_bytes(4, "big") + bytes([code]) + payload


@pytest.mark.parametrize(
    "data",
    [
        _as_map32(attack.flood_map()),  # the same map behind a map32 header
        attack.map16(20_001, attack.pack("first") + attack.pack("a string key") + _FLOOD),
        # behind a lot of text (holding 0xde bytes), in a list
        b"\x82" + attack.pack("text") + attack.pack("x\u07de" * 50_000) + attack.pack("rows") + b"\x91" + attack.flood_map(),
        # inside a typed value's payload
        _ext32(0, b"\x93" + attack.pack("collections") + attack.pack("OrderedDict") + attack.flood_map()),
    ],
    ids=["map32-header", "string-first-key", "after-text", "in-an-ext"],
)
def test_hash_floods_are_found_wherever_the_map_is(data):
    refused(data, "max_hash_collisions")


def test_honest_sets_and_tuple_keyed_maps_still_read():
    keyed = {(i, i * 7): str(i) for i in range(5000)}
    values = {
        "set": set(range(10_000)),
        "uuids": frozenset(uuid.UUID(int=i) for i in range(3000)),
        "map": keyed,
    }
    assert SERDE.loads(SERDE.dumps(values)) == values
    stock_map = attack.pack(keyed)  # as the stock writer stores it: array keys
    assert SERDE.loads(stock_map) == keyed


# --- 7. one helper thread per call at most ---------------------------------------


def test_many_nested_exts_start_no_threads(monkeypatch):
    started = []
    original = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda self: (started.append(self), original(self))[1])
    value = SERDE.loads(attack.exts_at_depth())
    for _ in range(6):
        (value,) = value
    assert len(value) == 100_000 and value[0].value == 1
    assert started == []


# --- 8. small thread stacks ------------------------------------------------------


def test_hostile_nesting_never_crashes_a_small_thread_stack():
    # In a child process: a crash would take pytest down with it.
    script = textwrap.dedent(
        """
        import sys, threading
        from tests.support import budget_attacks as attack
        from serde_kit import Serializer, DecodeError

        serde = Serializer()
        rows = [
            attack.deep_in_every_level(6, 1000),
            attack.deep_in_every_level(63, 14),
            b"\\x91" * 100_000 + b"\\x01",
            b"\\x81\\xa1a" * 50_000 + b"\\x01",
            # Shorter than SAFE_RECURSION_LIMIT bytes: decoded on this thread's own stack.
            b"\\x91" * 1998 + b"\\x01",
        ]
        seen = []

        def run():
            for data in rows:
                try:
                    serde.loads(data)
                    seen.append("value")
                except DecodeError as exc:
                    seen.append(type(exc).__name__)

        for limit in (1000, 100_000):
            sys.setrecursionlimit(limit)
            threading.stack_size(1 << 20)
            thread = threading.Thread(target=run)
            thread.start()
            thread.join()
            run()  # and on the main thread's 8 MiB stack: the same outcomes
        print(",".join(seen))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    outcomes = done.stdout.strip().split(",")
    assert len(outcomes) == 20 and outcomes[:5] == outcomes[5:10] and outcomes[10:15] == outcomes[15:]
    assert outcomes[2] == "MalformedDataError"  # 100,000 levels: past every engine's bound
    if sys.version_info < (3, 12):
        # Under the default recursion limit every bomb is refused (3.12+ hold C code to a
        # limit of their own, 1,500 or 10,000 levels, and read what fits in it).
        assert outcomes[:5] == ["MalformedDataError"] * 5
    # An application that raised the limit gets the deep values back (or a typed
    # error), decoded on one helper thread with a stack sized for its limit.
    assert set(outcomes[10:15]) <= {"value", "MalformedDataError"}
    if sys.version_info < (3, 12):  # (3.12 reads no deeper than 1,500 levels whatever the limit)
        assert outcomes[14] == "value"


# --- 9. amplification ------------------------------------------------------------


def test_rows_with_more_values_than_the_budget_are_refused_before_decoding():
    small = Serializer(limits=Limits(max_containers=100_000))
    refused(attack.empty_maps(1_000_000), "max_containers", serde=small)
    assert len(small.loads(attack.empty_maps(90_000))) == 90_000


def test_oversized_rows_are_refused_unread():
    small = Serializer(limits=Limits(max_row_bytes=1000))
    refused(b"\xc5" + (2000).to_bytes(2, "big") + b"\0" * 2000, "max_row_bytes", serde=small)
    refused(b'"' + b"a" * 2000 + b'"', "max_row_bytes", tag="json", serde=small)


def test_running_out_of_memory_is_a_typed_error_not_a_hang():
    script = textwrap.dedent(
        """
        import resource, sys
        from tests.support import budget_attacks as attack
        from serde_kit import Serializer, Limits, LimitExceededError

        data = attack.empty_maps(30_000_000)
        serde = Serializer(limits=Limits(max_containers=10**9))
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, hard))
        try:
            serde.loads(data)
            print("decoded")
        except LimitExceededError as exc:
            print("refused", exc.limit)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "refused max_containers"


# --- 10. error texts -------------------------------------------------------------


def test_stored_names_in_errors_are_bounded_and_escaped():
    with pytest.raises(BlockedTypeError) as info:
        SERDE.loads(attack.forged_names())
    message = str(info.value)
    assert "\n" not in message and "\x1b" not in message
    assert "\\n2026-12-01 INFO" in message
    assert len(message) < 2000
    assert info.value.module.startswith("evil\n")  # the attribute keeps the stored value


def test_rebuild_errors_and_lenient_warnings_are_escaped():
    # Allowlist entries are dotted names now (ConfigError otherwise, escaped too): reach the
    # import of a hostile name through allow-everything.
    with pytest.raises(ConfigError) as refused_entry:
        Serializer(allow=[("no_such_module\x1b[31m", "Thing")])
    assert "\x1b" not in str(refused_entry.value)
    serde = Serializer(allowlist=Allowlist.allow_everything_unsafe())
    with pytest.raises(RebuildError) as info:
        serde.loads(attack.row(0, ["no_such_module\x1b[31m", "Thing", 1]))
    assert "\x1b" not in str(info.value)
    lenient = Serializer(lenient=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert lenient.loads(attack.forged_names(length=10_000)) == 1
    (warning,) = caught
    assert warning.category is LenientDecodeWarning
    text = str(warning.message)
    assert "\n" not in text and "\x1b" not in text and len(text) < 2000


# --- the budget itself -----------------------------------------------------------


def test_limits_are_checked_and_documented_on_the_serializer():
    with pytest.raises(ConfigError, match="max_containers"):
        Limits(max_containers=-1)
    with pytest.raises(TypeError, match="Limits"):
        Serializer(limits={"max_containers": 5})  # type: ignore[arg-type]
    serde = Serializer(limits=Limits(max_text_length=10))
    assert serde.limits.max_text_length == 10
    assert serde.with_allow(("x", "Y")).limits is serde.limits


def test_raising_a_limit_lets_the_refused_row_through():
    data = attack.fraction_gcd(hex_digits=90_000)
    refused(data, "max_number_digits")
    trusting = Serializer(limits=Limits(max_number_digits=200_000, max_work_per_byte=2_000))
    assert isinstance(trusting.loads(data), Fraction)


def test_msgpack_timestamps_are_refused_as_stock_and_serde_kit_never_write_them():
    for data in (b"\xd6\xff\0\0\0\0", b"\x91\xd7\xff" + b"\0" * 8, b"\x91\xc7\x0c\xff" + b"\0" * 12):
        with pytest.raises(UnknownTagError, match="timestamp"):
            SERDE.loads(data)


def test_typed_values_as_map_keys_read_but_cannot_flood():
    # The stock reader (ormsgpack) refuses typed map keys; msgspec builds them.
    # Honest ones read; a flood of colliding ones is refused.
    few = b"\x82" + attack.pack(attack.ext(0, ["uuid", "UUID", uuid.UUID(int=1).hex])) + b"\x01"
    few += attack.pack(attack.ext(0, ["uuid", "UUID", uuid.UUID(int=2).hex])) + b"\x02"
    assert SERDE.loads(few) == {uuid.UUID(int=1): 1, uuid.UUID(int=2): 2}
    refused(attack.flood_uuid_keys(), "max_hash_collisions")


def test_decimal_exponent_and_parsed_text_are_bounded():
    from decimal import Decimal

    refused(attack.row(0, ["decimal", "Decimal", "1e999999999"]), "max_number_digits")
    refused(attack.row(0, ["uuid", "UUID", "0" * 5000]), "max_text_length")
    refused(attack.row(3, ["datetime", "datetime", "2024-01-01" + " " * 5000, "fromisoformat"]), "max_text_length")
    for value in (Decimal("1e5"), Decimal("-1.50"), Decimal("NaN"), Decimal("-Infinity")):
        back = SERDE.loads(SERDE.dumps(value))
        assert str(back) == str(value)


def test_zero_size_dtype_is_refused_before_anything_is_allocated():
    # Found by fuzz_resources: |S0 x 13.7M elements, empty buffer (a 19-byte row)
    # used to allocate the elements numpy makes |S1 before refusing them.
    import tracemalloc

    data = attack.row(6, ["|S0", [0xD1D1D1], "C", b""])
    tracemalloc.start()
    try:
        with pytest.raises(RebuildError, match="has no size"):
            SERDE.loads(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_small_limits_hold_for_small_rows_too():
    # Rows shorter than the prescan's threshold take a short path; limits set
    # below that threshold still apply to them.
    rows = attack.pack([{} for _ in range(50)])
    assert len(rows) < 100
    with pytest.raises(LimitExceededError) as caught:
        Serializer(limits=Limits(max_containers=10)).loads(rows)
    assert caught.value.limit == "max_containers"
    with pytest.raises(LimitExceededError) as caught:
        Serializer(limits=Limits(max_row_bytes=40)).loads(rows)
    assert caught.value.limit == "max_row_bytes"
    assert Serializer(limits=Limits(max_containers=51)).loads(rows) == [{}] * 50


# --- issue 19, findings 1, 2, 7b: canonical names ----------------------------------


@pytest.mark.parametrize("code, module, name, arg", attack.SUBSCRIPTED_STANDARD, ids=lambda v: str(v)[:20])
def test_a_standard_type_under_a_subscripted_name_is_refused(code, module, name, arg):
    data = attack.subscripted_standard(code, module, name, arg)
    with pytest.raises(BlockedTypeError, match="only a generic pydantic model") as info:
        SERDE.loads_typed(("msgpack", data))
    assert (info.value.module, info.value.name) == (module, name)
    # Even when everything is allowed: standard types are built by their fixed rebuilders only.
    with pytest.raises(BlockedTypeError):
        Serializer(allowlist=Allowlist.allow_everything_unsafe()).loads_typed(("msgpack", data))
    # Lenient mode returns the payload, never the object.
    with pytest.warns(LenientDecodeWarning):
        assert Serializer(lenient=True).loads_typed(("msgpack", data)) == arg


def test_a_subscripted_standard_name_in_a_legacy_json_row_is_refused():
    with pytest.raises(BlockedTypeError, match="Fraction"):
        SERDE.loads_typed(("json", attack.subscripted_fraction_json()))


def test_the_allowlist_never_allows_a_subscript_on_a_standard_or_unlisted_name():
    allowlist = Allowlist()
    for module, name in [("fractions", "Fraction[x]"), ("re", "compile[x]"), ("numpy", "void[int]"),
                         ("builtins", "SystemExit[x]"), ("langchain_core.messages.ai", "AIMessage[1]")]:  # fmt: skip
        assert not allowlist.allows(module, name)


def test_rotate_check_refuses_subscripted_standard_names():
    from serde_kit.tools.scan import AllowlistCheck

    check = AllowlistCheck(Allowlist())
    for code, module, name, arg in attack.SUBSCRIPTED_STANDARD:
        with pytest.raises(BlockedTypeError):
            check(("msgpack", attack.subscripted_standard(code, module, name, arg)))
    check(("msgpack", SERDE.dumps(Fraction(1, 3))))  # the honest form passes


def test_thousands_of_distinct_message_names_are_refused_and_cache_nothing():
    data = attack.distinct_message_names(6000)
    with pytest.raises(BlockedTypeError, match=r"AIMessage\[0\]"):
        SERDE.loads_typed(("msgpack", data))
    lenient = Serializer(lenient=True)
    decoder = lenient._decoder
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LenientDecodeWarning)
        back = lenient.loads_typed(("msgpack", data))
    assert back[5999] == {"content": "hi", "type": "ai"}
    assert len(decoder._cache) == 0 and len(decoder._hot) == 0


def test_name_caches_are_bounded(monkeypatch):
    from serde_kit import decoder as decoder_module
    from tests.compat.corpus_types import Box

    monkeypatch.setattr(decoder_module, "_MAX_CACHED", 3)
    serde = Serializer(allow=[Box])
    for arg, item in (("int", 1), ("str", "a"), ("float", 1.5), ("bool", True), ("bytes", b"x")):
        payload = attack.pack(["tests.compat.corpus_types", f"Box[{arg}]", {"item": item}, "model_validate_json"])
        assert type(serde.loads(attack.pack(attack.ormsgpack.Ext(5, payload)))).__name__ == f"Box[{arg}]"
        assert len(serde._decoder._cache) <= 3 and len(serde._decoder._hot) <= 3


# --- issue 19, findings 3, 4: one work meter per row -----------------------------


def test_many_small_ignorecase_patterns_spend_the_rows_meter_before_any_compiles(monkeypatch):
    import re

    compiled = []
    real_compile = re.compile
    monkeypatch.setattr(re, "compile", lambda *args: compiled.append(args) or real_compile(*args))
    data = attack.regex_many(16)
    assert len(data) < 2500  # a small row: the meter opens when the first pattern asks for it
    refused(data, "max_work_per_byte")
    assert compiled == []
    honest = Serializer().dumps(re.compile("[a-z]+@example\\.com", re.IGNORECASE))
    assert SERDE.loads(honest) == re.compile("[a-z]+@example\\.com", re.IGNORECASE)


def test_many_partial_tool_call_arguments_spend_the_rows_meter(monkeypatch):
    from langchain_core.messages import ai

    parses = []
    real_parse = ai.parse_partial_json
    monkeypatch.setattr(ai, "parse_partial_json", lambda *a, **k: parses.append(a) or real_parse(*a, **k))
    error = refused(attack.partial_json_many(10), "max_work_per_byte")
    assert "tool-call arguments" in str(error)
    assert parses == []
    # One short incomplete argument is free: it is parsed, once.
    back = SERDE.loads(attack.chunk_ext2(40))
    assert back.tool_call_chunks[0]["args"].startswith('{"a"') and len(parses) == 1


def test_many_big_fractions_spend_the_rows_meter_before_any_gcd(monkeypatch):
    import fractions

    built = []
    monkeypatch.setattr(fractions.Fraction, "__new__", lambda *a, **k: built.append(a) or object.__new__(fractions.Fraction))
    error = refused(attack.fraction_many(4, 99_000), "max_work_per_byte")
    assert "Fraction" in str(error)
    assert built == []


def test_a_map_of_fewer_long_colliding_keys_than_the_flood_size_is_refused():
    data = attack.flood_long_keys(1999, 100)
    assert b"\xff" not in data and data.count(b"\xde") == 1  # nothing else for the prefilter to find
    refused(data, "max_hash_collisions")
    honest = {tuple(range(i, i + 100)): i for i in range(1999)}
    assert SERDE.loads(SERDE.dumps(honest)) == honest


def test_a_legacy_json_row_is_held_to_the_container_limit():
    limits = Limits(max_containers=1000)
    serde = Serializer(limits=limits)
    refused(attack.json_empty_objects(3000), "max_containers", tag="json", serde=serde)
    assert serde.loads_typed(("json", attack.json_empty_objects(400))) == [{}] * 400


def test_running_out_of_memory_while_decoding_is_a_limit_error():
    # A real allocation failure, under an address-space cap in a child process.
    script = textwrap.dedent(
        """
        import resource
        from serde_kit import LimitExceededError, Limits, Serializer

        serde = Serializer(limits=Limits(max_containers=10**9, max_row_bytes=10**9))
        rows = [("msgpack", b"\\xdd" + (30_000_000).to_bytes(4, "big") + b"\\x90" * 30_000_000),
                ("json", b"[" + b"[]," * 30_000_000 + b"[]]")]
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (used + 400 * 2**20, hard))
        for row in rows:
            try:
                serde.loads_typed(row)
            except LimitExceededError as exc:
                print(row[0], exc.limit)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["msgpack", "max_containers", "json", "max_containers"], done.stderr[-2000:]


# --- issue 19, finding 5: models whose stored fields fail validation -------------


@pytest.mark.parametrize("bypass, fields, failing", attack.UNVALIDATED_APPROVALS, ids=lambda v: str(v)[:16])
def test_validate_always_refuses_a_model_that_fails_validation(bypass, fields, failing):
    data = attack.model_row(attack.Approval, fields)
    strict = Serializer(allow=[attack.Approval], validate="always")
    with pytest.raises(RebuildError, match=rf"tests.support.budget_attacks.Approval does not validate \(.*{failing}") as info:
        strict.loads(data)
    assert (info.value.module, info.value.name) == ("tests.support.budget_attacks", "Approval")
    assert strict.loads(attack.model_row(attack.Approval, attack.GOOD_APPROVAL)) == attack.Approval(**attack.GOOD_APPROVAL)


def test_validate_always_refuses_a_nested_model_stored_as_a_plain_dict():
    bad = {"approval": {**attack.GOOD_APPROVAL, "amount": 0}}
    with pytest.raises(RebuildError, match=r"Ledger does not validate \(field approval.amount"):
        Serializer(allow=[attack.Ledger], validate="always").loads(attack.model_row(attack.Ledger, bad))


def test_auto_builds_an_unvalidated_model_as_stock_does_but_warns_once_per_class():
    serde = Serializer(allow=[attack.Approval])
    rows = [attack.model_row(attack.Approval, fields) for _, fields, _ in attack.UNVALIDATED_APPROVALS]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        built = [serde.loads(data) for data in rows]
    assert [b.amount for b in built] == [-5, 5, 5, 5] and built[1].kind == "wire"
    assert [str(w.message).split(" (")[0] for w in caught] == ["stored tests.support.budget_attacks.Approval does not validate"]
    assert caught[0].category is SerdeWarning


@pytest.mark.parametrize("validate", ["auto", "always"])
def test_stored_keys_never_set_private_attributes(validate):
    fields = {**attack.GOOD_APPROVAL, "amount": -1, "_is_admin": True, "__pydantic_private__": {"_is_admin": True}}
    with pytest.raises(RebuildError, match="Approval"):
        Serializer(allow=[attack.Approval], validate=validate).loads(attack.model_row(attack.Approval, fields))
    # A row that validates: pydantic keeps the private attribute's default.
    valid = Serializer(allow=[attack.Approval]).loads(attack.model_row(attack.Approval, {**attack.GOOD_APPROVAL, "_is_admin": True}))
    assert valid._is_admin is False and valid.__pydantic_private__ == {"_is_admin": False}


# --- issue 19, finding 6 and 7a ------------------------------------------------------


def test_honest_int_keys_and_0xff_bytes_never_force_the_prescan_walk(monkeypatch):
    from serde_kit import _prescan

    walks = []
    real_scan = _prescan.scan
    monkeypatch.setattr(_prescan, "scan", lambda data, limits: walks.append(len(data)) or real_scan(data, limits))
    data = attack.token_ids_with_an_int_key()
    assert data.count(b"\xff") > 64
    assert SERDE.loads(data) == attack.ormsgpack.unpackb(data, option=attack.OPT)
    assert walks == []
    # A timestamp in the same row is still found exactly.
    with pytest.raises(UnknownTagError, match="timestamp"):
        SERDE.loads(data[:-5] + b"\xd6\xff\0\0\0\0"[:5] + b"\0")  # the last id replaced, same length


def test_decimal_exponents_up_to_the_default_context_read_as_stock_reads_them():
    import decimal

    for text in ("1E+999999", "-1E-999999", "9.99E+999999"):
        assert SERDE.loads(SERDE.dumps(decimal.Decimal(text))) == decimal.Decimal(text)
    refused(attack.row(0, ["decimal", "Decimal", "1E+1000001"]), "max_number_digits")


def test_the_smallest_supported_thread_stack_survives_every_prescan_path():
    # SMALLEST_THREAD_STACK under the default recursion limit, in a child process (a
    # crash would take pytest down). The prescan's ormsgpack checks recurse on the C
    # stack; rows that may nest deep run them on the helper thread.
    script = textwrap.dedent(
        """
        import sys, threading
        from tests.support import budget_attacks as attack
        from serde_kit import DecodeError, Serializer
        from serde_kit._stack import SMALLEST_THREAD_STACK

        serde = Serializer()
        rows = [attack.deep_with_timestamp_bait(1000), attack.deep_with_long_key_bait(1000),
                attack.deep_with_timestamp_bait(900), attack.deep_in_every_level(6, 1000),
                b"\\x91" * 100_000 + b"\\x01"]
        seen = []

        def run():
            for data in rows:
                try:
                    serde.loads(data)
                    seen.append("value")
                except DecodeError as exc:
                    seen.append(type(exc).__name__)

        threading.stack_size(SMALLEST_THREAD_STACK)
        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
        run()  # and on the main thread's 8 MiB stack: the same outcomes
        print(",".join(seen))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    outcomes = done.stdout.strip().split(",")
    assert len(outcomes) == 10 and outcomes[:5] == outcomes[5:]
    if sys.version_info < (3, 12):  # 3.12+ read the 1,000-deep rows (see the test above)
        assert outcomes[:5] == ["MalformedDataError"] * 2 + ["value"] + ["MalformedDataError"] * 2
    assert outcomes[2] == "value" and outcomes[4] == "MalformedDataError"


def test_the_assumed_recursion_bound_covers_how_deep_the_engine_reads():
    # From Python 3.12 C code recurses to a limit of the interpreter's own (3.13: 10,000
    # levels, which overflow a 512 KiB stack); rows that may nest deeper than the caller's
    # stack holds go to the helper thread whenever that bound, not only the recursion
    # limit, is past SAFE_RECURSION_LIMIT. The deepest array msgspec reads on this
    # interpreter (in this thread, whose stack is the main one's):
    import msgspec

    from serde_kit import _stack

    decoder = msgspec.msgpack.Decoder()

    def reads(depth: int) -> bool:
        try:
            decoder.decode(b"\x91" * depth + b"\x01")
        except RecursionError:
            return False
        return True

    low, high = 1, 1
    while reads(high) and high < 1 << 20:
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if reads(middle) else (low, middle)
    assert reads(low) and not reads(low + 1)
    assert low <= _stack.recursion_limit()


def test_big_recursion_limits_reuse_one_helper_thread_and_fail_typed_when_none_can_start():
    script = textwrap.dedent(
        """
        import resource, sys, threading
        from tests.support import budget_attacks as attack
        from serde_kit import DecodeError, SerdeError, Serializer

        serde = Serializer()
        sys.setrecursionlimit(3000)
        before = threading.active_count()
        # 1,400 levels (deeper than the caller's stack is trusted with, within every
        # interpreter's own bound: 3.12 holds C code to 1,500) beside 1,000 bytes of text:
        # past the small rows, which cannot nest that deep.
        deep = b"\\x92" + b"\\x91" * 1400 + b"\\x01" + b"\\xda\\x03\\xe8" + b"x" * 1000
        values = [serde.loads(deep) for _ in range(20)]
        print("threads", threading.active_count() - before)
        # An address-space cap too small for the stack a limit of 10**6 needs (2 GiB).
        sys.setrecursionlimit(10**6)
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, hard))
        try:
            serde.loads(b"\\x91" * 2500 + b"\\x01")
        except SerdeError as exc:
            print(type(exc).__name__, isinstance(exc, RuntimeError))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["threads 1", "HelperThreadError True"], done.stdout + done.stderr[-2000:]


def test_one_incomplete_argument_in_a_small_legacy_row_is_charged_its_overhead_too():
    # Found by fuzz/fuzz_cost.py: a 1.2 KB lc:1 row whose one ~1,000-character incomplete
    # argument fit the quadratic charge alone but cost 30x the floor (json.loads is
    # retried once per character, each call with its own overhead).
    data = attack.chunk_lc1(1000)
    assert len(data) < 1300
    refused(data, "max_work_per_byte", tag="json")
    assert SERDE.loads_typed(("json", attack.chunk_lc1(40))).tool_call_chunks[0]["args"].startswith('{"a"')


def test_an_unvalidated_model_is_reported_to_langgraphs_serde_listeners_once():
    from langgraph.checkpoint.serde.event_hooks import register_serde_event_listener

    seen = []
    unregister = register_serde_event_listener(seen.append)
    try:
        serde = Serializer(allow=[attack.Approval])
        with pytest.warns(SerdeWarning):
            for _, fields, _ in attack.UNVALIDATED_APPROVALS:
                serde.loads(attack.model_row(attack.Approval, fields))
    finally:
        unregister()
    assert seen == [{"kind": "msgpack_model_unvalidated", "module": "tests.support.budget_attacks", "name": "Approval"}]


# --- floods the byte-level prefilter once let through ------------------------------


def _envelope(module: str, name: str) -> bytes:
    """The head of an ext 0 envelope ``[module, name, <value that follows>]``."""
    return b"\x93" + attack.pack(module) + attack.pack(name)


def _engine_calls(monkeypatch) -> list[int]:
    """Record every row the msgpack engine is asked to decode (it would build the flood);
    past the prescan, a row larger than the small-row path takes goes through
    ``Decoder._decode``."""
    from serde_kit import decoder as decoder_module

    calls: list[int] = []
    real = decoder_module.Decoder._decode

    def counted(self, data, untracked):
        calls.append(len(data))
        return real(self, data, untracked)

    monkeypatch.setattr(decoder_module.Decoder, "_decode", counted)
    return calls


def test_colliding_keys_led_by_an_empty_string_really_collide_and_hide_from_byte_counts():
    keys = attack.colliding_keys_after(("",), 300)
    assert len(set(keys)) == 300 and len({hash(key) for key in keys}) == 1
    data = attack.flood_keys_led_by_empty_text(300)
    # No array header is followed by a number: every key starts with 0xa0 (the empty string).
    assert all(data[i + 1] == 0xA0 for i in range(len(data) - 1) if 0x90 <= data[i] <= 0x9F)


@pytest.mark.parametrize(
    "build",
    [
        lambda: attack.flood_keys_led_by_empty_text(20_000),
        lambda: attack.flood_map_declaring_more_than_it_holds(20_000),
        # nested in a list, behind text holding stray map16 bytes
        lambda: b"\x82" + attack.pack("text") + attack.pack("x\u07de" * 5_000) + attack.pack("rows") + b"\x91"
        + attack.flood_keys_led_by_empty_text(20_000),
        # inside a typed value's payload (an OrderedDict built from the map)
        lambda: _ext32(0, _envelope("collections", "OrderedDict") + attack.flood_keys_led_by_empty_text(20_000)),
    ],
    ids=["empty-string-first", "count-beyond-the-row", "nested-after-text", "in-an-ext"],
)
def test_floods_hidden_from_the_prefilter_are_refused_before_the_engine_builds_them(build, monkeypatch):
    data = build()
    calls = _engine_calls(monkeypatch)
    with pytest.raises((LimitExceededError, MalformedDataError)) as info:
        SERDE.loads_typed(("msgpack", data))
    # Refused by the prescan, before the engine built a single dict of them.
    assert calls == []
    if isinstance(info.value, LimitExceededError):
        assert info.value.limit == "max_hash_collisions"
    else:
        assert "truncated" in str(info.value)


def test_a_frozenset_of_keys_led_by_an_empty_string_is_refused():
    keys = attack.colliding_keys_after(("",), 2_000)
    refused(attack.row(0, ["builtins", "frozenset", [list(key) for key in keys]]), "max_hash_collisions")


def test_honest_maps_with_empty_string_led_tuple_keys_still_read():
    honest = {("", i, i * 3): i for i in range(3_000)}
    assert SERDE.loads(attack.pack(honest)) == honest
    assert SERDE.loads(SERDE.dumps(honest)) == honest


# --- maps smaller than 2,000 entries (the open attack of issue 19) ------------------


@pytest.mark.parametrize(
    "build",
    [
        lambda: attack.small_flood_map(1999),
        lambda: attack.small_flood_map(1999, ("",)),
        lambda: b"\x92" + attack.pack("padding" * 1000) + attack.small_flood_map(300),
        # nested: in a list, in a map's value, behind text holding stray map16 bytes
        lambda: b"\x92" + attack.pack("x\u07de" * 3_000) + b"\x81" + attack.pack("rows") + attack.small_flood_map(500),
        # in a typed value's payload (a tuple holding the map)
        lambda: _ext32(0, _envelope("builtins", "tuple") + b"\x91" + attack.small_flood_map(500)),
        # keys in many small maps of one row
        lambda: attack.many_small_flood_maps(40, 300),
        lambda: attack.many_small_flood_maps(200, 65),
    ],
    ids=["1999-keys", "1999-keys-empty-string-first", "300-keys", "nested-after-text", "in-an-ext", "40-maps-of-300",
         "200-maps-of-65"],
)
def test_maps_of_fewer_than_2000_colliding_keys_are_refused_before_the_engine_builds_them(build, monkeypatch):
    data = build()
    calls = _engine_calls(monkeypatch)
    refused(data, "max_hash_collisions")
    assert calls == []


def test_a_small_map_of_colliding_typed_keys_is_refused():
    refused(attack.small_flood_uuid_keys(200), "max_hash_collisions")


def test_sets_and_frozensets_of_few_colliding_keys_are_refused():
    keys = [list(key) for key in attack.colliding_keys_after(("",), 300)]
    for name in ("set", "frozenset"):
        refused(attack.row(0, ["builtins", name, keys]), "max_hash_collisions")


def test_what_is_not_checked_is_bounded_by_counting_work():
    from serde_kit import _prescan

    limits = Limits()
    # Maps of max_hash_collisions (64) colliding keys are allowed, however many: none
    # has a header that could hold more, so nothing needs checking.
    data = attack.many_small_flood_maps(5, 64)
    assert _prescan.first_big_map(data, _prescan.flood_entries(limits)) == -1
    assert len(SERDE.loads(data)) == 5
    # A row under SMALL_ROW is not prescanned: the most keys of one hash it can hold
    # (every tuple of k elements each 0 or "", all hashing like (0,) * k) cost pairs
    # of keys compared within the meter's floor.
    k = 7
    keys = list(itertools.product((0, ""), repeat=k))
    assert len({hash(key) for key in keys}) == 1
    small = attack.map_of(keys)
    assert len(small) < _prescan.SMALL_ROW < len(attack.map_of(list(itertools.product((0, ""), repeat=k + 1))))
    pairs = len(keys) * (len(keys) - 1) // 2
    assert pairs * (_prescan.FLOOD_UNITS_PER_PAIR + k * _prescan.FLOOD_UNITS_PER_ELEMENT) <= limits.min_work
    assert SERDE.loads(small) == dict.fromkeys(keys, 0)
    # The estimate grows with the square of the keys: 2,000 of them are far over it.
    assert _prescan.flood_work(2000, 0, 30_000) > 10 * limits.min_work


def test_honest_maps_of_tuple_keys_below_2000_entries_still_read():
    for count in (65, 300, 1999):
        honest = {(i, i * 7): str(i) for i in range(count)}
        assert SERDE.loads(attack.pack(honest)) == honest
        assert SERDE.loads(SERDE.dumps(honest)) == honest
    honest_uuids = {uuid.UUID(int=i): i for i in range(300)}
    assert SERDE.loads(SERDE.dumps(honest_uuids)) == honest_uuids


# --- issue 19, round 3: maps of at most max_hash_collisions long colliding keys ------


def _long_key_maps(maps: int, header: int = 0xDE) -> bytes:
    return attack.maps_of_long_colliding_keys(maps, 64, 300, header)


@pytest.mark.parametrize(
    "build",
    [
        lambda: _long_key_maps(10),
        lambda: _long_key_maps(10, 0xDF),  # behind map32 headers
        # after padding, in a list
        lambda: b"\x92" + attack.pack("padding " * 2000) + _long_key_maps(10),
        # right after a zero-length bin: the first header sits where a length byte could be
        lambda: b"\x9b\xc4\x00" + _long_key_maps(10)[5:],
        # in a typed value's payload (a tuple holding the maps)
        lambda: _ext32(0, _envelope("builtins", "tuple") + b"\x91" + _long_key_maps(10)),
        # nested two exts deep
        lambda: attack.in_tuple_ext(attack.in_tuple_ext(_long_key_maps(10))),
        # more maps than the prescan tests one by one (the whole-row path and the walk)
        lambda: attack.maps_of_long_colliding_keys(300, 64, 20),
        # the last of ten maps a map32 declaring more entries than the row holds
        lambda: b"\x9a" + _long_key_maps(9)[5:] + b"\xdf" + (10**9).to_bytes(4, "big") + _long_key_maps(1)[8:],
    ],
    ids=["map16", "map32", "after-padding", "after-a-length-header", "in-an-ext", "two-exts-deep", "300-maps",
         "map32-declaring-more"],
)
def test_many_maps_of_long_colliding_keys_spend_the_meter_before_the_engine_builds_them(build, monkeypatch):
    data = build()
    calls = _engine_calls(monkeypatch)
    with pytest.raises((LimitExceededError, MalformedDataError)) as info:
        SERDE.loads_typed(("msgpack", data))
    assert calls == []  # refused by the prescan: not one map was built
    if isinstance(info.value, LimitExceededError):
        assert info.value.limit == "max_work_per_byte"
        assert "share a hash" in str(info.value)
    else:
        assert "truncated" in str(info.value)


def test_the_work_charged_for_colliding_keys_counts_pairs_times_key_length():
    from serde_kit import _prescan

    keys = [tuple(key) for key in attack.long_colliding_keys(64, 300)]
    assert len({hash(key) for key in keys}) == 1 and len(set(keys)) == 64
    units, typed = _prescan._collision_units(keys, Limits(), False)
    pairs = 64 * 63 // 2
    assert units == pairs * (_prescan.FLOOD_UNITS_PER_PAIR + 300 * _prescan.FLOOD_UNITS_PER_ELEMENT)
    assert not typed
    # Distinct hashes: nothing is compared, nothing charged.
    honest = [tuple(range(i, i + 300)) for i in range(64)]
    assert _prescan._collision_units(honest, Limits(), False) == (0, False)
    # Ten such maps cost more than the row's allowance.
    limits = Limits()
    assert 10 * units > limits.max_work_per_byte * len(_long_key_maps(10))


def test_honest_maps_of_long_distinct_keys_still_read():
    honest = [{tuple(range(1000 + i, 1300 + i)): i for i in range(64)} for _ in range(10)]
    assert SERDE.loads(attack.pack(honest)) == honest
    assert SERDE.loads(SERDE.dumps(honest)) == honest
    from serde_kit import _prescan

    # 64 colliding keys (max_hash_collisions) of 120 elements: 2,016 pairs, each charged a
    # pair and 120 elements, within the meter's floor (min_work); of 200 elements, not.
    def pairs_cost(length: int) -> int:
        return 64 * 63 // 2 * (_prescan.FLOOD_UNITS_PER_PAIR + length * _prescan.FLOOD_UNITS_PER_ELEMENT)

    assert pairs_cost(120) < Limits().min_work < pairs_cost(200)
    one = attack.maps_of_long_colliding_keys(1, 64, 120)
    assert len(SERDE.loads(one)[0]) == 64
    refused(attack.maps_of_long_colliding_keys(1, 64, 200), "max_work_per_byte")


def test_fixmaps_of_colliding_keys_are_bounded_by_their_size():
    from serde_kit import _prescan

    # A map of fewer than CHECKED_ENTRIES entries has no header the prescan looks for,
    # so its keys are not checked: what its colliding keys can cost per stored byte
    # (pairs x the key's elements) stays within the allowance. An element compared at
    # FLOOD_UNITS_PER_ELEMENT takes two bytes at least (an int8 below -5: one-byte values
    # are shared objects, compared by identity at about a tenth of that).
    entries = _prescan.CHECKED_ENTRIES - 1
    pairs = entries * (entries - 1) // 2
    length = 300
    stored = entries * (1 + 3 + 2 * length)  # a value, an array16 header, the elements
    cost = pairs * (_prescan.FLOOD_UNITS_PER_PAIR + length * _prescan.FLOOD_UNITS_PER_ELEMENT)
    assert cost < Limits().max_work_per_byte * stored
    data = attack.maps_of_long_colliding_keys(5, entries, length, 0x80)
    assert [len(m) for m in SERDE.loads(data)] == [entries] * 5


def test_stray_map_headers_in_numbers_and_lengths_are_dismissed_without_reading_the_row(monkeypatch):
    import struct

    from serde_kit import _prescan

    def forbidden(*args, **kwargs):
        raise AssertionError("the whole row was read")

    monkeypatch.setattr(_prescan, "scan", forbidden)
    monkeypatch.setattr(_prescan, "_plain_keys", forbidden)
    # Floats whose bytes hold map16/map32 headers with big counts, a string whose length
    # holds one, all inside typed values (tuples), as honest rows hold them.
    floats = [struct.unpack(">d", b"\x40\xde\x7f\x00" + bytes([i, 1, 2, 3]))[0] for i in range(4)]
    floats += [struct.unpack(">d", b"\x40\x01\xdf\x7f\x7f\x00" + bytes([i, 3]))[0] for i in range(4)]
    value = {"rows": [(f, "t" * 0x7DE, {"k": f}) for f in floats], "n": 1}
    data = SERDE.dumps(value)
    candidates = _prescan.big_map_candidates(data, _prescan.CHECKED_ENTRIES)
    assert 8 < len(candidates) <= _prescan._candidate_cap(len(data))
    assert SERDE.loads(data) == value
    # The honest map of tuple keys below 2,000 entries is checked without the walk too.
    honest = {(i, i * 7): i for i in range(1999)}
    assert SERDE.loads(attack.pack(honest)) == honest


def _nested(depth: int, inner: bytes, pad: bytes = b"") -> bytes:
    """``inner`` at the bottom of ``depth`` arrays ``[pad, [pad, [... inner]]]``."""
    for _ in range(depth):
        inner = b"\x92" + attack.pack(pad) + inner
    return inner


@pytest.mark.parametrize(
    ("depth", "bottom", "exact"),
    [
        (10, b"", True),  # 11 steps, within 2 a candidate and 16
        (17, b"\x00" * 100_000, True),  # 17 containers of ~100 KB, within 32 bytes per stored byte
        (40, b"\x00" * 100_000, False),  # 40 x 100 KB: past 32 bytes per stored byte and 64 KiB
        (30, b"", False),  # 31 steps: past 2 steps a candidate and 16
    ],
)
def test_the_descent_to_a_candidate_is_bounded_and_then_the_row_is_checked_whole(depth, bottom, exact, monkeypatch):
    from serde_kit import _prescan

    flood = attack.small_flood_map(300)
    data = _nested(depth, b"\x92" + attack.pack(bottom) + flood)
    candidates = _prescan.big_map_candidates(data, _prescan.CHECKED_ENTRIES)
    assert candidates == [len(data) - len(flood)]
    if exact:
        assert [bytes(found) for found in _prescan._maps_at(data, candidates)] == [flood]
        with pytest.raises(LimitExceededError, match="max_hash_collisions"):
            _prescan._checked_in_c(data, candidates, Limits())
    else:
        with pytest.raises(_prescan._Unreadable):
            _prescan._maps_at(data, candidates)
        assert _prescan._checked_in_c(data, candidates, Limits()) is _prescan._UNKNOWN
    descents: list[int] = []
    real = _prescan._maps_at
    with monkeypatch.context() as patched:
        patched.setattr(_prescan, "_maps_at", lambda *args: descents.append(1) or real(*args))
        refused(data, "max_hash_collisions", serde=Serializer())  # by the exact check, or by the whole-row path
    # Once per row: the whole-row path asks for a meter and the call that follows walks at once.
    assert len(descents) == 1
    honest = {(i, i * 7): i for i in range(300)}
    value = SERDE.loads(_nested(depth, b"\x92" + attack.pack(bottom) + attack.pack(honest)))
    for _ in range(depth):
        value = value[1]
    assert value == [bottom, honest]


@pytest.mark.parametrize(("items", "exact"), [(200, True), (30_000, False)])
def test_the_descent_counts_the_items_it_reads_before_it_reads_them(items, exact, monkeypatch):
    from serde_kit import _prescan

    # A candidate at the end of three arrays of ``items`` one-byte items each: reading an
    # item (a raw value and its place) costs as much as skipping ~128-256 bytes.
    flood = attack.small_flood_map(300)
    data = flood
    for _ in range(3):
        data = b"\xdd" + (items + 1).to_bytes(4, "big") + b"\x00" * items + data
    candidates = _prescan.big_map_candidates(data, _prescan.CHECKED_ENTRIES)
    assert candidates == [len(data) - len(flood)]
    read: list[int] = []
    real = _prescan._items
    monkeypatch.setattr(_prescan, "_items", lambda *args: read.append(1) or real(*args))
    if exact:
        assert [bytes(found) for found in _prescan._maps_at(data, candidates)] == [flood]
        assert len(read) == 3
    else:
        with pytest.raises(_prescan._Unreadable):
            _prescan._maps_at(data, candidates)
        assert read == []  # refused from the first header's count, before reading one item
    monkeypatch.undo()
    refused(data, "max_hash_collisions")


def test_the_descent_reads_no_bytes_after_a_value_and_stops_at_bad_ones():
    from serde_kit import _prescan

    flood = attack.small_flood_map(300)
    # After the row's value: never built (the decoder refuses trailing bytes after the value).
    trailing = attack.pack([1, 2]) + flood
    candidates = _prescan.big_map_candidates(trailing, _prescan.CHECKED_ENTRIES)
    assert candidates and _prescan._maps_at(trailing, candidates) == []
    # After an ext's payload value, inside the ext: the same.
    payload = _envelope("builtins", "tuple") + attack.pack([1]) + flood
    in_ext = b"\x91\xc8" + len(payload).to_bytes(2, "big") + b"\x00" + payload
    candidates = _prescan.big_map_candidates(in_ext, _prescan.CHECKED_ENTRIES)
    assert candidates and _prescan._maps_at(in_ext, candidates) == []
    # A row cut short in the middle of the flood, or an ext declaring more than it holds:
    # the engine builds part of it before it fails, so the whole-row path decides.
    cut_short = b"\x91\x92\x01" + flood[:-40]
    over_declared_ext = b"\x92\xc8\xff\xff\x00" + flood
    for bad in (cut_short, over_declared_ext):
        candidates = _prescan.big_map_candidates(bad, _prescan.CHECKED_ENTRIES)
        assert candidates
        with pytest.raises(_prescan._Unreadable):
            _prescan._maps_at(bad, candidates)
        with pytest.raises(DecodeError):
            SERDE.loads(bad)


def _str_key(text: str, form: str) -> bytes:
    """A msgspec string in the given header form (writers use the shortest; rows may not)."""
    raw = text.encode()
    head = {"fixstr": bytes([0xA0 | len(raw)]), "str8": b"\xd9" + len(raw).to_bytes(1, "big")}
    head |= {"str16": b"\xda" + len(raw).to_bytes(2, "big"), "str32": b"\xdb" + len(raw).to_bytes(4, "big")}
    return head[form] + raw


@pytest.mark.parametrize("form", ["fixstr", "str8", "str16", "str32"])
def test_a_big_map_on_the_way_is_read_in_place_with_the_items_a_copy_gives(form, monkeypatch):
    from serde_kit import _prescan

    # A 200 KB map of three string keys (a checkpoint's top level, its channel values)
    # holding a flood: read as slices of the row (a copy that large is fresh memory on
    # every call), item for item what the copying read gives, whatever form the keys take.
    flood = attack.small_flood_map(300)
    entries = [("text", attack.pack("x" * 200_000)), ("rows", b"\x92\x01" + flood), ("n", attack.pack(1))]
    data = b"\x83" + b"".join(_str_key(key, form) + value for key, value in entries)
    view = memoryview(data)
    in_place = _prescan._map_items_in_place(view, 1, 3, True)
    copied = _prescan._map_items(view, 1, 6, True)
    assert in_place is not None and [bytes(item) for item in in_place] == [bytes(item) for item in copied]
    # Bytes after the map (a buffer, not an item): cut off as the engine leaves them unread.
    assert [bytes(item) for item in _prescan._map_items_in_place(memoryview(data + b"\x01\x02"), 1, 3, False)] == [
        bytes(item) for item in copied
    ]
    candidates = _prescan.big_map_candidates(data, _prescan.CHECKED_ENTRIES)
    with monkeypatch.context() as patched:
        patched.setattr(_prescan, "_map_items", lambda *args: pytest.fail("the big map was copied"))
        assert [bytes(found) for found in _prescan._maps_at(data, candidates)] == [flood]
    refused(data, "max_hash_collisions")


@pytest.mark.parametrize(
    "entries",
    [
        [(b"\xa1a", attack.pack("x" * 200_000)), (b"\xa1a", b"\x92\x01")],  # a key stored twice
        [(b"\xa1a", attack.pack("x" * 200_000)), (b"\x01", b"\x92\x01")],  # an int key
        [(b"\xa1a", attack.pack("x" * 200_000)), (b"\xc4\x01a", b"\x92\x01")],  # a binary key
    ],
)
def test_a_big_map_not_of_distinct_string_keys_is_read_by_a_copy(entries):
    from serde_kit import _prescan

    flood = attack.small_flood_map(300)
    data = b"\x82" + b"".join(key + value for key, value in entries) + flood  # the last value: [1, flood]
    assert _prescan._map_items_in_place(memoryview(data), 1, 2, True) is None
    candidates = _prescan.big_map_candidates(data, _prescan.CHECKED_ENTRIES)
    assert [bytes(found) for found in _prescan._maps_at(data, candidates)] == [flood]


def test_stray_ext_header_bytes_do_not_hide_a_flood_from_the_candidate_check(monkeypatch):
    from serde_kit import _prescan

    # A flood in a typed tuple (an ext16) whose payload first holds 200 ext8 header bytes
    # (in a bin). The candidate check descends from the row's value to the flood's header
    # through the items on the way (C-speed raw reads), so stray header bytes cost nothing
    # and the flood is refused there, without the whole-row path.
    def ext16_tuple(items: bytes) -> bytes:
        payload = _envelope("builtins", "tuple") + items
        return b"\xc8" + len(payload).to_bytes(2, "big") + b"\x00" + payload

    def forbidden(*args, **kwargs):
        raise AssertionError("the whole row was read")

    data = b"\x91" + ext16_tuple(b"\x92" + attack.pack(b"\xc7" * 200) + attack.small_flood_map(300))
    candidates = _prescan.big_map_candidates(data, _prescan.CHECKED_ENTRIES)
    assert candidates and len(candidates) <= _prescan._candidate_cap(len(data))
    with monkeypatch.context() as patched:
        patched.setattr(_prescan, "scan", forbidden)
        patched.setattr(_prescan, "_plain_keys", forbidden)
        with pytest.raises(LimitExceededError, match="max_hash_collisions"):
            _prescan._checked_in_c(data, candidates, Limits())
        honest = {(i, i * 7): i for i in range(300)}
        row = b"\x91" + ext16_tuple(b"\x92" + attack.pack(b"\xc7" * 200) + attack.pack(honest))
        assert SERDE.loads(row) == [(b"\xc7" * 200, honest)]
    refused(data, "max_hash_collisions")


# --- issue 19, round 3: float map keys sharing one hash ------------------------------


def test_202_distinct_doubles_share_one_hash_and_no_more_do():
    floats = attack.colliding_floats(202)
    assert len(floats) == len(set(floats)) == 202
    assert len({hash(f) for f in floats}) == 1
    assert attack.largest_float_group(9) == 202
    # Ints cannot be aimed so: at most 13 msgpack ints share a hash (hash 0: 0, kM, -kM).
    assert len(attack.msgpack_ints_with_hash(0)) == 13
    assert max(len(attack.msgpack_ints_with_hash(h)) for h in (1, 2, -2, hash(floats[0]), 1 << 60)) <= 13


@pytest.mark.parametrize("whole_row", [False, True])
def test_int_keys_join_the_float_keys_sharing_their_hash(whole_row):
    from serde_kit import _prescan

    # 64 doubles of one hash (max_hash_collisions) and 4 ints of that hash: 68 keys that
    # share a hash, by the exact check of a map and by the walk over the whole row alike.
    floats = attack.colliding_floats(64)
    ints = attack.msgpack_ints_with_hash(hash(floats[0]))[:4]
    assert len(ints) == 4 and {hash(i) for i in ints} == {hash(floats[0])}
    entries = attack.float_key_entries(floats) + b"".join(attack.pack(i) + b"\x00" for i in ints)
    data = b"\xde" + (len(floats) + len(ints)).to_bytes(2, "big") + entries
    if whole_row:
        # Stray map16 bytes in bulk (in binary data before them) send the row past the
        # candidate cap; 20 such maps are past what the estimate clears: the walk reads it.
        data = b"\x92" + attack.pack(b"\xde\x00\x20" * 200) + b"\xdc\x00\x14" + data * 20
        assert len(_prescan.big_map_candidates(data, _prescan.CHECKED_ENTRIES)) > _prescan._candidate_cap(len(data))
        assert _prescan._may_flood(data, _prescan.big_map_candidates(data, _prescan.CHECKED_ENTRIES)[0], Limits())
    refused(data, "max_hash_collisions")
    honest = {**{float(i) + 0.5: 0 for i in range(64)}, **{i: 0 for i in range(4)}}
    row = attack.pack([b"\xde\x00\x20" * 200, honest]) if whole_row else attack.pack(honest)
    assert (SERDE.loads(row)[1] if whole_row else SERDE.loads(row)) == honest


def _map16(keys: list) -> bytes:
    """A map16 of ``keys`` (tuples stored as arrays), each with the value 0, entry by entry."""
    packed = (attack.pack(list(key)) if type(key) is tuple else attack.pack(key) for key in keys)
    return b"\xde" + len(keys).to_bytes(2, "big") + b"".join(key + b"\x00" for key in packed)


def _in_row(data: bytes, whole_row: bool) -> bytes:
    """``data`` as the second item of a row past SMALL_ROW (rows below it are not
    prescanned) after a string, or with ``whole_row`` after a bin of stray map16 bytes in
    bulk: past the candidate cap, so the prescan takes the whole-row path (the estimate,
    then the walk) instead of the descent."""
    return b"\x92" + attack.pack(b"\xde\x00\x20" * 800 if whole_row else "x" * 2400) + data


@pytest.mark.parametrize("limits", [Limits(), Limits(max_hash_collisions=4)])
def test_a_key_stored_again_is_one_key_not_a_collision(limits):
    from serde_kit import _prescan

    # The map keeps one key for equal ones, so only distinct keys sharing a hash are a
    # flood: max_hash_collisions of them, each stored three times, read back; one more is
    # refused. Tuple keys and float keys, by the descent (a read) and by the walk alike.
    most = limits.max_hash_collisions
    tuples = list(itertools.product((0, ""), repeat=7))[: most + 1]
    assert len({hash(key) for key in tuples}) == 1
    serde = Serializer(limits=limits)
    for keys in (tuples, attack.colliding_floats(most + 1)):
        stored_again = [key for key in keys[:most] for _ in range(3)]
        assert serde.loads(_in_row(_map16(stored_again), False))[1] == dict.fromkeys(keys[:most], 0)
        _prescan.scan(_in_row(_map16(stored_again), True), limits)
        flood = _map16(keys + keys[:most])
        refused(_in_row(flood, False), "max_hash_collisions", serde=serde)
        with pytest.raises(LimitExceededError, match="max_hash_collisions"):
            _prescan.scan(_in_row(flood, True), limits)
    # Each key stored again is charged its comparisons with the distinct ones.
    one = _prescan.pair_units(tuples[0])
    assert _prescan._collision_units(tuples[:2], limits, False)[0] == one  # one pair
    assert _prescan._collision_units([*tuples[:2], tuples[0]], limits, False)[0] == one + 2 * one


def test_int_keys_alone_are_cheap_on_every_prescan_path():
    from serde_kit import _prescan

    # Under a max_hash_collisions below 13, a map of int keys alone may hold more distinct
    # ints of one hash than the limit: the descent takes int keys as cheap (at most 13 of
    # msgpack's share a hash), and the walk does too; with a float key of that hash they
    # are counted with it, by both. (The walk refused such a map where the descent and the
    # compiled reader read it: fuzz_native's equal-int-keys-counted-as-colliding.)
    limits = Limits(max_hash_collisions=4)
    serde = Serializer(limits=limits)
    float_key = attack.colliding_floats(1)[0]
    ints = attack.msgpack_ints_with_hash(hash(float_key))[:6]
    assert len(ints) == 6 and {hash(i) for i in ints} == {hash(float_key)} and float_key not in ints
    honest = {**dict.fromkeys(ints, 1), **{i: 2 for i in range(100, 110)}}  # 16 entries: checked
    assert serde.loads(_in_row(attack.pack(honest), False))[1] == honest
    whole = _in_row(attack.pack(honest), True)
    assert len(_prescan.big_map_candidates(whole, _prescan.flood_entries(limits))) > _prescan._candidate_cap(len(whole))
    assert _prescan.scan(whole, limits) == 0
    with_float = _map16([*ints, *range(100, 110), float_key])  # one more key of that hash
    refused(_in_row(with_float, False), "max_hash_collisions", serde=serde)
    with pytest.raises(LimitExceededError, match="max_hash_collisions"):
        _prescan.scan(_in_row(with_float, True), limits)


def _float_maps(maps: int, count: int = 64, header: int = 0xDE) -> bytes:
    return attack.many_float_flood_maps(maps, count, header)


@pytest.mark.parametrize(
    ("build", "limit"),
    [
        (lambda: attack.float_flood_map(), "max_hash_collisions"),
        (lambda: attack.float_flood_map(202, 0xDF), "max_hash_collisions"),
        (lambda: attack.after_padding(attack.float_flood_map(65), 2000), "max_hash_collisions"),
        # a string key first: the float keys come later in the map
        (lambda: b"\xde\x00\xcb" + attack.pack("first") + b"\x00" + attack.float_key_entries(attack.colliding_floats(202)),
         "max_hash_collisions"),
        # behind padding, in a list
        (lambda: attack.after_padding(attack.float_flood_map()), "max_hash_collisions"),
        (lambda: attack.in_tuple_ext(attack.float_flood_map()), "max_hash_collisions"),
        (lambda: attack.in_tuple_ext(attack.in_tuple_ext(attack.after_padding(attack.float_flood_map(), 5000))),
         "max_hash_collisions"),
        # maps within max_hash_collisions: their colliding pairs spend the meter
        (lambda: _float_maps(1000), "max_work_per_byte"),
        (lambda: _float_maps(1000, 64, 0xDF), "max_work_per_byte"),
        (lambda: attack.after_padding(_float_maps(1000)), "max_work_per_byte"),
        (lambda: attack.in_tuple_ext(_float_maps(1000)), "max_work_per_byte"),
    ],
    ids=["map16", "map32", "65-keys", "after-a-string-key", "after-padding", "in-an-ext", "two-exts-deep",
         "1000-maps-of-64", "1000-map32s-of-64", "maps-after-padding", "maps-in-an-ext"],
)
def test_float_keys_sharing_a_hash_are_refused_before_the_engine_builds_them(build, limit, monkeypatch):
    data = build()
    calls = _engine_calls(monkeypatch)
    error = refused(data, limit)
    if limit == "max_work_per_byte":
        assert "share a hash" in str(error)
    if type(SERDE._decoder.engine).__name__ != "Reader":
        assert calls == []  # refused by the prescan: not one map was built (tests/native: the reader's order)


def test_the_work_charged_for_colliding_float_keys_counts_pairs():
    from serde_kit import _prescan

    limits = Limits()
    keys = attack.colliding_floats(64)
    units, typed = _prescan._collision_units(keys, limits, False)
    assert units == 64 * 63 // 2 * _prescan.FLOOD_UNITS_PER_NUMBER_PAIR and not typed
    # A mixed group: ints that hash alike are numbers too; a tuple key costs its own pairs.
    same = hash(keys[0])
    ints = [n for n in attack.msgpack_ints_with_hash(same) if n not in keys]
    assert ints
    assert _prescan._collision_units(keys[:10] + ints, limits, False)[0] == (
        (10 + len(ints)) * (9 + len(ints)) // 2 * _prescan.FLOOD_UNITS_PER_NUMBER_PAIR
    )
    # Random floats form no group: nothing is compared, nothing charged.
    import random

    rng = random.Random(19)
    honest = [rng.uniform(-1e9, 1e9) for _ in range(10_000)]
    assert _prescan._collision_units(honest, limits, False) == (0, False)
    # 1,000 maps of 64 such keys cost more than their row's allowance; one map does not.
    assert 1000 * units > limits.max_work_per_byte * len(_float_maps(1000))
    assert units < limits.min_work


def test_maps_of_random_float_keys_and_one_colliding_map_still_read():
    honest = SERDE.loads(attack.honest_float_maps(1000, 64))
    assert len(honest) == 1000 and all(len(m) == 64 for m in honest)
    value = [{float(i) / 7: i for i in range(300)} for _ in range(20)]
    assert SERDE.loads(SERDE.dumps(value)) == value
    one = SERDE.loads(attack.after_padding(attack.float_key_map(attack.colliding_floats(64))))
    assert sorted(one[1]) == attack.colliding_floats(64)
    # Int keys are not hashed by the prescan: an int-keyed map is as cheap as before.
    ints = {n: 0 for n in attack.msgpack_ints_with_hash(0)} | {i: i for i in range(100, 300)}
    assert SERDE.loads(attack.after_padding(attack.pack(ints), 5000))[1] == ints


def test_fixmaps_of_colliding_float_keys_are_bounded_by_their_size():
    from serde_kit import _prescan

    # A fixmap of 15 float keys sharing a hash compares 105 pairs; each entry takes ten
    # stored bytes at least (a float64 key, a one-byte value).
    entries = _prescan.CHECKED_ENTRIES - 1
    pairs = entries * (entries - 1) // 2
    stored = 1 + entries * 10
    assert pairs * _prescan.FLOOD_UNITS_PER_NUMBER_PAIR < Limits().max_work_per_byte * stored
    data = attack.many_float_flood_maps(2000, entries, 0x80)
    assert [len(m) for m in SERDE.loads(data)] == [entries] * 2000


def test_a_lowered_max_hash_collisions_checks_smaller_maps_of_float_keys():
    serde = Serializer(limits=Limits(max_hash_collisions=8))
    keys = attack.colliding_floats(9)
    refused(attack.after_padding(attack.float_key_map(keys)), "max_hash_collisions", serde=serde)
    value = serde.loads(attack.after_padding(attack.float_key_map(keys[:8])))
    assert sorted(value[1]) == keys[:8]


def test_the_walk_hashes_float_keys_too():
    from serde_kit import _prescan

    # More candidate headers than the prescan tests one by one: the whole-row path, whose
    # estimate counts float headers, then the walk (an int key fails the string-keys read).
    data = b"\x92" + attack.pack({1: 2}) + attack.many_float_flood_maps(300, 65)
    assert len(_prescan.big_map_candidates(data, _prescan.CHECKED_ENTRIES)) > _prescan._candidate_cap(len(data))
    with pytest.raises(LimitExceededError) as info:
        _prescan.scan(data, Limits())
    assert info.value.limit == "max_hash_collisions"
    refused(data, "max_hash_collisions")
    assert _prescan.scan(attack.honest_float_maps(300, 65), Limits()) == 0
    # The estimate: 2,000 float headers are over a 30 KB row's allowance if all were keys.
    assert _prescan.flood_work(0, 0, 30_000, 2000) > Limits().max_work_per_byte * 30_000


# --- issue 19, round 5: time zones looked up by key ------------------------------------


@pytest.fixture()
def fresh_zones():
    """serde_kit's dict of loaded zones (the compiled reader reads the same object),
    emptied for the test and filled again after it."""
    from serde_kit.ext import stdlib

    saved = dict(stdlib.KNOWN_ZONES)
    stdlib.KNOWN_ZONES.clear()
    yield stdlib.KNOWN_ZONES
    stdlib.KNOWN_ZONES.clear()
    stdlib.KNOWN_ZONES.update(saved)


@pytest.mark.parametrize("path", ["native", "python"])
def test_zones_looked_up_by_key_spend_the_rows_meter_and_loaded_ones_do_not(path, fresh_zones):
    import zoneinfo

    from serde_kit import budget, native
    from tests.native.conftest import read_path

    if path == "native" and not native.AVAILABLE:
        pytest.skip("serde_kit._reader is not built")
    # ZoneInfo keeps a zone only while a value holds it, and searches the disk for any
    # other key (~40 us), so a 22 KB row naming every zone cost ~21 ms on every read
    # (680x an honest row). A key is charged once per process now; loaded zones are held.
    with read_path(path):
        serde = Serializer()
    keys = sorted(zoneinfo.available_timezones())
    assert len(keys) > 300
    error = refused(attack.zone_keys(keys), "max_work_per_byte", serde=serde)
    assert "time zones looked up by key" in str(error)
    assert 0 < len(fresh_zones) <= Limits().min_work // budget.ZONE_LOOKUP_UNITS
    # The zones loaded so far cost a dict lookup: a row of them reads, however many.
    loaded = list(fresh_zones)
    assert serde.loads(attack.zone_keys(loaded * 40)) == [zoneinfo.ZoneInfo(key) for key in loaded * 40]
    # A small honest row of a few new zones reads (its first read asks for a meter).
    new = [key for key in keys if key not in fresh_zones][:5]
    value = {"meeting": __import__("datetime").datetime(2024, 5, 1, 9, tzinfo=zoneinfo.ZoneInfo(new[0])), "zones": new}
    row = Serializer().dumps({**value, "tz": [zoneinfo.ZoneInfo(key) for key in new]})
    assert serde.loads(row)["tz"] == [zoneinfo.ZoneInfo(key) for key in new]


@pytest.mark.parametrize("lenient", [False, True])
def test_unknown_zone_keys_spend_the_meter_before_any_is_searched_again(lenient, fresh_zones):
    from serde_kit import budget
    from serde_kit.errors import RebuildError

    # Keys no zone has are never held: each read searches again, and its error path (in
    # lenient mode, a placeholder and a warning) costs more: 600 of them took ~200 ms.
    keys = [f"Europe/X{i:05d}" for i in range(600)]
    serde = Serializer(lenient=lenient)
    if lenient:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            refused(attack.zone_keys(keys), "max_work_per_byte", serde=serde)
    else:
        with pytest.raises(RebuildError, match="unknown time zone"):
            serde.loads(attack.zone_keys(keys))  # the first key ends the read
    assert fresh_zones == {}
    per_key = budget.ZONE_LOOKUP_UNITS + budget.ZONE_MISSING_UNITS
    assert Limits().min_work // per_key < 10
