"""The allowlist options ``rotate`` and ``allowlist scan`` share: ``--allow``, ``--allow-file``, ``--allowlist-from``.

The tools check stored types against the application's allowlist.  The
application builds it from ``SERDE_KIT_ALLOW`` / ``SERDE_KIT_ALLOW_FILE`` (read
here too) plus what its code passes to ``Serializer(allow=...)``; the code part
comes in as ``--allow MODULE:NAME`` (repeatable), ``--allow-file PATH`` (one per
line), or ``--allowlist-from MODULE:NAME``, which imports the application's
module and takes the allowlist of the object it names, exactly as the
application has it.  Only that option imports code, and only the module named.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from serde_kit.allowlist import ENV_FILE_VAR, ENV_VAR, Allowlist
from serde_kit.errors import ConfigError

__all__ = ["add_allowlist_options", "allowlist_from_args", "allowlist_of"]

#: How far ``--allowlist-from`` follows ``.serde`` / ``.inner`` to an allowlist (saver -> encrypted -> serializer).
_MAX_HOPS = 4


def add_allowlist_options(parser: argparse.ArgumentParser, *, what: str) -> None:
    """Add ``--allow``, ``--allow-file`` and ``--allowlist-from``; ``what`` says what the allowlist is for."""
    parser.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="MODULE:NAME",
        help=f"a type the application allows (repeatable), on top of {ENV_VAR} / {ENV_FILE_VAR}: {what}",
    )
    parser.add_argument("--allow-file", metavar="PATH", help="module:QualName lines the application allows (as --allow)")
    parser.add_argument(
        "--allowlist-from",
        metavar="MODULE:NAME",
        help="import MODULE (from the current directory or sys.path) and use the allowlist of its NAME: "
        "an Allowlist, a Serializer, an EncryptedSerializer or a saver built with one (imports your code)",
    )


def allowlist_from_args(args: argparse.Namespace) -> Allowlist:
    """The environment's allowlist plus ``--allow``, ``--allow-file`` and ``--allowlist-from``.

    Raises ConfigError for a malformed entry, an unreadable file or an object without an allowlist.
    """
    allowlist = Allowlist.from_env()
    if args.allow:
        try:
            allowlist = allowlist | args.allow
        except ConfigError as e:
            raise ConfigError(f"--allow: {e}") from None
    if args.allow_file:
        allowlist = allowlist | Allowlist.from_file(args.allow_file)
    if args.allowlist_from:
        allowlist = allowlist | load_app_allowlist(args.allowlist_from)
    return allowlist


def allowlist_of(obj: Any) -> Allowlist | None:
    """The allowlist ``obj`` decodes with: itself, its ``.allowlist``, or that of its ``.serde`` / ``.inner``."""
    for _ in range(_MAX_HOPS):
        if isinstance(obj, Allowlist):
            return obj
        found = getattr(obj, "allowlist", None)
        if isinstance(found, Allowlist):
            # Rows under a renamed class's old name read through Serializer(renames=...): covered too.
            renames = getattr(obj, "renames", None)
            return found | list(renames) if isinstance(renames, dict) and renames else found
        obj = getattr(obj, "serde", None) or getattr(obj, "inner", None)
        if obj is None:
            return None
    return None


def load_app_allowlist(spec: str) -> Allowlist:
    """Import ``MODULE`` of ``MODULE:NAME`` and return the allowlist of its ``NAME`` (ConfigError otherwise)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"--allowlist-from {spec!r}: give MODULE:NAME, e.g. --allowlist-from myapp.checkpointer:serde")
    # As `python -m`: the current directory first, so the application's own modules import.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise ConfigError(f"--allowlist-from {spec!r}: cannot import {module_name}: {e}") from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"--allowlist-from {spec!r}: {module_name} has no {attr}") from None
    found = allowlist_of(obj)
    if found is None:
        raise ConfigError(
            f"--allowlist-from {spec!r}: {type(obj).__name__} holds no serde_kit allowlist "
            "(name an Allowlist, a Serializer, an EncryptedSerializer or a saver built with one)"
        )
    return found
