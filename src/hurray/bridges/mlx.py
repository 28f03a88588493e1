"""MLX's quantized weights: ``hurray.from_mlx`` and ``hurray.to_mlx`` (ADR-061).

``from_mlx`` takes what ``mx.quantize`` returned, with the arguments
``mx.dequantize`` takes, and shares the arrays' memory (the buffer protocol
of an MLX array on CPU is a view of it), for every mode MLX has:

- ``mxfp4``, ``mxfp8`` and ``nvfp4`` without a global scale, when no E8M0
  scale byte is 255, as version-1 microscaling descriptors (float32
  products, which equal MLX's in its default bfloat16 output and in
  float32), because every consumer reads version 1;
- everything else as a version-2 graph (hurray.quant.library_graphs):
  affine at any width 1 to 8 (MLX adds the bias after a rounded product, in
  the scales' dtype), nvfp4 with a global scale (MLX divides it by 2688
  first and returns float32), and mx modes with a scale byte of 255 (MLX
  reads it as +inf, version 1 as NaN).

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
from ..quant import library_graphs as graphs
from ._graphs import buffer_bytes, over, recognise
from ._imports import require
from ._names import dtype_leaf, refusal

__all__ = ["from_mlx", "to_mlx"]

# mode -> (bits, group size, values dtype, scale dtype): MLX's fixed formats.
_MODES = {
    "mxfp4": (4, 32, "float4_e2m1fn", "float8_e8m0fnu"),
    "mxfp8": (8, 32, "float8_e4m3fn", "float8_e8m0fnu"),
    "nvfp4": (4, 16, "float4_e2m1fn", "float8_e4m3fn"),
}
_AFFINE_DTYPES = ("float16", "bfloat16", "float32")
_AFFINE_DEFAULTS = (4, 64)  # mx.quantize's bits and group_size


def _mx() -> Any:
    return require("mlx.core", "mlx[cpu]", "hurray.from_mlx / hurray.to_mlx")


def _view(mx: Any, array: Any, what: str, dtypes: tuple[str, ...]) -> tuple[np.ndarray, str]:
    """(the bytes of ``array`` as a flat uint8 numpy view of its own memory, its dtype name), checked."""
    if not isinstance(array, mx.array):
        raise InvalidArgumentError(refusal(array, f"is not an mlx.core.array (from_mlx's {what})"))
    name = dtype_leaf(array.dtype)
    if name not in dtypes:
        raise InvalidArgumentError(f"from_mlx: {what} must be {' or '.join(dtypes)}, as mx.quantize makes it, "
                                   f"not {name}")
    memory = memoryview(array)  # evaluates a lazy array; on CPU, its own buffer
    if not memory.c_contiguous:
        raise UnsupportedError(f"from_mlx: {what} is not row-major contiguous")
    return np.frombuffer(memory.cast("B"), np.uint8) if memory.nbytes else np.zeros(0, np.uint8), name


def _shape_of(array: Any) -> tuple[int, ...]:
    return tuple(int(n) for n in array.shape)


def from_mlx(w: Any, scales: Any, biases: Any = None, *, group_size: Optional[int] = None,
             bits: Optional[int] = None, mode: str = "affine", global_scale: Any = None) -> Tensor:
    """A :class:`hurray.Tensor` over what ``mx.quantize`` returned, without a copy.

    The arguments are ``mx.dequantize``'s; ``group_size`` and ``bits`` default
    to the mode's own, as in MLX (affine: 4 bits in groups of 64).
    """
    mx = _mx()
    if mode != "affine" and mode not in _MODES:
        raise InvalidArgumentError(f"from_mlx: mode {mode!r} is not one of MLX's: affine, {', '.join(_MODES)}")
    packed, _ = _view(mx, w, "w", ("uint32",))
    words = _shape_of(w)
    if not words:
        raise InvalidArgumentError("from_mlx: w must have at least one axis")
    if mode == "affine":
        return _affine(mx, w, packed, words, scales, biases, group_size, bits, global_scale)
    want_bits, want_group, values_dtype, scale_dtype = _MODES[mode]
    if bits not in (None, want_bits) or group_size not in (None, want_group):
        raise InvalidArgumentError(f"from_mlx: mode {mode} has bits={want_bits} and group_size={want_group}, "
                                   f"not bits={bits} and group_size={group_size}")
    if biases is not None:
        raise InvalidArgumentError(f"from_mlx: mode {mode} has no biases")
    if global_scale is not None and mode != "nvfp4":
        raise InvalidArgumentError(f"from_mlx: only nvfp4 takes a global scale, not {mode}")
    scale, _ = _view(mx, scales, "scales", ("uint8",))
    shape = words[:-1] + (words[-1] * (32 // want_bits),)
    if _shape_of(scales) != shape[:-1] + (shape[-1] // want_group,):
        raise InvalidArgumentError(f"from_mlx: scales of shape {_shape_of(scales)} do not fit w's {shape} elements "
                                   f"in groups of {want_group}")
    spans = [(packed.ctypes.data, packed.nbytes), (scale.ctypes.data, scale.nbytes)]
    owners: list[Any] = [w, scales, packed, scale]
    if global_scale is not None:
        g, _ = _view(mx, global_scale, "global_scale", ("float32",))
        if g.nbytes != 4:
            raise UnsupportedError(f"from_mlx: a global scale of shape {_shape_of(global_scale)}: one value "
                                   "(0-d or [1]) is what mx.dequantize takes with one weight")
        spans.append((g.ctypes.data, 4))
        owners += [global_scale, g]
        return over(graphs.mlx_fp(shape, "nvfp4", "bfloat16", True), spans, owners)
    if scale_dtype == "float8_e8m0fnu" and bool((scale == 255).any()):
        # MLX reads 255 as +inf (version 1: NaN); the graph's E8M0 rule says so. float32 products, as version 1
        # (exact, so they round to MLX's bfloat16 and equal its float32); MLX returns bfloat16.
        return over(graphs.mlx_fp(shape, mode, "float32", result_dtype="bfloat16"), spans, owners)
    parts = {"values": Part(values_dtype, 0, 0), "scale": Part(scale_dtype, 1, 0)}
    if mode == "nvfp4":
        one = np.ones(1, np.float32)  # a stated 1.0: MLX without a global scale multiplies by nothing
        parts["global_scale"] = Part("float32", 2, 0)
        spans.append((one.ctypes.data, one.nbytes))
        owners.append(one)
    desc = Descriptor.build(values_dtype, shape, packing="lsb_first" if want_bits == 4 else None,
                            scheme="microscaling", granularity="per_block", axis=len(shape) - 1,
                            block_size=want_group, parts=parts)
    return Tensor(desc, spans, owner=tuple(owners))


def _affine(mx: Any, w: Any, packed: np.ndarray, words: tuple[int, ...], scales: Any, biases: Any,
            group_size: Optional[int], bits: Optional[int], global_scale: Any) -> Tensor:
    bits = _AFFINE_DEFAULTS[0] if bits is None else bits
    group_size = _AFFINE_DEFAULTS[1] if group_size is None else group_size
    if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= 8:
        raise InvalidArgumentError(f"from_mlx: affine bits must be 1 to 8, not {bits!r}")
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
        raise InvalidArgumentError(f"from_mlx: group_size must be a positive int, not {group_size!r}")
    if biases is None:
        raise InvalidArgumentError("from_mlx: affine mode needs the biases mx.quantize returned")
    if global_scale is not None:
        raise InvalidArgumentError("from_mlx: only nvfp4 takes a global scale, not affine")
    if words[-1] * 32 % bits:
        raise InvalidArgumentError(f"from_mlx: w's last axis of {words[-1]} words holds no whole number of "
                                   f"{bits}-bit codes")
    shape = words[:-1] + (words[-1] * 32 // bits,)
    scale, dtype = _view(mx, scales, "scales", _AFFINE_DTYPES)
    bias, bias_dtype = _view(mx, biases, "biases", _AFFINE_DTYPES)
    grid = shape[:-1] + (shape[-1] // group_size,)
    if shape[-1] % group_size or _shape_of(scales) != grid or _shape_of(biases) != grid or bias_dtype != dtype:
        raise InvalidArgumentError(
            f"from_mlx: w holds {shape} codes in groups of {group_size}, so scales and biases are {dtype} {grid}; "
            f"got scales {_shape_of(scales)} and biases {bias_dtype} {_shape_of(biases)}")
    spans = [(packed.ctypes.data, packed.nbytes), (scale.ctypes.data, scale.nbytes), (bias.ctypes.data, bias.nbytes)]
    return over(graphs.mlx_affine(shape, bits, group_size, dtype), spans, [w, scales, biases, packed, scale, bias])


def to_mlx(tensor: Tensor) -> tuple[Any, dict[str, Any]]:
    """``(w, kwargs)`` with ``mx.dequantize(w, **kwargs)`` giving ``tensor``'s values (copies: see the module)."""
    mx = _mx()
    if not isinstance(tensor, Tensor):
        raise InvalidArgumentError(refusal(tensor, "is not a hurray.Tensor; to_mlx takes one"))
    d = tensor.descriptor
    if d.scheme == "graph":
        return _graph_to_mlx(mx, tensor)
    mode = None
    for name, (_bits, group, values_dtype, scale_dtype) in _MODES.items():
        if (d.scheme, d.dtype, d.block_size, d.parts.get("scale", Part("")).dtype) == (
                "microscaling", values_dtype, group, scale_dtype):
            mode = name
    if mode is None or d.axis != len(d.shape) - 1 or tuple(d.strides) != row_major_strides(d.shape):
        raise UnsupportedError(
            f"to_mlx: a {d.scheme} {d.dtype} tensor has no MLX mode (affine, mxfp4, mxfp8, nvfp4: row-major, "
            "groups along the last axis)"
        )
    if d.parts["scale"].layout != "row_major":
        raise UnsupportedError("to_mlx: MLX's scales are row-major, not swizzled")
    if "global_scale" in d.parts:
        g = _part_bytes(tensor, "global_scale", 4).view(np.float32)
        if g.tobytes() != np.float32(1).tobytes():
            raise UnsupportedError("to_mlx: a version-1 global scale multiplies, and MLX's divides by 2688: "
                                   "only a global scale of 1 has an MLX equivalent")
    bits, group = _MODES[mode][0], _MODES[mode][1]
    count = int(np.prod(d.shape, dtype=np.int64))
    codes = _part_bytes(tensor, "values", count * bits // 8)
    scales = _part_bytes(tensor, "scale", count // group)
    w = mx.array(codes.view(np.uint32).reshape(tuple(d.shape[:-1]) + (d.shape[-1] * bits // 32,)))
    s = mx.array(scales.reshape(tuple(d.shape[:-1]) + (d.shape[-1] // group,)))
    return w, {"scales": s, "group_size": group, "bits": bits, "mode": mode}


def _candidates(shape: tuple[int, ...], group: int, dtype: str) -> list[tuple[Any, graphs.Layout]]:
    """The layouts from_mlx makes for a tensor of ``shape`` (group and dtype read from its root step)."""
    out: list[tuple[Any, graphs.Layout]] = []
    if shape[-1] % 32 == 0:  # the graph modes' words hold whole codes
        out.append((("nvfp4", True), graphs.mlx_fp(shape, "nvfp4", "bfloat16", True)))
        out += [((mode, False), graphs.mlx_fp(shape, mode, "float32", result_dtype="bfloat16"))
                for mode in ("mxfp4", "mxfp8")]
    if dtype in _AFFINE_DTYPES and group and shape[-1] % group == 0:
        out += [(("affine", b), graphs.mlx_affine(shape, b, group, dtype)) for b in range(1, 9)
                if shape[-1] * b % 32 == 0]
    return out


def _graph_to_mlx(mx: Any, tensor: Tensor) -> tuple[Any, dict[str, Any]]:
    d = tensor.descriptor
    shape = tuple(d.shape)
    root = d.root
    blocks = getattr(root, "blocks", None) or ()
    group = int(blocks[-1]) if shape and blocks else 0
    key = recognise(d, _candidates(shape, group, str(getattr(root, "arithmetic", "")))) if shape else None
    if key is None:
        raise UnsupportedError("to_mlx: this graph is none of the layouts from_mlx makes (affine, mxfp4, mxfp8, "
                               "nvfp4 with a global scale), so it has no MLX mode")
    mode, detail = key
    count = int(np.prod(shape, dtype=np.int64))
    lead = shape[:-1]

    def words(bits: int) -> Any:
        raw = buffer_bytes(tensor, 0, count * bits // 8, "to_mlx")
        return mx.array(raw.view(np.uint32).reshape(lead + (shape[-1] * bits // 32,)))

    if mode == "affine":
        dtype = str(root.arithmetic)  # type: ignore[union-attr]
        grid = lead + (shape[-1] // group,)
        n = int(np.prod(grid, dtype=np.int64))
        item = 4 if dtype == "float32" else 2
        parameters = []
        for index in (1, 2):
            raw = buffer_bytes(tensor, index, n * item, "to_mlx").view(np.float32 if item == 4 else np.uint16)
            array = mx.array(raw.reshape(grid))
            parameters.append(array if item == 4 else array.view(getattr(mx, dtype)))
        return words(detail), {"scales": parameters[0], "biases": parameters[1], "group_size": group,
                               "bits": detail, "mode": "affine"}
    bits, group, _, _ = _MODES[mode]
    scales = buffer_bytes(tensor, 1, count // group, "to_mlx").reshape(lead + (shape[-1] // group,))
    kwargs: dict[str, Any] = {"scales": mx.array(scales), "group_size": group, "bits": bits, "mode": mode}
    if detail:
        kwargs["global_scale"] = mx.array(buffer_bytes(tensor, 2, 4, "to_mlx").view(np.float32).reshape(()))
    return words(bits), kwargs


def _part_bytes(tensor: Tensor, role: str, nbytes: int) -> np.ndarray:
    part = tensor.descriptor.parts[role]
    return buffer_bytes(tensor, part.buffer_index, part.byte_offset + nbytes, "to_mlx")[part.byte_offset:]
