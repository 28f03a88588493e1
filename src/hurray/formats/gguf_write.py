"""save_gguf: Tensors as a GGUF file (version 3, little-endian, alignment 32).

GGUF holds plain F32, F16, BF16, F64 and I8-I64 arrays, row-major, and
the GGML block types; it cannot hold affine, microscaling or NVFP4
quantization, sub-byte types other than its blocks, unsigned or bool or
fp8 elements, strides, a big-endian layout, or more than 4 dimensions.
Such a tensor is refused by name, before anything is written.
"""
from __future__ import annotations

import math
import os
import struct
from collections.abc import Callable, Mapping
from typing import Any, Optional

import numpy as np

from ..quant import ggml as _ggml
from ._atomic import AtomicFile, replace_atomically
from ..io._pairs import as_tensor, utf8
from ..core.descriptor import Descriptor
from ..errors import InvalidArgumentError, UnsupportedError
from ..core.tensor import Tensor

# a GGUF value type, or (9, element type) for an array
_Kind = int | tuple[int, int]

__all__ = ["save_gguf"]

ALIGNMENT = 32
_MAX_NAME = 63  # ggml's GGML_MAX_NAME is 64 bytes with the terminating zero
_PLAIN = {"float32": 0, "float16": 1, "float64": 28, "bfloat16": 30,
          "int8": 24, "int16": 25, "int32": 26, "int64": 27}
_U32, _I64, _U64, _F32, _F64, _BOOL, _STRING, _ARRAY = 4, 11, 10, 6, 12, 7, 8, 9


def _refuse(name: str, reason: str) -> UnsupportedError:
    return UnsupportedError(f"GGUF cannot hold tensor {name!r}: {reason}")


def _plan(name: str, tensor: Tensor) -> tuple[int, tuple[int, ...], np.ndarray]:
    """(ggml type number, numpy-order shape, uint8 bytes) of one tensor, or a refusal that says why."""
    desc = tensor.descriptor
    shape = tuple(desc.shape)
    if len(shape) > 4:
        raise _refuse(name, f"{len(shape)} dimensions (GGUF has at most 4)")
    if desc.scheme == "ggml":
        block_type = _ggml.GGML_BLOCKS[str(desc.ggml_type)][0]
        canonical = Descriptor.build("uint8", shape, scheme="ggml", ggml_type=desc.ggml_type)
        if canonical != desc:
            raise _refuse(name, "its GGML blocks do not start at byte 0 of one buffer")
        return block_type, shape, tensor.to_ggml()
    if desc.scheme != "none":
        raise _refuse(name, f"{desc.scheme} {desc.granularity} quantization (GGUF has only its own blocks)")
    number = _PLAIN.get(desc.dtype)
    if number is None:
        raise _refuse(name, f"dtype {desc.dtype} (GGUF has F32, F16, BF16, F64, I8, I16, I32 and I64)")
    if math.prod(shape) and Descriptor.build(desc.dtype, shape) != desc:  # no element: no layout to lose
        why = "a big-endian layout" if desc.byte_order != "little" else "strides or a byte offset"
        raise _refuse(name, f"{why} (GGUF stores row-major little-endian arrays from byte 0)")
    nbytes = math.prod(shape) * np.dtype(desc.dtype if desc.dtype != "bfloat16" else "u2").itemsize
    return number, shape, tensor.buffer(0)[:nbytes]


def _string(text: str) -> bytes:
    raw = utf8(text, "save_gguf: a metadata key or string")
    return struct.pack("<Q", len(raw)) + raw


def _kind_of(value: Any, key: str) -> int:
    if isinstance(value, bool):
        return _BOOL
    if isinstance(value, int):
        if 0 <= value < 1 << 32:
            return _U32
        return _I64 if -(1 << 63) <= value < 1 << 63 else _U64
    if isinstance(value, float):
        return _F32
    if isinstance(value, str):
        return _STRING
    if isinstance(value, (list, tuple)):
        return _ARRAY
    raise InvalidArgumentError(f"save_gguf: metadata {key!r} is a {type(value).__name__}, which GGUF cannot hold")


