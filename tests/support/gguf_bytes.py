"""A GGUF byte builder for tests: small files, and files broken on purpose.

gguf-py's GGUFWriter refuses to write most broken files, so the readers'
refusals are tested on bytes made here, field by field, little-endian.
"""
import struct


def string(text):
    raw = text.encode("utf-8") if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def kv_u32(key, value):
    return string(key) + struct.pack("<II", 4, value)


def kv_string(key, value):
    return string(key) + struct.pack("<I", 8) + string(value)


def tensor_info(name, dims, ggml_type, offset):
    """`dims` innermost first, as GGUF stores them."""
    return string(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) \
        + struct.pack("<IQ", ggml_type, offset)


def gguf(kvs=(), infos=(), data=b"", *, version=3, alignment=32, magic=b"GGUF", counts=None):
    """A whole file: header, key-values, tensor infos, padding to `alignment`, `data`."""
    n_tensors, n_kv = counts if counts is not None else (len(infos), len(kvs))
    head = magic + struct.pack("<IQQ", version, n_tensors, n_kv) + b"".join(kvs) + b"".join(infos)
    pad = (-len(head)) % alignment if alignment else 0
    return head + bytes(pad) + data


def f32_file(rows=2, cols=4):
    """One F32 tensor 't' of numpy shape (rows, cols) holding 0, 1, 2, ..."""
    data = struct.pack(f"<{rows * cols}f", *range(rows * cols))
    return gguf([kv_string("general.architecture", "test")], [tensor_info("t", [cols, rows], 0, 0)], data)
