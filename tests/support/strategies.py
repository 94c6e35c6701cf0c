"""Hypothesis strategies for every value serde_kit promises to round-trip exactly.

One strategy per supported type, :func:`checkpoint_values` nesting them all,
and :func:`stock_values` limited to what LangGraph's own JsonPlusSerializer
can write (for the wire-compatibility properties).

Profiles: ``ci`` (default, fast), ``dev`` and ``long``; pick one with
``SERDE_KIT_HYPOTHESIS_PROFILE=dev``. Importing this module loads the profile.
"""

from __future__ import annotations

import ipaddress
import os
import pathlib
import re
import string
from collections import deque
from datetime import timedelta, timezone
from typing import Any

import numpy as np
import pydantic
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.extra import numpy as hnp

from tests.support import strategy_types as T

__all__ = [
    "PROFILE",
    "checkpoint_values",
    "hashable_values",
    "leaf_values",
    "stock_values",
]

# --- profiles ---------------------------------------------------------------

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
settings.register_profile("ci", max_examples=100, deadline=None, suppress_health_check=_SLOW_OK, print_blob=True)
settings.register_profile("dev", max_examples=300, deadline=None, suppress_health_check=_SLOW_OK, print_blob=True)
settings.register_profile("long", max_examples=5000, deadline=None, suppress_health_check=_SLOW_OK, print_blob=True)
PROFILE = os.environ.get("SERDE_KIT_HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)

# --- open findings and documented limits -------------------------------------

#: Bugs found in serde_kit and not fixed yet. While one is listed, the general
#: properties steer around it (so they keep testing everything else) and the
#: tests that pin it are xfail(strict=True): a fix makes them pass, which fails
#: the run until the entry is removed here. Names match fuzz/values.py's FUZZ_AVOID.
OPEN_FINDINGS: frozenset[str] = frozenset()

#: Documented limits (README, "What is refused or not kept"): the properties
#: steer around them and a dedicated test asserts the documented behaviour.
#: nested_bytearray: ormsgpack writes a bytearray inside a container natively as
#: bin (there is no passthrough option for it), so it comes back as bytes; a
#: top-level bytearray keeps its own type tag.
KNOWN_LIMITS: frozenset[str] = frozenset({"nested_bytearray"})
AVOID = OPEN_FINDINGS | KNOWN_LIMITS

# --- scalars ----------------------------------------------------------------

nones = st.none()
bools = st.booleans()
small_ints = st.integers(min_value=-(2**63), max_value=2**64 - 1)
big_ints = st.integers(min_value=-(2**300), max_value=2**300)
ints = st.one_of(small_ints, big_ints)
special_floats = st.sampled_from([float("inf"), float("-inf"), float("nan"), -0.0, 0.0, 5e-324, 1.7976931348623157e308])
floats = st.one_of(st.floats(), special_floats)
complexes = st.complex_numbers()
fracs = st.fractions()
# Lone surrogates cannot be encoded as UTF-8; they have their own test.
texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
short_texts = st.text(string.ascii_letters + string.digits + "_-", min_size=1, max_size=12)
binaries = st.binary(max_size=64)
bytearrays = binaries.map(bytearray)
decimals = st.decimals(allow_nan=True, allow_infinity=True)
uuids = st.uuids()

# --- dates and times ----------------------------------------------------------

_offsets = st.one_of(
    st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1).map(lambda m: timedelta(minutes=m)),
    st.integers(min_value=-(86400 - 1), max_value=86400 - 1).map(lambda s: timedelta(seconds=s)),
)
fixed_timezones = st.one_of(
    st.just(timezone.utc),
    _offsets.map(timezone),
    st.builds(timezone, _offsets, short_texts),
)
zoneinfos = st.timezones()
dates = st.dates()
timedeltas = st.timedeltas()
naive_datetimes = st.datetimes()
fixed_datetimes = st.datetimes(timezones=fixed_timezones)
zoned_datetimes = st.builds(
    lambda d, fold: d.replace(fold=fold),
    st.datetimes(timezones=zoneinfos),
    st.integers(0, 1),
)
datetimes = st.one_of(naive_datetimes, fixed_datetimes, zoned_datetimes)
times = st.builds(
    lambda t, fold: t.replace(fold=fold),
    st.times(timezones=st.one_of(st.none(), fixed_timezones, zoneinfos)),
    st.integers(0, 1),
)

