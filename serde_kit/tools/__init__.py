"""The tools' Python API: what the ``serde-kit`` commands run, as functions that return reports.

Each tool takes an open database and returns a report (a dataclass; the command
line only parses arguments and prints reports)::

    from serde_kit import load_keyring
    from serde_kit.tools import open_database, rotate, status

    keyring = load_keyring()
    with open_database(url="sqlite:///checkpoints.db", readonly=False) as db:
        report = rotate(db, keyring=keyring, apply=True)
        print(status(db, keyring=keyring).tables)

On this door a tool's name is the function: ``serde_kit.tools.rotate`` is
:func:`rotate`, not its module. Anything else a tool's module holds is imported by
its full path (``from serde_kit.tools.rotate import RotateReport`` works as well).
``scan_store`` and ``audit_store`` are the old names of :func:`scan` and :func:`audit`.
"""

from .audit import AuditReport as AuditReport, audit as audit, audit_store as audit_store
from .common import Progress as Progress, ProgressBar as ProgressBar, RowFailure as RowFailure
from .db import Database as Database, open_database as open_database
from .inspect import (
    CheckpointDiff as CheckpointDiff,
    CheckpointView as CheckpointView,
    RowDecoder as RowDecoder,
    ThreadSummary as ThreadSummary,
    WriteView as WriteView,
    decode_blob as decode_blob,
    derive_next as derive_next,
    diff_checkpoints as diff_checkpoints,
    encrypted_marker as encrypted_marker,
    keyring_from_env as keyring_from_env,
    list_threads as list_threads,
    show_checkpoint as show_checkpoint,
    task_status as task_status,
    thread_history as thread_history,
)
from .keygen import generate_wrapped_entry as generate_wrapped_entry, keygen as keygen, keygen_wrapped as keygen_wrapped
from .render import (
    EXT_NAMES as EXT_NAMES,
    render_json as render_json,
    render_msgpack as render_msgpack,
    render_typed as render_typed,
)
from .retire import RetireReport as RetireReport, retire as retire
from .rotate import RotateReport as RotateReport, RowCheck as RowCheck, rotate as rotate
from .scan import (
    AllowlistCheck as AllowlistCheck,
    ScanReport as ScanReport,
    TypeUse as TypeUse,
    iter_types as iter_types,
    scan as scan,
    scan_store as scan_store,
)
from .status import StatusReport as StatusReport, TableStatus as TableStatus, status as status
from .tally import RowTally as RowTally
from .verify import VerifyReport as VerifyReport, verify as verify

__all__ = [
    "EXT_NAMES",
    "AllowlistCheck",
    "AuditReport",
    "CheckpointDiff",
    "CheckpointView",
    "Database",
    "Progress",
    "ProgressBar",
    "RetireReport",
    "RotateReport",
    "RowCheck",
    "RowDecoder",
    "RowFailure",
    "RowTally",
    "ScanReport",
    "StatusReport",
    "TableStatus",
    "ThreadSummary",
    "TypeUse",
    "VerifyReport",
    "WriteView",
    "audit",
    "decode_blob",
    "derive_next",
    "diff_checkpoints",
    "encrypted_marker",
    "generate_wrapped_entry",
    "iter_types",
    "keygen",
    "keygen_wrapped",
    "keyring_from_env",
    "list_threads",
    "open_database",
    "render_json",
    "render_msgpack",
    "render_typed",
    "retire",
    "rotate",
    "scan",
    "show_checkpoint",
    "status",
    "task_status",
    "thread_history",
    "verify",
]
