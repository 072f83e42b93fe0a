"""eggpu.ir — the leaf package: dtypes, op table, IR graphs, builder, verifier, printer/parser,
numpy interpreter. Imports only the standard library and numpy (ml_dtypes lazily for bf16)."""

from .builder import Builder
from .dtypes import (
    ALL_DTYPES,
    BY_NAME,
    CATEGORIES,
    FLOAT_DTYPES,
    INT_DTYPES,
    DType,
    bf16,
    bool_,
    f16,
    f32,
    f64,
    from_numpy,
    i8,
    i16,
    i32,
    i64,
    parse_dtype,
    promote,
    u8,
    u16,
    u32,
    u64,
)
from .errors import EggpuError, IRError, IRParseError
from .graph import Block, Function, Loc, Operation, Value
from .ops import OPS, OPS_LIST, OpDef
from .types import BlockType, PointerType, block, pointer, scalar
from .verifier import verify

__all__ = [
    "ALL_DTYPES", "BY_NAME", "CATEGORIES", "FLOAT_DTYPES", "INT_DTYPES", "OPS", "OPS_LIST",
    "Block", "BlockType", "Builder", "DType", "EggpuError", "Function", "IRError", "IRParseError",
    "Loc", "OpDef", "Operation", "PointerType", "Value", "bf16", "block", "bool_", "f16", "f32",
    "f64", "from_numpy", "i8", "i16", "i32", "i64", "parse_dtype", "pointer", "promote", "scalar",
    "u8", "u16", "u32", "u64", "verify", "parse_function", "parse_type", "print_function",
    "print_type", "structurally_equal",
]

# The text form is loaded on first use: a cache hit in a fresh process never needs it.
_LAZY = {
    "parse_function": ".parser", "parse_type": ".parser", "print_function": ".printer",
    "print_type": ".printer", "structurally_equal": ".structural",
}


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'eggpu.ir' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(mod, __name__), name)
