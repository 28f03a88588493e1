"""torchao's quantized tensors through ``hurray.from_torch`` / ``hurray.to_torch`` (ADR-061).

Each class torchao 0.18 makes on CPU comes in as a version-2 graph
(hurray.quant.library_graphs) over its own tensors' memory: ``Float8Tensor``
(per tensor, per row, per block), ``MXTensor`` (fp8, fp6 and fp4 elements,
scales row-major or swizzled), ``NVFP4Tensor`` (2-D, with and without
``per_tensor_scale``, swizzled or not), ``IntxUnpackedToInt8Tensor`` (int1
to int8 codes, one a byte) and ``Int8Tensor``. A class is taken only when
its lists of parts (``tensor_data_names``, ``tensor_attribute_names`` and
the optional ones) are the ones this module knows: a torchao whose layout
changed is refused by name, never misread. The int4 family is refused by
name: on CPU torchao can neither make nor dequantize it, so nothing could
prove a graph of it (and its tiled kinds are kernel layouts).

``to_torch`` recognises a graph by rebuilding the layouts this module makes
(byte for byte) and builds the class again over the same memory. Only what
the descriptor states comes back: attributes that steer kernels rather than
values (``mm_config``, ``act_quant_kwargs``, ``kernel_preference``) take
their defaults. torchao is imported when such a tensor is brought back.
"""
from __future__ import annotations

from typing import Any, Optional

from ..core._facts import swizzled_128x4_count as _swizzled_count
from ..core.tensor import Tensor
from ..errors import UnsupportedError
from ..quant import library_graphs as graphs
from ._graphs import over, recognise
from ._imports import require
from ._names import dtype_leaf as _name, from_package, qualified_name

__all__ = ["from_torchao", "to_torchao"]

# Class -> (tensor_data_names, tensor_attribute_names, optional data names, optional attribute names), torchao 0.18.
_KNOWN = {
    "Float8Tensor": (("qdata", "scale"), (), (), ("block_size", "mm_config", "act_quant_kwargs", "kernel_preference",
                                                  "dtype")),
    "MXTensor": (("qdata", "scale"), ("elem_dtype", "block_size", "orig_dtype", "kernel_preference", "act_quant_kwargs",
                                      "is_swizzled_scales"), (), ()),
    "NVFP4Tensor": (("qdata", "scale"), ("block_size", "orig_dtype"), ("per_tensor_scale", "act_per_tensor_scale"),
                    ("is_swizzled_scales", "use_triton_kernel", "act_quant_kwargs")),
    "IntxUnpackedToInt8Tensor": (("qdata", "scale", "zero_point"), ("target_dtype", "block_size", "dtype",
                                                                    "activation_quantization"), (), ()),
    "Int8Tensor": (("qdata", "scale"), ("block_size", "dtype"), ("zero_point", "act_quant_scale",
                                                                 "act_quant_zero_point", "act_pre_scale"),
                   ("act_quant_kwargs", "reduce_range")),
}
_INT4 = ("Int4Tensor", "Int4PreshuffledTensor", "Int4PlainInt32Tensor", "Int4TilePackedTo4dTensor",
         "Int4MarlinSparseTensor", "Int4OpaqueTensor", "Int4ChooseQParamsAlgorithm")
_MX_ELEMENTS = {"float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2", "fp6_e2m3": "fp6_e2m3",
                "fp6_e3m2": "fp6_e3m2", "float4_e2m1fn_x2": "fp4"}
_FLOAT_OUT = ("float32", "bfloat16", "float16")


def is_torchao(obj: Any) -> bool:
    return from_package(obj, "torchao")


def _refuse(obj: Any, why: str) -> UnsupportedError:
    return UnsupportedError(f"from_torch: {qualified_name(obj)} {why}")


def _span(obj: Any, part: str, tensor: Any) -> tuple[int, int]:
    """(address, nbytes) of a contiguous CPU part tensor: its own memory."""
    if tensor.device.type != "cpu":
        raise _refuse(obj, f"has its {part} on {tensor.device}; hurray reads host memory only")
    if not tensor.is_contiguous():
        raise _refuse(obj, f"has a {part} that is not contiguous, so its layout is not torchao's plain one")
    return tensor.data_ptr(), tensor.numel() * tensor.element_size()


