"""The tensors of the interop matrix: what each producer makes, and what every
consumer must read back.

A case is stated once, as a producer outside hurray-python would state it:
the descriptor's fields, and the exact bytes of each buffer. Its expected
readings are derived here with numpy (and ml_dtypes), independently of the
hurray package:

- ``elements``: per role, the bytes a consumer gathers by walking the layout
  (values in logical row-major order, one element per ceil(storage bits / 8)
  bytes with sub-byte codes in the low bits; GGML values as their block
  bytes; scale and zero-point parts as stored);
- ``real``: the float32 values the tensor stands for (dequantized);
- ``array``: what ``np.asarray`` must give, for types numpy can hold.

All values are chosen so every expected float is exact in float32.
"""
import struct
from dataclasses import dataclass
from typing import Optional

import ml_dtypes
import numpy as np

# hurray.h codes, restated so the cases do not depend on the package under test.
DTYPE = {"uint8": 6, "int8": 2, "int16": 3, "int32": 4, "int4": 12, "float32": 17, "float8_e4m3fn": 26,
         "float16": 16}
PACKING = {"none": 0, "padded": 1, "lsb_first": 2, "ggml_split": 3}
SCHEME = {"none": 0, "affine": 1, "microscaling": 2, "ggml": 3}
GRANULARITY = {"none": 0, "per_tensor": 1, "per_axis": 2, "per_block": 3}
ROLE = {"values": 1, "scale": 2, "zero_point": 3, "global_scale": 4}
LAYOUT = {"row_major": 0, "swizzled_128x4": 1}
GGML = {"q4_0": 2, "q8_0": 8}


@dataclass(frozen=True, eq=False)
class Case:
    id: str
    title: str  # for docs/interop.md
    dtype: str
    shape: tuple
    strides: Optional[tuple]  # elements; None: row-major
    packing: Optional[str]  # None: the library's default for the dtype
    scheme: str
    granularity: str
    axis: int
    block_size: int
    ggml_type: Optional[str]
    parts: tuple  # (role, dtype, buffer_index, byte_offset, layout), in role order
    buffers: tuple  # bytes per buffer
    elements: dict  # role name -> bytes
    real: np.ndarray  # float32
    array: Optional[np.ndarray] = None
    # How hurray-python makes it with its own API (see adapters.PythonPeer).
    python_api: str = "Tensor"

    def codes(self):
        """The fields as hurray.h codes, in the order the C peer's produce() takes them."""
        return dict(
            dtype=DTYPE[self.dtype],
            shape=self.shape,
            strides=self.strides,
            packing=None if self.packing is None else PACKING[self.packing],
            scheme=SCHEME[self.scheme],
            granularity=GRANULARITY[self.granularity],
            axis=self.axis,
            block_size=self.block_size,
            ggml_type=0 if self.ggml_type is None else GGML[self.ggml_type],
            parts=tuple((ROLE[r], DTYPE[d], b, o, LAYOUT[lay]) for r, d, b, o, lay in self.parts),
        )


def _plain_float32():
    values = (np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5 - 2.25).astype("<f4")
    return Case(
        id="float32", title="plain float32, row-major, shape (3, 4)",
        dtype="float32", shape=(3, 4), strides=None, packing=None, scheme="none", granularity="none",
        axis=0, block_size=0, ggml_type=None, parts=(("values", "float32", 0, 0, "row_major"),),
        buffers=(values.tobytes(),), elements={"values": values.tobytes()}, real=values.astype(np.float32),
        array=values, python_api="from_numpy",
    )


def _strided_int16():
    base = (np.arange(24).reshape(4, 6) * 37 - 400).astype("<i2")
    view = base[::-2, 1::2]  # rows 3 and 1, columns 1, 3, 5: strides (-12, 2) elements
    first = 3 * 6 + 1
    return Case(
        id="strided", title="int16 view with strides (-12, 2): negative and non-unit, byte offset 38",
        dtype="int16", shape=(2, 3), strides=(-12, 2), packing=None, scheme="none", granularity="none",
        axis=0, block_size=0, ggml_type=None, parts=(("values", "int16", 0, 2 * first, "row_major"),),
        buffers=(base.tobytes(),), elements={"values": np.ascontiguousarray(view).tobytes()},
        real=view.astype(np.float32), array=view, python_api="from_numpy",
    )


def _packed_int4():
    codes = (np.arange(15) * 5 % 16 - 8).astype(np.int8).reshape(3, 5)  # -8 .. 7
    nibbles = (codes.reshape(-1) & 0xF).astype(np.uint8)
    padded = np.append(nibbles, np.uint8(0))
    packed = (padded[0::2] | (padded[1::2] << 4)).astype(np.uint8)  # element 0 in the low bits
    return Case(
        id="int4_lsb_first", title="int4 packed two per byte, lsb_first, shape (3, 5) (odd count)",
        dtype="int4", shape=(3, 5), strides=None, packing="lsb_first", scheme="none", granularity="none",
        axis=0, block_size=0, ggml_type=None, parts=(("values", "int4", 0, 0, "row_major"),),
        buffers=(packed.tobytes(),), elements={"values": nibbles.tobytes()}, real=codes.astype(np.float32),
        python_api="Tensor",
    )


