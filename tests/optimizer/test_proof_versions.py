"""The z3-free proof look-up (optimizer/proof_versions.py): a cold compile reads its rules'
verdicts from the proof caches without importing z3, so a compile whose translation validation
needs no solver never imports it (tests/optimizer/test_validate_terms.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from eggpu.optimizer import proof_versions

# ---------------------------------------------------------------------- z3's version without z3


def test_z3_version_is_read_without_importing_z3() -> None:
    code = ("import sys\nfrom eggpu.optimizer.proof_versions import z3_version\nv = z3_version()\n"
            "assert 'z3' not in sys.modules, 'z3 was imported'\nimport z3\n"
            "assert v == z3.get_version_string(), (v, z3.get_version_string())\nprint('OK', v)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("OK "), out.stderr


def test_cold_proof_lookup_does_not_import_z3() -> None:
    # the cached path of verify_rules (the rule keys and the proof caches) needs no z3
    code = ("import sys\nfrom eggpu.optimizer import rule_verifier, proof_cache\n"
            "from eggpu.optimizer.rules_loader import parse_rule\n"
            "assert 'z3' not in sys.modules and 'eggpu.optimizer.z3ops' not in sys.modules\n"
            "r = parse_rule('(rewrite (Neg (F32) (Neg (F32) x)) x :name \"nn\")')\n"
            "k = rule_verifier._cache_key(r, 4000)\nassert 'z3' not in sys.modules, 'the key imported z3'\n"
            "print('OK', k)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.startswith("OK "), out.stderr + out.stdout
    import z3

    from eggpu.optimizer import rule_verifier
    from eggpu.optimizer.rules_loader import parse_rule

    # the same key as with z3 loaded (the key's z3 part is z3.get_version_string())
    r = parse_rule('(rewrite (Neg (F32) (Neg (F32) x)) x :name "nn")')
    assert out.stdout.split()[1] == rule_verifier._cache_key(r, 4000)
    assert proof_versions.z3_version() == z3.get_version_string()


def _site(tmp_path: Path, *names: str) -> Path:
    d = tmp_path / "site"
    (d / "z3").mkdir(parents=True)
    (d / "z3" / "__init__.py").write_text("")
    for n in names:
        (d / n).mkdir()
    return d


@pytest.mark.parametrize(("folders", "expected"), [
    (("z3_solver-4.12.6.0.dist-info",), "4.12.6"),
    (("z3_solver-5.4.1.0.dist-info",), "5.4.1"),
    (("z3_solver-4.8.dist-info",), None),  # too few components: ask z3
    (("z3_solver-4.x.1.0.dist-info",), None),
    (("z3_solver-4.12.6.0.dist-info", "z3_solver-4.13.0.0.dist-info"), None),  # ambiguous
    ((), None),  # a z3 package without its distribution's metadata
])
def test_dist_info_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folders, expected) -> None:
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(_site(tmp_path, *folders))])
    assert proof_versions._dist_info_version() == expected


def test_a_shadowing_z3_module_first_on_the_path_defers_to_the_import(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "z3.py").write_text("")
    monkeypatch.setattr(sys, "path", [str(shadow), str(_site(tmp_path, "z3_solver-4.12.6.0.dist-info"))])
    assert proof_versions._dist_info_version() is None
