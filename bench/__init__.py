"""eggpu's benchmark harness: compile time, code quality and run time side by side with Triton.

Run ``python -m bench`` from the repository root (``python -m bench --help``). Needs the
``bench`` extra (``pip install -e .[bench]``: Triton, matplotlib, NVIDIA's ptxas/nvdisasm wheels).
Kept import-light: worker processes import this package before they start their clocks' work.
"""
