"""LangGraph's "does not support msgpack allowlist" warning, said once and explained.

With ``LANGGRAPH_STRICT_MSGPACK=true`` LangGraph hands an allowlist derived from the
graph's schemas to the checkpointer's serializer, but only to its own classes; for
any other serializer it logs a warning, and it does so at every ``compile()`` and
again when the compiled graph is built.  serde_kit enforces its own allowlist on
every read either way, so the repeats say nothing new: this filter on LangGraph's
logger lets the first one through per serializer class, with a line saying why it
is harmless, and drops the rest.  Other records of that logger are untouched.
"""

from __future__ import annotations

import logging
import threading

__all__ = ["LOGGER_NAME", "install"]

#: The logger ``langgraph.checkpoint.base._with_msgpack_allowlist`` warns through.
LOGGER_NAME = "langgraph.checkpoint.base"
_TEMPLATE_START = "Serializer %s does not support msgpack allowlist"
_NOTE = (
    " (serde_kit enforces its own allowlist on every read, so this only means LangGraph's derived "
    "allowlist is not used; see the README's LANGGRAPH_STRICT_MSGPACK section. Logged once.)"
)


class _OncePerSerializer(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if not (isinstance(record.msg, str) and record.msg.startswith(_TEMPLATE_START)):
            return True
        name = str(record.args[0]) if isinstance(record.args, tuple) and record.args else ""
        with self._lock:
            if name in self._seen:
                return False
            self._seen.add(name)
        record.msg = record.msg + _NOTE
        return True


_installed: _OncePerSerializer | None = None
_install_lock = threading.Lock()


def install() -> None:
    """Add the filter to LangGraph's logger (once per process; cheap to call again)."""
    global _installed
    if _installed is not None:
        return
    with _install_lock:
        if _installed is None:
            _installed = _OncePerSerializer()
            logging.getLogger(LOGGER_NAME).addFilter(_installed)
