"""GGML block formats: wrapping GGUF tensor bytes, and decoding them.

`from_ggml` wraps the block bytes of one GGUF tensor as a Tensor without
copying them; `to_ggml` hands the same bytes back. (`from_gguf` and
`to_gguf` are their old names, kept: they never read or wrote .gguf files.) `dequantize_ggml` decodes
the blocks with the ggml formulas, evaluated in the same float32 operation
order as gguf-py, so that both give identical bits.

Block layouts (little-endian; fp16 scales):

========  ======  =====  =============================================
type      values  bytes  fields in memory order
========  ======  =====  =============================================
q4_0      32      18     d, qs[16]                 d * (q - 8)
q4_1      32      20     d, m, qs[16]              d * q + m
q5_0      32      22     d, qh[4], qs[16]          d * (q - 16)
q5_1      32      24     d, m, qh[4], qs[16]       d * q + m
q8_0      32      34     d, int8 qs[32]            d * q
mxfp4     32      17     e (E8M0), qs[16] (E2M1)   e2m1 * 2^(e - 127)
q4_k      256     144    d, dmin, scales[12], qs[128]
q6_k      256     210    ql[128], qh[64], int8 scales[16], d
========  ======  =====  =============================================

In the 32-element formats byte j of qs holds element j in its low nibble
and element j + 16 in its high nibble; q5's fifth bit of element k is bit k
of qh read as a little-endian uint32.
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from ..core import _facts
from ..core import packing as _packing
from ..core.descriptor import Descriptor
from ..core.tensor import Tensor
from ..errors import BufferTooSmallError, InvalidArgumentError, InvalidDescriptorError, UnsupportedError

__all__ = ["GGML_BLOCKS", "decode_blocks", "dequantize_ggml", "from_ggml", "from_gguf", "ggml_block", "to_ggml", "to_gguf"]

# GGUF spelling -> (GGUF type number, elements per block, bytes per block),
# read from the C library (hurray_ggml_block). Not descriptor's code table.
GGML_BLOCKS = _facts.GGML_BLOCKS


def ggml_block(name: str) -> tuple[int, int]:
    """(elements, bytes) of one block of the GGML type `name` (case-insensitive)."""
    if not isinstance(name, str):
        raise InvalidArgumentError(f"a GGML type name must be a str, not {type(name).__name__}")
    info = GGML_BLOCKS.get(name.lower())
    if info is None:
        known = ", ".join(n.upper() for n in GGML_BLOCKS)
        raise UnsupportedError(f"GGML type {name!r} is not supported (known: {known})")
    return info[1], info[2]


# ---- wrapping ----------------------------------------------------------

def from_ggml(data: Any, ggml_type_name: str, shape: Any) -> Tensor:
    """Wrap GGUF block bytes as a Tensor of logical `shape`, without copying.

    `data` is any C-contiguous buffer (bytes, bytearray, memoryview, a uint8
    numpy array) holding exactly the tensor's blocks; `shape` is the logical
    element shape, row-major (GGUF lists dimensions innermost first:
    reverse them). The Tensor keeps `data` alive, and is read-only when
    `data` is (bytes, for one).
    """
    elements, block_bytes = ggml_block(ggml_type_name)
    shape = _shape(shape)
    if shape[-1] % elements:
        raise InvalidArgumentError(
            f"from_ggml: the last dimension ({shape[-1]}) is not a multiple of the "
            f"{ggml_type_name.upper()} block of {elements} elements"
        )
    array = _byte_array(data)
    count = 1
    for dim in shape:
        count *= dim
    expected = count // elements * block_bytes
    if array.size != expected:
        error = BufferTooSmallError if array.size < expected else InvalidArgumentError
        raise error(
            f"from_ggml: shape {shape} as {ggml_type_name.upper()} needs exactly {expected} bytes "
            f"({count // elements} blocks of {block_bytes}), but data holds {array.size}"
        )
    descriptor = Descriptor.build("uint8", shape, scheme="ggml", ggml_type=ggml_type_name.lower())
    address = array.__array_interface__["data"][0]
    return Tensor(descriptor, buffers=((address, array.size),), owner=array,
                  readonly=not array.flags.writeable)


def to_ggml(tensor: Tensor) -> np.ndarray:
    """The block bytes of a GGML tensor, as a zero-copy uint8 array."""
    desc = tensor.descriptor
    if desc.scheme != "ggml":
        raise InvalidArgumentError(f"to_ggml: the tensor's scheme is {desc.scheme}, not ggml")
    return _block_bytes(tensor, desc).reshape(-1)


# The old names, kept working: they take and return GGML block bytes, not .gguf files.
from_gguf = from_ggml
to_gguf = to_ggml


def _shape(shape: Any) -> tuple[int, ...]:
    try:
        dims = tuple(shape)
    except TypeError:
        raise InvalidArgumentError(f"from_ggml: shape must be a sequence of ints, not {shape!r}") from None
    out = []
    for dim in dims:
        if isinstance(dim, (bool, np.bool_)):
            raise InvalidArgumentError(f"from_ggml: shape {dims!r} holds a bool")
        try:
            dim = operator.index(dim)
        except TypeError:
            raise InvalidArgumentError(f"from_ggml: shape {dims!r} holds a non-integer") from None
        if dim < 0:
            raise InvalidArgumentError(f"from_ggml: shape {dims!r} holds a negative dimension")
        out.append(dim)
    if not out:
        raise InvalidArgumentError("from_ggml: a GGML tensor needs rank 1 or more")
    return tuple(out)


def _byte_array(data: Any) -> np.ndarray:
    """A 1-D uint8 view of `data`'s memory (never a copy)."""
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8:
            raise InvalidArgumentError(f"from_ggml: a numpy array must be uint8, not {data.dtype}")
        if not data.flags.c_contiguous:
            raise InvalidArgumentError("from_ggml: the numpy array is not C-contiguous")
        return data.reshape(-1)
    try:
        view = memoryview(data)
    except TypeError:
        raise InvalidArgumentError(
            f"from_ggml: data must be bytes, bytearray, memoryview or a uint8 array, "
            f"not {type(data).__name__}"
        ) from None
    if not view.c_contiguous:
        raise InvalidArgumentError("from_ggml: the data buffer is not C-contiguous")
    return np.frombuffer(view.cast("B"), np.uint8)


