"""PyTorch both ways: ``hurray.from_torch`` and ``hurray.to_torch`` (ADR-061).

Without a copy, in either direction:

- plain tensors of every dtype Hurray has, strides kept: through DLPack for
  the dtypes DLPack names (the float8 family included), and by their bytes
  for ``float4_e2m1fn_x2`` (two fp4 elements a byte, the logical shape
  counted in fp4 elements, element 0 in the low nibble) and the one-byte
  ``uint1``..``uint7`` / ``int1``..``int7`` (Hurray's padded sub-byte types);
- legacy quantized tensors (``qint8``, ``quint8``, ``qint32`` per tensor
  and per channel on any axis, ``per_channel_affine_float_qparams``,
  ``quint4x2`` and ``quint2x4``) as version-1 affine descriptors, whose
  arithmetic is torch's: float32 per tensor, float64 for float64 channel
  scales (docs/impl/descriptor-encoding.md, "Quantization");
- torchao's and bitsandbytes' quantized tensors as version-2 graphs, by
  their bridges (torchao.py, bitsandbytes.py), which ``to_torch`` calls
  back for a graph they recognise.

The codes of a quantized tensor are read from its storage, never through
``int_repr()`` (a copy) or ``q.view(torch.int8)`` (which crashes on use);
``to_torch`` rebuilds one over the same memory with ``_empty_*_quantized``
and ``set_``. torch is imported when these are called, never by
``import hurray``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core._facts import row_major_strides
from ..core.descriptor import Descriptor, Part
from ..core.tensor import Tensor
from ..core.nodes import Constant, Step, Stored
from ..errors import InvalidArgumentError, UnsupportedError
from ..quant import library_graphs
from ._graphs import over, recognise
from ._imports import require
from ._names import dtype_leaf as _name, qualified_name, refusal

__all__ = ["from_torch", "to_torch"]


def _torch() -> Any:
    return require("torch", "torch", "hurray.from_torch / hurray.to_torch")


# torch dtype name -> Hurray dtype name, for the plain types DLPack does not
# carry one to one (their bytes are read directly).
_SUB_BYTE = {f"{kind}{bits}": f"{kind}{bits}" for kind in ("uint", "int") for bits in range(1, 8)}
_LEGACY = {"qint8": "int8", "quint8": "uint8", "qint32": "int32", "quint4x2": "uint4", "quint2x4": "uint2"}
_LEGACY_BACK = {v: k for k, v in _LEGACY.items()}
_PARAMETER_DTYPES = {"float32": "float32", "float64": "float64", "int64": "int64", "int32": "int32"}


def from_torch(obj: Any) -> Tensor:
    """A :class:`hurray.Tensor` sharing the memory of the torch tensor ``obj``, its quantization kept.

    Plain tensors of any dtype Hurray has, torch's legacy quantized
    tensors (per tensor, per channel, float qparams, ``quint4x2``,
    ``quint2x4``), torchao's quantized tensors (hurray.bridges.torchao) and
    bitsandbytes' ``Params4bit`` and ``Int8Params``
    (hurray.bridges.bitsandbytes). Another tensor subclass is refused by
    name, never read as plain memory.
    """
    torch = _torch()
    if not isinstance(obj, torch.Tensor):
        raise InvalidArgumentError(refusal(obj, "is not a torch.Tensor; from_torch takes one"))
    from . import bitsandbytes, torchao

    if torchao.is_torchao(obj):
        return torchao.from_torchao(obj)
    if bitsandbytes.is_bitsandbytes(obj):
        return bitsandbytes.from_bitsandbytes(torch, obj)
    if type(obj) not in (torch.Tensor, torch.nn.Parameter):
        raise UnsupportedError(
            f"from_torch: {qualified_name(obj)} is a tensor subclass whose layout this build of hurray "
            "does not know; it is refused rather than read as plain memory"
        )
    if obj.device.type != "cpu":
        raise UnsupportedError(f"from_torch: the tensor is on {obj.device}; hurray reads host memory only: "
                               "call .cpu() first (a copy)")
    if obj.is_quantized:
        return _from_legacy(torch, obj)
    name = _name(obj.dtype)
    if name == "float4_e2m1fn_x2":
        return _from_fp4x2(obj)
    if name in _SUB_BYTE:  # every width 1 to 7 has a Hurray type (3, 5, 6 and 7 since ADR-054)
        return _from_sub_byte(obj, _SUB_BYTE[name])
    from .dlpack import from_dlpack

    return from_dlpack(obj.detach())


def _storage_span(obj: Any) -> tuple[int, int]:
    """(address, nbytes) of the storage ``obj`` views (the storage, not a copy)."""
    storage = obj.untyped_storage()
    return storage.data_ptr(), storage.nbytes()


def _from_sub_byte(obj: Any, dtype: str) -> Tensor:
    # torch holds uint1..7 / int1..7 one per byte, in the low bits: Hurray's padded types.
    shape, strides = tuple(obj.shape), tuple(obj.stride())
    desc = Descriptor.build(dtype, shape, strides, packing="padded",
                            parts={"values": Part(dtype, 0, obj.storage_offset())})
    return Tensor(desc, [_storage_span(obj)], owner=obj)


def _from_fp4x2(obj: Any) -> Tensor:
    shape, strides = tuple(obj.shape), tuple(obj.stride())
    if not shape:
        raise UnsupportedError("from_torch: a 0-d float4_e2m1fn_x2 tensor has no axis to hold its two elements")
    if shape[-1] > 1 and strides[-1] != 1:
        raise UnsupportedError(
            f"from_torch: a float4_e2m1fn_x2 tensor's last axis must be contiguous (stride 1, not "
            f"{strides[-1]}): its two fp4 elements share a byte; call .contiguous() first (a copy)"
        )
    logical = shape[:-1] + (2 * shape[-1],)
    steps = tuple(2 * s for s in strides[:-1]) + (1,)
    desc = Descriptor.build("float4_e2m1fn", logical, steps, packing="lsb_first",
                            parts={"values": Part("float4_e2m1fn", 0, obj.storage_offset())})
    return Tensor(desc, [_storage_span(obj)], owner=obj)


def _parameter(values: Any) -> tuple[str, tuple[int, int], Any]:
    """(Hurray dtype, span, owner) of a small parameter tensor (contiguous, CPU)."""
    values = values.contiguous()
    name = _name(values.dtype)
    if name not in _PARAMETER_DTYPES:
        raise UnsupportedError(f"from_torch: quantization parameters of dtype {name} have no Hurray part")
    return _PARAMETER_DTYPES[name], (values.data_ptr(), values.numel() * values.element_size()), values


def _from_legacy(torch: Any, q: Any) -> Tensor:
    values = _LEGACY.get(_name(q.dtype))
    if values is None:
        raise UnsupportedError(f"from_torch: torch.{_name(q.dtype)} has no Hurray values type")
    scheme = _name(q.qscheme())
    shape, strides = tuple(q.shape), tuple(q.stride())
    sub_byte = values in ("uint4", "uint2")
    if sub_byte and (q.storage_offset() != 0 or not q.is_contiguous()):
        # torch packs these over the flattened tensor: only a whole, contiguous one has that order.
        raise UnsupportedError(f"from_torch: a torch.{_name(q.dtype)} view (offset or strides) has no packed layout")
    itemsize = 1 if sub_byte else q.element_size()
    spans = [_storage_span(q)]
    owners: list[Any] = [q]
    if scheme == "per_tensor_affine":
        granularity, axis = "per_tensor", 0
        # torch computes with the scale rounded to float32 (fp32(q - zp) * fp32(scale)).
        scale = torch.tensor([q.q_scale()], dtype=torch.float32)
        zero = torch.tensor([q.q_zero_point()], dtype=torch.int64)
        if float(scale[0]) != q.q_scale():
            # A double that is no float32: version 1 cannot keep both it and the float32 arithmetic; a graph
            # keeps the double as a constant and converts it as torch does.
            layout = library_graphs.torch_per_tensor(shape, values, q.q_scale(), q.q_zero_point(), strides,
                                                     q.storage_offset() * itemsize,
                                                     "lsb_first" if sub_byte else None)
            return over(layout, spans, owners)
    elif scheme in ("per_channel_affine", "per_channel_affine_float_qparams"):
        granularity, axis = "per_axis", q.q_per_channel_axis()
        scale, zero = q.q_per_channel_scales(), q.q_per_channel_zero_points()
    else:
        raise UnsupportedError(f"from_torch: the qscheme torch.{scheme} has no Hurray scheme")
    parts = {"values": Part(values, 0, q.storage_offset() * itemsize)}
    for role, param in (("scale", scale), ("zero_point", zero)):
        dtype, span, owner = _parameter(param)
        parts[role] = Part(dtype, len(spans), 0)
        spans.append(span)
        owners.append(owner)
    desc = Descriptor.build(values, shape, strides, packing="lsb_first" if sub_byte else None,
                            scheme="affine", granularity=granularity, axis=axis, parts=parts)
    return Tensor(desc, spans, owner=tuple(owners))


# ---- to_torch -----------------------------------------------------------------


def _bytes_of(tensor: Tensor, index: int, torch: Any) -> Any:
    """A 1-D torch.uint8 tensor over buffer ``index`` of ``tensor`` (no copy; it keeps ``tensor`` alive)."""
    address, nbytes = tensor.buffers[index]
    view = Tensor(Descriptor.build("uint8", (nbytes,)), [(address, nbytes)], owner=tensor)
    return torch.from_dlpack(_writable(view))


def _writable(view: Tensor) -> Tensor:
    """torch tensors have no read-only flag: a read-only Tensor is refused rather than handed out writable."""
    if view.readonly:
        raise UnsupportedError(
            "to_torch: the tensor is read-only, and a torch tensor cannot be: torch would be free to "
            "write into it. Copy it first (hurray.from_numpy(np.array(tensor)))"
        )
    return view


def to_torch(tensor: Tensor) -> Any:
    """A torch tensor over the memory of ``tensor``: plain, legacy quantized, torchao's or bitsandbytes' (no copy).

    The inverse of :func:`from_torch` for what it brings in (a graph is
    recognised as the layout from_torch makes, byte for byte); other schemes
    and graphs are refused by name (``Tensor.dequantize()`` gives their values).
    """
    torch = _torch()
    if not isinstance(tensor, Tensor):
        raise InvalidArgumentError(refusal(tensor, "is not a hurray.Tensor; to_torch takes one"))
    desc = tensor.descriptor
    if desc.scheme == "graph":
        return _graph_to_torch(torch, tensor)
    if desc.scheme == "affine":
        return _to_legacy(torch, tensor, desc)
    if desc.scheme != "none":
        raise UnsupportedError(
            f"to_torch: a {desc.scheme} tensor has no torch type; Tensor.dequantize() gives its values"
        )
    if desc.dtype == "float4_e2m1fn":
        return _to_fp4x2(torch, tensor, desc)
    if desc.dtype in _SUB_BYTE and desc.packing == "padded":
        raw = _over_bytes(torch, tensor, desc, "uint8" if desc.dtype.startswith("u") else "int8")
        return raw.view(getattr(torch, desc.dtype))
    return torch.from_dlpack(_writable(tensor))


def _graph_to_torch(torch: Any, tensor: Tensor) -> Any:
    from . import bitsandbytes, torchao

    def part(index: int, dtype: Any, shape: tuple[int, ...]) -> Any:
        """A torch tensor of ``dtype`` and ``shape`` over the start of buffer ``index`` (no copy)."""
        count = 1
        for n in shape:
            count *= n
        nbytes = count * torch.empty(0, dtype=dtype).element_size()
        raw = _bytes_of(tensor, index, torch)
        if raw.numel() < nbytes:
            raise UnsupportedError(f"to_torch: buffer {index} holds {raw.numel()} bytes, fewer than {nbytes}")
        return raw[:nbytes].view(dtype).reshape(shape)

    for bridge in (_legacy_graph_to_torch, torchao.to_torchao, bitsandbytes.to_bitsandbytes):
        made = bridge(torch, tensor, part)
        if made is not None:
            return made
    raise UnsupportedError(
        "to_torch: this graph is none of the layouts from_torch makes (torch per tensor with a float64 scale; "
        "torchao's Float8Tensor, MXTensor, "
        "NVFP4Tensor, IntxUnpackedToInt8Tensor, Int8Tensor; bitsandbytes' Params4bit, Int8Params); "
        "Tensor.dequantize() gives its values"
    )


def _legacy_graph_to_torch(torch: Any, tensor: Tensor, part: Any) -> Any:
    """The per-tensor quantized tensor whose scale is no float32, if ``tensor`` is from_torch's graph of one."""
    d = tensor.descriptor
    root = d.root
    if not (isinstance(root, Step) and isinstance(root.x, Stored) and isinstance(root.scale, Constant)
            and isinstance(root.offset, Constant)):
        return None
    x, scale, zero = root.x, float(root.scale.value), int(root.offset.value)
    qdtype = _LEGACY_BACK.get(x.dtype)
    shape = tuple(d.shape)
    packing = x.packing if isinstance(x.packing, str) else None
    layout = library_graphs.torch_per_tensor(shape, x.dtype, scale, zero, x.strides, x.offset, packing)
    if qdtype is None or recognise(d, [(qdtype, layout)]) is None:
        return None
    itemsize = 1 if qdtype in ("quint4x2", "quint2x4") else np.dtype(x.dtype).itemsize
    empty = torch._empty_affine_quantized([0], scale=scale, zero_point=zero, dtype=getattr(torch, qdtype))
    storage = _bytes_of(tensor, 0, torch).untyped_storage()
    return empty.set_(storage, x.offset // itemsize, shape, tuple(x.strides or row_major_strides(shape)))


def _over_bytes(torch: Any, tensor: Tensor, desc: Descriptor, as_dtype: str) -> Any:
    """``tensor``'s elements as a one-byte torch dtype, same shape and strides."""
    view = Tensor(Descriptor.build(as_dtype, desc.shape, desc.strides,
                                   parts={"values": Part(as_dtype, 0, desc.byte_offset)}),
                  [tensor.buffers[0]], owner=tensor)
    return torch.from_dlpack(_writable(view))


def _to_fp4x2(torch: Any, tensor: Tensor, desc: Descriptor) -> Any:
    shape, strides = tuple(desc.shape), tuple(desc.strides)
    if desc.packing != "lsb_first" or not shape or shape[-1] % 2 or (shape[-1] > 2 and strides[-1] != 1) \
            or any(s % 2 for s in strides[:-1]) or desc.byte_offset % 1:
        raise UnsupportedError(
            "to_torch: float4_e2m1fn reaches torch as float4_e2m1fn_x2 only when packed lsb_first, two to a "
            "byte along a contiguous last axis of even length"
        )
    byte_shape = shape[:-1] + (shape[-1] // 2,)
    byte_strides = tuple(s // 2 for s in strides[:-1]) + (1,)
    view = Tensor(Descriptor.build("uint8", byte_shape, byte_strides,
                                   parts={"values": Part("uint8", 0, desc.byte_offset)}),
                  [tensor.buffers[0]], owner=tensor)
    return torch.from_dlpack(_writable(view)).view(torch.float4_e2m1fn_x2)


def _parameter_array(tensor: Tensor, role: str, count: int) -> np.ndarray:
    part = tensor.descriptor.parts[role]
    address, nbytes = tensor.buffers[part.buffer_index]
    dtype = np.dtype(part.dtype)
    raw = np.asarray(Tensor(Descriptor.build(part.dtype, (count,), parts={"values": Part(part.dtype, 0, part.byte_offset)}),
                            [(address, nbytes)], owner=tensor))
    return raw.astype(dtype, copy=False)


def _to_legacy(torch: Any, tensor: Tensor, desc: Descriptor) -> Any:
    qdtype = _LEGACY_BACK.get(desc.dtype)
    scale_part, zero_part = desc.parts.get("scale"), desc.parts.get("zero_point")
    if qdtype is None or scale_part is None or zero_part is None:
        raise UnsupportedError(
            f"to_torch: affine {desc.dtype} values with{'out' if zero_part is None else ''} a zero point "
            "have no torch quantized dtype (qint8, quint8, qint32, quint4x2, quint2x4 with a zero point)"
        )
    sub_byte = qdtype in ("quint4x2", "quint2x4")
    if sub_byte and (desc.packing != "lsb_first" or desc.byte_offset != 0
                     or tuple(desc.strides) != row_major_strides(desc.shape)):
        raise UnsupportedError(f"to_torch: torch.{qdtype} holds a whole row-major tensor packed lsb_first only")
    kinds = (scale_part.dtype, zero_part.dtype)
    if desc.granularity == "per_tensor" and kinds == ("float32", "int64"):
        scale = float(_parameter_array(tensor, "scale", 1)[0])
        zero = int(_parameter_array(tensor, "zero_point", 1)[0])
        empty = torch._empty_affine_quantized([0], scale=scale, zero_point=zero, dtype=getattr(torch, qdtype))
    elif desc.granularity == "per_axis" and kinds in (("float64", "int64"), ("float32", "float32")):
        count = desc.shape[desc.axis]
        scales = torch.from_numpy(_parameter_array(tensor, "scale", count).copy())
        zeros = torch.from_numpy(_parameter_array(tensor, "zero_point", count).copy())
        empty = torch._empty_per_channel_affine_quantized([0], scales=scales, zero_points=zeros, axis=desc.axis,
                                                          dtype=getattr(torch, qdtype))
    else:
        raise UnsupportedError(
            f"to_torch: an affine tensor {desc.granularity} with {kinds[0]} scales and {kinds[1]} zero points has "
            "no torch qscheme (per tensor: float32 and int64; per channel: float64 and int64, or float32 and float32)"
        )
    itemsize = 1 if sub_byte else np.dtype(desc.dtype).itemsize
    if desc.byte_offset % itemsize:
        raise UnsupportedError("to_torch: the values do not start on a whole element")
    storage = _bytes_of(tensor, desc.parts["values"].buffer_index, torch).untyped_storage()
    return empty.set_(storage, desc.byte_offset // itemsize, tuple(desc.shape), tuple(desc.strides))

