"""DLPack both ways: ``Tensor.__dlpack__`` and ``hurray.from_dlpack``.

DLPack carries one strided buffer of one plain element type. A Hurray tensor
crosses it, without a copy, exactly when that is all it is: no quantization
scheme, elements of a type DLPack has a code for, stored in native byte order
either whole, one per byte (DLPack 1.1's padded flag) or packed with element
0 in the low bits (DLPack's packed order, Hurray's ``lsb_first``). Anything
else is refused with :class:`DLPackError`, naming what the crossing would
lose; the native protocol (``__hurray__`` / ``hurray.from_hurray``) carries
it instead.

The capsules themselves are made and read in C (``hurray._dlpack``); this
module decides what may cross and translates between the two type systems.
"""
from __future__ import annotations

import ctypes
import operator
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Optional, Tuple

import numpy as np

from .._dlpack import DLPACK_MAJOR, DLPACK_MINOR, CapsuleType
from .._dlpack import export as _export
from .._dlpack import inspect as _inspect
from .._dlpack import take as _take
from .._ffi import lib
from ..core import dtypes as _dtypes
from ..core._facts import row_major_strides
from ..core.descriptor import Descriptor, check_spans, reach
from ..core.tensor import Tensor
from ..errors import DLPackError, HurrayError
from ._names import is_quantized_torch, qualified_name, refusal

__all__ = ["DLPackError", "dlpack_device", "from_dlpack", "to_dlpack", "to_dlpack_capsule"]


# DLPack device types and flags (third_party/dlpack/dlpack.h).
KDL_CPU = 1
_DEVICE_NAMES = {1: "kDLCPU", 2: "kDLCUDA", 3: "kDLCUDAHost", 4: "kDLOpenCL", 7: "kDLVulkan",
                 8: "kDLMetal", 9: "kDLVPI", 10: "kDLROCM", 11: "kDLROCMHost", 12: "kDLExtDev",
                 13: "kDLCUDAManaged", 14: "kDLOneAPI", 15: "kDLWebGPU", 16: "kDLHexagon",
                 17: "kDLMAIA", 18: "kDLTrn"}
FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1
FLAG_SUBBYTE_PADDED = 1 << 2

# The newest DLPack this bridge writes and reads; the padded flag needs 1.1.
VERSION = (DLPACK_MAJOR, DLPACK_MINOR)
_PADDED_FLAG_VERSION = (1, 1)

_CODE_NAMES = {0: "kDLInt", 1: "kDLUInt", 2: "kDLFloat", 3: "kDLOpaqueHandle", 4: "kDLBfloat",
               5: "kDLComplex", 6: "kDLBool", 7: "kDLFloat8_e3m4", 8: "kDLFloat8_e4m3",
               9: "kDLFloat8_e4m3b11fnuz", 10: "kDLFloat8_e4m3fn", 11: "kDLFloat8_e4m3fnuz",
               12: "kDLFloat8_e5m2", 13: "kDLFloat8_e5m2fnuz", 14: "kDLFloat8_e8m0fnu",
               15: "kDLFloat6_e2m3fn", 16: "kDLFloat6_e3m2fn", 17: "kDLFloat4_e2m1fn"}

