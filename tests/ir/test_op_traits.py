"""Traits and dtype families of the op table are enums: a misspelled one fails loudly."""

from __future__ import annotations

import pytest

from eggpu.ir.ops import OPS, Family, OpDef, Trait, _family_ok, same_type


def test_trait_queries_take_enum_members_and_reject_misspellings() -> None:
    assert OPS["lt"].has(Trait.COMPARISON) and OPS["lt"].has("comparison")
    assert not OPS["add"].has(Trait.COMPARISON)
    with pytest.raises(ValueError, match="'comparisn' is not a valid Trait"):
        OPS["lt"].has("comparisn")
    assert all(isinstance(t, Trait) for op in OPS.values() for t in op.traits)
    assert all(isinstance(op.family, Family) for op in OPS.values())


def test_a_row_with_an_unknown_trait_or_family_fails_where_it_is_written() -> None:
    with pytest.raises(ValueError, match="'elementwize' is not a valid Trait"):
        OpDef(name="bad", arity=(1, 1), traits=frozenset({"elementwize"}), type_rule=same_type("bad"))
    with pytest.raises(ValueError, match="'floats' is not a valid Family"):
        OpDef(name="bad", arity=(1, 1), traits=frozenset(), type_rule=same_type("bad"), family="floats")
    with pytest.raises(ValueError, match="'integer' is not a valid Family"):
        _family_ok("integer", None)  # type: ignore[arg-type]


def test_every_elementwise_op_states_its_reference_in_its_row() -> None:
    # no reference is patched in after the table: each elementwise row names its own (addptr's
    # pointer arithmetic and the int <-> pointer casts are the interpreter's own rules)
    missing = [n for n, op in OPS.items() if op.has(Trait.ELEMENTWISE) and op.reference is None]
    assert missing == ["addptr", "int_to_ptr", "ptr_to_int"]


def test_every_lazy_reference_names_a_function_of_op_references_and_back() -> None:
    from eggpu.ir import op_references
    from eggpu.ir.ops import LazyReference

    lazy = {n: op.reference for n, op in OPS.items() if isinstance(op.reference, LazyReference)}
    assert all(ref.name == n for n, ref in lazy.items())  # a row never borrows another op's reference
    assert set(lazy) == set(op_references.REFERENCES)
    assert all(ref.resolve() is op_references.REFERENCES[n] for n, ref in lazy.items())
    assert repr(OPS["add"].reference) == "LazyReference('add')"


def test_importing_the_op_table_does_not_import_numpy() -> None:
    import subprocess
    import sys

    code = ("import sys; import eggpu.ir.ops, eggpu.ir.printer, eggpu.ir.structural; "
            "print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"
