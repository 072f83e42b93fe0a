"""Triton's ``triton.tools.tensor_descriptor``: the host-side :class:`TensorDescriptor` (defined in
:mod:`eggpu.kernel_macro.descriptors`)."""

from eggpu.kernel_macro.descriptors import TensorDescriptor

__all__ = ["TensorDescriptor"]
