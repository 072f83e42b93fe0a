"""eggpu.ir — the leaf package: dtypes, op table, IR graphs, builder, verifier, printer/parser,
numpy interpreter. Imports only the standard library and numpy (ml_dtypes lazily for bf16)."""

__all__ = [
    "ALL_DTYPES", "BY_NAME", "CATEGORIES", "FLOAT_DTYPES", "FP8_DTYPES", "INT_DTYPES", "OPS", "OPS_LIST",
    "Block", "BlockType", "Builder", "DType", "EggpuError", "Function", "IRError", "IRParseError",
    "Loc", "OpDef", "Operation", "PointerType", "Value", "bf16", "block", "bool_", "f16", "f32",
    "f64", "fp8e4b15", "fp8e4nv", "fp8e5", "from_numpy", "i8", "i16", "i32", "i64", "parse_dtype", "pointer", "promote", "scalar",
    "u8", "u16", "u32", "u64", "verify", "parse_function", "parse_type", "print_function",
    "print_type", "structurally_equal",
]

# Every name is loaded on first use: ``import eggpu`` (which reads ``eggpu.ir.errors``) and a
# cache hit in a fresh process never import numpy, the builder, the verifier or the text form.
_LAZY = {
    "parse_function": ".parser", "parse_type": ".parser", "print_function": ".printer",
    "print_type": ".printer", "structurally_equal": ".structural", "Builder": ".builder",
    **{n: ".dtypes" for n in ("ALL_DTYPES", "BY_NAME", "CATEGORIES", "FLOAT_DTYPES", "INT_DTYPES", "DType", "bf16",
                              "bool_", "f16", "f32", "f64", "fp8e4b15", "fp8e4nv", "fp8e5", "from_numpy", "i8", "i16", "i32", "i64", "parse_dtype",
                              "promote", "u8", "u16", "u32", "u64")},
    **{n: ".errors" for n in ("EggpuError", "IRError", "IRParseError")},
    **{n: ".graph" for n in ("Block", "Function", "Loc", "Operation", "Value")},
    **{n: ".ops" for n in ("OPS", "OPS_LIST", "OpDef")},
    **{n: ".types" for n in ("BlockType", "PointerType", "block", "pointer", "scalar")},
    "verify": ".verifier",
}


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'eggpu.ir' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(mod, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value
