"""One tensor of every kind Hurray has, for round-trip tests of the file formats.

Each builder returns a Tensor made the way a user would make it: from_numpy,
pack_tensor, from_gguf, the quantizers, or Descriptor.build plus Tensor for
layouts those do not make (a big-endian array, two parts in one buffer).
"""
import gguf
import ml_dtypes
import numpy as np
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

import hurray
from hurray import Descriptor, Part, Tensor
from hurray.bridges.numpy import pack_tensor

RNG_SEED = 20261201
GGML_NAMES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "MXFP4", "Q4_K", "Q6_K"]
QUANTIZABLE = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "MXFP4"]


def _rng(name):
    return np.random.default_rng(RNG_SEED + sum(map(ord, name)))


def weights(name, shape):
    return _rng(name).standard_normal(shape).astype(np.float32)


def ggml_blocks(name, rows=2, blocks_per_row=2):
    """(uint8 block bytes of shape (rows, row bytes), logical shape): gguf-py's
    quantizer where it has one, else random blocks with finite fp16 scales."""
    elements, size = GGML_QUANT_SIZES[GGMLQuantizationType[name]]
    shape = (rows, blocks_per_row * elements)
    if name in QUANTIZABLE:
        return gguf.quants.quantize(weights(name, shape), GGMLQuantizationType[name]), shape
    rng = _rng(name)
    blocks = rng.integers(0, 256, (rows * blocks_per_row, size), dtype=np.uint8)
    at = {"Q4_K": [0, 2], "Q6_K": [208]}[name]
    for offset in at:
        d = (rng.standard_normal(len(blocks)) * 0.05).astype(np.float16)
        blocks[:, offset:offset + 2] = d.view(np.uint8).reshape(-1, 2)
    return blocks.reshape(rows, -1), shape


def _big_endian():
    data = np.arange(12, dtype=">f4").reshape(3, 4)
    return hurray.from_numpy(data)


def _shared_buffer_affine():
    values = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
    params = np.concatenate([np.array([0.5, 0.25, 2.0], "<f4").view(np.uint8),
                             np.array([1, -1, 0], "<i4").view(np.uint8)])
    desc = Descriptor.build("int8", (3, 4), scheme="affine", granularity="per_axis", axis=0, parts={
        "scale": Part("float32", 1, 0), "zero_point": Part("int32", 1, 12)})
    return Tensor(desc, [(values.ctypes.data, values.nbytes), (params.ctypes.data, params.nbytes)],
                  owner=(values, params))


def kinds():
    """id -> zero-argument builder of a Tensor."""
    x = weights("x", (4, 64))
    out = {
        "float32": lambda: hurray.from_numpy(x),
        "float64_3d": lambda: hurray.from_numpy(weights("d", (2, 3, 4)).astype(np.float64)),
        "int64": lambda: hurray.from_numpy(np.arange(-5, 7, dtype=np.int64).reshape(3, 4)),
        "uint16": lambda: hurray.from_numpy(np.arange(10, dtype=np.uint16)),
        "bool": lambda: hurray.from_numpy(np.array([True, False, True])),
        "scalar": lambda: hurray.from_numpy(np.array(3.5, np.float32)),
        "empty": lambda: hurray.from_numpy(np.zeros((0, 4), np.float32)),
        "complex64": lambda: hurray.from_numpy(np.array([1 + 2j, -3j], np.complex64)),
        "strided": lambda: hurray.from_numpy(np.arange(48, dtype=np.int16).reshape(6, 8)[::-2, 1::3]),
        "big_endian": _big_endian,
        "bfloat16": lambda: hurray.from_numpy(x.astype(ml_dtypes.bfloat16)),
        "float16": lambda: hurray.from_numpy(x.astype(np.float16)),
    }
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
                 "float8_e3m4", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn"):
        dt = getattr(ml_dtypes, name)
        out[name] = (lambda dt=dt: hurray.from_numpy(np.abs(x[:2, :8]).astype(dt)))
    out["float6_odd_count"] = lambda: hurray.from_numpy(np.abs(x[0, :5]).astype(ml_dtypes.float6_e2m3fn))
    out["float4_packed"] = lambda: pack_tensor(x[:2, :8].astype(ml_dtypes.float4_e2m1fn))
    out["float4_packed_odd"] = lambda: pack_tensor(x[0, :7].astype(ml_dtypes.float4_e2m1fn))
    out["int4_packed"] = lambda: pack_tensor(np.arange(-8, 7, dtype=ml_dtypes.int4).reshape(3, 5))
    out["uint2_packed"] = lambda: pack_tensor(np.arange(10, dtype=np.uint8).astype(ml_dtypes.uint2))
    out["int4_padded"] = lambda: hurray.from_numpy(np.arange(-8, 8, dtype=ml_dtypes.int4))
    out["affine_per_tensor"] = lambda: hurray.quantize_affine(x, dtype="int8")
    out["affine_per_axis"] = lambda: hurray.quantize_affine(x, dtype="uint8", axis=0)
    out["affine_per_block"] = lambda: hurray.quantize_affine(x, dtype="int4", axis=1, block_size=16)
    out["affine_shared_buffer"] = _shared_buffer_affine
    out["mx_fp8"] = lambda: hurray.quantize_mx(x, dtype="float8_e4m3fn")
    out["mx_fp4"] = lambda: hurray.quantize_mx(x, dtype="float4_e2m1fn")
    out["mx_fp6"] = lambda: hurray.quantize_mx(x, dtype="float6_e3m2fn")
    out["nvfp4"] = lambda: hurray.quantize_nvfp4(x)
    out["nvfp4_packed_swizzled"] = lambda: hurray.quantize_nvfp4(x, swizzled=True, packing="lsb_first")
    for name in GGML_NAMES:
        out[f"ggml_{name.lower()}"] = (lambda name=name: hurray.from_gguf(*_ggml_args(name)))
    return out


def _ggml_args(name):
    blocks, shape = ggml_blocks(name)
    return np.ascontiguousarray(blocks).reshape(-1), name, shape


def same_bits(a, b):
    """Equal as float32 bit patterns (so -0.0 differs from 0.0 and NaNs compare)."""
    a = np.ascontiguousarray(a, np.float32)
    b = np.ascontiguousarray(b, np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def reached_bytes(tensor):
    """Each buffer's bytes, for comparing two tensors with the same descriptor."""
    return [tensor.buffer(i).tobytes() for i in range(len(tensor.buffers))]
