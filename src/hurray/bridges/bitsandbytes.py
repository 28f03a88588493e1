"""bitsandbytes' quantized weights through ``hurray.from_torch`` / ``hurray.to_torch`` (ADR-061).

``Params4bit`` (NF4 or FP4, absmax plain or nested) and ``Int8Params``
(LLM.int8 with its ``SCB``) come in as version-2 graphs
(hurray.quant.library_graphs) over bitsandbytes' own tensors: the packed
codes, the state's 16-entry table (``quant_state.code``, so FP4's code 8 is
the zero the state holds), absmax, and the nested table and absmax; the
nested offset is a constant of the descriptor. Blocks run over the
flattened weight, as ``quantize_4bit`` made them.

A weight that bitsandbytes' CPU forward has rewritten
(``packing_format_for_cpu``: tiled codes, bfloat16 absmax) is refused by
name: its layout is a kernel's, and its absmax already rounded.
``to_torch`` recognises the graphs this module makes (byte for byte) and
builds a ``Params4bit`` (uint8 storage) or ``Int8Params`` over the same
memory; bitsandbytes is imported then.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np

from ..core.nodes import Constant, Step
from ..core.tensor import Tensor
from ..errors import UnsupportedError
from ..quant.library_graphs import FP4, NF4
from ..quant import library_graphs as graphs
from ._graphs import buffer_bytes, over, recognise
from ._imports import require
from ._names import dtype_leaf as _name, from_package, qualified_name

__all__ = ["from_bitsandbytes", "to_bitsandbytes"]

_OUT = ("float32", "bfloat16", "float16")


def is_bitsandbytes(obj: Any) -> bool:
    return from_package(obj, "bitsandbytes")


def _refuse(obj: Any, why: str) -> UnsupportedError:
    return UnsupportedError(f"from_torch: {qualified_name(obj)} {why}")


def _span(obj: Any, what: str, tensor: Any, dtype: str, count: int) -> tuple[int, int]:
    """(address, nbytes) of a contiguous CPU tensor of ``dtype`` holding ``count`` elements."""
    if tensor is None or tensor.device.type != "cpu" or not tensor.is_contiguous():
        raise _refuse(obj, f"has no contiguous host tensor for {what}")
    if _name(tensor.dtype) != dtype or tensor.numel() != count:
        raise _refuse(obj, f"has {what} of {_name(tensor.dtype)} x {tensor.numel()}, not bitsandbytes' {dtype} x {count}")
    return tensor.data_ptr(), tensor.numel() * tensor.element_size()


def from_bitsandbytes(torch: Any, obj: Any) -> Tensor:
    kind = type(obj).__name__
    if kind == "Params4bit":
        return _four_bit(obj)
    if kind == "Int8Params":
        return _int8(obj)
    raise _refuse(obj, "is a bitsandbytes tensor hurray does not know (it knows Params4bit and Int8Params)")


def _four_bit(obj: Any) -> Tensor:
    qs = getattr(obj, "quant_state", None)
    if qs is None or not getattr(obj, "bnb_quantized", False):
        raise _refuse(obj, "is not quantized yet (bitsandbytes quantizes when the module moves to a device)")
    if getattr(qs, "packing_format_for_cpu", False):
        raise _refuse(obj, "was rewritten by bitsandbytes' CPU forward (packing_format_for_cpu: tiled codes, "
                           "bfloat16 absmax), a kernel layout whose absmax is already rounded; take the weight "
                           "before the first forward, or reload it")
    if qs.quant_type not in ("nf4", "fp4"):
        raise _refuse(obj, f"has quant_type {qs.quant_type!r}, not nf4 or fp4")
    shape = tuple(int(n) for n in qs.shape)
    n, bs = math.prod(shape), int(qs.blocksize)
    nb = -(-n // bs)
    out = _name(qs.dtype)
    if out not in _OUT:
        raise _refuse(obj, f"dequantizes to {out}, not float32, bfloat16 or float16")
    data = obj.data
    if data.device.type != "cpu" or not data.is_contiguous() or data.numel() * data.element_size() < -(-n // 2):
        raise _refuse(obj, f"holds {data.numel() * data.element_size()} bytes of codes, not the {-(-n // 2)} "
                           f"that {n} elements pack into")
    spans = [(data.data_ptr(), -(-n // 2)), _span(obj, "quant_state.code", qs.code, "float32", 16)]
    parts = [obj, data, qs.code]
    if getattr(qs, "nested", False):
        s2 = qs.state2
        if s2 is None or int(s2.blocksize) != 256 or qs.offset is None or qs.offset.numel() != 1:
            raise _refuse(obj, "has a nested state that is not bitsandbytes' (blocks of 256 with one offset)")
        spans.append(_span(obj, "the nested absmax codes", qs.absmax, "uint8", nb))
        spans.append(_span(obj, "state2.code", s2.code, "float32", 256))
        spans.append(_span(obj, "state2.absmax", s2.absmax, "float32", -(-nb // 256)))
        parts += [qs.absmax, s2.code, s2.absmax]
        offset: Optional[float] = float(np.float32(qs.offset.item()))
    else:
        spans.append(_span(obj, "absmax", qs.absmax, "float32", nb))
        parts.append(qs.absmax)
        offset = None
    return over(graphs.bnb_4bit(shape, bs, offset, out), spans, parts)


def _int8(obj: Any) -> Tensor:
    if getattr(obj, "has_fp16_weights", False) or _name(obj.dtype) != "int8" or obj.dim() != 2:
        raise _refuse(obj, "holds no LLM.int8 codes (int8 [O, I] with has_fp16_weights=False, quantized by .to())")
    rows, cols = (int(n) for n in obj.shape)
    scb = getattr(obj, "SCB", None)
    spans = [_span(obj, "the codes", obj.data, "int8", rows * cols), _span(obj, "SCB", scb, "float32", rows)]
    return over(graphs.llm_int8(rows, cols), spans, [obj, obj.data, scb])


# ---- to_torch ------------------------------------------------------------------


def _candidates(tensor: Tensor) -> list[tuple[Any, graphs.Layout]]:
    d = tensor.descriptor
    shape, root = tuple(d.shape), d.root
    found: list[tuple[Any, graphs.Layout]] = []
    if len(shape) == 2:
        found.append((("int8",), graphs.llm_int8(*shape)))
    if not isinstance(root, Step) or not root.blocks or d.result_dtype not in _OUT:
        return found
    bs = int(root.blocks[0])
    found.append((("4bit", bs, None), graphs.bnb_4bit(shape, bs, None, d.result_dtype)))
    nested = root.scale
    if isinstance(nested, Step) and isinstance(nested.offset, Constant):
        offset = float(nested.offset.value)
        found.append((("4bit", bs, offset), graphs.bnb_4bit(shape, bs, offset, d.result_dtype)))
    return found


def _quant_type(table: np.ndarray) -> Optional[str]:
    """nf4 or fp4 by the state's table (FP4's code 8 may be either zero), None for another."""
    for name, reference in (("nf4", NF4), ("fp4", FP4)):
        same = table.view(np.uint32) == reference.view(np.uint32)
        if name == "fp4":
            same[8] = table[8] == 0.0
        if same.all():
            return name
    return None


def to_bitsandbytes(torch: Any, tensor: Tensor, part: Callable[[int, Any, tuple[int, ...]], Any]) -> Optional[Any]:
    """The bitsandbytes parameter over ``tensor``'s memory, or None when its graph is none of this module's."""
    key = recognise(tensor.descriptor, _candidates(tensor))
    if key is None:
        return None
    require("bitsandbytes", "bitsandbytes", "hurray.to_torch of a bitsandbytes weight")
    from bitsandbytes.functional import QuantState
    from bitsandbytes.nn import Int8Params, Params4bit

    shape = tuple(tensor.descriptor.shape)
    if key[0] == "int8":
        p = Int8Params(part(0, torch.int8, shape), requires_grad=False, has_fp16_weights=False,
                       SCB=part(1, torch.float32, (shape[0],)))
        p.CB = p.data
        return p
    _, bs, offset = key
    code = buffer_bytes(tensor, 1, 64, "to_torch").view(np.float32)
    quant_type = _quant_type(code)
    if quant_type is None:
        raise UnsupportedError("to_torch: a bitsandbytes 4-bit graph whose table is neither NF4 nor FP4")
    n = math.prod(shape)
    nb = -(-n // bs)
    state2 = None
    if offset is None:
        absmax = part(2, torch.float32, (nb,))
    else:
        absmax = part(2, torch.uint8, (nb,))
        state2 = QuantState(absmax=part(4, torch.float32, (-(-nb // 256),)), code=part(3, torch.float32, (256,)),
                            blocksize=256, dtype=torch.float32)
    state = QuantState(absmax=absmax, shape=torch.Size(shape), code=part(1, torch.float32, (16,)), blocksize=bs,
                       quant_type=quant_type, dtype=getattr(torch, str(tensor.descriptor.result_dtype)),
                       offset=None if offset is None else torch.tensor(offset, dtype=torch.float32), state2=state2)
    return Params4bit(part(0, torch.uint8, (-(-n // 2), 1)), requires_grad=False, quant_state=state, blocksize=bs,
                      compress_statistics=offset is not None, quant_type=quant_type, quant_storage=torch.uint8,
                      bnb_quantized=True)
