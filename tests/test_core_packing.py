"""hurray.core.packing against bit-by-bit references written from the spec."""
import ml_dtypes
import numpy as np
import pytest

from hurray import Descriptor, Tensor
from hurray.core import packing
from hurray.bridges.numpy import pack_tensor
from hurray.errors import HurrayError, InvalidArgumentError, UnsupportedError

RNG = np.random.default_rng(7)
SUB_BYTE = ["int1", "uint1", "int2", "uint2", "int4", "uint4", "float4_e2m1fn"]
WIDTH = {"int1": 1, "uint1": 1, "int2": 2, "uint2": 2, "int4": 4, "uint4": 4, "float4_e2m1fn": 4}


def ref_lsb_first(codes, width):
    """Element i occupies bits [i*width, (i+1)*width) counting from bit 0 of byte 0."""
    out = bytearray((len(codes) * width + 7) // 8)
    for i, code in enumerate(codes):
        bit = i * width
        out[bit // 8] |= (int(code) & ((1 << width) - 1)) << (bit % 8)
    return bytes(out)


def ref_ggml_split(codes):
    """In each run of 32, byte j = element j (low nibble) | element j+16 (high nibble)."""
    out = bytearray()
    for run in range(0, len(codes), 32):
        for j in range(16):
            out.append((int(codes[run + j]) & 15) | ((int(codes[run + j + 16]) & 15) << 4))
    return bytes(out)


@pytest.mark.parametrize("width", [1, 2, 4])
@pytest.mark.parametrize("count", [0, 1, 3, 8, 13, 64])
def test_lsb_first_matches_reference(width, count):
    codes = RNG.integers(0, 1 << width, size=count, dtype=np.uint8)
    packed = packing.pack(codes, width)
    assert packed.dtype == np.uint8 and packed.ndim == 1
    assert packed.tobytes() == ref_lsb_first(codes, width)
    assert packed.size == packing.packed_nbytes(count, width)
    assert packing.unpack(packed, width, count).tolist() == codes.tolist()


def test_lsb_first_known_bytes():
    assert packing.pack(np.array([1, 2], np.uint8), 4).tolist() == [0x21]
    assert packing.pack(np.array([1, 2, 3, 0], np.uint8), 2).tolist() == [0b00111001]
    assert packing.pack(np.array([1, 0, 0, 0, 0, 0, 0, 1, 1], np.uint8), 1).tolist() == [0x81, 0x01]


def test_pack_masks_high_bits():
    assert packing.pack(np.array([0xFF, 0xF0], np.uint8), 4).tolist() == [0x0F]


@pytest.mark.parametrize("runs", [0, 1, 3])
def test_ggml_split_matches_reference(runs):
    codes = RNG.integers(0, 16, size=32 * runs, dtype=np.uint8)
    packed = packing.pack(codes, 4, "ggml_split")
    assert packed.tobytes() == ref_ggml_split(codes)
    assert packing.unpack(packed, 4, codes.size, "ggml_split").tolist() == codes.tolist()


def test_ggml_split_known_layout():
    codes = np.arange(32, dtype=np.uint8) % 16
    packed = packing.pack(codes, 4, "ggml_split")
    assert packed.tolist() == [j | (j << 4) for j in range(16)]
    codes = np.array([1] * 16 + [2] * 16, np.uint8)
    assert packing.pack(codes, 4, "ggml_split").tolist() == [0x21] * 16


@pytest.mark.parametrize("name", SUB_BYTE)
def test_ml_dtypes_arrays_pack_value_exact(name):
    width = WIDTH[name]
    codes = RNG.integers(0, 1 << width, size=(3, 32), dtype=np.uint8)
    values = codes.view(getattr(ml_dtypes, name))
    packed = packing.pack(values, width)
    assert packed.tobytes() == ref_lsb_first(codes.reshape(-1), width)
    back = packing.unpack(packed, width, codes.size).view(values.dtype).reshape(values.shape)
    assert back.view(np.uint8).tobytes() == values.view(np.uint8).tobytes()


def ref_strided(data, width, byte_offset, shape, strides):
    out = np.zeros(shape, np.uint8)
    for index in np.ndindex(*shape):
        bit = 8 * byte_offset + width * sum(i * s for i, s in zip(index, strides))
        out[index] = (int(data[bit // 8]) >> (bit % 8)) & ((1 << width) - 1)
    return out


@pytest.mark.parametrize("width", [1, 2, 4])
@pytest.mark.parametrize(
    "shape, strides, byte_offset",
    [((3, 5), (5, 1), 0), ((3, 5), (-5, 1), 10), ((4, 3), (1, -4), 6), ((2, 3), (0, 2), 1),
     ((5,), (-3,), 9), ((), (), 2), ((0, 3), (3, 1), 0)],
)
def test_unpack_strided_matches_reference(width, shape, strides, byte_offset):
    data = RNG.integers(0, 256, size=24, dtype=np.uint8)
    got = packing.unpack_strided(data, width, byte_offset, shape, strides)
    assert got.shape == shape
    assert np.array_equal(got, ref_strided(data, width, byte_offset, shape, strides))


def test_bad_arguments():
    with pytest.raises(InvalidArgumentError):
        packing.pack(np.zeros(4, np.uint8), 3)
    with pytest.raises(InvalidArgumentError):
        packing.pack(np.zeros(4, np.uint8), 2, "ggml_split")
    with pytest.raises(InvalidArgumentError, match="32"):
        packing.pack(np.zeros(31, np.uint8), 4, "ggml_split")
    with pytest.raises(InvalidArgumentError):
        packing.pack(np.zeros(4, np.uint8), 4, "msb_first")
    with pytest.raises(InvalidArgumentError):
        packing.pack(np.zeros(4, np.float32), 4)
    with pytest.raises(InvalidArgumentError, match="bytes"):
        packing.unpack(np.zeros(1, np.uint8), 4, 3)
    with pytest.raises(InvalidArgumentError):
        packing.unpack(np.zeros(4, np.uint16), 4, 2)
    with pytest.raises(InvalidArgumentError):
        packing.unpack_strided(np.zeros(2, np.uint8), 4, 0, (8,), (1,))
    with pytest.raises(InvalidArgumentError):
        packing.packed_nbytes(-1, 4)


@pytest.mark.parametrize("name", SUB_BYTE)
@pytest.mark.parametrize("layout", ["lsb_first", "ggml_split"])
def test_packed_tensor_unpacks_value_exact(name, layout):
    width = WIDTH[name]
    if layout == "ggml_split" and width != 4:
        with pytest.raises(InvalidArgumentError):
            pack_tensor(np.zeros((2, 32), getattr(ml_dtypes, name)), layout)
        return
    codes = RNG.integers(0, 1 << width, size=(2, 64), dtype=np.uint8)
    values = codes.view(getattr(ml_dtypes, name))
    t = pack_tensor(values, layout)
    assert t.descriptor.packing == layout and t.dtype == name
    assert t.buffers[0][1] == codes.size * width // 8
    with pytest.raises(UnsupportedError, match=f"packed {width}-bit {layout} elements"):
        np.asarray(t)
    back = t.unpack()
    assert back.dtype == values.dtype and back.shape == values.shape
    assert back.view(np.uint8).tobytes() == codes.tobytes()


def test_unpack_of_strided_packed_tensor():
    codes = RNG.integers(0, 16, size=(4, 6), dtype=np.uint8)
    data = np.frombuffer(b"\xAA" + ref_lsb_first(codes.reshape(-1), 4), np.uint8).copy()
    # Rows reversed, every other column: element (i, j) is code[3 - i, 2 * j].
    desc = Descriptor.build("uint4", (4, 3), (-6, 2), packing="lsb_first",
                            parts={"values": {"byte_offset": 1 + 9}})
    t = Tensor(desc, [(data.ctypes.data, data.size)], owner=data)
    assert np.array_equal(t.unpack().view(np.uint8), codes[::-1, ::2])


def test_pack_tensor_refuses_whole_bytes():
    with pytest.raises(HurrayError):
        pack_tensor(np.zeros(4, np.int8))
