"""Which types does the stored data need? (``serde-kit allowlist scan``)

Walks every stored row (decrypting where a keyring allows), renders it with
:mod:`serde_kit.tools.render` — so nothing named in the data is imported — and
collects each ``(module, name)`` found in msgpack ext payloads (and in legacy
``json`` LangChain constructors), with how often it occurs, its ext code, and
whether the application's allowlist (``Allowlist.from_env()``) covers it. The
report ends with ready-to-paste allowlist snippets.
"""

from __future__ import annotations

import shlex
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from serde_kit._text import allow_entry, shell_assignment, shown
from serde_kit.allowlist import ENV_VAR, Allowlist
from serde_kit.crypto.rows import RowKind, classify_row
from serde_kit.errors import BlockedTypeError, SerdeError
from serde_kit.ext import codes
from serde_kit.tools.common import Progress, open_bar
from serde_kit.tools.db import Database
from serde_kit.tools.inspect import RowDecoder
from serde_kit.tools.render import render_typed

__all__ = ["AllowlistCheck", "ScanReport", "TypeUse", "iter_types", "scan"]

_NUMPY = "numpy.ndarray"


@dataclass
class TypeUse:
    """One ``(module, name)`` found in the data."""

    module: str
    name: str
    codes: set[Any] = field(default_factory=set)
    count: int = 0
    rows: int = 0
    covered: bool = False
    default: bool = field(default=False, metadata={"json": "in_defaults"})

    @property
    def key(self) -> str:
        """``module:name`` as stored (for display; see :attr:`entry` for pasting)."""
        return f"{self.module}:{self.name}"

    @property
    def entry(self) -> str | None:
        """The allowlist entry to paste, or None when the stored name is not a dotted identifier."""
        return allow_entry(self.module, self.name)


@dataclass
class ScanReport:
    """Result of :func:`scan_store`."""

    json_extra: ClassVar[dict[str, str]] = {
        "types": "sorted_types",
        "missing": "missing_keys",
        "invalid_names": "invalid_name_keys",
        "snippets": "snippets",
    }

    store: str
    rows_total: int = 0
    rows_read: int = 0
    rows_empty: int = 0
    rows_locked: dict[str, int] = field(default_factory=dict, metadata={"json": "rows_without_key"})
    rows_failed: int = 0
    failures: list[str] = field(default_factory=list)
    types: dict[tuple[str, str], TypeUse] = field(default_factory=dict, metadata={"json": None})
    numpy_arrays: int = 0

    def sorted_types(self) -> list[TypeUse]:
        """Types ordered by module and name."""
        return [self.types[k] for k in sorted(self.types)]

    def needed(self) -> list[TypeUse]:
        """Types outside the built-in defaults: what an application must list itself."""
        return [t for t in self.sorted_types() if not t.default]

    def invalid_names(self) -> list[TypeUse]:
        """Needed types whose stored name is no dotted identifier: no application wrote them,
        so the snippets leave them out (a name like ``myapp$(cmd)`` must never be pasted)."""
        return [t for t in self.needed() if t.entry is None]

    def missing(self) -> list[TypeUse]:
        """Types the current allowlist does not cover (decoding them would fail)."""
        return [t for t in self.sorted_types() if not t.covered]

    def snippets(self) -> dict[str, str]:
        """Ready-to-paste allowlists for the needed types: code, env and file formats.

        Only types whose stored names are dotted identifiers are listed; the env
        line is shell-quoted.
        """
        entries = list(dict.fromkeys(e for e in (t.entry for t in self.needed()) if e is not None))
        pairs = ", ".join(repr(tuple(e.split(":", 1))) for e in entries)
        return {
            "code": f"Serializer(allow=[{pairs}])",
            "env": shell_assignment(ENV_VAR, ",".join(entries)),
            "file": "".join(f"{e}\n" for e in entries),
        }

    @property
    def missing_keys(self) -> list[str]:
        """``module:name`` of each type in :meth:`missing`."""
        return [t.key for t in self.missing()]

    @property
    def invalid_name_keys(self) -> list[str]:
        """``module:name`` of each type in :meth:`invalid_names`."""
        return [t.key for t in self.invalid_names()]


