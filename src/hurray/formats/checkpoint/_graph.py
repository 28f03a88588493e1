"""What the checkpoint conventions share on top of the package's face for graphs.

A convention states a weight as a tree of hurray.nodes nodes (Stored,
Words, Constant, Step) and builds it with ``Descriptor.graph``; a writer
reads a descriptor back through ``Descriptor.nodes`` (ADR-054). This module
adds only what the conventions need beyond that face: same_graph() (is this
descriptor exactly the graph a convention would build?), make_tensor() (a
descriptor over zero-copy views of the file's map) and dequantize() with a
range of rows, which the first-weight benchmark times.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import ml_dtypes
import numpy as np

from ...core import dtypes as _dtypes
from ...core.descriptor import Descriptor, borrowed_list
from ...core.nodes import Node, Stored, Words
from ...core.tensor import Tensor
from ..._core import dequantize_rows, tensor_from_spans
from ..._ffi import ffi, lib
from ...errors import HurrayError, check
from ...quant.dequantizers import dequantize as _dequantize

__all__ = ["container_bits", "dequantize", "make_tensor", "same_graph"]

_UINT8 = np.dtype(np.uint8)
_OUT_DTYPES = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16),
               "bfloat16": np.dtype(ml_dtypes.bfloat16)}


def container_bits(node: Optional[Node]) -> int:
    """The container width of a stored node with words addressing; 0 for any other node."""
    if isinstance(node, Stored) and isinstance(node.packing, Words):
        return node.packing.container_bits
    return 0


def same_graph(desc: Descriptor, shape: Sequence[int], root: Node) -> bool:
    """True when `desc` is the graph of `root` over `shape` (its result dtype aside, which is informative)."""
    if desc.encoding_version != 2 or tuple(desc.shape) != tuple(shape):
        return False
    try:
        expected = Descriptor.graph(shape, root)
    except HurrayError:
        return False
    return expected.nodes == desc.nodes


def _address(array: np.ndarray) -> int:
    if not array.size:
        return int(array.__array_interface__["data"][0])
    return int(ffi.cast("uintptr_t", ffi.from_buffer(array)))  # a fraction of what __array_interface__ costs


def _flat_bytes(array: np.ndarray) -> np.ndarray:
    """`array` as contiguous 1-D uint8 (the views of a file's map already are)."""
    if array.dtype == _UINT8 and array.ndim == 1 and array.flags.c_contiguous:
        return array
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def make_tensor(desc: Descriptor, arrays: Sequence[np.ndarray]) -> Tensor:
    """A read-only Tensor of `desc` over `arrays` (buffer i = arrays[i], zero-copy; they keep the map alive).

    The spans are proven against `desc` in C (hurray._core's Tensor._from_spans)."""
    views = tuple(map(_flat_bytes, arrays))
    spans = tuple((_address(v), v.size) for v in views)
    return tensor_from_spans(desc, spans, views, True)


def dequantize(t: Tensor, dtype: str = "float32", rows: Optional[tuple[int, int]] = None) -> np.ndarray:
    """The C dequantizer (ADR-055) on `t`: float32, float16 or bfloat16 values of its shape.

    `rows` (first, count) dequantizes those rows of the first axis only
    (hurray_dequantize_rows); without it, this is Tensor.dequantize.
    """
    if rows is None:
        return _dequantize(t, dtype)
    out = np.empty((rows[1],) + tuple(t.shape[1:]), _OUT_DTYPES[dtype])
    desc, code = t.descriptor, _dtypes.dtype_code(dtype)
    address = desc._address  # None once closed: the checked path below says so
    if address is not None and dequantize_rows(address, t.buffers, code, rows[0], rows[1], out):
        return out  # the call in C, with no cffi objects made (hurray._core)
    with borrowed_list(t.buffers) as buffers:  # the same call, checked: raises the library's error
        check(lib.hurray_dequantize_rows(desc.handle, buffers, code, rows[0], rows[1], ffi.from_buffer(out),
                                         out.nbytes))
    return out  # pragma: no cover - C refused what the same call accepts