# --- other stdlib -------------------------------------------------------------

ipv4 = st.ip_addresses(v=4)
ipv6 = st.ip_addresses(v=6)
ip_values = st.one_of(
    ipv4,
    ipv6,
    st.builds(lambda a, p: ipaddress.IPv4Interface((a, p)), ipv4, st.integers(0, 32)),
    st.builds(lambda a, p: ipaddress.IPv6Interface((a, p)), ipv6, st.integers(0, 128)),
    st.builds(lambda a, p: ipaddress.IPv4Network((a, p), strict=False), ipv4, st.integers(0, 32)),
    st.builds(lambda a, p: ipaddress.IPv6Network((a, p), strict=False), ipv6, st.integers(0, 128)),
)
_segments = st.lists(
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="/\\\x00:"), min_size=1, max_size=10).filter(
        lambda s: s not in (".", "..")
    ),
    max_size=4,
)
posix_paths = st.builds(lambda root, parts: pathlib.PosixPath(root, *parts), st.sampled_from(["", "/"]), _segments)
pure_posix_paths = st.builds(lambda root, parts: pathlib.PurePosixPath(root, *parts), st.sampled_from(["", "/"]), _segments)
windows_paths = st.builds(
    lambda root, parts: pathlib.PureWindowsPath(root, *parts), st.sampled_from(["", "C:\\", "\\\\server\\share\\"]), _segments
)
paths = st.one_of(posix_paths, pure_posix_paths, windows_paths)
_flags = st.sampled_from([0, re.IGNORECASE, re.MULTILINE | re.DOTALL, re.VERBOSE, re.IGNORECASE | re.ASCII])
patterns = st.one_of(
    st.builds(lambda t, f: re.compile(re.escape(t), f), texts, _flags),
    st.builds(lambda b, f: re.compile(re.escape(b), f & ~re.ASCII), binaries, _flags),
    st.sampled_from([re.compile(r"^\d+(?:\.\d+)?$"), re.compile(r"(?P<word>\w+)\s*=", re.M)]),
)
exceptions = st.builds(
    lambda cls, args: cls(*args),
    st.sampled_from([ValueError, KeyError, TypeError, RuntimeError, LookupError, Exception]),
    st.lists(st.one_of(texts, small_ints, st.none()), max_size=2),
)
_flag_values = [T.Perm.R, T.Perm.W, T.Perm.X, T.Perm.R | T.Perm.W, T.Perm.R | T.Perm.W | T.Perm.X, T.Perm(0)]
enums = st.one_of(
    st.sampled_from(list(T.Color)),
    st.sampled_from(list(T.Priority)),
    st.sampled_from(list(T.Mode)),
    st.sampled_from(_flag_values),
)
# Color.BLUE has a tuple value: the stock writer stores it as a list and its own
# reader cannot look the member up again, so there is no stock behaviour to match.
stock_enums = st.sampled_from([T.Color.RED, T.Color.GREEN, *T.Priority, *T.Mode, *_flag_values])

# --- numpy ------------------------------------------------------------------

_scalar_dtypes = st.one_of(
    hnp.boolean_dtypes(),
    hnp.integer_dtypes(endianness="="),
    hnp.unsigned_integer_dtypes(endianness="="),
    hnp.floating_dtypes(endianness="=", sizes=(16, 32, 64)),
    hnp.complex_number_dtypes(endianness="="),
    hnp.datetime64_dtypes(endianness="="),
    hnp.timedelta64_dtypes(endianness="="),
)
_array_dtypes = st.one_of(
    hnp.boolean_dtypes(),
    hnp.integer_dtypes(),  # both byte orders
    hnp.unsigned_integer_dtypes(),
    hnp.floating_dtypes(sizes=(16, 32, 64)),
    hnp.complex_number_dtypes(),
    hnp.datetime64_dtypes(),
    hnp.timedelta64_dtypes(),
    hnp.unicode_string_dtypes(max_len=6),
    hnp.byte_string_dtypes(max_len=6),
    st.sampled_from(
        [
            np.dtype([("x", "<f8"), ("y", ">i4"), ("name", "U5")]),
            np.dtype([("id", "u2"), ("pos", "<f4", (2,))]),
        ]
    ),
)