def _names_of(obj: Any) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(getattr(obj, key, None) or ()) for key in (
        "tensor_data_names", "tensor_attribute_names", "optional_tensor_data_names", "optional_tensor_attribute_names"))


def from_torchao(obj: Any) -> Tensor:
    """A :class:`hurray.Tensor` over the parts of torchao tensor ``obj``, its quantization a graph (no copy)."""
    kind = type(obj).__name__
    if kind in _INT4 or kind.startswith("Int4"):
        raise _refuse(obj, "is torchao's int4 family, which torchao can neither make nor dequantize on CPU "
                           "(and whose tiled kinds are kernel layouts); hurray does not state it")
    if kind not in _KNOWN:
        raise _refuse(obj, f"is a torchao tensor hurray does not know (it knows {', '.join(_KNOWN)})")
    if _names_of(obj) != _KNOWN[kind]:
        raise _refuse(obj, "has parts other than torchao 0.18's "
                           f"({_names_of(obj)} instead of {_KNOWN[kind]}): its layout may have changed, so it is "
                           "refused rather than misread")
    shape = tuple(int(n) for n in obj.shape)
    layout, parts = _layout(obj, kind, shape)
    spans = [_span(obj, name, part) for name, part in zip(layout.buffers, parts)]
    return over(layout, spans, [obj, *parts])


