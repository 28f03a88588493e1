"""The one place that completes Tensor and Descriptor, in one fixed order.

core/tensor.py defines a Tensor's own methods; the methods that belong to a
layer above it (quant/, bridges/) are set on the class here, because those
layers import core/ and core/ cannot import them. Then the C halves of the
hot paths (ADR-046) are handed what they fall back to and put in place:
hurray._core first (every other C half relies on its setup), then the
native protocol, DLPack and pickling. Last, Dask is told about Tensor when
it is loaded (ADR-049).

``import hurray`` runs install() once, before anything else can be called.
Each C half keeps the Python function it replaces and calls it for every
case it does not serve; those Python halves stay reachable here (the
``*_py`` names) for the tests that hold each C half against its Python one.
"""
from typing import Any, Callable

from ._core import decode, setup, setup_dlpack, setup_memory, setup_protocol, tensor_from_spans
from ._dlpack import export as dlpack_export
from ._pickle import setup as setup_pickle
from .bridges import dask, dlpack, pickling, protocol
from .bridges import numpy as numpy_bridge
from .core import descriptor as descriptor_module
from .core import tensor as tensor_module
from .core.descriptor import Descriptor, check_spans
from .core.tensor import Tensor
from .errors import CorruptError
from .quant import dequantizers, ggml

__all__ = ["install"]

# The Python halves the C ones stand in for (set by install()).
array_py: Callable[..., Any]
buffer_py: Callable[..., Any]
stored_values_py: Callable[..., Any]
dlpack_py: Callable[..., Any]


def _methods_of_other_layers() -> None:
    """Tensor's methods that live in quant/ and bridges/ (listed in core/tensor.py)."""
    Tensor.dequantize = dequantizers.dequantize  # type: ignore[method-assign, assignment]
    Tensor.to_ggml = Tensor.to_gguf = ggml.to_ggml  # type: ignore[method-assign, assignment]
    Tensor.__hurray__ = protocol.to_capsule  # type: ignore[method-assign, assignment]
    Tensor.__dlpack__ = dlpack.to_dlpack  # type: ignore[method-assign, assignment]
    Tensor.__dlpack_device__ = dlpack.dlpack_device  # type: ignore[method-assign, assignment]
    Tensor.__copy__ = pickling.copy_tensor  # type: ignore[method-assign, assignment]
    Tensor.__deepcopy__ = pickling.deepcopy_tensor  # type: ignore[method-assign, assignment]


def _core_paths() -> None:
    """hurray._core: from_numpy and Tensor.__array__, Descriptor.decode of bytes, Tensor.buffer and
    Tensor.stored_values."""
    global array_py, buffer_py, stored_values_py
    array_py = Tensor.__array__
    Tensor.__array__ = setup(  # type: ignore[method-assign]
        Tensor, Descriptor, numpy_bridge._CODES, tensor_module.NUMPY_DTYPES, numpy_bridge._from_numpy, array_py
    )
    descriptor_module._decode_in_c = decode
    buffer_py, stored_values_py = Tensor.buffer, Tensor.stored_values
    Tensor.buffer, Tensor.stored_values = setup_memory(  # type: ignore[method-assign]
        buffer_py, stored_values_py, check_spans
    )


def _protocol_paths() -> None:
    """from_hurray and Tensor.__hurray__ in C (ADR-048, amended)."""
    Tensor.__hurray__ = setup_protocol(  # type: ignore[method-assign]
        protocol._from_hurray, protocol._refuse, protocol.to_capsule
    )


def _dlpack_paths() -> None:
    """Tensor.__dlpack__ and __dlpack_device__ in C, for the plain zero-copy CPU case."""
    global dlpack_py
    dlpack_py = Tensor.__dlpack__
    Tensor.__dlpack__, Tensor.__dlpack_device__ = setup_dlpack(  # type: ignore[method-assign]
        dlpack_py, dlpack_export, dlpack._PLANS, (dlpack.KDL_CPU, 0)
    )


def _pickle_paths() -> None:
    """Tensor.__reduce_ex__ in C (ADR-049), through hurray._core's decode and span check."""
    Tensor.__reduce_ex__ = setup_pickle(  # type: ignore[method-assign]
        Tensor, pickling._VERSIONS, decode, Descriptor.decode, tensor_from_spans,
        pickling._refuse_versions, CorruptError,
    )


_installed = False


def install() -> None:
    """Complete Tensor and Descriptor, in this order; a second call does nothing."""
    global _installed
    if _installed:
        return
    _methods_of_other_layers()
    _core_paths()
    _protocol_paths()
    _dlpack_paths()
    _pickle_paths()
    dask.watch_for_dask()
    _installed = True