def _layout(a: np.ndarray, how: str) -> np.ndarray:
    if how == "F":
        return np.asfortranarray(a)
    if how == "strided" and a.ndim >= 1 and a.shape[0] > 1:
        return a[::2]
    if how == "transposed" and a.ndim >= 2:
        return a.T
    return a


ndarrays = st.builds(
    _layout,
    hnp.arrays(_array_dtypes, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)),
    st.sampled_from(["C", "F", "strided", "transposed"]),
)
np_scalars = _scalar_dtypes.flatmap(lambda dt: hnp.from_dtype(dt).map(lambda v: np.array(v, dtype=dt)[()]))

# --- pydantic ---------------------------------------------------------------

_inner_models = st.builds(lambda n, s, t: T.Inner(name=n, score=s, tags=t), texts, st.floats(allow_nan=False), st.lists(short_texts, max_size=3))
pydantic_models = st.one_of(
    _inner_models,
    st.builds(
        lambda extra, **kw: T.Outer(**kw, **extra),
        st.dictionaries(short_texts.map(lambda s: "x_" + s), st.one_of(small_ints, texts, bools), max_size=2),
        id=small_ints,
        inner=_inner_models,
        items=st.lists(_inner_models, max_size=3),
        meta=st.dictionaries(short_texts, st.integers(-1000, 1000), max_size=3),
        when=st.one_of(st.none(), naive_datetimes, fixed_datetimes),
    ),
    st.builds(lambda t, b: T.SecretHolder(token=t, blob=b), texts, binaries),
)
secrets = st.one_of(
    texts.map(pydantic.SecretStr),
    binaries.map(pydantic.SecretBytes),
)
legacy_models = st.builds(
    lambda n, c, r: T.LegacyModel(name=n, count=c, ratio=r), texts, st.integers(-(2**31), 2**31), st.floats(allow_nan=False)
)

# --- langchain-core and langgraph -------------------------------------------

_json_leaf = st.one_of(st.none(), bools, st.integers(-(2**53), 2**53), st.floats(allow_nan=False, allow_infinity=False), texts)
_json = st.recursive(
    _json_leaf,
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(short_texts, c, max_size=3)),
    max_leaves=6,
)
_tool_calls = st.lists(
    st.fixed_dictionaries(
        {"name": short_texts, "args": st.dictionaries(short_texts, _json, max_size=3), "id": short_texts}
    ).map(lambda d: {**d, "type": "tool_call"}),
    max_size=3,
)


def _messages():
    from langchain_core.documents import Document
    from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage

    ids = st.one_of(st.none(), short_texts)
    # Explicit lambdas: st.builds would try to infer (and invent) unlisted arguments.
    return st.one_of(
        st.builds(lambda c, i: HumanMessage(content=c, id=i), texts, ids),
        st.builds(lambda c, i: SystemMessage(content=c, id=i), texts, ids),
        st.builds(lambda c, i, tc: AIMessage(content=c, id=i, tool_calls=tc), texts, ids, _tool_calls),
        st.builds(lambda c, t, i: ToolMessage(content=c, tool_call_id=t, id=i), texts, short_texts, ids),
        st.builds(lambda i: RemoveMessage(id=i), short_texts),
        st.builds(
            lambda c, m, i: Document(page_content=c, metadata=m, id=i),
            texts,
            st.dictionaries(short_texts, _json, max_size=3),
            ids,
        ),
    )


messages = st.deferred(_messages)


