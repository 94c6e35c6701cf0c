"""Advice serde_kit gives: command lines its messages suggest (built to work when pasted), and
the warning for a type that will not read back in another process."""

from __future__ import annotations

import shlex
import threading
import warnings
from typing import Any

from .allowlist import Allowlist
from .errors import MainModuleTypeWarning

__all__ = ["allow_flags", "warn_main_module_type"]

#: More entries than this and the suggestion points at --allowlist-from instead of listing them.
MAX_FLAGS = 12


def allow_flags(serde: Any) -> str:
    """``" --allow m:N ..."`` for what ``serde``'s allowlist holds beyond the defaults (``""`` if nothing).

    The tools check stored types against the application's allowlist; the
    environment's part they read themselves, the part passed in code they need
    on the command line.
    """
    allowlist = getattr(serde, "allowlist", None)
    if not isinstance(allowlist, Allowlist):
        return ""
    extra = sorted(set(allowlist) - set(Allowlist.default()))
    if len(extra) > MAX_FLAGS:
        return " --allowlist-from YOURAPP.MODULE:SERIALIZER"
    return "".join(f" --allow {shlex.quote(f'{module}:{name}')}" for module, name in extra)


_warned_main: set[str] = set()
_warned_lock = threading.Lock()


def warn_main_module_type(module: str, name: str) -> None:
    """Warn (once per type and process) that a class of the script run directly is being written."""
    if module != "__main__":
        return
    with _warned_lock:
        if name in _warned_main:
            return
        _warned_main.add(name)
    warnings.warn(
        f"writing __main__.{name}: the class is defined in the script run directly, so it is stored "
        f"as '__main__:{name}', which only a process running that same script can read back (another "
        "process, such as the LangGraph server or a second worker, cannot import it). Move the class "
        "into a module of its own and import it from there",
        MainModuleTypeWarning,
        stacklevel=2,
    )