def split_type(module: str, name: str, allowlist: Allowlist | None = None) -> tuple[str, str]:
    """``(module, qualname)`` of a rendered ``module.name`` type, whose split the rendering lost.

    A nested class renders as ``pkg.mod.Outer.Inner``: the split ``allowlist``
    allows wins; otherwise the qualified name starts at the first CapWords part
    (modules are lower case by convention), else at the last dot.
    """
    parts = f"{module}.{name}".split(".") if module else [name]
    splits = [(".".join(parts[:i]), ".".join(parts[i:])) for i in range(1, len(parts))]
    if allowlist is not None:
        for pair in splits:
            if allowlist.allows(*pair):
                return pair
    for pair in splits:
        if pair[1][:1].isupper():
            return pair
    return module, name


def iter_types(rendered: Any) -> Iterator[tuple[str, str, Any]]:
    """``(module, name, code)`` of every ext value in rendered data.

    ``code`` is the ext code (0-7), ``"json"`` for a legacy LangChain
    constructor, or ``"pickle"`` for a global a pickle row names.
    """
    stack = [rendered]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, dict):
            t, code = v.get("$type"), v.get("$code")
            if t == "pickle" and isinstance(v.get("globals"), list):
                for dotted in v["globals"]:
                    module, _, name = str(dotted).rpartition(".")
                    yield module, name, "pickle"
            elif isinstance(t, str) and code is not None:
                if code == codes.NUMPY_ARRAY:
                    yield "numpy", "ndarray", code
                elif code != codes.DELTA_SNAPSHOT:
                    module, _, name = t.rpartition(".")
                    yield module, name, code
            stack.extend(v.values())


#: A check of one row's inner ``(tag, bytes)`` before it is sealed: raises a
#: :class:`~serde_kit.errors.SerdeError` to refuse it (``Serializer.loads_typed`` fits).
RowCheck = Callable[[tuple[str, bytes]], object]


#: Refused types of one row listed by name in its error (a planted row may name thousands).
_MAX_LISTED = 20


class AllowlistCheck:
    """The application's allowlist applied to a rendered row, without importing anything.

    Calling it renders the row as the inspect tools do (nothing named in the data
    is imported or built) and raises :class:`~serde_kit.errors.BlockedTypeError`
    for a type ``allowlist`` does not allow, :class:`~serde_kit.errors.DecodeError`
    for bytes the serializer would not read (or that exceed the decode budget).
    What ``rotate`` checks a row with before its first seal when no serializer is
    given: the tool then needs the application's allowlist, not its code.
    """

    def __init__(self, allowlist: Allowlist) -> None:
        self.allowlist = allowlist

    def __call__(self, row: tuple[str, bytes]) -> None:
        refused: dict[tuple[str, str], Any] = {}  # in the order met
        for module, name, code in iter_types(render_typed(row)):
            # numpy arrays and delta snapshots name no class: the decoder builds them itself.
            if code in codes.NAMELESS_CODES or self._allows(module, name):
                continue
            refused.setdefault(split_type(module, name), code)
        if refused:
            # Every refused type of the row in one error, with one fix for all of them.
            listed = [f"{shown(m)}.{shown(n)} (ext code {c})" for (m, n), c in refused.items()]
            more = len(listed) - _MAX_LISTED
            what = ", ".join(listed[:_MAX_LISTED]) + (f" and {more} more" if more > 0 else "")
            entries = [allow_entry(m, n) for m, n in refused]
            if any(entry is None for entry in entries):
                fix = (
                    "a stored name is not a valid Python name, so no application wrote it: "
                    "the row was planted, delete it"
                )
            elif more > 0:
                fix = "run `serde-kit allowlist scan` for the allowlist they need, else the row was planted: delete it"
            else:
                flags = " ".join(dict.fromkeys(f"--allow {shlex.quote(e)}" for e in entries if e is not None))
                them = "it" if len(refused) == 1 else "them"
                fix = (
                    f"if the application allows {them}, add {flags} (or SERDE_KIT_ALLOW), "
                    "else the row was planted: delete it"
                )
            module, name = next(iter(refused))
            raise BlockedTypeError(
                f"row holds {what}, which the application's allowlist does not allow; {fix}",
                module=module,
                name=name,
            )

    def _allows(self, module: str, name: str) -> bool:
        # Rendered types are "module.qualname": try each split of a nested qualname.
        dotted = f"{module}.{name}" if module else name
        parts = dotted.split(".")
        return any(self.allowlist.allows(".".join(parts[:i]), ".".join(parts[i:])) for i in range(1, len(parts)))


