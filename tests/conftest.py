"""Session-wide test isolation: compiled-kernel and proof caches live in temporary directories,
never in the user's cache. The proof cache is shared by the whole session (so each shipped rule
is proved for real once per run); tests that exercise the compile cache point EGGPU_CACHE_DIR at
their own directory.
"""

from __future__ import annotations

import os
import tempfile

_session_dir = tempfile.mkdtemp(prefix="eggpu-tests-")
os.environ.setdefault("EGGPU_PROOF_CACHE_DIR", os.path.join(_session_dir, "proofs"))
os.environ.setdefault("EGGPU_CACHE_DIR", os.path.join(_session_dir, "cache"))
