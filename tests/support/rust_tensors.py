"""The tensors the Rust binding tests exchange with Python: one of each
kind the issue names (plain, strided, bf16, fp8, int4-packed, affine, MX,
NVFP4, GGML), plus a scalar, each made with the hurray package's own API."""
import ml_dtypes
import numpy as np

import hurray


def _int4_packed():
    codes = (np.arange(15) * 5 % 16 - 8).astype(np.int8)  # -8 .. 7, an odd count
    nibbles = np.append(codes & 0xF, 0).astype(np.uint8)
    packed = (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8)  # element 0 in the low bits
    desc = hurray.Descriptor.build("int4", (3, 5), packing="lsb_first")
    return hurray.Tensor(desc, [(packed.ctypes.data, packed.nbytes)], owner=packed)


def _q8_0():
    blocks = bytearray()
    for b in range(4):
        blocks += np.float16(0.25 * (b + 1)).tobytes()
        blocks += ((np.arange(32) * 7 + b * 13) % 255 - 127).astype(np.int8).tobytes()
    return hurray.from_gguf(blocks, "q8_0", (2, 64))  # a bytearray: writable, so it can be exported


def make():
    """{name: hurray.Tensor}, in a fixed order."""
    x = np.linspace(-3.0, 3.0, 128, dtype=np.float32).reshape(2, 64)
    base = (np.arange(24).reshape(4, 6) * 37 - 400).astype("<i2")
    floats = np.array([[0.0, -0.0, 1.0, -1.5, 0.125, 448.0, -448.0, 0.001953125]], dtype=np.float32)
    return {
        "plain": hurray.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5 - 2.25),
        "strided": hurray.from_numpy(base[::-2, 1::2]),
        "bf16": hurray.from_numpy(np.array([[1.0, -2.5, 3.25], [0.0, 1e30, -7.0]], dtype=ml_dtypes.bfloat16)),
        "fp8": hurray.from_numpy(floats.astype(ml_dtypes.float8_e4m3fn)),
        "int4": _int4_packed(),
        "affine": hurray.quantize_affine(x, dtype="int8", axis=0),
        "mx": hurray.quantize_mx(x, dtype="float8_e4m3fn", axis=-1, block_size=32),
        "nvfp4": hurray.quantize_nvfp4(x[:, :32]),
        "ggml": _q8_0(),
        "scalar": hurray.from_numpy(np.array(3.5, dtype=np.float32)),
    }


def buffer_bytes(tensor):
    """Each buffer's bytes, copied."""
    return [bytes(tensor.buffer(i)) for i in range(len(tensor.buffers))]
