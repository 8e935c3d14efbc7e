"""``python -m benchmarks``: see :mod:`benchmarks.cli` (``--help`` lists the options)."""

import sys

from .cli import main

sys.exit(main())
