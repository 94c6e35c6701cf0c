#!/usr/bin/env python3
"""Fuzz Serializer.loads_typed on arbitrary tags and bytes.

Input: first byte picks the type tag (see ``_common.TAGS``) and whether the
lenient decoder is used, the rest is the stored payload. Only SerdeError
subclasses may escape; anything else (IndexError, RecursionError, a numpy
error, a crash or a hang) is a finding.

    python fuzz/fuzz_decode.py -max_total_time=60 fuzz/corpus/fuzz_decode
"""

from __future__ import annotations

import _common

if __name__ == "__main__":
    _common.fuzz("check_decode")
