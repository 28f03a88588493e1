"""Hostile model files are refused with a HurrayError, and what they may cost is bounded (issue 27, items 10, 11, 13).

Each of these used to escape as another exception (a RecursionError, a
numpy ValueError) and print a traceback from ``python -m hurray
inspect/convert``, or to make reading the metadata cost tens of seconds
and half a gigabyte: now each is a CorruptError at load (the GGUF bounds
are checked by the C walk, tests/c/test_gguf_index.c), and the commands
exit 1 with one line.
"""
import json
import struct
import subprocess
import sys

import numpy as np
import pytest

import hurray
from hurray.errors import CorruptError, InvalidArgumentError
from support.gguf_bytes import gguf, kv_string, string, tensor_info


def safetensors_bytes(header, data=b""):
    text = json.dumps(header).encode("utf-8")
    return struct.pack("<Q", len(text)) + text + data


def _one_f32():
    return {"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}


def nested_header():
    # A header nested 100,000 deep: json.loads raised RecursionError. (Nested so in the value of
    # __metadata__["hurray"], it is not Hurray's record but the user's metadata, ADR-064:
    # tests/test_formats_safetensors.py opens that file.)
    text = b'{"t": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "x": ' + \
        b"[" * 100_000 + b"]" * 100_000 + b"}}"
    return struct.pack("<Q", len(text)) + text + bytes(4)


def huge_empty_shape():
    # [0, 2**70] holds nothing, but numpy cannot make it: a ValueError from reshape.
    return safetensors_bytes({"t": {"dtype": "F32", "shape": [0, 2**70], "data_offsets": [0, 0]}})


def gguf_huge_empty_dims():
    # GGUF dims [2**63, 0] (innermost first): numpy shape (0, 2**63).
    return gguf([kv_string("general.architecture", "test")], [tensor_info("t", [2**63, 0], 0, 0)])


def gguf_nested_arrays(count):
    # One key whose value is an array of `count` empty arrays of u8.
    inner = struct.pack("<IQ", 0, 0)
    value = struct.pack("<IIQ", 9, 9, count) + inner * count
    return gguf([string("k") + value], [tensor_info("t", [1], 0, 0)], bytes(4))


def gguf_string_array(count):
    value = struct.pack("<IIQ", 9, 8, count) + bytes(8) * count  # empty strings
    return gguf([string("k") + value], [tensor_info("t", [1], 0, 0)], bytes(4))


def gguf_bool_array(count):
    value = struct.pack("<IIQ", 9, 7, count) + bytes(count)
    return gguf([string("k") + value], [tensor_info("t", [1], 0, 0)], bytes(4))


HOSTILE = {
    "nested.safetensors": (nested_header, "not valid JSON"),
    "shape.safetensors": (huge_empty_shape, "2^60 elements"),
    "dims.gguf": (gguf_huge_empty_dims, "2^60 elements"),
    "nested-arrays.gguf": (lambda: gguf_nested_arrays((1 << 16) + 1), "arrays inside arrays"),
    "bools.gguf": (lambda: gguf_bool_array(1 << 23), "values"),
    "strings.gguf": (lambda: gguf_string_array((1 << 21) + 1), "strings"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_model_file_is_a_corrupt_error(tmp_path, name):
    make, words = HOSTILE[name]
    path = tmp_path / name
    path.write_bytes(make())
    opener = hurray.load_gguf if name.endswith(".gguf") else hurray.load_safetensors
    with pytest.raises(CorruptError, match=words.replace("^", r"\^")):
        with opener(path) as f:
            f.metadata  # noqa: B018
            for key in f:
                np.asarray(f[key])


@pytest.mark.parametrize("name", HOSTILE)
def test_the_commands_refuse_a_hostile_file_in_one_line(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(HOSTILE[name][0]())
    for command in (["inspect", str(path)], ["convert", str(path), str(tmp_path / "out.hurray")]):
        result = subprocess.run([sys.executable, "-m", "hurray", *command], capture_output=True, text=True,
                                timeout=120)
        assert result.returncode == 1, (command, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr, result.stderr
        assert HOSTILE[name][1] in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert not (tmp_path / "out.hurray").exists()


def test_the_bounds_let_a_real_sized_store_through(tmp_path):
    # 65536 nested arrays and a few million values are still read.
    path = tmp_path / "ok.gguf"
    path.write_bytes(gguf_nested_arrays(1 << 16))
    with hurray.load_gguf(path) as f:
        assert len(f.metadata["k"]) == 1 << 16
    vocabulary = [f"token-{i}" for i in range(262_144)]  # the largest vocabularies in use
    hurray.save_gguf(path, {"t": np.zeros(4, np.float32)},
                     metadata={"tokenizer.ggml.tokens": vocabulary, "tokenizer.ggml.scores": [0.5] * 262_144,
                               "tokenizer.ggml.token_type": [1] * 262_144})
    with hurray.load_gguf(path) as f:
        assert f.metadata["tokenizer.ggml.tokens"][-1] == "token-262143"


@pytest.mark.parametrize("save", [hurray.save_safetensors, hurray.save_gguf, hurray.save])
def test_a_name_that_is_not_utf8_is_refused_before_writing(tmp_path, save):
    # Issue 27, item 13: save_safetensors wrote "\udc80" into a header safetensors itself refuses.
    path = tmp_path / "x.bin"
    with pytest.raises(InvalidArgumentError, match="UTF-8"):
        save(path, {"bad\udc80": np.zeros(2, np.float32)})
    with pytest.raises(InvalidArgumentError, match="UTF-8"):
        save(path, {"w": np.zeros(2, np.float32)}, metadata={"k": "bad\udc80"})
    assert not path.exists()
