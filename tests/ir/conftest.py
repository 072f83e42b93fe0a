"""Put this folder on ``sys.path`` so the op-reference tests import ``op_oracles`` (their shared
independent oracles; tests run with ``--import-mode=importlib``)."""

import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
if _here not in sys.path:
    sys.path.insert(0, _here)
