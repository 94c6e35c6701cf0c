"""The decode budget: how much work and memory one stored row may cost.

Stored bytes are hostile: anyone who can write the checkpoint database chooses
them. Every limit below bounds a cost that would otherwise grow faster than
the row (a constructor that is quadratic in its input, an allocation the row's
bytes do not fill, a hash table whose keys all collide). The defaults are far
above what honest LangGraph rows need; a refusal raises
:class:`~serde_kit.errors.LimitExceededError`, which names the limit and how
to raise it::

    Serializer(limits=Limits(max_row_bytes=2 * 2**30))
"""

from __future__ import annotations

import dataclasses
import re

from .errors import ConfigError, LimitExceededError

__all__ = ["DEFAULT_LIMITS", "Limits"]

#: ``re`` flags a stored pattern may carry (everything but ``re.DEBUG``, which prints).
SAFE_REGEX_FLAGS = int(re.IGNORECASE | re.LOCALE | re.MULTILINE | re.DOTALL | re.UNICODE | re.VERBOSE | re.ASCII)


@dataclasses.dataclass(frozen=True)
class Limits:
    """Resource limits for decoding one stored row; pass as ``Serializer(limits=...)``.

    - ``max_row_bytes``: size of one stored value.
    - ``max_containers``: maps and arrays in one row (nested typed values
      included); an empty one costs ~75 bytes of memory per stored byte. Other
      values cost at most ~30 bytes per stored byte, bounded by ``max_row_bytes``.
    - ``max_ext_depth``: typed values (msgpack exts) nested in one another.
      Containers and typed values together are also bounded by the
      interpreter's recursion limit.
    - ``max_number_digits``: decimal digits (or the equivalent bits) of an int,
      Fraction or Decimal built by a rebuilder; also bounds a Decimal exponent.
    - ``max_text_length``: characters of a string parsed by a constructor
      (UUID, ip address, time zone key, ISO date, Decimal text).
    - ``max_regex_length`` / ``max_regex_classes`` / ``regex_flags``: stored
      ``re.compile`` patterns (compiling a character class can take milliseconds,
      more with IGNORECASE; ``re.DEBUG`` prints to stdout).
    - ``max_hash_collisions``: items of one set, frozenset or dict, array keys
      of one map, or typed values of a row, sharing a hash value (a hash flood
      makes building a set or dict of them quadratic); map keys are checked in
      any row whose keys could cost more than its work allowance if all of them
      collided (below that, the allowance bounds them).
    - ``max_array_elements``: elements of a numpy array; the array's memory is
      always exactly its stored buffer.
    - ``max_partial_json``: length of a streamed tool-call argument that is not
      complete JSON (langchain-core re-parses those in quadratic time).
    - ``max_work_per_byte`` / ``min_work``: the work meter of one decode call
      (:mod:`serde_kit.budget`): the costly steps of a row (regex compilation,
      incomplete partial JSON, big-number arithmetic, hash collisions, the
      prescan walk, json containers, class resolution, time zone lookups) may together spend
      ``max_work_per_byte`` work units (about a nanosecond of CPU each) per
      stored byte, and at least ``min_work`` on any row.
    """

    max_row_bytes: int = 1 << 30
    max_containers: int = 1_000_000
    max_ext_depth: int = 64
    max_number_digits: int = 100_000
    max_text_length: int = 4096
    max_regex_length: int = 2048
    max_regex_classes: int = 16
    regex_flags: int = SAFE_REGEX_FLAGS
    max_hash_collisions: int = 64
    max_array_elements: int = 1 << 31
    max_partial_json: int = 4096
    max_work_per_byte: int = 64
    min_work: int = 3_000_000

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if type(value) is not int or value < 0:
                raise ConfigError(f"Limits.{field.name} must be a non-negative int, not {value!r}")
        if self.max_ext_depth > 256:
            raise ConfigError("Limits.max_ext_depth above 256 cannot be read on a normal thread stack")

    def refuse(self, name: str, what: str, actual: int | str) -> LimitExceededError:
        """The error for ``what`` (of size ``actual``) exceeding the limit ``name``."""
        allowed = getattr(self, name)
        return LimitExceededError(
            f"{what} ({actual}) exceeds the decode limit {name}={allowed}; if you trust this "
            f"data, raise it: Serializer(limits=Limits({name}=...))",
            limit=name,
        )

    def check(self, name: str, what: str, actual: int) -> None:
        """Raise :class:`LimitExceededError` when ``actual`` exceeds the limit ``name``."""
        if actual > getattr(self, name):
            raise self.refuse(name, what, actual)


DEFAULT_LIMITS = Limits()
