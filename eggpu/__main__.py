"""``python -m eggpu`` is the ``eggpu`` command."""

import sys

from eggpu.cli import main

sys.exit(main())
