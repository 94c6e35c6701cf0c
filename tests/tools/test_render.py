"""render: stored bytes -> tagged JSON-able data, without importing anything."""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import enum
import json
import pathlib
import pickle
import subprocess
import sys
import uuid

import numpy as np
import ormsgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from langgraph.types import Send

from serde_kit import Limits
from serde_kit.errors import DecodeError, LimitExceededError, MalformedDataError, UnknownTagError
from serde_kit.tools.render import render_msgpack, render_typed

STOCK = JsonPlusSerializer(allowed_msgpack_modules=None)


def stock_render(value):
    """Write with the real stock serializer, then render."""
    return render_typed(STOCK.dumps_typed(value))


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: int


def ext(code: int, payload) -> bytes:
    return ormsgpack.packb(ormsgpack.Ext(code, ormsgpack.packb(payload)))


# -- every ext code, written by the real anchor ---------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (uuid.UUID(int=5), {"$type": "uuid.UUID", "$code": 0, "value": "0" * 31 + "5"}),
        (decimal.Decimal("1.50"), {"$type": "decimal.Decimal", "$code": 0, "value": "1.50"}),
        (Colour.RED, {"$type": f"{__name__}.Colour", "$code": 0, "value": "red"}),
        ({3, 1}, {"$type": "builtins.set", "$code": 0, "value": [1, 3]}),
        (collections.deque([1, 2]), {"$type": "collections.deque", "$code": 0, "value": [1, 2]}),
        (
            pathlib.PurePosixPath("/a/b") and pathlib.Path("/a/b"),
            {"$type": f"pathlib.{type(pathlib.Path('/')).__name__}", "$code": 1, "args": ["/", "a", "b"]},
        ),
        (datetime.timedelta(days=1, seconds=2), {"$type": "datetime.timedelta", "$code": 1, "args": [1, 2, 0]}),
        (datetime.date(2024, 2, 29), {"$type": "datetime.date", "$code": 1, "args": [2024, 2, 29]}),
        (Send("node", {"k": 1}), {"$type": "langgraph.types.Send", "$code": 1, "args": ["node", {"k": 1}]}),
        (Point(1, 2), {"$type": f"{__name__}.Point", "$code": 2, "kwargs": {"x": 1, "y": 2}}),
        (
            datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
            {
                "$type": "datetime.datetime",
                "$code": 3,
                "value": "2024-01-02T03:04:05+00:00",
                "method": "fromisoformat",
            },
        ),
        (
            HumanMessage("hi", id="m1"),
            {
                "$type": "langchain_core.messages.human.HumanMessage",
                "$code": 5,
                "value": {
                    "content": "hi",
                    "additional_kwargs": {},
                    "response_metadata": {},
                    "type": "human",
                    "name": None,
                    "id": "m1",
                },
                "method": "model_validate_json",
            },
        ),
        (
            _DeltaSnapshot([1, "a"]),
            {"$type": "langgraph.checkpoint.serde.types._DeltaSnapshot", "$code": 7, "value": [1, "a"]},
        ),
    ],
    ids=lambda v: type(v).__name__,
)
def test_ext_codes_written_by_the_stock_serializer(value, expected):
    assert stock_render(value) == expected


def test_pydantic_v1_payload_renders_as_code_4():
    blob = ext(4, ("legacy.models", "Old", {"a": 1}))
    assert render_msgpack(blob) == {"$type": "legacy.models.Old", "$code": 4, "value": {"a": 1}}


def test_nested_ext_inside_ext_payload():
    got = stock_render({"when": [Point(x=datetime.date(2020, 1, 1), y=uuid.UUID(int=0))]})
    assert got == {
        "when": [
            {
                "$type": f"{__name__}.Point",
                "$code": 2,
                "kwargs": {
                    "x": {"$type": "datetime.date", "$code": 1, "args": [2020, 1, 1]},
                    "y": {"$type": "uuid.UUID", "$code": 0, "value": "0" * 32},
                },
            }
        ]
    }


# -- numpy without numpy ----------------------------------------------------------


@pytest.mark.parametrize(
    ("array", "preview"),
    [
        (np.arange(6, dtype="<i4").reshape(2, 3), [0, 1, 2, 3, 4, 5]),
        (np.arange(3, dtype=">f8"), [0.0, 1.0, 2.0]),
        (np.array([True, False]), [True, False]),
        (np.array([1 + 2j], dtype=np.complex128), [{"real": 1.0, "imag": 2.0}]),
        (np.array(["ab", "c"]), ["ab", "c"]),
        (np.array([b"xy"], dtype="S2"), [{"$bytes": "7879", "len": 2}]),
        (np.array([np.nan, np.inf], dtype="<f4"), [{"$float": "nan"}, {"$float": "inf"}]),
        (np.arange(4, dtype="<u2").reshape(2, 2).T.copy(order="F"), [0, 1, 2, 3]),
    ],
    ids=lambda v: getattr(v, "dtype", "p").str if hasattr(v, "dtype") else "p",
)
def test_numpy_arrays_render_as_dtype_shape_preview(array, preview):
    got = stock_render(array)
    assert got["$type"] == "numpy.ndarray" and got["$code"] == 6
    assert got["dtype"] == array.dtype.str
    assert got["shape"] == list(array.shape)
    assert got["order"] == ("F" if array.flags.f_contiguous and not array.flags.c_contiguous else "C")
    assert got["nbytes"] == array.nbytes
    assert got["preview"] == preview
    assert got["truncated"] is False


