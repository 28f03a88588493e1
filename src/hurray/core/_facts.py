"""Facts the C library knows, read from it rather than typed again here.

The GGML block table, row-major strides and the size of a swizzled scale
part are computed by hurray-ffi for its own checks; Python asks the same
functions (hurray.h: hurray_ggml_block, hurray_ggml_name,
hurray_layout_row_major_strides, hurray_layout_swizzled_128x4_count), so the
two can never disagree.
"""
from collections.abc import Sequence

from .._ffi import ffi, lib
from ..errors import check


def _ggml_blocks() -> dict[str, tuple[int, int, int]]:
    elements, nbytes = ffi.new("uint64_t *"), ffi.new("uint64_t *")
    table = {}
    for code in sorted(getattr(lib, n) for n in dir(lib) if n.startswith("HURRAY_GGML_")):
        check(lib.hurray_ggml_block(code, elements, nbytes))  # a header code the library lacks is a bug
        table[ffi.string(lib.hurray_ggml_name(code)).decode()] = (code, elements[0], nbytes[0])
    return table


# GGUF spelling -> (HurrayGgmlType code, elements per block, bytes per block), in code order.
GGML_BLOCKS = _ggml_blocks()


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major contiguous strides, in elements, of `shape` (a zero dimension steps as one)."""
    rank = len(shape)
    out = ffi.new("int64_t[]", max(rank, 1))
    dims = ffi.new("uint64_t[]", [int(n) for n in shape] or [0])
    check(lib.hurray_layout_row_major_strides(rank, dims, out))
    return tuple(out[0:rank])


def swizzled_128x4_count(rows: int, cols: int) -> int:
    """How many scales a SWIZZLED_128X4 part holds for rows x cols scales: whole padded tiles."""
    out = ffi.new("uint64_t *")
    check(lib.hurray_layout_swizzled_128x4_count(int(rows), int(cols), out))
    return int(out[0])
