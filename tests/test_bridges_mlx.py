"""hurray.from_mlx / hurray.to_mlx, proved against MLX's own quantize and dequantize (ADR-061).

Each case is made by ``mx.quantize`` on CPU; Hurray's ``dequantize()`` must
equal ``mx.dequantize`` bit for bit, in MLX's own output dtype (bfloat16 for
the fp modes, the scales' dtype for affine, float32 with a global scale) and,
for the fp modes, in float32; the capsule goes to the layer-7 C consumer and
to libhurray's dequantizer (support/bridge_checks.py); ``to_mlx`` gives
``(w, kwargs)`` that ``mx.dequantize(w, **kwargs)`` turns into the same bits.
Every code byte with every scale byte is swept for the fp modes, 255 too.
"""
import ml_dtypes
import mlx.core as mx
import numpy as np
import pytest

import hurray
from hurray.errors import InvalidArgumentError, UnsupportedError
from support.bridge_checks import c_consumer_sees

mx.set_default_device(mx.cpu)
MODES = ("mxfp4", "mxfp8", "nvfp4")


def weights(shape, dtype, seed=0):
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return mx.array(data).astype(dtype)


def bits16(array):
    return np.array(array.view(mx.uint16))


def same(ours, reference, what):
    """Bit for bit (both float arrays of one dtype), except that a NaN matches any NaN: MLX's NaN
    payload and sign differ from the code's (E4M3 0x7F gives +0x7ff00000 in float32, 0xFF
    -0x7ff00000, and +0x7fc0 in bfloat16; ADR-061)."""
    assert ours.dtype == reference.dtype
    nan = np.isnan(reference.astype(np.float32))
    assert (np.isnan(ours.astype(np.float32)) == nan).all(), f"NaN where MLX has none, or none where it has ({what})"
    as_bits = np.uint16 if ours.dtype.itemsize == 2 else np.uint32
    mismatch = (ours.view(as_bits) != reference.view(as_bits)) & ~nan
    assert not mismatch.any(), f"{int(mismatch.sum())} of {mismatch.size} differ ({what})"


def check(wq, scales, mode, version=1):
    t = hurray.from_mlx(wq, scales, mode=mode)
    shape = t.descriptor.shape
    assert t.descriptor.encoding_version == version
    assert t.buffers[0][0] == np.asarray(wq).ctypes.data and t.buffers[1][0] == np.asarray(scales).ctypes.data
    ours = t.dequantize()
    reference = mx.dequantize(wq, scales, mode=mode)                       # MLX's own, bfloat16
    assert reference.dtype == mx.bfloat16
    same(ours.astype(ml_dtypes.bfloat16), bits16(reference).view(ml_dtypes.bfloat16), "bfloat16")
    same(ours, np.array(mx.dequantize(wq, scales, mode=mode, dtype=mx.float32)), "float32")
    text = c_consumer_sees(t)
    if t.descriptor.encoding_version == 1:
        assert f"scheme microscaling, blocks of {t.descriptor.block_size} along axis {len(shape) - 1}" in text
    w, kwargs = hurray.to_mlx(t)
    assert kwargs["mode"] == mode
    again = mx.dequantize(w, **kwargs)
    assert (bits16(again) == bits16(reference)).all()
    assert np.array_equal(np.array(w), np.array(wq)) and np.array_equal(np.array(kwargs["scales"]), np.array(scales))
    return t


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(8, 128), (2, 3, 64), (1, 32)])
@pytest.mark.parametrize("dtype", [mx.bfloat16, mx.float32, mx.float16])
def test_quantized_by_mlx_comes_in_exact_and_goes_back(mode, shape, dtype):
    if shape[-1] % 32:
        pytest.fail("shapes must hold whole groups")
    wq, scales = mx.quantize(weights(shape, dtype), mode=mode)
    check(wq, scales, mode)


