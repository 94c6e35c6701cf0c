"""Exit statuses of ``serde-kit``."""

#: Everything was done and every row is fine.
OK = 0
#: A check failed, a row could not be handled (listed), or an error was printed.
FAILED = 1
#: The command line itself was wrong (argparse's own status).
USAGE = 2
#: Stopped by SIGINT (Ctrl-C); the open batch was rolled back.
INTERRUPTED = 130
#: Stopped by SIGTERM; the open batch was rolled back.
TERMINATED = 143
