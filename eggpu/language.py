"""The kernel language: ``import eggpu.language as tl`` (Triton's names and semantics).

Re-exports :mod:`eggpu.kernel_macro.language`.
"""

from eggpu.kernel_macro.language import *  # noqa: F401,F403
from eggpu.kernel_macro.language import __all__  # noqa: F401
