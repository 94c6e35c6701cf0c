#!/usr/bin/env python3
"""Fuzz exact round trips: build a nested supported value from the input bytes.

Checks, for every value: ``loads(dumps(v))`` is an exact same-type copy of
``v`` (tests/support/compare.py), and LangGraph's own JsonPlusSerializer (permissive
and strict) reads serde_kit's bytes without raising.

    python fuzz/fuzz_roundtrip.py -max_total_time=60 fuzz/corpus/fuzz_roundtrip
"""

from __future__ import annotations

import _common

if __name__ == "__main__":
    _common.fuzz("check_roundtrip")
