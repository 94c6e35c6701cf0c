"""Tests of serde_kit.cli (the command-line shell)."""
