"""The kernel language: ``import eggpu.language as tl`` (Triton's names and semantics).

Re-exports :mod:`eggpu.kernel_macro.language`, including its module ``__getattr__``: a Triton name
eggpu does not have (``tl.float8e5``, ``tl.topk``) raises an ``AttributeError`` saying why.
"""

import sys as _sys

from eggpu.kernel_macro import language as _language
from eggpu.kernel_macro.language import *  # noqa: F401,F403
from eggpu.kernel_macro.language import __all__, __getattr__  # noqa: F401

# Triton's submodules `triton.language.core` and `triton.language.standard` hold the same public
# names as `triton.language` (the same objects here) plus a few internals kernels use
# (`core.get_int_dtype`, `core.CONSTEXPR_0`, `standard._log2`: kernel_macro/language_namespaces.py);
# kernels import them (`import triton.language.core as core`, FlagGems' topk/sort) or reach them
# as `tl.core` (the widely copied bitonic argsort)
core, standard = _language.core, _language.standard
_sys.modules[__name__ + ".core"] = core
_sys.modules[__name__ + ".standard"] = standard
