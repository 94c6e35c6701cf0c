"""The warning for a class of the script run directly: it will not read back in another process."""

from __future__ import annotations

import threading
import warnings

from .errors import MainModuleTypeWarning

__all__ = ["warn_main_module_type"]

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
