"""The renderer accepts exactly the rows the decoder reads: one wire table (serde_kit.ext.codes).

Over every stored row the project keeps (golden rows written by the stock
writer, the release corpus, the fuzz corpora and saved findings): a row the
decoder reads renders, and a msgpack row the renderer renders is read by the
decoder, unless the decoder refused it for what a value is rather than how it
is laid out (a type that does not build, a budget on a built value), which the
renderer never builds. The decoder is lenient and allows everything, so a
refusal it still raises is about the bytes, not the allowlist.
"""

from __future__ import annotations

import base64
import json
import warnings
from pathlib import Path
from typing import Any

import ormsgpack
import pytest

from serde_kit import Allowlist, Limits, Serializer
from serde_kit.errors import LimitExceededError, RebuildError, SerdeError
from serde_kit.tools.render import render_typed
from tests.support.fuzz_scripts import fuzz_module

REPO = Path(__file__).resolve().parents[2]
_common = fuzz_module("_common")  # the harnesses' own tag table: how their saved inputs split

#: Budgets on built values (not on the row's layout): the renderer builds nothing.
VALUE_LIMITS = {
    "max_number_digits", "max_text_length", "max_regex_length", "max_regex_classes", "regex_flags",
    "max_hash_collisions", "max_array_elements", "max_partial_json",
    "max_work_per_byte",  # the row's work meter, charged by the builders (partial JSON, regex, big numbers)
}  # fmt: skip

#: serde_kit 0.1.0 wrote exceptions as a 5-item ext 3: [module, name, text, "from_args", args].
LEGACY_EXCEPTION = ormsgpack.packb(
    ormsgpack.Ext(3, ormsgpack.packb(["builtins", "ValueError", "boom", "from_args", ["boom"]]))
)


def _stored_rows() -> list[tuple[str, tuple[str, bytes]]]:
    rows = [(f"golden/{p.name}", ("msgpack", p.read_bytes())) for p in sorted((REPO / "tests/golden/data").glob("*.bin"))]
    for release in sorted((REPO / "tests/compat/data").iterdir()):
        if (release / "rows.json").is_file():
            for row in json.loads((release / "rows.json").read_text())["rows"]:
                if "data" in row and row["kind"] == "plain":
                    rows.append((f"compat/{release.name}/{row['name']}", (row["tag"], base64.b64decode(row["data"]))))
    for folder in ("corpus/fuzz_decode", "corpus/fuzz_resources", "regressions/fuzz_decode", "regressions/fuzz_resources"):
        for p in sorted((REPO / "fuzz" / folder).iterdir()):
            rows.append((f"{folder}/{p.name}", _common.split_tagged(p.read_bytes())))
    rows.append(("legacy-5-item-ext-3", ("msgpack", LEGACY_EXCEPTION)))
    return rows


ROWS = _stored_rows()
LIMITS = [Limits(), Limits(max_ext_depth=1), Limits(max_containers=4), Limits(max_row_bytes=48)]


_READERS: dict[Limits, Serializer] = {}


def _verdicts(row: tuple[str, bytes], limits: Limits) -> tuple[SerdeError | None, SerdeError | None]:
    reader = _READERS.get(limits)
    if reader is None:
        reader = _READERS[limits] = Serializer(allowlist=Allowlist.allow_everything_unsafe(), lenient=True, limits=limits)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lenient reading warns by design
        try:
            reader.loads_typed(row)
            read = None
        except SerdeError as exc:
            read = exc
    try:
        render_typed(row, limits=limits)
        shown = None
    except SerdeError as exc:
        shown = exc
    return read, shown


def _about_the_value(error: SerdeError) -> bool:
    return isinstance(error, RebuildError) or (isinstance(error, LimitExceededError) and error.limit in VALUE_LIMITS)


def test_the_corpora_hold_rows_of_every_kind() -> None:
    """The agreement below is over a real mix, not an empty or all-broken set."""
    read = sum(_verdicts(row, Limits())[0] is None for _, row in ROWS)
    assert len(ROWS) > 500 and 300 < read < len(ROWS)


@pytest.mark.parametrize("limits", LIMITS, ids=repr)
def test_renderer_accepts_exactly_what_the_decoder_reads(limits: Limits) -> None:
    disagree: list[str] = []
    for name, row in ROWS:
        read, shown = _verdicts(row, limits)
        if read is None and shown is not None:
            disagree.append(f"{name}: decoder reads it, renderer refuses: {type(shown).__name__}: {shown}")
        elif row[0] == "msgpack" and shown is None and read is not None and not _about_the_value(read):
            disagree.append(f"{name}: renderer shows it, decoder refuses: {type(read).__name__}: {read}")
    assert not disagree, "\n".join(disagree[:20])


def test_legacy_exception_row_renders_with_its_arguments() -> None:
    assert Serializer().loads_typed(("msgpack", LEGACY_EXCEPTION)) == "boom"
    assert render_typed(("msgpack", LEGACY_EXCEPTION)) == {
        "$type": "builtins.ValueError", "$code": 3, "value": "boom", "method": "from_args", "args": ["boom"],
    }  # fmt: skip


def test_renderer_honours_the_ext_depth_of_the_limits() -> None:
    row: Any = ormsgpack.packb(None)
    for _ in range(3):
        row = ormsgpack.packb(ormsgpack.Ext(7, row))
    with pytest.raises(LimitExceededError, match="max_ext_depth=2"):
        render_typed(("msgpack", row), limits=Limits(max_ext_depth=2))
    assert render_typed(("msgpack", row), limits=Limits(max_ext_depth=3))["value"]["value"]["value"] is None


def test_trailing_bytes_are_refused_as_the_decoder_refuses_them() -> None:
    with pytest.raises(SerdeError):
        Serializer().loads_typed(("msgpack", b"\x01\x02"))
    with pytest.raises(SerdeError, match="do not decode"):
        render_typed(("msgpack", b"\x01\x02"))