# Hurray element type -> (DLPack type code, bits). bcomplex32 (two bfloat16)
# has no DLPack code: kDLComplex means IEEE halves.
_TO_DL = {
    "bool": (6, 8),
    "int1": (0, 1), "int2": (0, 2), "int4": (0, 4),
    "int8": (0, 8), "int16": (0, 16), "int32": (0, 32), "int64": (0, 64),
    "uint1": (1, 1), "uint2": (1, 2), "uint4": (1, 4),
    "uint8": (1, 8), "uint16": (1, 16), "uint32": (1, 32), "uint64": (1, 64),
    "float16": (2, 16), "float32": (2, 32), "float64": (2, 64),
    "bfloat16": (4, 16),
    "complex32": (5, 32), "complex64": (5, 64), "complex128": (5, 128),
    "float8_e3m4": (7, 8), "float8_e4m3": (8, 8), "float8_e4m3b11fnuz": (9, 8),
    "float8_e4m3fn": (10, 8), "float8_e4m3fnuz": (11, 8), "float8_e5m2": (12, 8),
    "float8_e5m2fnuz": (13, 8), "float8_e8m0fnu": (14, 8),
    "float6_e2m3fn": (15, 6), "float6_e3m2fn": (16, 6),
    "float4_e2m1fn": (17, 4),
}
_FROM_DL = {dl: name for name, dl in _TO_DL.items()}
_LSB_FIRST_WIDTHS = (1, 2, 4)  # the widths Hurray's lsb_first packing holds
_PACKING_CODES = {None: lib.HURRAY_PACKING_NONE, "padded": lib.HURRAY_PACKING_PADDED,
                  "lsb_first": lib.HURRAY_PACKING_LSB_FIRST}

_CAPSULE_TYPE = CapsuleType


def _refuse(what: str, hint: str) -> DLPackError:
    return DLPackError(f"DLPack cannot carry {what}: {hint}")


# ---- export ------------------------------------------------------------


def dlpack_device(tensor: Tensor) -> tuple[int, int]:
    """``__dlpack_device__``: Hurray tensors live in host memory, so (kDLCPU, 0)."""
    return (KDL_CPU, 0)


def _version_tuple(max_version: Any) -> Optional[tuple[int, int]]:
    """The consumer's maximum version as (major, minor), or None for legacy."""
    if max_version is None:
        return None
    try:
        major, minor = max_version
        return (operator.index(major), operator.index(minor))
    except (TypeError, ValueError):
        raise DLPackError(f"max_version must be a (major, minor) pair of ints, not {max_version!r}") from None


def _check_request(stream: Any, dl_device: Any) -> None:
    # CPU memory has no stream; -1 means "do not synchronise", which is moot.
    if stream is not None and stream != -1:
        raise DLPackError(f"stream must be None for host (kDLCPU) memory, not {stream!r}")
    if dl_device is not None:
        try:
            device = (int(dl_device[0]), int(dl_device[1]))
        except (TypeError, ValueError, IndexError):
            raise DLPackError(f"dl_device must be a (device_type, device_id) pair, not {dl_device!r}") from None
        if device != (KDL_CPU, 0):
            raise DLPackError(
                f"cannot export to DLPack device {_device_name(device)}: Hurray tensors live in "
                "host memory (kDLCPU, 0) and this bridge does not move them"
            )


def _device_name(device: tuple[int, int]) -> str:
    return f"({_DEVICE_NAMES.get(device[0], 'device type ' + str(device[0]))}, {device[1]})"


class _Plan(NamedTuple):
    """What a descriptor becomes in DLPack; made once per descriptor."""

    refusal: Optional[Tuple[str, str]]  # (what would be lost, what to do) when it cannot cross
    code: int = 0
    bits: int = 0
    padded: bool = False
    width: int = 0  # storage bits per element step
    shape: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    buffer_index: int = 0
    byte_offset: int = 0


_NATIVE_PROTOCOL = "use the native protocol (__hurray__ / hurray.from_hurray), which keeps it"
_PLANS: dict[bytes, "_Plan"] = {}  # descriptor bytes -> _Plan
_PLAN_CACHE_SIZE = 1024


