"""Stored text shown in error messages and warnings: bounded and escaped.

Module and type names, reasons from rebuilders and the like come from the
stored row. Shown verbatim, a newline would forge a log record, an escape
sequence would drive the terminal and a megabyte-long name would make a
megabyte-long message.
"""

from __future__ import annotations

__all__ = ["shown"]

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
