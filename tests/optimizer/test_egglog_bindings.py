"""eggpu loads egglog's compiled bindings without egglog's Python front end (optimizer/
egglog_bindings.py): a cold compile in a fresh process never imports ``egglog.egraph`` or
``black``, gets the same result, and a later ``import egglog`` still works with one bindings module."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = r"""
import json, sys
import eggpu
from eggpu.kernels import get
from eggpu.ir.dtypes import parse_dtype
k = get("softmax_forward").kernel(parse_dtype("f32"), [256])
ck = eggpu.compile(k, target="sm_90", cache=False)
front = sorted(m for m in sys.modules if m == "black" or (m.startswith("egglog") and m != "egglog.bindings"))
rep = ck.report["optimizer"]
out = {"front": front, "validation": rep["validation"], "fell_back": rep["fell_back"],
       "bindings": "egglog.bindings" in sys.modules}
import egglog
import egglog.bindings as b
out["same"] = egglog.bindings is b is sys.modules["egglog.bindings"]
out["egraph"] = egglog.EGraph.__module__
print(json.dumps(out))
"""


def test_a_cold_compile_loads_only_egglogs_bindings(tmp_path):
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600,
                       env={**__import__("os").environ, "EGGPU_CACHE_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out == {"front": [], "validation": "valid", "fell_back": False, "bindings": True, "same": True,
                   "egraph": "egglog.egraph"}, out


def test_bindings_are_the_imported_module_when_egglog_came_first():
    import egglog.bindings

    from eggpu.optimizer.egglog_bindings import bindings

    assert bindings() is egglog.bindings
