"""python -m hurray inspect / verify."""
import subprocess
import sys

import numpy as np

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
        "w\tfloat32\t2x32\t-\t256",
        "q\tint8\t2x32\taffine:per_axis(axis=0)\t74",  # 64 codes, 2 float32 scales, 2 int8 zero points
        "g\tuint8\t32\tggml:q8_0\t34",
    ]


def test_verify_sets_the_exit_status(tmp_path):
    path = sample(tmp_path)
    ok = run("verify", str(path))
    assert ok.returncode == 0 and "every checksum matches" in ok.stdout
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
    assert run().returncode == 2


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
