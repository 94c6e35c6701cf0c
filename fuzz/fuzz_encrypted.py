#!/usr/bin/env python3
"""Fuzz EncryptedSerializer.loads_typed on mutated encrypted rows.

Input: first byte picks the stored tag (``ENC_TAGS``) and whether plaintext
rows are allowed; the rest is the blob. Seeds are valid rows (ours under k1
and k2, LangGraph's own ``+aes`` EAX rows, plaintext rows). Only
DecryptionError, UnknownKeyError, PlaintextRefusedError or another
SerdeError (header parsing, inner decoding) may escape loads_typed and
reencrypt; classify reads the header only and never raises.

    python fuzz/fuzz_encrypted.py -max_total_time=60 fuzz/corpus/fuzz_encrypted
"""

from __future__ import annotations

import _common

if __name__ == "__main__":
    _common.fuzz("check_encrypted")
