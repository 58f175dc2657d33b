"""``python -m bench``: every benchmark, one table (see bench/report.py)."""

from bench.report import main

raise SystemExit(main())
