"""audit: plaintext rows fail, saver-kept plaintext warns (fails with --strict), values never shown."""

from __future__ import annotations

import json
import shutil

import pytest

from serde_kit.cli import main
from serde_kit.tools.audit import audit
from serde_kit.tools.db import open_database
from tests.support.inspect_fixtures import (
    KEY_ID,
    USER_MODULE,
    Databases,
    dbs,  # noqa: F401  (fixture)
    keyring_env,
)

# Stored values of the graph; none of them may ever appear in audit output.
SECRETS = ("Quarterly report", "looks fine", "draft", "approve?", "hello", "happy")
SERDE_TABLES = {
    "sqlite": ("checkpoints", "writes"),
    "postgres": ("checkpoint_blobs", "checkpoint_writes"),
    "mysql": ("checkpoint_blobs", "checkpoint_writes"),
}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in ("SERDE_KIT_KEYRING", "SERDE_KIT_KEYRING_FILE", "LANGGRAPH_AES_KEY"):
        monkeypatch.delenv(var, raising=False)


def run_audit(capsys, dbs_args, *extra):
    code = main(["audit", *dbs_args, *extra])
    captured = capsys.readouterr()
    for secret in SECRETS:
        assert secret not in captured.out and secret not in captured.err
    return code, captured.out


def test_unencrypted_database_fails(dbs: Databases, capsys):
    with dbs.store("plain") as store:
        report = audit(store)
        total = {t: n for t, n in store.count_rows_by_table().items()}
    assert list(report.tables) == list(SERDE_TABLES[dbs.backend])
    for name, counts in report.tables.items():
        assert counts.rows == total[name]
        assert counts.plaintext == counts.rows - counts.empty > 0
        assert counts.encrypted == counts.legacy == counts.unknown == 0
    assert not report.passed()
    assert report.failures()
    code, out = run_audit(capsys, dbs.args("plain"))
    assert code == 1
    assert "FAIL:" in out and "are not encrypted" in out and out.rstrip().endswith("audit FAILED")


def test_encrypted_database_passes_with_warnings_and_fails_strict(dbs: Databases, capsys):
    with dbs.store("encrypted") as store:
        report = audit(store)
    assert report.plaintext_rows == 0
    assert all(c.encrypted == c.rows - c.empty for c in report.tables.values())
    assert {k for c in report.tables.values() for k in c.by_key} == {KEY_ID}
    assert set(report.metadata_keys) == {"source", "step", "parents"}
    assert set(report.metadata_keys.values()) == {report.metadata_rows}
    warnings = report.warnings()
    assert any("metadata is stored in plaintext" in w for w in warnings)
    if dbs.backend in ("postgres", "mysql"):
        # counter (int), title/answer (str) stay inline; branch channels are JSON null
        assert report.inline_primitives["counter"] == {"number": report.inline_primitives["counter"]["number"]}
        assert set(report.inline_primitives["title"]) == {"string"}
        assert report.inline_primitives["branch:to:ask"] == {"null": report.inline_primitives["branch:to:ask"]["null"]}
        inline_warning = [w for w in warnings if "inline" in w]
        assert inline_warning and "counter" in inline_warning[0] and "branch:to:ask" not in inline_warning[0]
        assert "vector" not in report.inline_primitives and "doc" not in report.inline_primitives
    else:
        assert report.inline_primitives == {}
    assert report.passed() and not report.passed(strict=True)

    code, out = run_audit(capsys, dbs.args("encrypted"))
    assert code == 0 and out.rstrip().endswith("audit PASSED")
    assert "warning: checkpoint metadata is stored in plaintext" in out
    code, out = run_audit(capsys, dbs.args("encrypted"), "--strict")
    assert code == 1 and out.rstrip().endswith("audit FAILED (strict)")


def test_mixed_database_reports_legacy_rows(dbs: Databases, capsys):
    with dbs.store("mixed") as store:
        report = audit(store)
    for counts in report.tables.values():
        non_empty = counts.rows - counts.empty
        # three kinds of threads, the same graph run for each
        assert counts.plaintext == counts.encrypted == counts.legacy == non_empty // 3
    assert any("LangGraph's own AES-EAX" in w for w in report.warnings())
    assert not report.passed()


def test_json_output(dbs: Databases, capsys):
    code, out = run_audit(capsys, dbs.args("encrypted"), "--json")
    data = json.loads(out)
    assert code == 0 and data["passed"] is True and data["plaintext_rows"] == 0
    assert data["failures"] == [] and data["warnings"]
    code, out = run_audit(capsys, dbs.args("encrypted"), "--json", "--strict")
    assert code == 1 and json.loads(out)["passed"] is False
    code, out = run_audit(capsys, dbs.args("plain"), "--json")
    data = json.loads(out)
    assert code == 1 and data["plaintext_rows"] > 0 and len(data["plaintext_examples"]) == 5


def test_audit_passes_after_rotate_encrypts_the_plaintext(dbs: Databases, capsys, monkeypatch, tmp_path, request):
    """The deployment story: audit fails, rotate --encrypt-plaintext --apply, audit passes."""
    if dbs.backend == "sqlite":
        target = str(tmp_path / "copy.sqlite")
        shutil.copyfile(dbs.plain, target)
    else:
        server = request.getfixturevalue(f"{dbs.backend}_server")
        target = server.new_database("audit_rotate", template=dbs.plain)
    args = [f"--{dbs.backend}", target]
    assert run_audit(capsys, args)[0] == 1
    for k, v in keyring_env().items():
        monkeypatch.setenv(k, v)
    # rotate checks each plaintext row against the application's allowlist before sealing it
    # (without importing the application's types: they are not importable here).
    monkeypatch.setenv("SERDE_KIT_ALLOW", ",".join(f"{USER_MODULE}:{n}" for n in ("Doc", "Note")))
    assert main(["rotate", *args, "--allow", f"{USER_MODULE}:Mood", "--encrypt-plaintext", "--apply", "--quiet"]) == 0
    capsys.readouterr()
    code, out = run_audit(capsys, args)
    assert code == 0, out
    assert run_audit(capsys, args, "--strict")[0] == 1
    with open_database(**{dbs.backend: target}) as store:
        assert audit(store).plaintext_rows == 0


def test_audit_errors(tmp_path, capsys):
    assert main(["audit", "--sqlite", str(tmp_path / "none.db")]) == 2
    assert "does not exist" in capsys.readouterr().err
