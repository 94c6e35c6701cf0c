"""Helpers the tests, fuzz/ and bench/ share: types, strategies, comparisons, private servers, fixtures.

The type modules are wire-visible: a class here is stored as ``tests.support.<module>:<Name>``.
"""
