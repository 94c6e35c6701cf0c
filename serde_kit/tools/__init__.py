"""Operational tools over stored LangGraph rows (storage adapters, key rotation, inspection).

Import the module you need, e.g. ``from serde_kit.tools.rotate import rotate``.
"""
