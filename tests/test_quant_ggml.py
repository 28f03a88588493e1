"""GGML blocks: from_ggml / to_ggml (and the from_gguf / to_gguf aliases), and decoding.

Every type gguf-py 0.19 dequantizes is held against gguf.quants.dequantize bit
for bit, NaNs included: on its own quantizations where gguf-py has a
quantizer, on random blocks with ordinary scales, on wholly random bytes (NaN,
infinite and subnormal fp16 scales), and on every kind of special scale.
Q1_0 and Q2_0, which gguf-py lacks, are held against their formulas.
"""
import gc

import gguf
import ml_dtypes
import numpy as np
import pytest
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

import hurray
from hurray import Descriptor, HurrayError, Part, Tensor
from hurray.errors import BufferTooSmallError, InvalidArgumentError, UnsupportedError
from hurray.quant.ggml import decode_blocks, from_ggml, from_gguf, to_gguf
from support import tensor_kinds

# gguf-py's quantizers, and every type it dequantizes (tests/support/tensor_kinds.py).
QUANTIZABLE = tensor_kinds.QUANTIZABLE
ALL = tensor_kinds.GGML_NAMES


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
    d = (rng.standard_normal(count) * 0.05).astype(np.float16)
    d[0] = 0  # a zero scale, and a negative zero one
    d[1] = -0.0
    tensor_kinds.set_f16_scales(blocks, name, d)
    if name == "MXFP4":
        blocks[:6, 0] = [0, 1, 2, 127, 254, 255]  # subnormal, edge and top exponents
    return blocks


def gguf_reference(data, name):
    with np.errstate(over="ignore", invalid="ignore"):  # infinite and NaN scales: values, not errors
        return gguf.quants.dequantize(data, GGMLQuantizationType[name])


@pytest.mark.parametrize("name", QUANTIZABLE)
def test_matches_gguf_on_its_own_quantization(name):
    rng = np.random.default_rng(sum(map(ord, name)))
    x = sample(rng, (3, 5, 256))
    blocks = gguf.quants.quantize(x, GGMLQuantizationType[name])
    tensor = from_gguf(blocks, name, x.shape)
    ours = tensor.dequantize()
    theirs = gguf.quants.dequantize(blocks, GGMLQuantizationType[name])
    assert ours.dtype == np.float32
    assert same_bits(ours, theirs)


@pytest.mark.parametrize("name", ALL)
def test_matches_gguf_on_random_blocks(name):
    for seed in range(4):
        rng = np.random.default_rng(7 + seed + sum(map(ord, name)))
        elements, size = GGML_QUANT_SIZES[GGMLQuantizationType[name]]
        rows, per_row = 6, 2
        blocks = random_blocks(rng, name, rows * per_row)
        data = blocks.reshape(rows, per_row * size)
        theirs = gguf_reference(data, name)
        tensor = from_gguf(data.tobytes(), name, (2, 3, per_row * elements))
        ours = tensor.dequantize()
        assert ours.shape == (2, 3, per_row * elements)
        assert same_bits(ours.reshape(theirs.shape), theirs)


@pytest.mark.parametrize("name", ALL)
def test_matches_gguf_on_raw_random_bytes(name):
    # Every byte random: fp16 scales that are NaN (quiet and signalling),
    # infinite, subnormal; the output bits, NaN payloads included, are gguf-py's.
    elements, size = GGML_QUANT_SIZES[GGMLQuantizationType[name]]
    for seed in range(24):
        rng = np.random.default_rng(1000 * seed + sum(map(ord, name)))
        data = rng.integers(0, 256, (5, 3 * size), dtype=np.uint8)
        ours = from_gguf(data, name, (5, 3 * elements)).dequantize()
        assert same_bits_but_nan_choice(ours, gguf_reference(data, name), data, name), f"seed {seed}"


def same_bits_but_nan_choice(ours, ref, data, name):
    """same_bits, except where a block's two fp16 fields (d and m) are both NaN:
    IEEE 754 lets `d*q + m` give either operand's NaN, and numpy's choice
    differs between releases (2.4 keeps d's, as Hurray does; 2.2 m's), so
    there either quieted field is gguf-py's answer."""
    a = np.ascontiguousarray(ours, np.float32).reshape(-1).view(np.uint32)
    b = np.ascontiguousarray(ref, np.float32).reshape(-1).view(np.uint32)
    if a.shape != b.shape:
        return False
    elements, size = GGML_QUANT_SIZES[GGMLQuantizationType[name]]
    fields = tensor_kinds.F16_FIELDS[name]
    for i in np.nonzero(a != b)[0]:
        block = data.reshape(-1, size)[i // elements]
        quiet = {int(np.float16(block[at:at + 2].view(np.float16)[0]).astype(np.float32).view(np.uint32)) | 0x400000
                 for at in fields}
        if len(fields) != 2 or len(quiet) != 2 or not all(np.isnan(block[at:at + 2].view(np.float16)[0])
                                                          for at in fields):
            return False
        if int(a[i]) not in quiet or int(b[i]) not in quiet:
            return False
    return True


# fp16 scales of every kind: quiet and signalling NaNs of both signs with
# payloads, infinities, zeros, the smallest and largest subnormals, normals.
SPECIAL_F16 = np.array([0x7E00, 0xFE00, 0x7C01, 0xFC01, 0x7D55, 0x7FFF, 0x7C00, 0xFC00, 0x0000, 0x8000,
                        0x0001, 0x83FF, 0x0400, 0x7BFF, 0xFBFF, 0x3C00, 0xB555], np.uint16).view(np.float16)


@pytest.mark.parametrize("name", [n for n in ALL if tensor_kinds.F16_FIELDS[n] or n == "IQ1_M"])
def test_matches_gguf_on_special_scales(name):
    elements, size = GGML_QUANT_SIZES[GGMLQuantizationType[name]]
    rng = np.random.default_rng(5 + sum(map(ord, name)))
    blocks = rng.integers(0, 256, (len(SPECIAL_F16), size), dtype=np.uint8)
    tensor_kinds.set_f16_scales(blocks, name, SPECIAL_F16)
    ours = from_gguf(blocks, name, (len(SPECIAL_F16), elements)).dequantize()
    assert same_bits(ours, gguf_reference(blocks, name).reshape(ours.shape))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ALL)
