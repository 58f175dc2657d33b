"""``python -m agents <command>``: see :mod:`agents.cli`."""

from __future__ import annotations

import sys

from agents.cli import main

if __name__ == "__main__":
    sys.exit(main())
