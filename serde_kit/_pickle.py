"""The pickle fallback: the only module that imports pickle.

Unpickling runs arbitrary code named by the data. It is reachable only through
``Serializer(pickle_fallback=True)``, a door named for what it is.
"""

from __future__ import annotations

import pickle
from typing import Any

from .errors import EncodeError, MalformedDataError


def dumps(obj: Any) -> bytes:
    try:
        return pickle.dumps(obj, protocol=5)
    except Exception as exc:
        raise EncodeError(f"pickle fallback could not store {type(obj).__name__}: {exc}") from exc


def loads(data: bytes) -> Any:
    try:
        return pickle.loads(data)
    except Exception as exc:
        raise MalformedDataError(f"pickle row could not be loaded: {type(exc).__name__}: {exc}") from exc