def _langgraph(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    from langgraph.checkpoint.serde.types import _DeltaSnapshot
    from langgraph.types import Command, Interrupt, Send

    sends = st.builds(
        lambda n, a, t: Send(n, a, timeout=t), short_texts, children, st.one_of(st.none(), st.floats(0.1, 1e6))
    )
    return st.one_of(
        sends,
        st.builds(lambda v, i: Interrupt(value=v, id=i), children, short_texts),
        st.builds(
            lambda u, r, g: Command(update=u, resume=r, goto=g),
            st.one_of(st.none(), st.dictionaries(short_texts, children, max_size=3)),
            children,
            st.one_of(st.just(()), short_texts, st.lists(short_texts, max_size=2), sends),
        ),
        st.builds(_DeltaSnapshot, children),
    )


# --- composition ------------------------------------------------------------


def leaf_values(*, stock: bool = False) -> st.SearchStrategy[Any]:
    """Every non-container supported type (``stock=True``: only what the stock writer handles)."""
    common = [
        nones,
        bools,
        small_ints if stock else ints,
        floats,
        texts,
        binaries,
        binaries if "nested_bytearray" in AVOID else bytearrays,
        decimals,
        uuids,
        dates,
        datetimes,
        times,
        timedeltas,
        fixed_timezones,
        zoneinfos,
        ip_values,
        posix_paths,
        patterns,
        stock_enums if stock else enums,
        ndarrays,
        pydantic_models,
        secrets,
        legacy_models,
        messages,
    ]
    if not stock:
        common += [complexes, fracs, paths, np_scalars]  # exceptions read back as repr (issue 9)
    return st.one_of(*common)


def hashable_values(*, stock: bool = False) -> st.SearchStrategy[Any]:
    """Values that can be set members or dict keys (no NaN: it never equals itself).

    ``stock=True`` leaves out tuples: the stock writer turns them into lists,
    which its own reader then cannot put back into a set.
    """
    atoms = st.one_of(
        small_ints if stock else ints,
        st.floats(allow_nan=False),
        short_texts,
        binaries,
        uuids,
        dates,
        stock_enums if stock else enums,
    )
    if stock:
        return st.one_of(atoms, st.frozensets(atoms, max_size=3))
    return st.one_of(atoms, st.tuples(atoms, atoms), st.frozensets(atoms, max_size=3))


def _dict_keys(stock: bool) -> st.SearchStrategy[Any]:
    i = small_ints if stock else ints
    plain = st.one_of(texts, i, st.tuples(short_texts, i))
    if stock:
        return plain
    # Any hashable value may be a key, and must come back with its own type.
    return st.one_of(plain, hashable_values(), nones, bools, naive_datetimes, fixed_datetimes)


def _containers(children: st.SearchStrategy[Any], *, stock: bool) -> st.SearchStrategy[Any]:
    hashables = hashable_values(stock=stock)
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(_dict_keys(stock), children, max_size=4),
        st.sets(hashables, max_size=4),
        st.frozensets(hashables, max_size=4),
        st.builds(
            lambda items, extra: deque(items, maxlen=None if extra < 0 else len(items) + extra),
            st.lists(children, max_size=4),
            st.integers(-1, 3),
        ),
        st.builds(T.Point, children, children),
        st.builds(T.Pair, children, children),
        st.builds(T.Plain, children, children),
        st.builds(T.FrozenPair, st.lists(children, max_size=3).map(tuple), texts),
        st.builds(T.WithDerived, small_ints) if not stock else st.builds(T.Plain, children),
        _langgraph(children),
    )


def checkpoint_values(*, max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Any supported value, nested in any supported container (bounded size)."""
    return st.recursive(leaf_values(), lambda c: _containers(c, stock=False), max_leaves=max_leaves)


def stock_values(*, max_leaves: int = 10) -> st.SearchStrategy[Any]:
    """Nested values built only from types LangGraph's JsonPlusSerializer can write."""
    return st.recursive(leaf_values(stock=True), lambda c: _containers(c, stock=True), max_leaves=max_leaves)


def state_dicts(*, max_leaves: int = 12) -> st.SearchStrategy[dict[str, Any]]:
    """A checkpoint-shaped value: channel name -> any supported value."""
    return st.dictionaries(short_texts, checkpoint_values(max_leaves=max_leaves), max_size=5)