def _make_plan(desc: Descriptor) -> _Plan:
    if desc.scheme != "none":
        hint = "use the native protocol (__hurray__ / hurray.from_hurray), or dequantize()"
        if desc.scheme == "ggml":
            return _Plan((f"ggml {desc.ggml_type} block quantization (scales interleaved with the values)", hint))
        others = ", ".join(role for role in desc.parts if role != "values")
        return _Plan((f"{desc.scheme} {desc.granularity} quantization ({others} buffers)", hint))
    dtype = desc.dtype
    if dtype not in _TO_DL:
        return _Plan((f"{dtype} elements (DLPack has no type code for them)", _NATIVE_PROTOCOL))
    code, bits = _TO_DL[dtype]
    if bits > 8 and desc.byte_order != sys.byteorder:
        return _Plan((f"{desc.byte_order}-endian byte order (DLPack data is always in the host's "
                      f"{sys.byteorder}-endian order)", _NATIVE_PROTOCOL))
    packing = desc.packing
    if packing == "ggml_split":
        return _Plan((f"packed {bits}-bit ggml_split order ({dtype}: byte j holds elements j and j+16 "
                      "of each run of 32; DLPack packs element 0 in the low bits)", _NATIVE_PROTOCOL))
    if packing not in ("none", "padded", "lsb_first"):
        return _Plan((f"{packing} packing", _NATIVE_PROTOCOL))
    values = desc.parts["values"]
    padded = packing == "padded"
    return _Plan(None, code, bits, padded, 8 if padded else bits, desc.shape, desc.strides,
                 values.buffer_index, values.byte_offset)


def _plan_of(desc: Descriptor) -> _Plan:
    key = desc.encode()  # equal descriptors share a plan; the bytes' hash is cached
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) >= _PLAN_CACHE_SIZE:
            _PLANS.clear()
        plan = _PLANS[key] = _make_plan(desc)
    return plan


def _reach_bits(shape: Sequence[int], strides: Sequence[int], width: int) -> tuple[int, int]:
    """(lowest, end) bit positions the view reaches, relative to element 0."""
    if 0 in shape:
        return 0, 0
    lo, hi = reach(shape, strides)
    return lo * width, (hi + 1) * width


