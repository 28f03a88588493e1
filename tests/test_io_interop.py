"""C and Python read each other's hurray-io files and agree on every byte.

tests/c/io_copy.c, built against the installed library with the flags
`python -m hurray --cflags --libs` prints, reads a file Python wrote (every
checksum verified), prints each tensor's descriptor and buffers in hex, and
writes every pair unchanged to a new file, which Python then reads.
"""
import subprocess

import pytest

import hurray
from io_kinds import as_tensor, assert_same, buffers_of, kinds
from support.cbuild import C_TESTS, build_installed, run_checked

STRICT = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"]


@pytest.fixture(scope="module")
def io_copy(tmp_path_factory):
    return build_installed(C_TESTS / "io_copy.c", tmp_path_factory.mktemp("io_copy") / "io_copy", STRICT)


@pytest.mark.parametrize("mode", ["mmap", "pread"])
def test_c_reads_python_and_python_reads_c(io_copy, tmp_path, mode):
    originals = kinds()
    python_file = tmp_path / "python.hurray"
    c_file = tmp_path / "c.hurray"
    hurray.save(python_file, originals, metadata={"written by": "python", "ключ": "значение"})
    result = run_checked([str(io_copy), str(python_file), str(c_file), mode], timeout=120)
    lines = result.stdout.splitlines()
    assert len(lines) == len(originals)
    for line, (name, value) in zip(lines, originals.items()):
        tensor = as_tensor(value)
        expected = [tensor.descriptor.encode().hex()] + [b.hex() or "-" for b in buffers_of(tensor)]
        assert line == " ".join([name] + expected), name
    with hurray.load(c_file) as f:
        assert f.metadata == {"written by": "python", "ключ": "значение"}
        assert list(f) == list(originals)
        for name, value in originals.items():
            assert_same(f[name], value)
    # The copy is the same file, byte for byte: the format has one encoding.
    assert c_file.read_bytes() == python_file.read_bytes()


def test_c_refuses_a_damaged_python_file(io_copy, tmp_path):
    path = tmp_path / "damaged.hurray"
    hurray.save(path, {"t": kinds()["plain"]})
    data = bytearray(path.read_bytes())
    data[64 + 192 + 10] ^= 1  # inside the first buffer
    path.write_bytes(data)
    result = subprocess.run([str(io_copy), str(path), str(tmp_path / "out.hurray")], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 1
    assert "HURRAY_ERROR_CHECKSUM" in result.stderr
    assert not (tmp_path / "out.hurray").exists()
