#!/usr/bin/env python3
"""Fuzz the compiled reader against the pure read path.

Input: as ``fuzz_decode`` (first byte picks the tag and strict/lenient). The
compiled reader (``serde_kit._reader``) and the pure path must give identical
values and types, or raise the same SerdeError subclass; a crash, a hang or a
difference is a finding. Seeds: the ``fuzz_decode`` corpus.

    python fuzz/fuzz_native.py -max_total_time=60 fuzz/corpus/fuzz_decode
"""

from __future__ import annotations

import _common

if __name__ == "__main__":
    _common.fuzz("check_native")