@pytest.mark.parametrize("rows", [255, 256], ids=["version-1", "with-255-a-graph"])
@pytest.mark.parametrize("mode", ["mxfp4", "mxfp8"])
def test_every_code_with_every_e8m0_scale(mode, rows):
    # Every scale byte 0..254 with every code of the element type: version 1
    # states it; 255 too (MLX's +inf, version 1's NaN): a graph.
    if mode == "mxfp4":
        codes = np.tile(np.arange(16, dtype=np.uint8), 2)                  # 32 fp4 codes: one group
        packed = (codes[0::2] | (codes[1::2] << 4)).view(np.uint8)
        wq = np.tile(packed, (rows, 8)).view(np.uint32)                    # [255, 256 elements / 8]
        groups = 256 // 32
    else:
        codes = np.arange(256, dtype=np.uint8)
        wq = np.tile(codes, (rows, 1)).view(np.uint32)                     # [255, 64]
        groups = 256 // 32
    scales = np.repeat(np.arange(rows, dtype=np.uint8)[:, None], groups, axis=1)
    check(mx.array(wq), mx.array(scales), mode, version=1 if rows == 255 else 2)


def test_every_nvfp4_code_with_every_e4m3_scale():
    codes = np.arange(16, dtype=np.uint8)
    row = np.tile(codes[0::2] | (codes[1::2] << 4), 2)                     # 32 fp4 elements: every code twice
    wq = np.tile(row, (128, 1)).view(np.uint32)                            # [128, 4] words
    scales = np.arange(256, dtype=np.uint8).reshape(128, 2)                # every E4M3 byte, one group each
    check(mx.array(wq), mx.array(scales), "nvfp4")


@pytest.mark.parametrize("bits", [1, 2, 3, 4, 5, 6, 8])
@pytest.mark.parametrize("group_size", [32, 64, 128])
@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16, mx.float32])
def test_affine_every_width_comes_in_as_a_graph_exact_and_goes_back(bits, group_size, dtype):
    w = weights((2, 3, 256), dtype, seed=bits * 10 + group_size)
    wq, s, b = mx.quantize(w, group_size=group_size, bits=bits)
    t = hurray.from_mlx(wq, s, b, group_size=group_size, bits=bits)
    d = t.descriptor
    assert d.encoding_version == 2 and tuple(d.shape) == (2, 3, 256) and d.result_dtype == _name(dtype)
    assert [span[0] for span in t.buffers] == [np.asarray(a.view(mx.uint8)).ctypes.data for a in (wq, s, b)]
    reference = mx.dequantize(wq, s, b, group_size=group_size, bits=bits)         # MLX's own, in the scales' dtype
    same(t.dequantize(_name(dtype)), _np(reference), "affine")
    c_consumer_sees(t)
    w2, kwargs = hurray.to_mlx(t)
    assert (kwargs["bits"], kwargs["group_size"], kwargs["mode"]) == (bits, group_size, "affine")
    assert mx.array_equal(mx.dequantize(w2, **kwargs), reference).item()
    assert np.array_equal(np.array(w2), np.array(wq)) and kwargs["biases"].dtype == dtype


def test_affine_defaults_are_mlxs():
    wq, s, b = mx.quantize(weights((4, 128), mx.bfloat16))                           # 4 bits, groups of 64
    t = hurray.from_mlx(wq, s, b)
    same(t.dequantize("bfloat16"), _np(mx.dequantize(wq, s, b)), "defaults")


def test_nvfp4_with_a_global_scale_is_a_graph_in_float32():
    w = weights((2, 8, 128), mx.float16, seed=5)
    g = mx.max(mx.abs(w.astype(mx.float32)))
    wq, s = mx.quantize(w, mode="nvfp4", global_scale=g)
    t = hurray.from_mlx(wq, s, mode="nvfp4", global_scale=g)
    assert t.descriptor.encoding_version == 2 and t.descriptor.result_dtype == "float32"
    reference = mx.dequantize(wq, s, mode="nvfp4", global_scale=g)                  # float32, whatever dtype= says
    assert reference.dtype == mx.float32
    same(t.dequantize(), np.array(reference), "nvfp4 global")
    c_consumer_sees(t)
    w2, kwargs = hurray.to_mlx(t)
    assert np.array(kwargs["global_scale"]).tobytes() == np.array(g).tobytes()
    assert mx.array_equal(mx.dequantize(w2, **kwargs), reference).item()


