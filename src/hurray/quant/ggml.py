"""GGML block formats: wrapping GGUF tensor bytes, and decoding them.

`from_ggml` wraps the block bytes of one GGUF tensor as a Tensor without
copying them; `to_ggml` hands the same bytes back. (`from_gguf` and
`to_gguf` are their old names, kept: they never read or wrote .gguf files.)
`Tensor.dequantize()` decodes the blocks in C (native/src/dequant_ggml.c),
with ggml's formulas in gguf-py's float32 operation order, so that both give
identical bits; `decode_blocks` does the same for a bare array of blocks.

Every type ggml defines and gguf-py 0.19 dequantizes is known, plus Q1_0 and
Q2_0 (GGML_BLOCKS, read from the C library). Block layouts: QUANT-FORMATS.md
§ 8.2 and ADR-055. In the 32-element formats byte j of the nibbles holds
element j in its low nibble and element j + 16 in its high nibble.
"""
from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..core import _facts
from ..core.descriptor import Descriptor
from ..core.tensor import Tensor
from ..errors import BufferTooSmallError, InvalidArgumentError, InvalidDescriptorError, UnsupportedError

__all__ = ["GGML_BLOCKS", "decode_blocks", "from_ggml", "from_gguf", "ggml_block", "to_ggml", "to_gguf"]

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

def decode_blocks(ggml_type_name: str, blocks: Any) -> np.ndarray:
    """Decode an (nblocks, block_bytes) uint8 array to (nblocks, elements) float32,
    through the library's decoders (hurray_dequantize)."""
    elements, block_bytes = ggml_block(ggml_type_name)
    blocks = np.asarray(blocks)
    if blocks.dtype != np.uint8 or blocks.ndim != 2 or blocks.shape[1] != block_bytes:
        raise InvalidArgumentError(f"decode_blocks: expected uint8 blocks of shape (n, {block_bytes})")
    tensor = from_ggml(np.ascontiguousarray(blocks), ggml_type_name, (blocks.shape[0], elements))
    return tensor.dequantize()
