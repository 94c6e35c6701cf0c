"""``python -m serde_kit`` runs the ``serde-kit`` command line."""

import sys

from serde_kit.cli import main

sys.exit(main())
