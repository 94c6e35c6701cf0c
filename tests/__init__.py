"""serde_kit's test suite: one package, laid out like serde_kit/ (tests/tools/ tests serde_kit/tools/).

Shared helpers live in tests/support/ and are imported as ``tests.support.<module>``;
nothing edits ``sys.path`` (pytest puts the repository root on it for this package).
"""
