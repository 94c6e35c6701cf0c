"""LangGraph's serde events, emitted by serde_kit where the stock serializer emits them.

LangGraph's ``JsonPlusSerializer`` reports each type it refuses or lets through
unregistered to the listeners of :mod:`langgraph.checkpoint.serde.event_hooks`
(monitoring registers one with ``register_serde_event_listener``).  serde_kit's
decoder emits the same events, with the same kinds and fields, so a listener
sees serde_kit's refusals too:

========================================  =========================================================
``{"kind": "msgpack_blocked",             a stored type outside the allowlist (every occurrence;
"module": ..., "name": ...}``             BlockedTypeError follows, or lenient mode's raw payload)
``{"kind": "msgpack_method_blocked",      an ext code 3 row naming a method outside the fixed table
"module": ..., "name": ..., "method"}``   (every occurrence)
``{"kind":                                ``Allowlist.allow_everything_unsafe()`` built a type not
"msgpack_unregistered_allowed", ...}``    otherwise listed (once per serializer and type: the
                                          verdict is cached)
``{"kind": "msgpack_model_unvalidated",   serde_kit only: a stored pydantic model whose fields fail
"module": ..., "name": ...}``             validation was built unvalidated (``validate="auto"``;
                                          once per serializer and class, with a SerdeWarning)
========================================  =========================================================

Called by the decoder only, inside a decode call (a refusal found on the small-row
path asks for the metered read first, so each is reported once).
``module``, ``name`` and ``method`` are the stored strings, as the stock serializer
passes them: they come from the data, so treat them as untrusted text.  Without
langgraph-checkpoint installed these functions do nothing.  Counting refusals::

    from collections import Counter
    from langgraph.checkpoint.serde.event_hooks import register_serde_event_listener

    refused: Counter[tuple[str, str, str]] = Counter()
    unregister = register_serde_event_listener(
        lambda event: refused.update([(event["kind"], event["module"], event["name"])])
    )
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import budget

__all__ = [
    "BLOCKED", "METHOD_BLOCKED", "MODEL_UNVALIDATED", "UNREGISTERED_ALLOWED",
    "blocked", "method_blocked", "model_unvalidated", "unregistered_allowed",
]  # fmt: skip

#: The event kinds, spelled as langgraph-checkpoint spells them.
BLOCKED = "msgpack_blocked"
METHOD_BLOCKED = "msgpack_method_blocked"
UNREGISTERED_ALLOWED = "msgpack_unregistered_allowed"
#: serde_kit's own kind (the stock reader builds such models silently).
MODEL_UNVALIDATED = "msgpack_model_unvalidated"

_Emit = Callable[[Any], None]
_emit: _Emit | None = None
_looked = False


def _emitter() -> _Emit | None:
    # Imported on the first event, not with serde_kit: refusals are rare, imports are not free.
    global _emit, _looked
    if not _looked:
        found: _Emit | None
        try:
            from langgraph.checkpoint.serde.event_hooks import emit_serde_event as found
        except ImportError:
            found = None
        _emit, _looked = found, True
    return _emit


def _in_the_final_pass() -> None:
    # Small rows are first read without a work meter and read again with one when a
    # costly step needs it (serde_kit.budget): an event sent in the first pass would be
    # sent again in the second. A refusal asks for the metered pass before it reports,
    # so each is reported once; refusals are rare, so the second read costs nothing
    # that matters, and honest rows never get here.
    budget.charge(0, "refused types")


def blocked(module: str, name: str) -> None:
    """Emit ``msgpack_blocked`` for a stored ``(module, name)`` the allowlist refused."""
    _in_the_final_pass()
    emit = _emitter()
    if emit is not None:
        emit({"kind": BLOCKED, "module": module, "name": name})


def method_blocked(module: str, name: str, method: str | None) -> None:
    """Emit ``msgpack_method_blocked`` for an ext code 3 row whose method is not in the fixed table."""
    _in_the_final_pass()
    emit = _emitter()
    if emit is not None:
        emit({"kind": METHOD_BLOCKED, "module": module, "name": name, "method": "" if method is None else method})


def model_unvalidated(module: str, name: str) -> None:
    """Emit ``msgpack_model_unvalidated`` for a stored model built without validation."""
    emit = _emitter()
    if emit is not None:
        emit({"kind": MODEL_UNVALIDATED, "module": module, "name": name})


def unregistered_allowed(allowlist: Any, module: str, name: str) -> None:
    """Emit ``msgpack_unregistered_allowed`` when only "allow everything" let ``(module, name)`` through."""
    # Allowlist keeps "everything" private; this module is its one reader outside allowlist.py.
    if not getattr(allowlist, "_everything", False) or (module, name) in getattr(allowlist, "_entries", ()):
        return
    emit = _emitter()
    if emit is not None:
        emit({"kind": UNREGISTERED_ALLOWED, "module": module, "name": name})
