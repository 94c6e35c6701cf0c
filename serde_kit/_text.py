"""Stored text shown in error messages and warnings: bounded and escaped.

Module and type names, reasons from rebuilders and the like come from the
stored row. Shown verbatim, a newline would forge a log record, an escape
sequence would drive the terminal and a megabyte-long name would make a
megabyte-long message.

Lines meant to be pasted (an allowlist entry, an environment assignment, a
command) are built only from names that are dotted ASCII identifiers
(:func:`allow_entry`), and shell-quoted (:func:`shell_assignment`): a stored
module named ``myapp$(touch${IFS}pwned)`` is reported as not a valid name,
never printed in a line that runs it.
"""

from __future__ import annotations

import shlex

__all__ = ["allow_entry", "dotted_name", "install_hint", "shell_assignment", "shown"]

#: Longest dotted name a pasteable line carries (CPython's own names are far shorter).
MAX_DOTTED_NAME = 255

_ESCAPES = {i: f"\\x{i:02x}" for i in (*range(0x20), 0x7F)} | {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"}


def shown(text: object, limit: int = 120) -> str:
    """``text`` as one printable line of at most about ``limit`` characters."""
    value = text if isinstance(text, str) else str(text)
    cut = len(value) > limit
    if cut:
        value = value[:limit]
    if not value.isprintable():
        value = "".join(
            ch if ch.isprintable() else _ESCAPES.get(ord(ch)) or ch.encode("unicode_escape").decode("ascii")
            for ch in value
        )
    if cut:
        value += f"...({len(text) if isinstance(text, str) else 'more'} chars)"
    return value


def dotted_name(text: object) -> bool:
    """True when ``text`` is a dotted ASCII Python identifier (``pkg.mod``, ``Outer.Inner``)."""
    return (
        isinstance(text, str)
        and 0 < len(text) <= MAX_DOTTED_NAME
        and text.isascii()
        and all(part.isidentifier() for part in text.split("."))
    )


def allow_entry(module: object, name: object) -> str | None:
    """The ``module:QualName`` allowlist entry for a stored type, or None when it is not pasteable.

    A generic model's stored name (``Box[int]``) is allowed by its origin
    (``Box``); any other name that is not a dotted identifier cannot name a
    class an application wrote, so no entry is offered for it.
    """
    if not isinstance(module, str) or not isinstance(name, str):
        return None
    cut = name.find("[")
    origin = name[:cut] if cut > 0 and name.endswith("]") else name
    if not dotted_name(module) or not dotted_name(origin):
        return None
    return f"{module}:{origin}"


def shell_assignment(var: str, value: str) -> str:
    """``VAR=value`` with ``value`` quoted for POSIX shells (``shlex.quote``)."""
    return f"{var}={shlex.quote(value)}"


def install_hint(extra: str) -> str:
    """How to install serde-kit's ``extra``, from a package index and from a clone (where the README installs)."""
    return f"pip install 'serde-kit[{extra}]' (in a clone of serde_kit: pip install -e '.[{extra}]')"
