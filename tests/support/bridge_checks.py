"""What every framework-bridge test checks of a tensor that came in (ADR-061).

``c_consumer_sees(tensor)`` hands the tensor's capsule to C twice: to the
layer-7 consumer of docs/cookbook/layer-7-c-ffi.md (it must open the
capsule, decode its descriptor and accept its buffers, and name the scheme
and parts Hurray holds, or for version 2 the graph and its node count), and to
libhurray itself, which decodes the capsule's descriptor bytes (they must be
the tensor's, byte for byte), dequantizes with hurray_dequantize over the
capsule's own buffer list and must give Tensor.dequantize()'s bits. The
buffers are the tensor's own memory (the capsule's addresses are its
spans). ``same_bits`` compares float arrays by bit pattern.
"""
from __future__ import annotations

import ctypes
import functools
from typing import Any

import numpy as np

from . import layer7


def same_bits(ours: np.ndarray, reference: np.ndarray, what: str = "", nan_any_sign: bool = False) -> None:
    """Bit for bit (16- or 32-bit floats of one dtype); a NaN matches any NaN if nan_any_sign."""
    ours, reference = np.ascontiguousarray(ours), np.ascontiguousarray(reference)
    assert ours.shape == reference.shape, (ours.shape, reference.shape, what)
    assert ours.dtype == reference.dtype, (ours.dtype, reference.dtype, what)
    as_bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[ours.dtype.itemsize]
    differ = ours.view(as_bits) != reference.view(as_bits)
    if nan_any_sign:
        nan = np.isnan(reference.astype(np.float32))
        assert (np.isnan(ours.astype(np.float32)) == nan).all(), f"NaN where the library has none, or none where it has ({what})"
        differ &= ~nan
    assert not differ.any(), (f"{int(differ.sum())} of {differ.size} differ ({what}); first at "
                              f"{np.argwhere(differ)[:3].tolist()}")


@functools.lru_cache(maxsize=None)
def _lib() -> Any:
    import hurray

    lib = ctypes.CDLL(hurray.get_library())
    lib.hurray_tensor_context_descriptor.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                                     ctypes.POINTER(ctypes.c_uint64)]
    lib.hurray_descriptor_decode.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.POINTER(ctypes.c_void_p)]
    lib.hurray_descriptor_destroy.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    lib.hurray_dequantize.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
                                      ctypes.c_uint64]
    return lib


def c_consumer_sees(tensor: Any) -> str:
    """The layer-7 consumer's reading of the capsule; libhurray's dequantization of it equals Hurray's."""
    import hurray

    capsule = tensor.__hurray__(max_version=5)
    assert layer7.buffer_addresses(capsule) == list(tensor.buffers)
    status, text = layer7.describe(capsule)
    assert status == 0, text
    d = tensor.descriptor
    assert f"[{', '.join(map(str, d.shape))}]" in text.splitlines()[0], text
    if d.encoding_version == 1:
        assert text.startswith(f"{d.dtype} [{', '.join(map(str, d.shape))}] strides "
                               f"[{', '.join(map(str, d.strides))}]"), text
        assert f"scheme {d.scheme}" in text
        for role, part in d.parts.items():
            assert f"part {role}: {part.dtype} in buffer {part.buffer_index} at byte {part.byte_offset}" in text
    else:
        assert text.startswith(f"a graph of {len(d.nodes)} nodes [") and "\nscheme graph\n" in text, text
    lib = _lib()
    pointer, context = layer7.handles(capsule)
    data, size = ctypes.c_void_p(), ctypes.c_uint64()
    assert lib.hurray_tensor_context_descriptor(context, ctypes.byref(data), ctypes.byref(size)) == 0
    assert ctypes.string_at(data, size.value) == d.encode(), "the capsule carries another descriptor"
    handle = ctypes.c_void_p()
    assert lib.hurray_descriptor_decode(data, size, ctypes.byref(handle)) == 0
    try:
        out = np.full(int(np.prod(d.shape, dtype=np.int64)), 0x5A5A5A5A, np.uint32)
        status = lib.hurray_dequantize(handle, pointer, hurray.dtype_code("float32"), out.ctypes.data, out.nbytes)
        assert status == 0, f"hurray_dequantize over the capsule: status {status}"
    finally:
        lib.hurray_descriptor_destroy(ctypes.byref(handle))
    same_bits(out.view(np.float32).reshape(d.shape), tensor.dequantize(), "C over the capsule")
    return text