def test_numpy_preview_is_short_and_says_so():
    got = render_typed(STOCK.dumps_typed(np.arange(1000, dtype="<i8")), preview=3)
    assert got["preview"] == [0, 1, 2]
    assert got["truncated"] is True
    assert got["size"] == 1000


def test_numpy_datetime64_previews_raw_ticks():
    # the stock writer cannot pack datetime64 (no buffer protocol), so build the payload
    got = render_msgpack(ext(6, ("<M8[s]", [1], "C", (1704067200).to_bytes(8, "little"))))
    assert got["preview"] == [1704067200]


def test_numpy_structured_dtype_shows_no_preview():
    got = stock_render(np.zeros(2, dtype=[("a", "<i4")]))
    assert got["dtype"] == "|V4"
    assert "preview" not in got


def test_numpy_buffer_of_wrong_length_is_malformed():
    with pytest.raises(MalformedDataError, match="need 24"):
        render_msgpack(ext(6, ("<f8", [3], "C", b"\x00" * 23)))


# -- other tags, plain values ---------------------------------------------------


def test_plain_tags():
    assert render_typed(("null", b"")) is None
    assert render_typed(("bytes", b"\x01\x02")) == {"$bytes": "0102", "len": 2}
    assert render_typed(("bytearray", b"\xff")) == {"$type": "builtins.bytearray", "$bytes": "ff", "len": 1}
    long = render_typed(("bytes", bytes(100)), bytes_preview=4)
    assert long == {"$bytes": "00000000", "len": 100, "truncated": True}


def test_non_string_and_dollar_keys_keep_their_identity():
    assert stock_render({1: "a", "b": 2}) == {"$map": [[1, "a"], ["b", 2]]}
    assert stock_render({"$type": "fake"}) == {"$map": [["$type", "fake"]]}
    assert stock_render({"x": float("-inf")}) == {"x": {"$float": "-inf"}}
    # and the result is valid JSON
    json.dumps(stock_render({1: (2, 3), "z": b"\x00"}), allow_nan=False)


def test_legacy_json_constructor_renders_as_type():
    row = {
        "lc": 2,
        "type": "constructor",
        "id": ["myapp", "models", "Doc"],
        "kwargs": {"title": "x", "tags": [{"lc": 1, "type": "constructor", "id": ["a", "B"], "args": [1]}]},
    }
    assert render_typed(("json", json.dumps(row).encode())) == {
        "$type": "myapp.models.Doc",
        "$code": "json",
        "kwargs": {"title": "x", "tags": [{"$type": "a.B", "$code": "json", "args": [1]}]},
    }


_MARKS: list[str] = []


def _leave_mark(text: str) -> str:
    _MARKS.append(text)
    return text


class _Loud:
    def __reduce__(self):
        return (_leave_mark, ("unpickled!",))


def test_pickle_rows_are_summarised_never_unpickled():
    got = render_typed(("pickle", pickle.dumps(_Loud())))
    assert got["$type"] == "pickle"
    assert f"{__name__}._leave_mark" in got["globals"]
    assert _MARKS == []


def test_encrypted_and_unknown_tags():
    with pytest.raises(UnknownTagError, match="encrypted"):
        render_typed(("msgpack+aesgcm", b"\x00"))
    with pytest.raises(UnknownTagError, match="'yaml'"):
        render_typed(("yaml", b"a: 1"))
    with pytest.raises(MalformedDataError, match="NULL"):
        render_typed(("msgpack", None))


# -- never imports --------------------------------------------------------------