def _ggml_type(desc: Descriptor) -> str:
    name = desc.ggml_type
    if name is None:
        raise InvalidDescriptorError(f"ggml: the tensor's scheme is {desc.scheme}, not ggml")
    return name


def _block_bytes(tensor: Tensor, desc: Descriptor) -> np.ndarray:
    """The values part as an (nblocks, block_bytes) uint8 view."""
    elements, block_bytes = ggml_block(_ggml_type(desc))
    shape = tuple(desc.shape)
    if not shape or shape[-1] % elements:
        raise InvalidDescriptorError(
            f"ggml: shape {shape} is not whole {desc.ggml_type} blocks of {elements} elements"
        )
    count = 1
    for dim in shape:
        count *= dim
    blocks = count // elements
    if blocks == 0:
        return np.empty((0, block_bytes), np.uint8)
    part = desc.parts["values"]
    start = part.byte_offset
    buf = tensor.buffer(part.buffer_index)
    return buf[start:start + blocks * block_bytes].reshape(blocks, block_bytes)


# ---- decoding ----------------------------------------------------------

def dequantize_ggml(tensor: Tensor) -> np.ndarray:
    """Decode a GGML tensor's blocks to a float32 array of its shape."""
    desc = tensor.descriptor
    blocks = _block_bytes(tensor, desc)
    decode = _DECODERS[_ggml_type(desc)]
    return decode(blocks).reshape(tuple(desc.shape))


def decode_blocks(ggml_type_name: str, blocks: Any) -> np.ndarray:
    """Decode an (nblocks, block_bytes) uint8 array to (nblocks, elements) float32."""
    elements, block_bytes = ggml_block(ggml_type_name)
    blocks = np.asarray(blocks)
    if blocks.dtype != np.uint8 or blocks.ndim != 2 or blocks.shape[1] != block_bytes:
        raise InvalidArgumentError(f"decode_blocks: expected uint8 blocks of shape (n, {block_bytes})")
    return _DECODERS[ggml_type_name.lower()](blocks)


def _f16(blocks: np.ndarray, at: int) -> np.ndarray:
    """The little-endian fp16 at byte `at` of every block, as float32 of shape (n, 1)."""
    bits = blocks[:, at].astype(np.uint16) | (blocks[:, at + 1].astype(np.uint16) << np.uint16(8))
    return bits.view(np.float16).astype(np.float32).reshape(-1, 1)


def _u32(blocks: np.ndarray, at: int) -> np.ndarray:
    word = np.zeros(blocks.shape[0], np.uint32)
    for k in range(4):
        word |= blocks[:, at + k].astype(np.uint32) << np.uint32(8 * k)
    return word


def _split_nibbles(qs: np.ndarray) -> np.ndarray:
    """(n, 16) bytes -> (n, 32) codes in ggml's split order (packing "ggml_split")."""
    n = qs.shape[0]
    return _packing.unpack(np.ascontiguousarray(qs).reshape(-1), 4, 32 * n, "ggml_split").reshape(n, 32)


def _fifth_bits(blocks: np.ndarray, at: int) -> np.ndarray:
    """Bit k of the little-endian uint32 at `at`, for k in 0..31, as uint8 (n, 32)."""
    word = _u32(blocks, at).reshape(-1, 1)
    return ((word >> np.arange(32, dtype=np.uint32)) & np.uint32(1)).astype(np.uint8)


def _q4_0(blocks: np.ndarray) -> np.ndarray:
    d = _f16(blocks, 0)
    q = _split_nibbles(blocks[:, 2:18]).astype(np.int8) - np.int8(8)
    return d * q.astype(np.float32)


