"""python -m hurray inspect / verify: a header row; verify checks each format as far as it can."""
import json
import struct
import subprocess
import sys

import numpy as np
import pytest

import hurray


def run(*args):
    return subprocess.run([sys.executable, "-m", "hurray", *args], capture_output=True, text=True, timeout=120)


def sample(tmp_path):
    path = tmp_path / "cli.hurray"
    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(2, 32)
    hurray.save(path, {"w": x, "q": hurray.quantize_affine(x, axis=0), "g": hurray.from_gguf(bytes(34), "q8_0", (32,))},
                metadata={"model": "tiny"})
    return path


def test_inspect_prints_one_line_per_tensor(tmp_path):
    result = run("inspect", str(sample(tmp_path)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "# model = tiny",
        "name\tdtype\tshape\tquantization\tbytes",
        "w\tfloat32\t2x32\t-\t256",
        "q\tint8\t2x32\taffine:per_axis(axis=0)\t74",  # 64 codes, 2 float32 scales, 2 int8 zero points
        "g\tuint8\t32\tggml:q8_0\t34",
    ]


def test_verify_sets_the_exit_status(tmp_path):
    path = sample(tmp_path)
    ok = run("verify", str(path))
    assert ok.returncode == 0 and ok.stdout == f"{path}: 3 tensors, every checksum matches\n"
    data = bytearray(path.read_bytes())
    data[64 + 192 + 3] ^= 1  # a byte of w's values
    path.write_bytes(data)
    bad = run("verify", str(path))
    assert bad.returncode == 1
    assert "FAIL w" in bad.stderr and "1 of 3" in bad.stderr
    path.write_bytes(data[:100])
    assert run("verify", str(path)).returncode == 1
    assert run("inspect", str(path)).returncode == 1


def test_flags_and_version_still_work():
    assert run("--cflags", "--libs").stdout.count("-I") == 1
    assert "hurray-io 1" in run("--version").stdout
    bare = run()
    assert bare.returncode == 0 and bare.stdout.startswith("usage: python -m hurray")


class FakeTerminal:
    def __init__(self, tty):
        self.tty = tty
        self.text = ""

    def isatty(self):
        return self.tty

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def test_progress_bar_only_on_a_terminal_for_large_files(tmp_path, monkeypatch):
    from hurray.cli import verify

    path = sample(tmp_path)
    args = type("Args", (), {"file": str(path)})
    size = path.stat().st_size
    # (on a terminal, the threshold) -> whether verify draws its bar
    for tty, threshold, drawn in ((True, size, True), (False, size, False), (True, size + 1, False)):
        stream = FakeTerminal(tty=tty)
        monkeypatch.setattr(sys, "stderr", stream)
        monkeypatch.setattr(verify, "PROGRESS_FROM", threshold)
        assert verify.run(args) == 0
        if drawn:
            assert stream.text.startswith("\rverifying [") and "100%" in stream.text and stream.text.endswith("\n")
        else:
            assert stream.text == ""


# ---- GGUF and safetensors -------------------------------------------------

def model_files(tmp_path):
    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(2, 32)
    st, gg = tmp_path / "m.safetensors", tmp_path / "m.gguf"
    hurray.save_safetensors(st, {"w": x, "q": hurray.quantize_mx(x)})
    hurray.save_gguf(gg, {"w": x, "g": hurray.from_gguf(bytes(34), "q8_0", (32,))})
    return st, gg


def test_inspect_prints_the_header_row_for_model_files_too(tmp_path):
    for path in model_files(tmp_path):
        lines = [line for line in run("inspect", str(path)).stdout.splitlines() if not line.startswith("#")]
        assert lines[0] == "name\tdtype\tshape\tquantization\tbytes"
        assert lines[1].startswith("w\tfloat32\t2x32\t-\t256")


def test_verify_checks_the_structure_of_model_files_and_says_they_have_no_checksums(tmp_path):
    st, gg = model_files(tmp_path)
    for path, fmt in ((st, "safetensors"), (gg, "GGUF")):
        ok = run("verify", str(path))
        assert ok.returncode == 0, ok.stderr
        assert ok.stdout == (f"{path}: 2 tensors, structure checked; {fmt} files carry no checksums, "
                             "so the tensors' bytes cannot be checked\n")
        assert "magic" not in ok.stdout + ok.stderr


def _safetensors(path, header, data):
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


@pytest.mark.parametrize("header, data, says", [
    ({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}, bytes(10), "truncated"),
    ({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 16]}}, bytes(16), "needs 24 bytes"),
    ({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
      "b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}}, bytes(6), "overlaps"),
])
def test_verify_fails_a_safetensors_file_whose_structure_is_wrong(tmp_path, header, data, says):
    path = tmp_path / "bad.safetensors"
    _safetensors(path, header, data)
    bad = run("verify", str(path))
    assert bad.returncode == 1 and bad.stdout == ""
    assert says in bad.stderr and str(path) in bad.stderr


def test_verify_fails_a_gguf_tensor_it_cannot_read(tmp_path):
    """A tensor whose type Hurray cannot describe is not checked: verify says so and exits 1."""
    import gguf
    from gguf import GGMLQuantizationType

    path = tmp_path / "k.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("w", np.ones((2, 32), np.float32))
    # Q8_1 is an intermediate type of ggml's matrix products: no file stores it and gguf-py
    # does not dequantize it, so Hurray has no descriptor for it.
    writer.add_tensor("q8", np.zeros((1, 40), np.uint8), raw_dtype=GGMLQuantizationType.Q8_1)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    bad = run("verify", str(path))
    assert bad.returncode == 1
    assert "FAIL q8: " in bad.stderr and "Q8_1" in bad.stderr and "1 of 2 tensors failed" in bad.stderr
