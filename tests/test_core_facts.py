"""Facts Python reads from the C library instead of typing them again (hurray.core._facts)."""
import numpy as np
import pytest

from hurray.core import _facts
from hurray.core import descriptor
from hurray.quant import ggml as gguf
from hurray.quant.dequantizers import swizzled_count, swizzled_index
from hurray.errors import HurrayOverflowError, InvalidArgumentError


def test_ggml_blocks_come_from_the_library_and_cover_every_header_code():
    assert gguf.GGML_BLOCKS is _facts.GGML_BLOCKS
    # Every GGML code the header names has a block, under the name descriptor uses for it.
    assert {code: name for name, (code, _, _) in gguf.GGML_BLOCKS.items()} == descriptor.GGML_TYPES
    assert gguf.GGML_BLOCKS["q4_0"] == (2, 32, 18)
    assert gguf.GGML_BLOCKS["q6_k"] == (14, 256, 210)
    assert gguf.GGML_BLOCKS["mxfp4"] == (39, 32, 17)
    assert gguf.ggml_block("Q4_K") == (256, 144)
    assert not hasattr(gguf, "GGML_TYPES")  # one name, one shape: descriptor.GGML_TYPES is code -> name


@pytest.mark.parametrize("shape", [(), (0,), (7,), (2, 0, 3), (4, 5, 6), (1,) * 64])
def test_row_major_strides_agree_with_numpy(shape):
    expected = tuple(s // 1 for s in np.empty(shape, dtype=np.uint8).strides) if 0 not in shape else None
    strides = _facts.row_major_strides(shape)
    if expected is not None:
        assert strides == expected
    assert strides == descriptor.Descriptor.build("uint8", shape).strides  # what the builder writes


def test_row_major_strides_refusals():
    with pytest.raises(HurrayOverflowError, match="overflows 63 bits"):
        _facts.row_major_strides((1 << 32, 1 << 31))
    with pytest.raises(InvalidArgumentError, match="rank 65"):
        _facts.row_major_strides((1,) * 65)


@pytest.mark.parametrize("rows, cols", [(1, 1), (127, 3), (128, 4), (129, 5), (300, 17)])
def test_swizzled_count_covers_every_index(rows, cols):
    count = swizzled_count(rows, cols)
    index = swizzled_index(rows, cols)
    assert count % 512 == 0 and index.max() < count
    assert len(np.unique(index)) == rows * cols  # no two scales share a slot
    assert count == _facts.swizzled_128x4_count(np.int64(rows), np.int64(cols))


def test_swizzled_count_overflow_is_an_error():
    with pytest.raises(HurrayOverflowError, match="overflow 64 bits"):
        swizzled_count(1 << 40, 1 << 30)