def _copy_view(data: int, shape: Sequence[int], strides: Sequence[int], width: int) -> tuple[np.ndarray, int]:
    """A private copy of every byte the view reaches: (owner array, new element-0 address)."""
    lo_bits, end_bits = _reach_bits(shape, strides, width)
    first = lo_bits // 8
    last = -(-end_bits // 8)
    copy = np.empty(max(last - first, 1), dtype=np.uint8)
    if last > first:
        ctypes.memmove(copy.ctypes.data, data + first, last - first)
    return copy, copy.ctypes.data - first


def to_dlpack_capsule(tensor: Tensor, max_version: Any = None, *, stream: Any = None, dl_device: Any = None,
                      copy: Optional[bool] = None) -> Any:
    """The capsule ``Tensor.__dlpack__`` returns.

    A "dltensor_versioned" capsule (version 1.1) when ``max_version`` is at
    least (1, 0), else a legacy "dltensor" one. Zero-copy unless ``copy`` is
    True; the capsule's deleter holds a strong reference to ``tensor`` (or to
    the copy). Strides count elements and the data pointer is element 0
    (byte_offset 0), the form numpy and PyTorch write and read. A read-only
    tensor sets the READ_ONLY flag, so it needs a versioned capsule.

    The deleter's reference to ``tensor`` is invisible to the cycle
    collector (design note D-NB2, decision 11).
    """
    version = _version_tuple(max_version)
    versioned = version is not None and version >= (1, 0)
    if stream is not None or dl_device is not None:
        _check_request(stream, dl_device)
    plan = _plan_of(tensor.descriptor)
    if plan.refusal is not None:
        raise _refuse(*plan.refusal)
    flags = 0
    if plan.padded:
        # A 1.0 consumer does not know the flag and would read the bytes as packed.
        if version is None or version < _PADDED_FLAG_VERSION:
            asked = f"max_version={version}" if versioned else "a legacy capsule"
            raise _refuse(
                f"padded {tensor.descriptor.dtype} storage (one element per byte) in {asked}",
                "it needs DLPack 1.1's IS_SUBBYTE_TYPE_PADDED flag; ask with max_version=(1, 1) or later",
            )
        flags = FLAG_SUBBYTE_PADDED
    data = tensor.buffers[plan.buffer_index][0] + plan.byte_offset
    owner: Any = tensor
    if copy:
        owner, data = _copy_view(data, plan.shape, plan.strides, plan.width)
        if versioned:
            flags |= FLAG_IS_COPIED
    elif tensor.readonly:
        if not versioned:
            raise _refuse(
                "a read-only tensor in a legacy capsule (it has no read-only flag)",
                "ask with max_version=(1, 0) or later, or pass copy=True",
            )
        flags |= FLAG_READ_ONLY
    return _export(owner, data, plan.code, plan.bits, plan.shape, plan.strides, flags, versioned)


def to_dlpack(tensor: Tensor, stream: Any = None, *, max_version: Any = None, dl_device: Any = None,
              copy: Optional[bool] = None) -> Any:
    """``Tensor.__dlpack__`` (the array API signature): see :func:`to_dlpack_capsule`."""
    return to_dlpack_capsule(tensor, max_version, stream=stream, dl_device=dl_device, copy=copy)


# ---- import ------------------------------------------------------------


def _capsule_of(x: Any) -> Any:
    """Ask `x` for a DLPack capsule (or take `x` itself if it is one)."""
    if isinstance(x, _CAPSULE_TYPE):
        return x
    dlpack = getattr(x, "__dlpack__", None)
    if dlpack is None:
        raise DLPackError(refusal(x, "has no __dlpack__ method and is not a DLPack capsule"))
    device_of = getattr(x, "__dlpack_device__", None)
    if device_of is not None:
        device = _device_of(x, device_of)
        if device[0] != KDL_CPU:
            raise DLPackError(
                f"the tensor is on DLPack device {_device_name(device)}; hurray.from_dlpack "
                "reads host memory (kDLCPU) only"
            )
    try:
        try:
            return dlpack(max_version=VERSION)
        except TypeError:
            return dlpack()  # a producer older than DLPack 1.0's keywords
    except HurrayError:
        raise
    except Exception as exc:
        hint = ""
        if is_quantized_torch(x):
            hint = (f". DLPack has no quantized types: a {getattr(x, 'dtype', 'quantized')} tensor comes in "
                    "with hurray.from_torch(obj), with its scales and zero points")
        raise DLPackError(f"{qualified_name(x)}.__dlpack__ refused: {exc}{hint}") from exc


def _device_of(x: Any, device_of: Callable[[], Any]) -> tuple[int, int]:
    """``x.__dlpack_device__()`` as a (device_type, device_id) pair of ints."""
    name = type(x).__name__
    try:
        answer = device_of()
    except HurrayError:
        raise
    except Exception as exc:
        raise DLPackError(f"{name}.__dlpack_device__ refused: {exc}") from exc
    try:
        device_type, device_id = answer
        return (operator.index(device_type), operator.index(device_id))
    except Exception:
        raise DLPackError(
            f"{name}.__dlpack_device__() must return a (device_type, device_id) pair of ints, "
            f"not {answer!r}"
        ) from None


def _import_plan(info: tuple[Any, ...]) -> tuple[Descriptor, tuple[tuple[int, int]]]:
    """Check a capsule's facts; return (descriptor, spans): the one span, as a Tensor takes it."""
    if len(info) == 3:
        _, major, minor = info
        raise DLPackError(
            f"DLPack version {major}.{minor} is not readable here: this bridge reads major version "
            f"{VERSION[0]} (the capsule is left to its producer's deleter)"
        )
    (versioned, _major, _minor, flags, device_type, device_id, code, bits, lanes,
     data, byte_offset, shape, strides, _managed) = info
    if device_type != KDL_CPU:
        raise DLPackError(
            f"the tensor is on DLPack device {_device_name((device_type, device_id))}; "
            "hurray.from_dlpack reads host memory (kDLCPU) only"
        )
    if lanes != 1:
        raise DLPackError(f"vector elements ({lanes} lanes of {_CODE_NAMES.get(code, code)} {bits}-bit) "
                          "have no Hurray element type")
    name = _FROM_DL.get((code, bits))
    if name is None:
        raise DLPackError(
            f"DLPack type {_CODE_NAMES.get(code, 'code ' + str(code))} with {bits} bits "
            "has no Hurray element type"
        )
    if any(n < 0 for n in shape):
        raise DLPackError(f"the DLPack shape {shape} has a negative dimension")
    if strides is None:
        strides = row_major_strides(shape)
    packing = None
    width = bits
    if bits < 8:
        if flags & FLAG_SUBBYTE_PADDED:
            packing, width = "padded", 8
        elif bits in _LSB_FIRST_WIDTHS:
            packing = "lsb_first"
        else:
            raise DLPackError(
                f"packed {bits}-bit {name} elements (DLPack's default for sub-byte types) have no "
                "Hurray packing; a producer can send them padded (IS_SUBBYTE_TYPE_PADDED)"
            )
    lo_bits, end_bits = _reach_bits(shape, strides, width)
    first, last = lo_bits // 8, -(-end_bits // 8)
    if last > first and data == 0:
        raise DLPackError("the DLPack tensor has elements but a NULL data pointer")
    # An empty tensor may have a NULL pointer; NULL plus an offset is no address.
    start = data + byte_offset if data else 0
    # The span [start + first, start + last) must end below 2**64, or no
    # pointer can hold its end.
    if start + first < 0 or start + last >= 1 << 64:
        raise DLPackError(
            f"the DLPack tensor (data {data:#x}, byte_offset {byte_offset}, shape {shape}, "
            f"strides {strides}) reaches outside the address space"
        )
    # Descriptor._from_codes is the package's fast builder; it validates as build() does.
    dtype = _dtypes.dtype_code(name)
    desc = Descriptor._from_codes(
        dtype, shape, strides, lib.HURRAY_BYTE_ORDER_LITTLE, _PACKING_CODES[packing], None,
        {lib.HURRAY_ROLE_VALUES: (dtype, 0, -first, lib.HURRAY_PART_LAYOUT_ROW_MAJOR)},
    )
    return desc, ((start + first, last - first),)


def from_dlpack(x: Any) -> Tensor:
    """A zero-copy :class:`hurray.Tensor` over the memory of a DLPack producer.

    `x` is an object with ``__dlpack__`` (numpy, PyTorch, ...) or a DLPack
    capsule. The capsule is taken (renamed "used_dltensor[_versioned]") only
    once it has been checked; the producer's deleter runs exactly once, when
    the last user of the returned tensor is gone. Memory the producer marked
    read-only gives a read-only tensor, and so does a legacy ("dltensor")
    capsule, which cannot say whether its memory may be written (ADR-037,
    decision 5; numpy's ``from_dlpack`` does the same).

    The tensor's hold on the producer (through its deleter) is invisible to
    the cycle collector (design note D-NB2, decision 11).
    """
    capsule = _capsule_of(x)
    info = _inspect(capsule)
    desc, spans = _import_plan(info)
    # Every check, the descriptor against the span included, runs before the
    # capsule is taken: a refused capsule stays its producer's, deleter uncalled.
    check_spans(desc, spans)
    owner = _take(capsule, info[13], info[9])  # the very struct and data checked
    # Only a versioned capsule can say its memory may be written (ADR-037, decision 5).
    readonly = owner.readonly or not owner.versioned
    return Tensor._from_checked(desc, spans, owner, readonly)


# The hot path in C (ADR-046): a plain writable tensor asked for a zero-copy
# versioned capsule on the CPU, whose plan _PLANS holds, is exported by
# hurray._core with no Python frame; everything else, and every refusal, is
# to_dlpack above. hurray._wiring hands _core both.