def _q4_1(blocks: np.ndarray) -> np.ndarray:
    d = _f16(blocks, 0)
    m = _f16(blocks, 2)
    q = _split_nibbles(blocks[:, 4:20]).astype(np.float32)
    return d * q + m


def _q5_0(blocks: np.ndarray) -> np.ndarray:
    d = _f16(blocks, 0)
    q = _split_nibbles(blocks[:, 6:22]) | (_fifth_bits(blocks, 2) << np.uint8(4))
    return d * (q.astype(np.int8) - np.int8(16)).astype(np.float32)


def _q5_1(blocks: np.ndarray) -> np.ndarray:
    d = _f16(blocks, 0)
    m = _f16(blocks, 2)
    q = _split_nibbles(blocks[:, 8:24]) | (_fifth_bits(blocks, 4) << np.uint8(4))
    return d * q.astype(np.float32) + m


def _q8_0(blocks: np.ndarray) -> np.ndarray:
    d = _f16(blocks, 0)
    return d * blocks[:, 2:34].view(np.int8).astype(np.float32)


# E2M1 values doubled, as ggml tabulates them (integers: code 8 is +0).
_E2M1_DOUBLED = (np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32) * 2).astype(
    np.int8
).astype(np.float32)


def _e8m0_half(e: np.ndarray) -> np.ndarray:
    """2^(e - 128) as float32, built from bits the way ggml does (e = 0 and 1
    give subnormals; e = 255 gives 2^127, not NaN)."""
    e = e.astype(np.uint32)
    small = np.uint32(0x00200000) << np.minimum(e, 1)
    bits = np.where(e < 2, small, (np.maximum(e, 1) - np.uint32(1)) << np.uint32(23))
    return bits.astype(np.uint32).view(np.float32)


def _mxfp4(blocks: np.ndarray) -> np.ndarray:
    half = _e8m0_half(blocks[:, 0]).reshape(-1, 1)
    with np.errstate(over="ignore"):  # e = 255 times 12 is infinite in ggml too
        return half * _E2M1_DOUBLED[_split_nibbles(blocks[:, 1:17])]


def _q4_k(blocks: np.ndarray) -> np.ndarray:
    n = blocks.shape[0]
    d = _f16(blocks, 0)
    dmin = _f16(blocks, 2)
    # Eight 6-bit scales and mins: sub-blocks 0-3 in the low 6 bits of bytes
    # 0-3 (scales) and 4-7 (mins); sub-blocks 4-7 take 4 bits from bytes 8-11
    # and their top 2 bits from the spare high bits of bytes 0-7.
    packed = blocks[:, 4:16]
    first, second, third = packed[:, 0:4], packed[:, 4:8], packed[:, 8:12]
    six = np.uint8(63)
    scales = np.concatenate([first & six, (third & np.uint8(15)) | ((first >> np.uint8(6)) << np.uint8(4))], axis=1)
    mins = np.concatenate([second & six, (third >> np.uint8(4)) | ((second >> np.uint8(6)) << np.uint8(4))], axis=1)
    step = (d * scales.astype(np.float32)).reshape(n, 8, 1)
    offset = (dmin * mins.astype(np.float32)).reshape(n, 8, 1)
    # qs: four runs of 32 bytes; run j gives sub-block 2j (low nibbles) and 2j+1 (high).
    runs = blocks[:, 16:144].reshape(n, 4, 1, 32)
    q = ((runs >> np.array([0, 4], np.uint8).reshape(1, 1, 2, 1)) & np.uint8(15)).reshape(n, 8, 32)
    return (step * q.astype(np.float32) - offset).reshape(n, 256)


def _q6_k(blocks: np.ndarray) -> np.ndarray:
    n = blocks.shape[0]
    # Two halves of 128 elements; in each, element 32 g + l takes its low
    # nibble from ql byte l (g = 0, 2) or l + 32 (g = 1, 3), low or high by
    # g // 2, and its top two bits from qh byte l at bit 2 g.
    ql = blocks[:, 0:128].reshape(n, 2, 1, 2, 32)
    low = (ql >> np.array([0, 4], np.uint8).reshape(1, 1, 2, 1, 1)) & np.uint8(15)
    low = low.reshape(n, 2, 4, 32)
    qh = blocks[:, 128:192].reshape(n, 2, 1, 32)
    high = (qh >> np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 4, 1)) & np.uint8(3)
    q = ((low | (high << np.uint8(4))).astype(np.int8) - np.int8(32)).reshape(n, 16, 16)
    scales = blocks[:, 192:208].view(np.int8).astype(np.float32)
    d = _f16(blocks, 208)
    return ((d * scales).reshape(n, 16, 1) * q.astype(np.float32)).reshape(n, 256)


_DECODERS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "q4_0": _q4_0,
    "q4_1": _q4_1,
    "q5_0": _q5_0,
    "q5_1": _q5_1,
    "q8_0": _q8_0,
    "q4_k": _q4_k,
    "q6_k": _q6_k,
    "mxfp4": _mxfp4,
}