def test_what_mlx_would_not_take_is_refused_by_name():
    w = weights((4, 64), mx.float16)
    wq, s, b = mx.quantize(w, group_size=32, bits=4)
    with pytest.raises(InvalidArgumentError, match="needs the biases"):
        hurray.from_mlx(wq, s, group_size=32, bits=4)
    with pytest.raises(InvalidArgumentError, match="scales and biases are float16"):
        hurray.from_mlx(wq, s, b, group_size=64, bits=4)
    with pytest.raises(InvalidArgumentError, match="bits must be 1 to 8"):
        hurray.from_mlx(wq, s, b, group_size=32, bits=9)
    with pytest.raises(InvalidArgumentError, match="scales must be float16 or bfloat16 or float32"):
        hurray.from_mlx(wq, wq, b, group_size=32, bits=4)
    g = mx.max(mx.abs(w.astype(mx.float32)))
    wq, s = mx.quantize(w, mode="nvfp4", global_scale=g)
    with pytest.raises(UnsupportedError, match=r"global scale of shape \(2,\)"):
        hurray.from_mlx(wq, s, mode="nvfp4", global_scale=mx.array([1.0, 2.0]))
    wq, s = mx.quantize(w, mode="mxfp4")
    with pytest.raises(InvalidArgumentError, match="only nvfp4 takes a global scale"):
        hurray.from_mlx(wq, s, mode="mxfp4", global_scale=g)
    with pytest.raises(InvalidArgumentError, match="bits=4 and group_size=32"):
        hurray.from_mlx(wq, s, mode="mxfp4", group_size=64)
    with pytest.raises(InvalidArgumentError, match=r"numpy\.ndarray is not an mlx\.core\.array"):
        hurray.from_mlx(np.array(wq), s, mode="mxfp4")
    with pytest.raises(InvalidArgumentError, match="mode 'int4' is not one of MLX's"):
        hurray.from_mlx(wq, s, mode="int4")


def _name(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def _np(array):
    """An MLX float array as numpy: bfloat16 as ml_dtypes' (its bits), the others as they are."""
    if array.dtype == mx.bfloat16:
        return bits16(array).view(ml_dtypes.bfloat16)
    return np.array(array)


def test_to_mlx_refuses_what_mlx_has_no_mode_for():
    with pytest.raises(UnsupportedError, match="no MLX mode"):
        hurray.to_mlx(hurray.from_numpy(np.zeros((2, 32), np.float32)))
    nv = hurray.quantize_nvfp4(np.linspace(-3, 3, 64, dtype=np.float32).reshape(2, 32))
    with pytest.raises(UnsupportedError, match="only a global scale of 1"):
        hurray.to_mlx(nv)
    q = np.zeros((4, 32), np.int8)
    sc = np.ones((4, 1), np.float32)
    graph = hurray.Tensor(hurray.Descriptor.graph((4, 32), hurray.nodes.Step(
        "mul", "float32", (4, 32), hurray.nodes.Stored("int8", (4, 32), 0), hurray.nodes.Stored("float32", (4, 1), 1),
        blocks=(1, 32))), [(q.ctypes.data, q.nbytes), (sc.ctypes.data, sc.nbytes)], owner=(q, sc))
    with pytest.raises(UnsupportedError, match="none of the layouts from_mlx makes"):
        hurray.to_mlx(graph)


def test_the_issues_spelling_cannot_work_and_the_documented_one_does():
    wq, s = mx.quantize(weights((2, 64), mx.bfloat16), mode="mxfp8")
    w, kwargs = hurray.to_mlx(hurray.from_mlx(wq, s, mode="mxfp8"))
    with pytest.raises(TypeError):
        mx.dequantize(w=w, **kwargs)            # MLX's w is positional-only
    assert mx.array_equal(mx.dequantize(w, **kwargs), mx.dequantize(wq, s, mode="mxfp8")).item()