def test_16_bit_outputs_are_the_float32_values_rounded_once(name, dtype):
    elements, size = GGML_QUANT_SIZES[GGMLQuantizationType[name]]
    rng = np.random.default_rng(11 + sum(map(ord, name)))
    data = rng.integers(0, 256, (4, 2 * size), dtype=np.uint8)
    tensor = from_gguf(data, name, (4, 2 * elements))
    ours = tensor.dequantize(dtype)
    kind = np.float16 if dtype == "float16" else ml_dtypes.bfloat16
    assert ours.dtype == kind and ours.shape == (4, 2 * elements)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = gguf_reference(data, name).astype(kind)
    assert np.array_equal(ours.view(np.uint16), expected.reshape(ours.shape).view(np.uint16))


def test_a_large_tensor_matches_gguf():
    # 8 MiB of float32 and more: the output is streamed past the caches.
    name = "Q4_K"
    rng = np.random.default_rng(3)
    blocks = random_blocks(rng, name, 2048 * 5).reshape(2048, -1)
    ours = from_gguf(blocks, name, (2048, 5 * 256)).dequantize()
    assert same_bits(ours, gguf_reference(blocks, name))


# ---- Q1_0 and Q2_0: ggml's, not gguf-py's (QUANT-FORMATS.md § 8.2) ---------

def q1_0_formula(blocks):
    """Bit j of the 16 bytes after d, LSB first: +d when set, -d when clear."""
    d = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    bits = np.unpackbits(blocks[:, 2:18], axis=1, bitorder="little")
    return np.where(bits == 1, d, -d)


def q2_0_formula(blocks):
    """Two bits per element LSB first after d; (q - 1) * d."""
    d = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    q = (blocks[:, 2:18, None] >> np.array([0, 2, 4, 6], np.uint8)) & 3
    return (q.reshape(len(blocks), 64).astype(np.int8) - 1).astype(np.float32) * d


def test_q1_0_by_hand():
    # d = 0.75: element 0 and 15 set, 120..127 set, every other clear.
    qs = [0x01, 0x80] + [0] * 13 + [0xFF]
    block = np.float16(0.75).tobytes() + bytes(qs)
    out = from_ggml(block, "q1_0", (128,)).dequantize()
    assert out.tolist() == [0.75 if j in (0, 15) or j >= 120 else -0.75 for j in range(128)]


def test_q2_0_by_hand():
    # d = -2; byte 0xE4 holds codes 0, 1, 2, 3 (LSB first): -1, 0, 1, 2 times d.
    block = np.float16(-2.0).tobytes() + bytes([0xE4] * 15 + [0x1B])
    out = from_ggml(block, "q2_0", (64,)).dequantize()
    assert out[:4].tolist() == [2.0, -0.0, -2.0, -4.0]
    assert out[60:].tolist() == [-4.0, -2.0, -0.0, 2.0]


@pytest.mark.parametrize("name, formula", [("Q1_0", q1_0_formula), ("Q2_0", q2_0_formula)])
def test_q1_0_and_q2_0_match_their_formulas(name, formula):
    elements, size = hurray.quant.ggml.ggml_block(name)
    for seed in range(8):
        rng = np.random.default_rng(seed)
        blocks = rng.integers(0, 256, (7, size), dtype=np.uint8)  # NaN and infinite scales too
        if seed == 0:
            tensor_kinds.set_f16_scales(blocks[:4], name, SPECIAL_F16[:4])
        ours = from_ggml(blocks, name, (7, elements)).dequantize()
        with np.errstate(invalid="ignore"):
            assert same_bits(ours, formula(blocks)), f"seed {seed}"


def test_decode_blocks_takes_raw_block_arrays():
    blocks = random_blocks(np.random.default_rng(9), "Q4_1", 5)
    theirs = gguf.quants.dequantize(blocks.reshape(1, -1), GGMLQuantizationType.Q4_1)
    assert same_bits(decode_blocks("q4_1", blocks).reshape(1, -1), theirs)
    with pytest.raises(InvalidArgumentError):
        decode_blocks("q4_1", blocks[:, :-1])
    with pytest.raises(UnsupportedError):
        decode_blocks("q8_k", blocks)
    # Every type decodes through the library, as Tensor.dequantize() does.
    k = random_blocks(np.random.default_rng(10), "IQ2_S", 3)
    assert same_bits(decode_blocks("iq2_s", k).reshape(1, -1), gguf_reference(k.reshape(1, -1), "IQ2_S"))


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


@pytest.mark.parametrize("name", ["Q8_K", "Q8_1", "F16", "bogus", ""])
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
