"""Checks before langchain-core classes are rebuilt from stored fields.

``AIMessageChunk``'s validator re-parses every ``tool_call_chunks[].args``
with langchain-core's ``parse_partial_json``, which retries ``json.loads`` once
per trailing character it strips: quadratic in an argument that is not
complete JSON. Complete JSON parses on the first try, so only incomplete
arguments are bounded (:attr:`Limits.max_partial_json`).

langchain-core is never imported here: classes are recognised through the
module the decoder already imported.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from ..limits import Limits

__all__ = ["check_partial_json", "guard"]


def guard(cls: Any, limits: Limits) -> Callable[[Any], None] | None:
    """A check to run on stored fields before building ``cls``, or None when it needs none."""
    ai = sys.modules.get("langchain_core.messages.ai")
    chunk = getattr(ai, "AIMessageChunk", None)
    if chunk is None or not (isinstance(cls, type) and issubclass(cls, chunk)):
        return None
    return lambda fields: check_partial_json(fields, limits)


def check_partial_json(fields: Any, limits: Limits) -> None:
    """Refuse stored ``tool_call_chunks`` arguments that would take quadratic time to parse."""
    if type(fields) is not dict:
        return
    chunks = fields.get("tool_call_chunks")
    if type(chunks) is not list:
        return
    for chunk in chunks:
        args = chunk.get("args") if type(chunk) is dict else None
        if type(args) is not str or len(args) <= limits.max_partial_json:
            continue
        try:
            json.loads(args)
        except (ValueError, RecursionError):
            raise limits.refuse(
                "max_partial_json", "length of a streamed tool-call argument that is not complete JSON", len(args)
            ) from None
