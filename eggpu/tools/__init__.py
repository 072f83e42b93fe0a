"""Triton's ``triton.tools`` as ``eggpu.tools``: ``eggpu.tools.tensor_descriptor.TensorDescriptor``
(the host-side tensor descriptor), so ``from triton.tools.tensor_descriptor import TensorDescriptor``
becomes ``from eggpu.tools.tensor_descriptor import TensorDescriptor``."""
