"""Exit statuses of ``serde-kit`` (listed in ``serde-kit --help`` and the README)."""

#: Everything was done and every row is fine.
OK = 0
#: A check failed or a row could not be handled (each is listed), or the data was refused
#: (a blocked type, a failed decryption, a row binding that does not fit).
FAILED = 1
#: The command line or configuration was wrong: argparse's own status, and ConfigError
#: (a bad option value, allowlist entry, keyring or database URL).
USAGE = 2
#: The database or a file could not be reached, read or written (StoreError: gone, locked, denied,
#: read-only, full).
UNAVAILABLE = 3
#: Stopped by SIGINT (Ctrl-C); the open batch was rolled back.
INTERRUPTED = 130
#: Stopped by SIGTERM; the open batch was rolled back.
TERMINATED = 143

#: ``--help``'s epilog: the statuses above in one paragraph each.
HELP = f"""exit status:
  {OK}    done; every row is fine
  {FAILED}    a check failed, a row could not be handled, or data was refused (blocked type, decryption)
  {USAGE}    usage or configuration error (bad option, allowlist entry, keyring, database URL)
  {UNAVAILABLE}    could not be reached or read: the database (or a file) is gone, locked, denied, read-only or full
  {INTERRUPTED}  interrupted (Ctrl-C); {TERMINATED}: terminated (SIGTERM); the open batch was rolled back

With --json, an error is printed on stdout as {{"error": {{"type": ..., "message": ..., "exit_status": ...}}}}."""
