"""The versions that key every rule proof, available without importing z3.

A cold compile looks its rules' verdicts up in the proof caches before saturation; nothing on
that path needs z3 itself, only these version strings. Keeping them here (z3-free) lets a
compile whose translation validation needs no solver (:mod:`.validate_terms`) run without
importing z3 at all (~30-40 ms, plus eggpu's own encodings in :mod:`.z3ops`).
"""

from __future__ import annotations

import functools
import os
import sys

#: Version of the meaning of the z3 encodings (:mod:`.z3ops`). Part of every proof-cache key:
#: bump it whenever an encoding changes what it says (version 2: the IR's total semantics for
#: div/rem by zero, INT_MIN / -1 and out-of-range shifts; version 1 treated them as undefined
#: behaviour).
SEMANTICS_VERSION = "2"
#: The bitcast encoding's own version, in the keys of rules that mention ``Bitcast`` only (so the
#: shipped rules' keys stay): 1 = NaN payloads followed through neg/abs/bitcast (``z3_floats.float_bits``).
BITCAST_VERSION = "1"


def semantics_tag(egglog_text: str) -> str:
    """The encoding version part of a rule's proof-cache key: :data:`SEMANTICS_VERSION`, plus
    :data:`BITCAST_VERSION` for a rule whose text uses ``Bitcast``."""
    return SEMANTICS_VERSION + (f"+bitcast{BITCAST_VERSION}" if "Bitcast" in egglog_text else "")

#: bump when budgets or strategies change meaning (:mod:`.rule_budget`; part of the proof-cache key)
BUDGET_VERSION = "1"

#: the reason of a check the wall-clock safety cap stopped (:mod:`.rule_budget`): the one
#: load-dependent answer, never cached
WALL_CAPPED = "stopped by the wall-clock safety cap (the machine is heavily loaded)"


#: z3 resource units per idle-machine CPU millisecond, per strategy (``python -m
#: eggpu.optimizer.rule_budget`` measures them: the median over the shipped rules' queries)
UNITS_PER_MS: dict[str, int] = {
    # measured 2026-12-05, z3 5.4.1 on the shipped rules' queries of >= 20 ms: case-split 5102,
    # qf_bv 5430, z3 4921, z3-fp 5281 (medians over 113/129/131/44 queries); no real-arithmetic
    # query takes 20 ms, so z3-real uses the default solver's rate. Rounded to one value: the
    # strategies spend about the same units per ms on these queries. Single hard queries spread
    # around it: ~2,400/ms for the default solver on a 64-bit division identity, ~6,200/ms over the
    # 65 bit-blasted cases of x / 2^k == x >> k at i64.
    "z3": 5000,  # z3's default solver on bit-vector formulas
    "z3-fp": 5000,  # the default solver on formulas with floats (bit-blasted FP)
    "z3-real": 5000,  # the default solver on real arithmetic (fast_math rules)
    "qf_bv": 5000,  # z3's QF_BV solver (bit-blasting to SAT)
    "case-split": 5000,  # one case of a case split: simplify, solve-eqs, bit-blast, sat
    "fp-bv": 5000,  # floats lowered to bit-vectors (fpa2bv), bit-blasted: ~4,700/ms on (-a)/(-b) at f64
}

def units(strategy: str, ms: float) -> int:
    """The rlimit of ``ms`` idle-machine milliseconds of ``strategy``; never less than one
    millisecond's worth (a budget of 0 still decides the trivial queries, as z3's smallest
    timeout did)."""
    rate = UNITS_PER_MS[strategy]
    return max(rate, int(rate * ms))


@functools.lru_cache(maxsize=1)
def z3_version() -> str:
    """``z3.get_version_string()`` of the z3 this process imports (asked once per process: the
    library a process loads cannot change).

    When z3 is not imported yet, the version comes from the ``z3_solver-X.Y.Z.B.dist-info``
    folder next to the ``z3`` package in the first ``sys.path`` entry that has the package (where
    ``import z3`` finds it): its first three components, which is what ``get_version_string``
    reports. (The same look-up as :mod:`importlib.metadata`'s, without its import: ~20 ms
    in a fresh process, more than z3's version is worth.) Anything else (no such folder beside the package, an unusual version string, a z3
    found by an import hook) imports z3 and asks it."""
    if "z3" not in sys.modules:
        found = _dist_info_version()
        if found is not None:
            return found
    import z3

    return z3.get_version_string()


def _dist_info_version() -> str | None:
    """The version of the z3 package ``import z3`` would load, from its dist-info; None when it
    cannot be told without importing z3."""
    for entry in sys.path:
        base = entry or "."
        if not os.path.isfile(os.path.join(base, "z3", "__init__.py")):
            if os.path.exists(os.path.join(base, "z3")) or os.path.exists(os.path.join(base, "z3.py")):
                return None  # something else called z3 comes first: let the import decide
            continue
        try:
            listing = os.listdir(base)
        except OSError:
            return None
        versions = [item[len("z3_solver-"):-len(".dist-info")] for item in listing
                    if item.lower().startswith("z3_solver-") and item.endswith(".dist-info")]
        if len(versions) != 1:
            return None
        parts = versions[0].split(".")
        if len(parts) < 3 or not all(p.isdigit() for p in parts[:3]):
            return None
        return ".".join(str(int(p)) for p in parts[:3])
    return None


__all__ = ["BITCAST_VERSION", "BUDGET_VERSION", "SEMANTICS_VERSION", "semantics_tag", "UNITS_PER_MS", "WALL_CAPPED", "units", "z3_version"]
