"""Tests of serde_kit.tools (status, verify, rotate, retire, audit, scan, inspect) and its dialects."""
