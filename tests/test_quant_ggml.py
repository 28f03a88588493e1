"""GGML blocks: from_gguf / to_gguf, and decoding against gguf-py bit for bit."""
import gc

import gguf
import numpy as np
import pytest
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

import hurray
from hurray import Descriptor, HurrayError, Part, Tensor
from hurray.errors import BufferTooSmallError, InvalidArgumentError, UnsupportedError
from hurray.quant.ggml import decode_blocks, from_gguf, to_gguf

QUANTIZABLE = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "MXFP4"]
ALL = QUANTIZABLE + ["Q4_K", "Q6_K"]


def same_bits(a, b):
    """Equal as float32 bit patterns (so -0.0 differs from 0.0 and NaNs compare)."""
    a = np.ascontiguousarray(a, np.float32)
    b = np.ascontiguousarray(b, np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def sample(rng, shape):
    """Normal data with outliers, an all-zero block and a constant block."""
    x = rng.standard_normal(shape).astype(np.float32) * rng.uniform(0.01, 10)
    flat = x.reshape(-1)
    flat[rng.integers(0, flat.size, 8)] *= 50
    flat[:32] = 0
    flat[32:64] = -1.5
    return x


def random_blocks(rng, name, count):
    """Random block bytes with every fp16 scale a finite, moderate value."""
    elements, size = GGML_QUANT_SIZES[GGMLQuantizationType[name]]
    blocks = rng.integers(0, 256, (count, size), dtype=np.uint8)
    halves = {"Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
              "Q4_K": [0, 2], "Q6_K": [208], "MXFP4": []}[name]
    for at in halves:
        d = (rng.standard_normal(count) * 0.05).astype(np.float16)
        d[0] = 0  # a zero scale, and a negative zero one
        d[1] = -0.0
        blocks[:, at:at + 2] = d.view(np.uint8).reshape(count, 2)
    if name == "MXFP4":
        blocks[:6, 0] = [0, 1, 2, 127, 254, 255]  # subnormal, edge and top exponents
    return blocks


@pytest.mark.parametrize("name", QUANTIZABLE)
def test_matches_gguf_on_its_own_quantization(name):
    rng = np.random.default_rng(sum(map(ord, name)))
    x = sample(rng, (3, 5, 64))
    blocks = gguf.quants.quantize(x, GGMLQuantizationType[name])
    tensor = from_gguf(blocks, name, x.shape)
    ours = tensor.dequantize()
    theirs = gguf.quants.dequantize(blocks, GGMLQuantizationType[name])
    assert ours.dtype == np.float32
    assert same_bits(ours, theirs)


@pytest.mark.parametrize("name", ALL)
def test_matches_gguf_on_random_blocks(name):
    rng = np.random.default_rng(7 + sum(map(ord, name)))
    elements, size = GGML_QUANT_SIZES[GGMLQuantizationType[name]]
    rows, per_row = 6, 2
    blocks = random_blocks(rng, name, rows * per_row)
    data = blocks.reshape(rows, per_row * size)
    with np.errstate(over="ignore"):  # MXFP4 exponent 255 overflows in gguf-py too
        theirs = gguf.quants.dequantize(data, GGMLQuantizationType[name])
    tensor = from_gguf(data.tobytes(), name, (2, 3, per_row * elements))
    ours = tensor.dequantize()
    assert ours.shape == (2, 3, per_row * elements)
    assert same_bits(ours.reshape(theirs.shape), theirs)


def test_decode_blocks_takes_raw_block_arrays():
    blocks = random_blocks(np.random.default_rng(9), "Q4_1", 5)
    theirs = gguf.quants.dequantize(blocks.reshape(1, -1), GGMLQuantizationType.Q4_1)
    assert same_bits(decode_blocks("q4_1", blocks).reshape(1, -1), theirs)
    with pytest.raises(InvalidArgumentError):
        decode_blocks("q4_1", blocks[:, :-1])
    with pytest.raises(UnsupportedError):
        decode_blocks("q2_k", blocks)


def test_q4_0_formula_by_hand():
    # One block written field by field: d = 0.5, nibble pairs (j, j + 16).
    d = np.array([0.5], np.float16).view(np.uint8)
    qs = np.array([(j % 16) | ((15 - j % 16) << 4) for j in range(16)], np.uint8)
    tensor = from_gguf(bytes(d) + bytes(qs), "q4_0", (32,))
    expected = [0.5 * (j - 8) for j in range(16)] + [0.5 * (15 - j - 8) for j in range(16)]
    assert tensor.dequantize().tolist() == expected


def test_q6_k_formula_by_hand():
    # All ql/qh bits zero: q = -32 everywhere, scale index = element // 16.
    scales = np.arange(-8, 8, dtype=np.int8)
    block = bytes(128) + bytes(64) + scales.tobytes() + np.array([0.25], np.float16).tobytes()
    out = from_gguf(block, "Q6_K", (256,)).dequantize()
    assert out.tolist() == [0.25 * float(scales[i // 16]) * -32 for i in range(256)]


@pytest.mark.parametrize("kind", ["bytes", "bytearray", "memoryview", "ndarray"])
def test_accepts_buffers_and_does_not_copy(kind):
    rng = np.random.default_rng(1)
    x = sample(rng, (2, 64))
    blocks = gguf.quants.quantize(x, GGMLQuantizationType.Q8_0).reshape(-1)
    data = {"bytes": blocks.tobytes(), "bytearray": bytearray(blocks.tobytes()),
            "memoryview": memoryview(bytearray(blocks.tobytes())), "ndarray": blocks.copy()}[kind]
    tensor = from_gguf(data, "Q8_0", (2, 64))
    raw = tensor.to_gguf()
    assert raw.dtype == np.uint8 and raw.tobytes() == blocks.tobytes()
    source = np.frombuffer(data, np.uint8)
    assert raw.__array_interface__["data"][0] == source.__array_interface__["data"][0]
    assert to_gguf(tensor).tobytes() == blocks.tobytes()
    assert tensor.readonly == (kind == "bytes")
    assert raw.flags.writeable == (kind != "bytes")
    if kind != "bytes":
        # Shared memory: a change to the source shows in the tensor.
        before = tensor.dequantize()
        writable = np.frombuffer(data, np.uint8)
        writable[0:2] = np.frombuffer(np.float16(2.0).tobytes(), np.uint8)
        after = tensor.dequantize()
        q = blocks[2:34].view(np.int8).astype(np.float32)
        assert after[0, :32].tolist() == (2.0 * q).tolist()
        assert same_bits(after[1], before[1])


def test_tensor_keeps_the_data_alive():
    x = sample(np.random.default_rng(2), (4, 256))
    blocks = gguf.quants.quantize(x, GGMLQuantizationType.Q4_0)
    expected = gguf.quants.dequantize(blocks, GGMLQuantizationType.Q4_0)
    tensor = from_gguf(np.ascontiguousarray(blocks).copy(), "Q4_0", x.shape)
    gc.collect()
    raw = tensor.to_gguf()
    del tensor
    gc.collect()
    assert np.array_equal(gguf.quants.dequantize(raw.reshape(4, -1), GGMLQuantizationType.Q4_0), expected)


def test_descriptor_fields():
    tensor = from_gguf(bytes(2 * 144), "q4_k", (2, 256))
    desc = tensor.descriptor
    assert (desc.scheme, desc.ggml_type, desc.dtype, desc.shape) == ("ggml", "q4_k", "uint8", (2, 256))
    assert desc.parts["values"] == Part("uint8", 0, 0, "row_major")
    assert Descriptor.decode(desc.encode()) == desc


def test_type_name_is_case_insensitive():
    for name in ("Q4_0", "q4_0"):
        assert from_gguf(bytes(18), name, (32,)).descriptor.ggml_type == "q4_0"
    assert from_gguf(bytes(17), "MxFp4", (32,)).descriptor.ggml_type == "mxfp4"


def test_honours_the_values_byte_offset():
    x = sample(np.random.default_rng(3), (64,))
    blocks = gguf.quants.quantize(x, GGMLQuantizationType.Q5_1).reshape(-1)
    buffer = np.zeros(7 + blocks.size + 3, np.uint8)
    buffer[7:7 + blocks.size] = blocks
    desc = Descriptor.build("uint8", (64,), scheme="ggml", ggml_type="q5_1",
                            parts={"values": Part("uint8", 0, 7)})
    tensor = Tensor(desc, ((buffer.ctypes.data, buffer.size),), owner=buffer)
    assert same_bits(tensor.dequantize(), gguf.quants.dequantize(blocks, GGMLQuantizationType.Q5_1))
    assert tensor.to_gguf().tobytes() == blocks.tobytes()


def test_empty_tensor():
    tensor = from_gguf(b"", "Q8_0", (0, 32))
    assert tensor.dequantize().shape == (0, 32)
    assert tensor.to_gguf().size == 0


@pytest.mark.parametrize("name", ["Q3_K", "F16", "bogus", ""])
def test_unknown_type_names(name):
    with pytest.raises(UnsupportedError):
        from_gguf(bytes(34), name, (32,))


def test_type_name_must_be_a_string():
    with pytest.raises(InvalidArgumentError):
        from_gguf(bytes(34), 8, (32,))


@pytest.mark.parametrize("size, error", [(33, BufferTooSmallError), (35, InvalidArgumentError),
                                         (0, BufferTooSmallError), (68, InvalidArgumentError)])
def test_size_must_be_exact(size, error):
    with pytest.raises(error, match="34"):
        from_gguf(bytes(size), "Q8_0", (32,))


@pytest.mark.parametrize("shape", [(48,), (2, 16), (), (-32,), (32.0,), ("32",), (True, 32), 32])
def test_bad_shapes(shape):
    with pytest.raises(HurrayError):
        from_gguf(bytes(34), "Q8_0", shape)


def test_k_quants_need_256_elements_per_row():
    with pytest.raises(InvalidArgumentError, match="256"):
        from_gguf(bytes(144), "Q4_K", (2, 128))


def test_bad_data_objects():
    with pytest.raises(InvalidArgumentError):
        from_gguf("not bytes" * 4, "Q8_0", (32,))
    with pytest.raises(InvalidArgumentError, match="uint8"):
        from_gguf(np.zeros(17, np.uint16), "Q8_0", (32,))
    with pytest.raises(InvalidArgumentError, match="contiguous"):
        from_gguf(np.zeros(68, np.uint8)[::2], "Q8_0", (32,))
    with pytest.raises(InvalidArgumentError, match="contiguous"):
        from_gguf(memoryview(bytes(68))[::2], "Q8_0", (32,))


def test_to_gguf_refuses_other_schemes():
    tensor = hurray.from_numpy(np.zeros(32, np.uint8))
    with pytest.raises(InvalidArgumentError, match="ggml"):
        to_gguf(tensor)
    with pytest.raises(HurrayError):
        tensor.to_gguf()
