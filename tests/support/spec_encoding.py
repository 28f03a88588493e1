"""Descriptor bytes written straight from docs/impl/descriptor-encoding.md.

An encoder independent of the C library: tests compare the C encoder's
output with it and feed the C decoder its bytes, good and deliberately bad.
Every field is passed through as given, so a test can write values the
format forbids (unknown codes, non-zero reserved bytes, wrong lengths).
"""
import struct

MAGIC = b"HRYD"
VERSION = 1
HEADER_LEN = 32
DIM_LEN = 16  # one u64 dimension plus one i64 stride
PART_LEN = 16


def spec_bytes(dtype, shape, strides, *, byte_order=0, packing=0, scheme=0, granularity=0,
               axis=0, ggml_type=0, block_size=0, parts=None, reserved=0, version=VERSION):
    """The encoding of a descriptor given by codes.

    `parts` lists (role, dtype, layout, buffer_index, byte_offset), with an
    optional sixth item for the part's reserved byte 3; by default one
    values part of `dtype` in buffer 0 at offset 0. `reserved` fills header
    bytes 14-15. The total length field is always the true length.
    """
    parts = parts or [(1, dtype, 0, 0, 0)]
    rank = len(shape)
    total = HEADER_LEN + DIM_LEN * rank + PART_LEN * len(parts)
    out = MAGIC + struct.pack("<HHBBBBBBHIIQ", version, total, rank, byte_order, packing, scheme,
                              granularity, len(parts), reserved, axis, ggml_type, block_size)
    out += struct.pack(f"<{rank}Q", *shape) + struct.pack(f"<{rank}q", *strides)
    for part in parts:
        role, part_dtype, layout, buffer_index, byte_offset = part[:5]
        part_reserved = part[5] if len(part) > 5 else 0
        out += struct.pack("<BBBBIQ", role, part_dtype, layout, part_reserved, buffer_index, byte_offset)
    assert len(out) == total
    return out


def row_major(shape):
    """Row-major contiguous strides in elements; a zero dimension steps as one."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.insert(0, step)
        step *= max(n, 1)
    return tuple(strides)
