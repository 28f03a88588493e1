"""MLX's quantized weights: ``hurray.from_mlx`` and ``hurray.to_mlx`` (ADR-061).

``from_mlx`` takes what ``mx.quantize`` returned, with the arguments
``mx.dequantize`` takes, and shares the arrays' memory (``np.asarray`` of an
MLX array on CPU is a view of it). Version-1 descriptors state three of
MLX's modes exactly: ``mxfp4``, ``mxfp8`` and ``nvfp4`` without a global
scale, as microscaling (float32 products, which equal MLX's in its default
bfloat16 output and in float32). The other modes need descriptor encoding
version 2, which this build does not have, and are refused by name: affine
(MLX adds the bias after a rounded product), nvfp4 with a global scale (MLX
divides it by 2688 first), and an E8M0 scale byte of 255 (MLX reads it as
+inf, version 1 as NaN).

``to_mlx`` returns ``(w, kwargs)`` such that ``mx.dequantize(w, **kwargs)``
gives the values: ``w`` is positional-only in MLX, so
``mx.dequantize(**kwargs)`` alone cannot work. MLX on CPU cannot wrap
foreign memory (``mx.from_dlpack(x, copy=False)`` refuses), so the arrays
``to_mlx`` makes are copies. mlx is imported when these are called.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..core._facts import row_major_strides
from ..core.descriptor import Descriptor, Part
from ..core.tensor import Tensor
from ..errors import InvalidArgumentError, UnsupportedError
from ._imports import require
from ._names import refusal

__all__ = ["from_mlx", "to_mlx"]

# mode -> (bits, group size, values dtype, scale dtype): MLX's fixed formats.
_MODES = {
    "mxfp4": (4, 32, "float4_e2m1fn", "float8_e8m0fnu"),
    "mxfp8": (8, 32, "float8_e4m3fn", "float8_e8m0fnu"),
    "nvfp4": (4, 16, "float4_e2m1fn", "float8_e4m3fn"),
}
_VERSION_2 = "descriptor encoding version 2 (a node graph), which this build of hurray does not have yet"


def _mx() -> Any:
    return require("mlx.core", "mlx[cpu]", "hurray.from_mlx / hurray.to_mlx")


def _view(mx: Any, array: Any, what: str, dtype: Any) -> np.ndarray:
    """``array`` as a numpy view of its own memory (MLX shares it on CPU), checked."""
    if not isinstance(array, mx.array):
        raise InvalidArgumentError(refusal(array, f"is not an mlx.core.array (from_mlx's {what})"))
    view = np.asarray(array)
    if view.dtype != dtype:
        raise InvalidArgumentError(f"from_mlx: {what} must be {np.dtype(dtype).name}, as mx.quantize makes it, "
                                   f"not {view.dtype.name}")
    if not view.flags.c_contiguous:
        raise UnsupportedError(f"from_mlx: {what} is not row-major contiguous")
    return view


def from_mlx(w: Any, scales: Any, biases: Any = None, *, group_size: Optional[int] = None,
             bits: Optional[int] = None, mode: str = "affine", global_scale: Any = None) -> Tensor:
    """A :class:`hurray.Tensor` over what ``mx.quantize`` returned, without a copy.

    The arguments are ``mx.dequantize``'s; ``group_size`` and ``bits`` default
    to the mode's own, as in MLX.
    """
    mx = _mx()
    if mode == "affine":
        raise UnsupportedError(
            "from_mlx: MLX's affine mode computes round(round(q * scale) + bias) in the scale's dtype; "
            f"stating it needs {_VERSION_2}"
        )
    if mode not in _MODES:
        raise InvalidArgumentError(f"from_mlx: mode {mode!r} is not one of MLX's: affine, {', '.join(_MODES)}")
    want_bits, want_group, values_dtype, scale_dtype = _MODES[mode]
    if bits not in (None, want_bits) or group_size not in (None, want_group):
        raise InvalidArgumentError(f"from_mlx: mode {mode} has bits={want_bits} and group_size={want_group}, "
                                   f"not bits={bits} and group_size={group_size}")
    if biases is not None:
        raise InvalidArgumentError(f"from_mlx: mode {mode} has no biases")
    if global_scale is not None:
        raise UnsupportedError(
            "from_mlx: nvfp4 with a global scale divides it by 2688 and multiplies the scales by it first; "
            f"stating that order needs {_VERSION_2}"
        )
    packed = _view(mx, w, "w", np.uint32)
    scale = _view(mx, scales, "scales", np.uint8)
    if packed.ndim < 1:
        raise InvalidArgumentError("from_mlx: w must have at least one axis")
    per_word = 32 // want_bits
    shape = packed.shape[:-1] + (packed.shape[-1] * per_word,)
    if scale.shape != shape[:-1] + (shape[-1] // want_group,):
        raise InvalidArgumentError(f"from_mlx: scales of shape {scale.shape} do not fit w's {shape} elements "
                                   f"in groups of {want_group}")
    if scale_dtype == "float8_e8m0fnu" and bool((scale == 255).any()):
        raise UnsupportedError(
            "from_mlx: a scale byte is 255, which MLX decodes as +inf and a version-1 descriptor as NaN; "
            f"stating MLX's rule needs {_VERSION_2}"
        )
    parts = {"values": Part(values_dtype, 0, 0), "scale": Part(scale_dtype, 1, 0)}
    spans = [(packed.ctypes.data, packed.nbytes), (scale.ctypes.data, scale.nbytes)]
    owners: list[Any] = [w, scales, packed, scale]
    if mode == "nvfp4":
        one = np.ones(1, np.float32)  # a stated 1.0: MLX without a global scale multiplies by nothing
        parts["global_scale"] = Part("float32", 2, 0)
        spans.append((one.ctypes.data, one.nbytes))
        owners.append(one)
    desc = Descriptor.build(values_dtype, shape, packing="lsb_first" if want_bits == 4 else None,
                            scheme="microscaling", granularity="per_block", axis=len(shape) - 1,
                            block_size=want_group, parts=parts)
    return Tensor(desc, spans, owner=tuple(owners))


def to_mlx(tensor: Tensor) -> tuple[Any, dict[str, Any]]:
    """``(w, kwargs)`` with ``mx.dequantize(w, **kwargs)`` giving ``tensor``'s values (copies: see the module)."""
    mx = _mx()
    if not isinstance(tensor, Tensor):
        raise InvalidArgumentError(refusal(tensor, "is not a hurray.Tensor; to_mlx takes one"))
    d = tensor.descriptor
    mode = None
    for name, (_bits, group, values_dtype, scale_dtype) in _MODES.items():
        if (d.scheme, d.dtype, d.block_size, d.parts.get("scale", Part("")).dtype) == (
                "microscaling", values_dtype, group, scale_dtype):
            mode = name
    if mode is None or d.axis != len(d.shape) - 1 or tuple(d.strides) != row_major_strides(d.shape):
        raise UnsupportedError(
            f"to_mlx: a {d.scheme} {d.dtype} tensor has no MLX mode (mxfp4, mxfp8, nvfp4: row-major, blocks along "
            "the last axis)"
        )
    if d.parts["scale"].layout != "row_major":
        raise UnsupportedError("to_mlx: MLX's scales are row-major, not swizzled")
    if "global_scale" in d.parts:
        g = _part_bytes(tensor, "global_scale", 4).view(np.float32)
        if g.tobytes() != np.float32(1).tobytes():
            raise UnsupportedError("to_mlx: a global scale other than 1 has no MLX equivalent in version 1")
    bits, group = _MODES[mode][0], _MODES[mode][1]
    count = int(np.prod(d.shape, dtype=np.int64))
    codes = _part_bytes(tensor, "values", count * bits // 8)
    scales = _part_bytes(tensor, "scale", count // group)
    w = mx.array(codes.view(np.uint32).reshape(tuple(d.shape[:-1]) + (d.shape[-1] * bits // 32,)))
    s = mx.array(scales.reshape(tuple(d.shape[:-1]) + (d.shape[-1] // group,)))
    return w, {"scales": s, "group_size": group, "bits": bits, "mode": mode}


def _part_bytes(tensor: Tensor, role: str, nbytes: int) -> np.ndarray:
    part = tensor.descriptor.parts[role]
    address, size = tensor.buffers[part.buffer_index]
    if part.byte_offset + nbytes > size:
        raise UnsupportedError(f"to_mlx: the {role} part is shorter than MLX's layout")
    raw = Tensor(Descriptor.build("uint8", (size,)), [(address, size)], owner=tensor)
    return np.asarray(raw)[part.byte_offset:part.byte_offset + nbytes]

