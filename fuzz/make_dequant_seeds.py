"""Write fuzz/dequant_seeds/: one seed per scheme and layout for fuzz/dequant_fuzz.c.

Each seed is the fuzzer's input layout (see dequant_fuzz.c): an output type,
a descriptor's bytes, the bytes of each buffer, and a row range. Run from
the repository root with the package installed: python fuzz/make_dequant_seeds.py
"""
from __future__ import annotations

import struct
from pathlib import Path

import ml_dtypes
import numpy as np

import hurray
from hurray import Descriptor, Part
from hurray.gguf import GGML_BLOCKS

OUT = Path(__file__).resolve().parent / "dequant_seeds"


def seed(kind: int, desc: Descriptor, buffers: list[bytes], first: int, count: int) -> bytes:
    encoded = desc.encode()
    out = bytearray([kind]) + struct.pack("<H", len(encoded)) + encoded
    for b in buffers:
        out += struct.pack("<H", len(b)) + b
    return bytes(out + struct.pack("<QQB", first, count, 0))


def main() -> None:
    OUT.mkdir(exist_ok=True)
    rng = np.random.default_rng(7)
    seeds: dict[str, bytes] = {}
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    seeds["plain_f32"] = seed(0, hurray.from_numpy(x).descriptor, [x.tobytes()], 1, 2)
    h = rng.standard_normal((4, 8)).astype(np.float16)
    seeds["plain_f16_to_bf16"] = seed(2, hurray.from_numpy(h).descriptor, [h.tobytes()], 0, 4)
    t = hurray.from_numpy(x[::-1, 1::2, ::-2])
    base = x.reshape(-1)
    seeds["plain_strided"] = seed(1, t.descriptor, [base.tobytes()], 0, 3)
    q = rng.integers(0, 16, (4, 32), dtype=np.uint8)
    packed = (q[:, 0::2] | (q[:, 1::2] << 4)).astype(np.uint8)
    d = Descriptor.build("int4", (4, 32), packing="lsb_first", scheme="affine", granularity="per_block",
                         axis=1, block_size=16,
                         parts={"values": Part("int4", 0, 0), "scale": Part("float16", 1, 0),
                                "zero_point": Part("int8", 2, 0)})
    seeds["affine_int4_blocks"] = seed(0, d, [packed.tobytes(), np.ones(8, np.float16).tobytes(),
                                              np.arange(8, dtype=np.int8).tobytes()], 1, 3)
    d = Descriptor.build("float4_e2m1fn", (2, 32), packing="lsb_first", scheme="microscaling",
                         granularity="per_block", axis=1, block_size=16,
                         parts={"values": Part("float4_e2m1fn", 0, 0),
                                "scale": Part("float8_e4m3fn", 1, 0, "swizzled_128x4"),
                                "global_scale": Part("float32", 2, 0)})
    scales = np.full(512, 0x38, np.uint8)
    seeds["nvfp4_swizzled"] = seed(0, d, [rng.integers(0, 256, 32, dtype=np.uint8).tobytes(),
                                          scales.tobytes(), np.float32(0.5).tobytes()], 0, 2)
    e8 = np.array([127, 255], np.uint8).view(ml_dtypes.float8_e8m0fnu)
    d = Descriptor.build("float8_e5m2", (1, 64), scheme="microscaling", granularity="per_block", axis=1,
                         block_size=32, parts={"values": Part("float8_e5m2", 0, 0),
                                               "scale": Part("float8_e8m0fnu", 1, 0)})
    seeds["mx_fp8"] = seed(1, d, [rng.integers(0, 256, 64, dtype=np.uint8).tobytes(), e8.tobytes()], 0, 1)
    for name, (_code, elements, nbytes) in GGML_BLOCKS.items():
        d = Descriptor.build("uint8", (2, elements), scheme="ggml", ggml_type=name)
        seeds[f"ggml_{name}"] = seed(0, d, [rng.integers(0, 256, 2 * nbytes, dtype=np.uint8).tobytes()], 1, 1)
    for name, data in seeds.items():
        (OUT / f"{name}.bin").write_bytes(data)
    print(f"wrote {len(seeds)} seeds to {OUT}")


if __name__ == "__main__":
    main()