def _layout(obj: Any, kind: str, shape: tuple[int, ...]) -> tuple[graphs.Layout, list[Any]]:
    if kind == "Float8Tensor":
        block = tuple(int(b) for b in obj.block_size)
        out = _out(obj, obj.dtype)
        if len(block) != len(shape) or any(b < 1 or n % b for n, b in zip(shape, block)):
            raise _refuse(obj, f"has blocks {block} that do not tile its shape {shape}")
        qdtype = _name(obj.qdata.dtype)
        if qdtype not in ("float8_e4m3fn", "float8_e5m2") or _name(obj.scale.dtype) != "float32":
            raise _refuse(obj, f"holds {qdtype} codes with {_name(obj.scale.dtype)} scales, not float8 with float32")
        grid = tuple(n // b for n, b in zip(shape, block))
        if tuple(obj.scale.shape) != grid:
            raise _refuse(obj, f"has a scale of shape {tuple(obj.scale.shape)}, not {grid}")
        return graphs.torchao_float8(shape, qdtype, block, out), [obj.qdata, obj.scale]
    if kind == "MXTensor":
        elem = _MX_ELEMENTS.get(_name(obj.elem_dtype))
        if elem is None or int(obj.block_size) != 32 or not shape or shape[-1] % 32:
            raise _refuse(obj, f"has elements {obj.elem_dtype} in blocks of {obj.block_size}; hurray states fp8, "
                               "fp6 and fp4 in blocks of 32")
        swizzled = bool(obj.is_swizzled_scales)
        if swizzled and len(shape) != 2:
            raise _refuse(obj, "has swizzled scales over more than two axes")
        _check_codes(obj, obj.qdata, "uint8" if elem in ("fp4", "fp6_e2m3", "fp6_e3m2") else elem,
                     shape[:-1] + (shape[-1] // 2,) if elem == "fp4" else shape)
        if _name(obj.scale.dtype) != "float8_e8m0fnu":
            raise _refuse(obj, f"has {_name(obj.scale.dtype)} scales, not float8_e8m0fnu")
        return graphs.torchao_mx(shape, elem, _out(obj, obj.orig_dtype), swizzled), [obj.qdata, obj.scale]
    if kind == "NVFP4Tensor":
        if len(shape) != 2 or int(obj.block_size) != 16 or shape[-1] % 16:
            raise _refuse(obj, f"of shape {shape} in blocks of {obj.block_size}: hurray states 2-D NVFP4 in blocks "
                               "of 16")
        if obj.act_per_tensor_scale is not None:
            raise _refuse(obj, "carries an activation scale (act_per_tensor_scale), which a weight descriptor "
                               "does not state")
        _check_codes(obj, obj.qdata, "uint8", (shape[0], shape[1] // 2))
        if _name(obj.scale.dtype) != "float8_e4m3fn":
            raise _refuse(obj, f"has {_name(obj.scale.dtype)} scales, not float8_e4m3fn")
        parts = [obj.qdata, obj.scale]
        pts = obj.per_tensor_scale
        if pts is not None:
            if _name(pts.dtype) != "float32" or pts.numel() != 1:
                raise _refuse(obj, f"has a per_tensor_scale of {_name(pts.dtype)} {tuple(pts.shape)}, not one float32")
            parts.append(pts)
        layout = graphs.torchao_nvfp4(shape[0], shape[1], bool(obj.is_swizzled_scales), pts is not None,
                                      _out(obj, obj.orig_dtype))
        return layout, parts
    return _intx(obj, kind, shape)


def _intx(obj: Any, kind: str, shape: tuple[int, ...]) -> tuple[graphs.Layout, list[Any]]:
    block = tuple(int(b) for b in obj.block_size)
    if not shape or len(block) != len(shape) or any(b != 1 for b in block[:-1]) or shape[-1] % block[-1]:
        raise _refuse(obj, f"has blocks {block} over {shape}; hurray states groups along the last axis")
    if kind == "IntxUnpackedToInt8Tensor":
        if obj.activation_quantization is not None:
            raise _refuse(obj, "quantizes activations too, which a weight descriptor does not state")
        target = _name(obj.target_dtype)
        if target not in {f"int{b}" for b in range(1, 9)}:
            raise _refuse(obj, f"has target dtype {target}, not int1 to int8")
    else:
        extras = [n for n in ("act_quant_scale", "act_quant_zero_point", "act_pre_scale", "act_quant_kwargs")
                  if getattr(obj, n, None) is not None]
        if extras:
            raise _refuse(obj, f"carries activation parts ({', '.join(extras)}), which a weight descriptor does "
                               "not state")
        target = "int8"
    _check_codes(obj, obj.qdata, "int8", shape)
    grid = shape[:-1] + (shape[-1] // block[-1],)
    scale_dtype = _name(obj.scale.dtype)
    if scale_dtype not in _FLOAT_OUT or tuple(obj.scale.shape) != grid:
        raise _refuse(obj, f"has a {scale_dtype} scale of shape {tuple(obj.scale.shape)}, not a float one of {grid}")
    zero = obj.zero_point
    parts = [obj.qdata, obj.scale]
    if zero is not None:
        if _name(zero.dtype) != "int8" or tuple(zero.shape) != grid:
            raise _refuse(obj, f"has a {_name(zero.dtype)} zero point of shape {tuple(zero.shape)}, not int8 {grid}")
        parts.append(zero)
    layout = graphs.torchao_intx(shape, block[-1], scale_dtype, None if zero is None else "int8",
                                 _out(obj, obj.dtype), target)
    return layout, parts


def _out(obj: Any, dtype: Any) -> str:
    name = _name(dtype)
    if name not in _FLOAT_OUT:
        raise _refuse(obj, f"dequantizes to {name}, not float32, bfloat16 or float16")
    return name


def _check_codes(obj: Any, qdata: Any, dtype: str, shape: tuple[int, ...]) -> None:
    if _name(qdata.dtype) != dtype or tuple(qdata.shape) != shape:
        raise _refuse(obj, f"holds qdata {_name(qdata.dtype)} {tuple(qdata.shape)}, not torchao's {dtype} {shape}")


# ---- to_torch ------------------------------------------------------------------


def _candidates(tensor: Tensor) -> list[tuple[Any, graphs.Layout]]:
    """The layouts from_torchao makes for a tensor of this shape, parameters read from its root."""
    d = tensor.descriptor
    shape = tuple(d.shape)
    root = d.root
    blocks = tuple(getattr(root, "blocks", None) or ())
    out_dtypes = [d.result_dtype] if d.result_dtype in _FLOAT_OUT else []
    x = getattr(root, "x", None)
    code = getattr(x, "dtype", "")
    found: list[tuple[Any, graphs.Layout]] = []
    if not shape or not out_dtypes or len(blocks) != len(shape):
        return found
    out = out_dtypes[0]
    if code in ("float8_e4m3fn", "float8_e5m2") and all(b and n % b == 0 for n, b in zip(shape, blocks)):
        found.append((("Float8Tensor", code, blocks), graphs.torchao_float8(shape, code, blocks, out)))
    if shape[-1] % 32 == 0:
        for elem in ("float8_e4m3fn", "float8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4"):
            for swizzled in ((False, True) if len(shape) == 2 else (False,)):
                found.append((("MXTensor", elem, swizzled), graphs.torchao_mx(shape, elem, out, swizzled)))
    if len(shape) == 2 and shape[-1] % 16 == 0:
        for swizzled in (False, True):
            for pts in (False, True):
                found.append((("NVFP4Tensor", swizzled, pts), graphs.torchao_nvfp4(*shape, swizzled, pts, out)))
    group = blocks[-1]
    if code.startswith("int") and group and shape[-1] % group == 0:
        scale = getattr(getattr(root, "scale", None), "dtype", "")
        for zero in ("int8", None):
            for target in [f"int{b}" for b in range(1, 9)]:
                found.append((("Intx", target, group, scale, zero),
                              graphs.torchao_intx(shape, group, scale, zero, out, target)))
    return found


def to_torchao(torch: Any, tensor: Tensor, part: Any) -> Optional[Any]:
    """The torchao tensor over ``tensor``'s memory, or None when its graph is none of from_torchao's layouts.

    ``part(index, dtype, shape)`` is a torch tensor over buffer ``index``.
    """
    key = recognise(tensor.descriptor, _candidates(tensor))
    if key is None:
        return None
    require("torchao", "torchao", "hurray.to_torch of a torchao tensor")
    d = tensor.descriptor
    shape = tuple(d.shape)
    out = getattr(torch, str(d.result_dtype))
    kind = key[0]
    if kind == "Float8Tensor":
        from torchao.quantization.quantize_.workflows.float8.float8_tensor import Float8Tensor

        _, code, blocks = key
        grid = tuple(n // b for n, b in zip(shape, blocks))
        return Float8Tensor(part(0, getattr(torch, code), shape), part(1, torch.float32, grid),
                            block_size=list(blocks), dtype=out)
    if kind == "MXTensor":
        from torchao.prototype.mx_formats.mx_tensor import MXTensor
        from torchao.quantization.quantize_.common.kernel_preference import KernelPreference

        _, elem, swizzled = key
        elem_dtype = {"fp4": torch.float4_e2m1fn_x2}.get(elem, getattr(torch, elem, elem))
        codes = shape[:-1] + (shape[-1] // 2,) if elem == "fp4" else shape
        code_dtype = torch.uint8 if elem.startswith("fp") else getattr(torch, elem)
        grid = shape[:-1] + (shape[-1] // 32,)
        scale = part(1, torch.float8_e8m0fnu, (_swizzled_count(*grid),) if swizzled else grid)
        if swizzled:
            scale = scale.reshape(-(-grid[0] // 128) * 32, -(-grid[1] // 4) * 16)
        return MXTensor(part(0, code_dtype, codes), scale, elem_dtype, 32, out, KernelPreference.EMULATED, None,
                        swizzled)
    if kind == "NVFP4Tensor":
        from torchao.prototype.mx_formats.nvfp4_tensor import NVFP4Tensor

        _, swizzled, pts = key
        M, K = shape
        grid = (M, K // 16)
        scale = part(1, torch.float8_e4m3fn, (_swizzled_count(*grid),) if swizzled else grid)
        if swizzled:
            scale = scale.reshape(-(-M // 128) * 32, -(-grid[1] // 4) * 16)
        per_tensor = part(2, torch.float32, ()) if pts else None
        return NVFP4Tensor(part(0, torch.uint8, (M, K // 2)), scale, 16, out, per_tensor_scale=per_tensor,
                           is_swizzled_scales=swizzled)
    _, target, group, scale_dtype, zero = key
    grid = shape[:-1] + (shape[-1] // group,)
    block = [1] * (len(shape) - 1) + [group]
    qdata = part(0, torch.int8, shape)
    scale = part(1, getattr(torch, scale_dtype), grid)
    zero_point = part(2, torch.int8, grid) if zero else None
    if zero_point is None or (target == "int8" and scale_dtype == "float32" and group == shape[-1]):
        # Int8Tensor's layout (int8 codes, a float32 scale per row); an IntxUnpackedToInt8Tensor of int8 with
        # float32 scales per row has the same descriptor, and comes back as this, dequantizing alike (ADR-061).
        from torchao.quantization import Int8Tensor

        return Int8Tensor(qdata, scale, block, out, zero_point=zero_point)
    from torchao.quantization import IntxUnpackedToInt8Tensor

    return IntxUnpackedToInt8Tensor(qdata, scale, zero_point, getattr(torch, target), tuple(block), out, None)