_CODES = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def _value(kind: _Kind, value: Any, key: str) -> bytes:
    if isinstance(kind, tuple) or (kind == _ARRAY and value and isinstance(value[0], (list, tuple))):
        raise InvalidArgumentError(f"save_gguf: metadata {key!r}: arrays of arrays need explicit types")
    if kind == _STRING:
        return _string(value)
    if kind == _ARRAY:
        kinds = {_kind_of(v, key) for v in value} or {_U32}
        if kinds == {_U32, _I64}:
            kinds = {_I64}
        if len(kinds) != 1:
            raise InvalidArgumentError(f"save_gguf: metadata {key!r} mixes value types in one array")
        inner = kinds.pop()
        return struct.pack("<IQ", inner, len(value)) + b"".join(_value(inner, v, key) for v in value)
    try:
        return struct.pack(_CODES[kind], value)  # kind is an int here
    except struct.error:
        raise InvalidArgumentError(f"save_gguf: metadata {key!r} = {value!r} does not fit its type") from None


def _kv(key: str, value: Any, kind: Optional[_Kind] = None) -> bytes:
    """One key-value; `kind` a GGUF value type, or (9, element type) for an array, or None to infer it."""
    if kind is None:
        kind = _kind_of(value, key)
    if isinstance(kind, tuple):
        if not isinstance(value, (list, tuple)):
            raise InvalidArgumentError(f"save_gguf: metadata {key!r} is typed as an array but is not a list")
        inner = kind[1]
        body = struct.pack("<IQ", inner, len(value)) + b"".join(_value(inner, v, key) for v in value)
        return _string(key) + struct.pack("<I", _ARRAY) + body
    return _string(key) + struct.pack("<I", kind) + _value(kind, value, key)


def save_gguf(path: str | os.PathLike[str], tensors: Mapping[str, Any], *, metadata: Optional[Mapping[str, Any]] = None,
              types: Optional[Mapping[str, _Kind]] = None,
              progress: Optional[Callable[[int, int], object]] = None) -> None:
    """Write `tensors` (a Mapping of names to Tensors) as a GGUF file.

    `metadata` maps keys to str, bool, int (uint32, else int64), float
    (float32) or lists of one of those, unless `types` gives a key's GGUF
    value type (``GGUFFile.metadata_types`` does, so a GGUF file's keys keep
    theirs). The alignment is always 32, GGUF's default; ``general.alignment``
    is written (as 32) only when `metadata` has it. The file is written beside `path`,
    synced and renamed over it; `progress` is called with (bytes written,
    bytes in all). A tensor GGUF cannot hold raises UnsupportedError
    naming it, and nothing is written.
    """
    if not hasattr(tensors, "items"):
        raise InvalidArgumentError(f"save_gguf: tensors must be a Mapping, not {type(tensors).__name__}")
    meta = dict(metadata or {})
    stated = meta.pop("general.alignment", None) is not None
    plans: list[tuple[str, int, tuple[int, ...], np.ndarray]] = []
    for name, value in tensors.items():
        if not isinstance(name, str) or len(utf8(name, "save_gguf: the tensor name")) > _MAX_NAME:
            raise InvalidArgumentError(f"save_gguf: tensor name {name!r} is not a str of at most {_MAX_NAME} bytes")
        plans.append((name, *_plan(name, as_tensor(value, f"save_gguf: tensor {name!r}"))))
    # 32 is GGUF's default: the key is written only when the source stated one.
    kvs = [_kv("general.alignment", ALIGNMENT, _U32)] if stated else []
    for key, value in meta.items():
        if not isinstance(key, str):
            raise InvalidArgumentError(f"save_gguf: metadata key {key!r} is not a str")
        kvs.append(_kv(key, value, (types or {}).get(key)))
    infos = []
    offset = 0
    for name, number, shape, data in plans:
        dims = tuple(reversed(shape))
        infos.append(_string(name) + struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims, number, offset))
        offset += -(-data.size // ALIGNMENT) * ALIGNMENT
    head = b"GGUF" + struct.pack("<IQQ", 3, len(plans), len(kvs)) + b"".join(kvs) + b"".join(infos)
    head += bytes(-len(head) % ALIGNMENT)
    total = sum(p[3].size for p in plans)

    def write(out: AtomicFile) -> None:
        out.write(head)
        done = 0
        for _, _, _, data in plans:
            if data.size:
                out.write(np.ascontiguousarray(data))
            out.write(bytes(-data.size % ALIGNMENT))
            done += data.size
            if progress is not None:
                progress(done, total)

    replace_atomically(path, write, "save_gguf")