def scan(
    db: Database,
    *,
    decoder: RowDecoder | None = None,
    allowlist: Allowlist | None = None,
    batch_size: int = 500,
    progress: Progress | None = None,
    max_failures: int = 20,
) -> ScanReport:
    """Scan every row of ``db``; see the module docstring.

    ``allowlist`` defaults to ``Allowlist.from_env()`` (what the application
    uses); ``progress`` is the tools' progress factory (:data:`~serde_kit.tools.common.Progress`).
    Rows that cannot be decrypted (no key) or decoded are counted, not fatal.
    """
    decoder = decoder or RowDecoder()
    allowlist = Allowlist.from_env() if allowlist is None else allowlist
    defaults = Allowlist.default()
    report = ScanReport(db.describe())
    bar = open_bar(progress, db.count_rows, "scan")
    try:
        for batch in db.iter_rows(batch_size):
            for row in batch:
                report.rows_total += 1
                info = classify_row(row.tag, row.blob)
                if info.kind is RowKind.EMPTY:
                    report.rows_empty += 1
                    continue
                if info.kind is RowKind.STRAY:
                    report.rows_failed += 1
                    if len(report.failures) < max_failures:
                        report.failures.append(f"{row.table} {row.pk}: stray row: {info.problem}")
                    continue
                inner = decoder.raw(row.tag, row.blob)
                if inner is None:
                    info = decoder.classify(row.tag, row.blob)
                    label = f"key id {info.key_id}" if info.key_id else f"tag {row.tag!r}"
                    report.rows_locked[label] = report.rows_locked.get(label, 0) + 1
                    continue
                try:
                    rendered = render_typed(inner, preview=0, bytes_preview=0)
                except SerdeError as e:
                    report.rows_failed += 1
                    if len(report.failures) < max_failures:
                        report.failures.append(f"{row.table} {row.pk}: {type(e).__name__}: {e}")
                    continue
                report.rows_read += 1
                seen_here: set[tuple[str, str]] = set()
                for module, name, code in iter_types(rendered):
                    if code == codes.NUMPY_ARRAY:
                        report.numpy_arrays += 1
                        continue
                    module, name = split_type(module, name, allowlist)
                    use = report.types.get((module, name))
                    if use is None:
                        use = report.types[(module, name)] = TypeUse(
                            module, name,
                            covered=allowlist.allows(module, name),
                            default=defaults.allows(module, name),
                        )  # fmt: skip
                    use.codes.add(code)
                    use.count += 1
                    if (module, name) not in seen_here:
                        seen_here.add((module, name))
                        use.rows += 1
            bar.update(len(batch))
    finally:
        bar.close()
    return report


def scan_store(
    store: Database,
    *,
    decoder: RowDecoder | None = None,
    allowlist: Allowlist | None = None,
    batch_size: int = 500,
    progress: Progress | None = None,
    max_failures: int = 20,
) -> ScanReport:
    """Deprecated: the old name of :func:`scan`, kept for one release."""
    warnings.warn(
        "serde_kit.tools.scan.scan_store is deprecated: call serde_kit.tools.scan(db, ...)",
        DeprecationWarning,
        stacklevel=2,
    )
    return scan(
        store, decoder=decoder, allowlist=allowlist, batch_size=batch_size, progress=progress, max_failures=max_failures
    )