def test_rendering_never_imports_the_named_module(tmp_path, monkeypatch):
    pkg = tmp_path / "render_probe_mod.py"
    mark = tmp_path / "imported"
    pkg.write_text(
        f"with open({str(mark)!r}, 'w') as f:\n    f.write('x')\n"
        "import dataclasses\n"
        "@dataclasses.dataclass\nclass Doc:\n    a: int\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import render_probe_mod  # noqa: PLC0415

    blob = STOCK.dumps_typed({"doc": render_probe_mod.Doc(a=1)})
    del sys.modules["render_probe_mod"]
    mark.unlink()

    got = render_typed(blob)

    assert got == {"doc": {"$type": "render_probe_mod.Doc", "$code": 2, "kwargs": {"a": 1}}}
    assert "render_probe_mod" not in sys.modules
    assert not mark.exists()


def test_code_3_method_is_shown_not_called():
    blob = ext(3, ("os", "system", "echo pwned", "__call__"))
    assert render_msgpack(blob) == {"$type": "os.system", "$code": 3, "value": "echo pwned", "method": "__call__"}


# -- malformed input: typed errors, never a crash -------------------------------


@pytest.mark.parametrize(
    ("blob", "error", "match"),
    [
        (b"\x92\x01", MalformedDataError, "do not decode"),
        (b"\xc1", MalformedDataError, "do not decode"),
        (ext(0, "not-a-tuple"), MalformedDataError, "array of 3"),
        (ext(0, (1, "name", 2)), MalformedDataError, "module: str"),
        (ext(3, ("m", "n", 1, 5)), MalformedDataError, "method slot"),
        (ext(6, ("<f8", [-1], "C", b"")), MalformedDataError, "shape"),
        (ext(6, ("<f8", [1], "Z", b"")), MalformedDataError, "order"),
        (ext(6, [1, 2]), MalformedDataError, "dtype, shape"),
        (ormsgpack.packb(ormsgpack.Ext(7, b"\x92")), MalformedDataError, "invalid msgpack"),
        (ormsgpack.packb(ormsgpack.Ext(9, b"\xc0")), UnknownTagError, "ext code 9"),
    ],
)
def test_malformed_bytes_raise_typed_errors(blob, error, match):
    with pytest.raises(error, match=match):
        render_msgpack(blob)


def test_deeply_nested_ext_is_bounded():
    inner = ormsgpack.packb(None)
    for _ in range(200):
        inner = ormsgpack.packb(ormsgpack.Ext(7, inner))
    # the serializer's own ext depth bound, named in the error
    with pytest.raises(LimitExceededError, match="max_ext_depth=64"):
        render_msgpack(inner)
    with pytest.raises(MalformedDataError, match="deeper than 100"):
        render_msgpack(inner, max_depth=100, limits=Limits(max_ext_depth=256))
    # a generous bound decodes the same bytes
    got = render_msgpack(inner, limits=Limits(max_ext_depth=256))
    for _ in range(200):
        got = got["value"]
    assert got is None


def test_deeply_nested_arrays_are_bounded():
    with pytest.raises(MalformedDataError, match="deeper than 10"):
        render_msgpack(b"\x91" * 20 + b"\xc0", max_depth=10)
    with pytest.raises(MalformedDataError):
        render_msgpack(b"\x91" * 5000 + b"\xc0")
    # a bound too large for the interpreter's stack still ends in a typed error
    deep = ormsgpack.packb(None)
    for _ in range(2000):
        deep = ormsgpack.packb(ormsgpack.Ext(7, deep))
    with pytest.raises(DecodeError):
        render_msgpack(deep, max_depth=100_000, limits=Limits(max_ext_depth=256))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_give_data_or_a_decode_error(blob):
    try:
        got = render_msgpack(blob)
    except DecodeError:
        return
    json.dumps(got, allow_nan=False)


_ext_payloads = st.recursive(
    st.none() | st.integers(-(2**63), 2**64 - 1) | st.text(max_size=5) | st.binary(max_size=5),
    lambda children: st.lists(children, max_size=4)
    | st.builds(lambda code, items: ormsgpack.Ext(code, ormsgpack.packb(items)), st.integers(0, 9), st.lists(children, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_ext_payloads)
def test_random_ext_structures_give_data_or_a_decode_error(value):
    try:
        got = render_msgpack(ormsgpack.packb(value))
    except DecodeError:
        return
    json.dumps(got, allow_nan=False)


def test_chain_of_deep_ext_payloads_does_not_crash_the_interpreter():
    """Each ormsgpack call recurses on the C stack; nested ext payloads must not stack those calls."""
    script = r"""
import ormsgpack
from serde_kit.errors import MalformedDataError
from serde_kit.tools.render import render_msgpack
blob = ormsgpack.packb(None)
for _ in range(40):
    blob = ormsgpack.packb(ormsgpack.Ext(7, b"\x91" * 900 + blob))
for bound in (256, 100_000):
    try:
        render_msgpack(blob, max_depth=bound)
    except MalformedDataError:
        pass
    else:
        raise SystemExit("expected MalformedDataError")
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


def test_rendering_imports_no_library_named_in_the_data():
    script = r"""
import sys, ormsgpack
from serde_kit.tools.render import render_msgpack
blob = ormsgpack.packb([
    ormsgpack.Ext(6, ormsgpack.packb(["<f8", [2], "C", bytes(16)])),
    ormsgpack.Ext(5, ormsgpack.packb(["pydantic.main", "BaseModel", {}, "model_validate_json"])),
    ormsgpack.Ext(2, ormsgpack.packb(["langgraph.types", "Interrupt", {"value": 1}])),
    ormsgpack.Ext(5, ormsgpack.packb(["langchain_core.messages.human", "HumanMessage", {}, "model_validate_json"])),
])
assert render_msgpack(blob)[0]["preview"] == [0.0, 0.0]
print(sorted(m for m in ("numpy", "pydantic", "langgraph", "langchain_core") if m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
