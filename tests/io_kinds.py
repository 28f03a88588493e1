"""One tensor of every kind hurray-io must carry byte for byte, for the io tests."""
import ml_dtypes
import numpy as np

import hurray
from hurray import Descriptor, Tensor
from hurray.quant.ggml import GGML_BLOCKS, ggml_block

GGML_NAMES = ("q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q4_k", "q6_k", "mxfp4")


def _raw(nbytes, seed):
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)


def kinds():
    """name -> Tensor (or numpy array); deterministic."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((8, 64)).astype(np.float32)
    base = np.arange(60, dtype=np.float32).reshape(6, 10)
    packed = _raw(16, 1)  # 32 int4 values, two per byte, element 0 in the low nibble
    out = {
        "plain": x,
        "strided": base[::2, 1::3],
        "negative strides": base[::-1, ::-2],
        "bfloat16": x.astype(ml_dtypes.bfloat16),
        "float8_e4m3fn": x.astype(ml_dtypes.float8_e4m3fn),
        "float8_e5m2": x.astype(ml_dtypes.float8_e5m2),
        "int4 packed": Tensor(Descriptor.build("int4", (4, 8), packing="lsb_first"),
                              [(packed.ctypes.data, packed.nbytes)], packed),
        "big-endian": np.arange(5, dtype=">i4"),
        "scalar": np.float64(2.5),
        "empty": np.zeros((0, 3), np.int16),
        "affine per-axis": hurray.quantize_affine(x, axis=0),
        "affine per-block": hurray.quantize_affine(x, block_size=16, dtype="int4"),
        "mx fp8": hurray.quantize_mx(x),
        "mx fp4": hurray.quantize_mx(x, dtype="float4_e2m1fn"),
        "nvfp4": hurray.quantize_nvfp4(x),
        "nvfp4 packed swizzled": hurray.quantize_nvfp4(rng.standard_normal((128, 64)).astype(np.float32),
                                                       swizzled=True, packing="lsb_first"),
    }
    for i, name in enumerate(GGML_NAMES):
        elements, block_bytes = ggml_block(name)
        rows = 2
        out[f"ggml {name}"] = hurray.from_gguf(_raw(rows * block_bytes * (256 // elements), 100 + i), name,
                                               (rows, 256))
    assert set(GGML_BLOCKS) >= set(GGML_NAMES)
    return out


def as_tensor(value):
    return value if isinstance(value, Tensor) else hurray.from_numpy(value)


def buffers_of(tensor):
    return [tensor.buffer(i).tobytes() for i in range(len(tensor.buffers))]


def assert_same(got, want):
    """Same descriptor, same bytes in every buffer."""
    want = as_tensor(want)
    assert got.descriptor == want.descriptor
    assert buffers_of(got) == buffers_of(want)
