"""hurray.from_mlx / hurray.to_mlx, proved against MLX's own quantize and dequantize (ADR-061).

Each case is made by ``mx.quantize`` on CPU; Hurray's ``dequantize()`` must
equal ``mx.dequantize`` bit for bit, in MLX's default output (bfloat16,
compared after one rounding of Hurray's float32) and in float32; the
layer-7 C consumer reads the capsule; ``to_mlx`` gives ``(w, kwargs)`` that
``mx.dequantize(w, **kwargs)`` turns into the same bits. Every code byte
with every scale byte is swept for the microscaling modes.
"""
import ml_dtypes
import mlx.core as mx
import numpy as np
import pytest

import hurray
from hurray.errors import InvalidArgumentError, UnsupportedError
from support import layer7

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


def check(wq, scales, mode):
    t = hurray.from_mlx(wq, scales, mode=mode)
    assert t.buffers[0][0] == np.asarray(wq).ctypes.data and t.buffers[1][0] == np.asarray(scales).ctypes.data
    ours = t.dequantize()
    reference = mx.dequantize(wq, scales, mode=mode)                       # MLX's own, bfloat16
    assert reference.dtype == mx.bfloat16
    same(ours.astype(ml_dtypes.bfloat16), bits16(reference).view(ml_dtypes.bfloat16), "bfloat16")
    same(ours, np.array(mx.dequantize(wq, scales, mode=mode, dtype=mx.float32)), "float32")
    status, text = layer7.describe(t.__hurray__(max_version=5))
    assert status == 0, text
    assert text.startswith(f"{t.descriptor.dtype} [{', '.join(map(str, t.descriptor.shape))}]")
    assert f"scheme microscaling, blocks of {t.descriptor.block_size} along axis {len(t.descriptor.shape) - 1}" in text
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


@pytest.mark.parametrize("mode", ["mxfp4", "mxfp8"])
def test_every_code_with_every_e8m0_scale_but_255(mode):
    # Every scale byte MLX can hold (0..254) with every code of the element type.
    rows = 255
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
    check(mx.array(wq), mx.array(scales), mode)


def test_every_nvfp4_code_with_every_e4m3_scale():
    codes = np.arange(16, dtype=np.uint8)
    row = np.tile(codes[0::2] | (codes[1::2] << 4), 2)                     # 32 fp4 elements: every code twice
    wq = np.tile(row, (128, 1)).view(np.uint32)                            # [128, 4] words
    scales = np.arange(256, dtype=np.uint8).reshape(128, 2)                # every E4M3 byte, one group each
    check(mx.array(wq), mx.array(scales), "nvfp4")


def test_what_version_1_cannot_state_is_refused_by_name():
    w = weights((4, 64), mx.float16)
    wq, s, b = mx.quantize(w, group_size=32, bits=4)
    with pytest.raises(UnsupportedError, match="affine mode.*version 2"):
        hurray.from_mlx(wq, s, b, group_size=32, bits=4)
    g = mx.max(mx.abs(w.astype(mx.float32)))
    wq, s = mx.quantize(w, mode="nvfp4", global_scale=g)
    with pytest.raises(UnsupportedError, match="global scale.*2688"):
        hurray.from_mlx(wq, s, mode="nvfp4", global_scale=g)
    wq, s = mx.quantize(w, mode="mxfp4")
    bad = np.array(s)
    bad[0, 0] = 255
    with pytest.raises(UnsupportedError, match="255.*\\+inf"):
        hurray.from_mlx(wq, mx.array(bad), mode="mxfp4")
    with pytest.raises(InvalidArgumentError, match="bits=4 and group_size=32"):
        hurray.from_mlx(wq, s, mode="mxfp4", group_size=64)
    with pytest.raises(InvalidArgumentError, match=r"numpy\.ndarray is not an mlx\.core\.array"):
        hurray.from_mlx(np.array(wq), s, mode="mxfp4")


def test_to_mlx_refuses_what_mlx_has_no_mode_for():
    with pytest.raises(UnsupportedError, match="no MLX mode"):
        hurray.to_mlx(hurray.from_numpy(np.zeros((2, 32), np.float32)))
    nv = hurray.quantize_nvfp4(np.linspace(-3, 3, 64, dtype=np.float32).reshape(2, 32))
    with pytest.raises(UnsupportedError, match="global scale other than 1"):
        hurray.to_mlx(nv)


def test_the_issues_spelling_cannot_work_and_the_documented_one_does():
    wq, s = mx.quantize(weights((2, 64), mx.bfloat16), mode="mxfp8")
    w, kwargs = hurray.to_mlx(hurray.from_mlx(wq, s, mode="mxfp8"))
    with pytest.raises(TypeError):
        mx.dequantize(w=w, **kwargs)            # MLX's w is positional-only
    assert mx.array_equal(mx.dequantize(w, **kwargs), mx.dequantize(wq, s, mode="mxfp8")).item()
