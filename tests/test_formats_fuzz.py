"""Hypothesis mutates valid GGUF and safetensors files: the readers answer with a Mapping or a HurrayError, never
a crash or another exception, and every tensor they hand out is safe to read.

The examples are bounded so the suite stays fast; each runs in this process,
so a crash (a read outside the map) would end the test run, not pass it.
"""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hurray
from hurray import HurrayError
from support import gguf_bytes as gb
from support.tensor_kinds import ggml_blocks

EXAMPLES = int(os.environ.get("HURRAY_FUZZ_EXAMPLES", "150"))  # raise it for a longer run


def _gguf_seed():
    q4, _ = ggml_blocks("Q4_0", rows=1, blocks_per_row=1)
    data = np.arange(8, dtype="<f4").tobytes() + bytes(32 - 32 % 32) + q4.tobytes()
    infos = [gb.tensor_info("f", [4, 2], 0, 0), gb.tensor_info("q", [32], 2, 32)]
    kvs = [gb.kv_string("general.architecture", "fuzz"), gb.kv_u32("general.alignment", 32),
           gb.string("arr") + b"\x09\x00\x00\x00" + b"\x08\x00\x00\x00" + (2).to_bytes(8, "little")
           + gb.string("a") + gb.string("bc")]
    return gb.gguf(kvs, infos, data)


def _safetensors_seed(tmp_path_factory):
    path = tmp_path_factory.mktemp("seed") / "seed.safetensors"
    q = hurray.quantize_affine(np.linspace(-1, 1, 64, dtype=np.float32).reshape(2, 32), dtype="int8", axis=0)
    hurray.save_safetensors(path, {"a": np.arange(6, dtype=np.float32), "q": q,
                                   "g": hurray.from_gguf(*_q8())}, metadata={"k": "v"})
    return path.read_bytes()


def _q8():
    blocks, shape = ggml_blocks("Q8_0", rows=1, blocks_per_row=1)
    return blocks.reshape(-1), "Q8_0", shape


def _touch(mapping):
    """Read every tensor the mapping hands out, the way a user would."""
    for name in mapping:
        try:
            tensor = mapping[name]
        except HurrayError:
            continue
        for i in range(len(tensor.buffers)):
            tensor.buffer(i).tobytes()
        try:
            tensor.dequantize()
        except HurrayError:
            pass
    try:
        mapping.metadata  # GGUF values are decoded here: a string that is not UTF-8 is a CorruptError
    except HurrayError:
        pass


@st.composite
def mutated(draw, seed):
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["flip", "set", "cut", "insert", "delete"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if how == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif how == "set" and data:
            width = draw(st.sampled_from([1, 4, 8]))
            value = draw(st.sampled_from([0, 1, 0xFF, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 40, (1 << 64) - 1]))
            data[at:at + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
        elif how == "cut":
            del data[at:]
        elif how == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif how == "delete":
            del data[at:at + draw(st.integers(1, 16))]
    return bytes(data)


FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def st_seed(tmp_path_factory):
    return _safetensors_seed(tmp_path_factory)


def test_seeds_are_valid(tmp_path, st_seed):
    (tmp_path / "g.gguf").write_bytes(_gguf_seed())
    (tmp_path / "s.safetensors").write_bytes(st_seed)
    assert sorted(hurray.load_gguf(tmp_path / "g.gguf")) == ["f", "q"]
    assert sorted(hurray.load_safetensors(tmp_path / "s.safetensors")) == ["a", "g", "q"]


@FUZZ
@given(data=mutated(_gguf_seed()))
def test_gguf_reader_never_crashes(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("fuzz") / "m.gguf"
    path.write_bytes(data)
    try:
        f = hurray.load_gguf(path)
    except HurrayError:
        return
    _touch(f)


@FUZZ
@given(data=st.data())
def test_safetensors_reader_never_crashes(tmp_path_factory, st_seed, data):
    path = tmp_path_factory.mktemp("fuzz") / "m.safetensors"
    path.write_bytes(data.draw(mutated(st_seed)))
    try:
        f = hurray.load_safetensors(path)
    except HurrayError:
        return
    _touch(f)
