"""The kernel language: ``import eggpu.language as tl`` (Triton's names and semantics).

Re-exports :mod:`eggpu.kernel_macro.language`, including its module ``__getattr__``: a Triton name
eggpu does not have (``tl.float8e5``, ``tl.topk``) raises an ``AttributeError`` saying why.
"""

from eggpu.kernel_macro.language import *  # noqa: F401,F403
from eggpu.kernel_macro.language import __all__, __getattr__  # noqa: F401