def _fp8():
    floats = np.array([[0.0, -0.0, 1.0, -1.5, 0.125, 448.0, -448.0, 0.001953125],
                       [3.5, -2.75, 96.0, -0.0625, 240.0, 7.0, -13.0, 0.5]], dtype=np.float32)
    values = floats.astype(ml_dtypes.float8_e4m3fn)
    assert np.array_equal(values.astype(np.float32), floats), "every value must be exact in e4m3fn"
    return Case(
        id="fp8_e4m3fn", title="float8_e4m3fn, shape (2, 8), incl. -0, max 448, min subnormal",
        dtype="float8_e4m3fn", shape=(2, 8), strides=None, packing=None, scheme="none",
        granularity="none", axis=0, block_size=0, ggml_type=None,
        parts=(("values", "float8_e4m3fn", 0, 0, "row_major"),), buffers=(values.tobytes(),),
        elements={"values": values.tobytes()}, real=floats, array=values, python_api="from_numpy",
    )


def _q8_0():
    rows, cols = 2, 64
    blocks = bytearray()
    real = np.empty(rows * cols, np.float32)
    for b in range(rows * cols // 32):
        d = np.float16(0.25 * (b + 1))
        qs = ((np.arange(32) * 7 + b * 13) % 255 - 127).astype(np.int8)
        blocks += d.tobytes() + qs.tobytes()  # block_q8_0: fp16 d, then 32 int8
        real[b * 32:(b + 1) * 32] = np.float32(d) * qs.astype(np.float32)
    blocks = bytes(blocks)
    return Case(
        id="ggml_q8_0", title="GGML Q8_0 blocks (fp16 d + 32 int8), shape (2, 64): 4 blocks of 34 bytes",
        dtype="uint8", shape=(rows, cols), strides=None, packing=None, scheme="ggml", granularity="none",
        axis=0, block_size=0, ggml_type="q8_0", parts=(("values", "uint8", 0, 0, "row_major"),),
        buffers=(blocks,), elements={"values": blocks}, real=real.reshape(rows, cols),
        python_api="from_gguf",
    )


def _affine_per_axis():
    q = (np.arange(12).reshape(3, 4) * 23 % 256 - 128).astype(np.int8)
    scale = np.array([0.5, 0.25, 2.0], dtype="<f4")
    zero = np.array([3, -7, 0], dtype="<i4")
    pad = b"\xee" * 4  # a gap: the zero points start at byte 16 of buffer 1
    params = scale.tobytes() + pad + zero.tobytes()
    real = ((q.astype(np.float32) - zero[:, None].astype(np.float32)) * scale[:, None]).astype(np.float32)
    return Case(
        id="affine_per_axis",
        title="int8 affine per axis 0, float32 scales + int32 zero points sharing buffer 1",
        dtype="int8", shape=(3, 4), strides=None, packing=None, scheme="affine", granularity="per_axis",
        axis=0, block_size=0, ggml_type=None,
        parts=(("values", "int8", 0, 0, "row_major"), ("scale", "float32", 1, 0, "row_major"),
               ("zero_point", "int32", 1, 16, "row_major")),
        buffers=(q.tobytes(), params),
        elements={"values": q.tobytes(), "scale": scale.tobytes(), "zero_point": zero.tobytes()},
        real=real, python_api="Tensor",
    )


CASES = (_plain_float32(), _strided_int16(), _packed_int4(), _fp8(), _q8_0(), _affine_per_axis())
BY_ID = {case.id: case for case in CASES}


def row_major(shape):
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def expected_fields(case):
    """The descriptor fields every producer of `case` must mean, as codes (part positions aside)."""
    c = case.codes()
    return {
        "dtype": c["dtype"], "shape": tuple(case.shape),
        "strides": tuple(case.strides) if case.strides is not None else row_major(case.shape),
        "byte_order": 0, "packing": c["packing"] or 0, "scheme": c["scheme"], "granularity": c["granularity"],
        "axis": c["axis"], "block_size": c["block_size"], "ggml_type": c["ggml_type"],
        "part_kinds": {role: (dtype, layout) for role, dtype, _, _, layout in c["parts"]},
        "buffer_count": len(case.buffers),
    }


def parse_descriptor(data):
    """Read layer-4 descriptor bytes by the table in docs/impl/descriptor-encoding.md.

    An oracle written from the spec alone, so that no consumer's decoder is
    checked against itself. Returns the same field dict the peers report.
    """
    magic, version, total, rank, byte_order, packing, scheme, granularity, part_count = struct.unpack_from(
        "<4sHHBBBBBB", data, 0)
    axis, ggml_type, block_size = struct.unpack_from("<IIQ", data, 16)
    assert magic == b"HRYD" and version == 1 and total == len(data) == 32 + 16 * rank + 16 * part_count
    shape = struct.unpack_from(f"<{rank}Q", data, 32)
    strides = struct.unpack_from(f"<{rank}q", data, 32 + 8 * rank)
    parts = {}
    for i in range(part_count):
        role, dtype, layout, _reserved, buffer_index, byte_offset = struct.unpack_from(
            "<BBBBIQ", data, 32 + 16 * rank + 16 * i)
        parts[role] = (dtype, buffer_index, byte_offset, layout)
    return {
        "dtype": parts[ROLE["values"]][0], "shape": shape, "strides": strides, "byte_order": byte_order,
        "packing": packing, "scheme": scheme, "granularity": granularity, "axis": axis,
        "block_size": block_size, "ggml_type": ggml_type, "parts": parts,
        "buffer_count": 1 + max(p[1] for p in parts.values()),
    }
