"""Tensors of every kind for the pickling tests, and the work their worker processes do.

Everything here is importable by name, so that spawned processes and Dask
workers can unpickle the functions (their sys.path is the parent's).
"""
import os

import numpy as np

import hurray
from hurray import Descriptor, Part, Tensor
from hurray.quant.ggml import from_gguf


def _q8_0_blocks(rng, count):
    """GGML Q8_0 blocks: a finite fp16 scale, then 32 int8 codes."""
    blocks = np.empty((count, 34), dtype=np.uint8)
    blocks[:, :2] = rng.uniform(0.01, 1.0, count).astype(np.float16).view(np.uint8).reshape(count, 2)
    blocks[:, 2:] = rng.integers(-128, 128, (count, 32), dtype=np.int8).view(np.uint8)
    return blocks.tobytes()


def samples(seed=0):
    """name -> Tensor: plain (read-only, strided, big-endian, empty), affine, MX, NVFP4 (packed too) and GGML."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    frozen = rng.standard_normal((3, 5)).astype(np.float64)
    frozen.flags.writeable = False
    return {
        "plain": hurray.from_numpy(x.copy()),
        "plain-readonly": hurray.from_numpy(frozen),
        "plain-strided": hurray.from_numpy(x[::2, ::-3]),
        "affine": hurray.quantize_affine(x, dtype="int8", axis=0),
        "affine-int4-blocks": hurray.quantize_affine(x, dtype="int4", block_size=32),
        "mx": hurray.quantize_mx(x, dtype="float8_e4m3fn"),
        "nvfp4": hurray.quantize_nvfp4(x, swizzled=True),
        "nvfp4-packed": hurray.quantize_nvfp4(x, packing="lsb_first"),
        "big-endian": hurray.from_numpy(x.astype(">f4")),
        "empty": hurray.from_numpy(np.empty((0, 3), dtype=np.float32)),
        "ggml": from_gguf(_q8_0_blocks(rng, 32), "Q8_0", (16, 64)),
    }


def values(tensor):
    """The real numbers a tensor stands for, as float32."""
    return tensor.dequantize()


def work(tensor):
    """What a worker does: dequantize, and send the tensor back as well."""
    return tensor, values(tensor)


def work_by_name(name, seed=0):
    """Build sample `name` in the worker and send it back with its values."""
    tensor = samples(seed)[name]
    return tensor, values(tensor)


def holder_pid(tensor):
    """The process id of whoever holds a Tensor (a Dask task's argument)."""
    assert isinstance(tensor, Tensor)
    return os.getpid()


def raw(tensor):
    """Each buffer's bytes, for a bit-for-bit comparison."""
    return [tensor.buffer(i).tobytes() for i in range(len(tensor.buffers))]


def assert_same(received, local):
    """`received` is bit for bit the tensor `local`: descriptor, buffers, flag and values."""
    assert isinstance(received, Tensor)
    assert received.descriptor == local.descriptor
    assert raw(received) == raw(local)
    assert received.readonly == local.readonly
    assert_same_bits(values(received), values(local))


def assert_same_bits(a, b):
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def affine_per_tensor(nbytes, values_buffer):
    """An int8 affine tensor over `values_buffer` (nbytes long), its scale and zero point in buffers 1 and 2."""
    scale = np.array([0.5], dtype=np.float32)
    zero = np.array([3], dtype=np.int8)
    descriptor = Descriptor.build(
        "int8", (nbytes,), scheme="affine", granularity="per_tensor",
        parts={"values": Part("int8", 0, 0), "scale": Part("float32", 1, 0), "zero_point": Part("int8", 2, 0)},
    )
    arrays = (values_buffer, scale, zero)
    spans = [(a.__array_interface__["data"][0], a.nbytes) for a in arrays]
    return Tensor(descriptor, spans, owner=arrays)


def dask_serializer_module():
    """The module of the serializer distributed uses for a Tensor in this process."""
    from distributed.protocol.serialize import dask_serialize

    return dask_serialize.dispatch(Tensor).__module__
