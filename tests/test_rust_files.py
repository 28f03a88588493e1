"""Both directions through .hurray files between Python and the Rust crate.

Python writes every kind of tensor (plain, strided, bf16, fp8, int4-packed,
affine, MX, NVFP4, GGML, and a scalar); the Rust ``inspect`` example must
agree with Python's view of the file on every tensor. The Rust ``rewrite``
example reads that file, rebuilds each descriptor field by field through
the builder, copies the buffers into new memory and writes a new file;
Python must read back the same descriptors, bytes and values. Corrupt
files are errors in Rust, never panics.
"""
import subprocess
import sys

import numpy as np
import pytest

import hurray
from support import rust, rust_tensors

PANIC_EXIT = 101  # what a Rust program that panicked exits with


@pytest.fixture(scope="session")
def rust_examples():
    return rust.EXAMPLES


@pytest.fixture(scope="module")
def python_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("rust-files") / "from_python.hurray"
    tensors = rust_tensors.make()
    hurray.save(path, tensors, metadata={"written_by": "python", "kinds": str(len(tensors))})
    return path, tensors


HEADER = "name\tdtype\tshape\tscheme\tbuffers\tfnv1a64"


def python_view(path):
    """inspect's lines, as Python reads the file: the header row, then a line per tensor."""
    lines = [HEADER]
    with hurray.load(path) as f:
        for name in f.keys():
            t = f[name]
            d = t.descriptor
            hashes = ",".join(f"{rust.fnv1a64(b):016x}" for b in rust_tensors.buffer_bytes(t))
            shape = "x".join(map(str, d.shape)) or "scalar"
            lines.append(f"{name}\t{d.dtype}\t{shape}\t{d.scheme}\t{len(t.buffers)}\t{hashes}")
    return lines


def python_cli_lines(path):
    """`python -m hurray inspect`'s rows after its header, metadata lines left out."""
    out = subprocess.run([sys.executable, "-m", "hurray", "inspect", str(path)], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    rows = [line.split("\t") for line in out if not line.startswith("#")]
    assert rows[0][:3] == ["name", "dtype", "shape"], rows[0]
    return rows[1:]


def test_inspect_agrees_with_python_on_every_tensor(rust_examples, python_file):
    path, tensors = python_file
    result = rust_examples.run("inspect", path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines == python_view(path)
    assert lines[0] == HEADER
    lines = lines[1:]
    assert [line.split("\t")[0] for line in lines] == list(tensors)
    by_name = {line.split("\t")[0]: line.split("\t") for line in lines}
    assert by_name["scalar"][2] == "scalar"
    assert by_name["nvfp4"][1:5] == ["float4_e2m1fn", "2x32", "microscaling", "3"]
    assert by_name["ggml"][3] == "ggml" and by_name["affine"][3] == "affine"


def test_inspect_writes_names_dtypes_and_shapes_as_the_python_cli_does(rust_examples, python_file):
    path, _ = python_file
    rust_rows = [line.split("\t") for line in rust_examples.run("inspect", path).stdout.splitlines()[1:]]
    assert [row[:3] for row in rust_rows] == [row[:3] for row in python_cli_lines(path)]


def test_inspect_hashes_are_fnv1a_of_the_bytes_python_saved(rust_examples, python_file):
    path, tensors = python_file
    lines = rust_examples.run("inspect", path).stdout.splitlines()[1:]
    for line in lines:
        name, *_, hashes = line.split("\t")
        original = rust_tensors.buffer_bytes(tensors[name])
        with hurray.load(path) as f:
            stored = rust_tensors.buffer_bytes(f[name])
        assert hashes.split(",") == [f"{rust.fnv1a64(b):016x}" for b in stored]
        if tensors[name].descriptor == hurray.load(path)[name].descriptor:
            assert stored == original, name


def test_fnv1a_is_the_standard_one():
    # Published FNV-1a 64 test vectors.
    assert rust.fnv1a64(b"") == 0xCBF29CE484222325
    assert rust.fnv1a64(b"a") == 0xAF63DC4C8601EC8C
    assert rust.fnv1a64(b"foobar") == 0x85944171F73967E8


def test_rust_writes_and_python_reads(rust_examples, python_file, tmp_path):
    path, tensors = python_file
    out = tmp_path / "from_rust.hurray"
    result = rust_examples.run("rewrite", path, out)
    assert result.returncode == 0, result.stderr
    with hurray.load(path) as before, hurray.load(out) as after:
        assert list(after.keys()) == list(before.keys()) == list(tensors)
        assert after.metadata == before.metadata == {"written_by": "python", "kinds": str(len(tensors))}
        for name, original in tensors.items():
            a, b = before[name], after[name]
            assert b.descriptor == a.descriptor, name
            assert rust_tensors.buffer_bytes(b) == rust_tensors.buffer_bytes(a), name
            if original.descriptor.scheme != "none":
                assert np.array_equal(b.dequantize(), original.dequantize(), equal_nan=True), name
            elif original.dtype != "int4":
                assert np.array_equal(np.asarray(b), np.asarray(original)), name
            else:
                assert np.array_equal(b.unpack(), original.unpack()), name


@pytest.mark.parametrize("damage", ["truncated", "flipped_data", "flipped_trailer", "empty", "not_hurray"])
def test_a_corrupt_file_is_an_error_never_a_panic(rust_examples, python_file, tmp_path, damage):
    path, _ = python_file
    data = bytearray(path.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "flipped_data":
        data[len(data) // 3] ^= 0xFF
    elif damage == "flipped_trailer":
        data[-3] ^= 0xFF
    elif damage == "empty":
        data = b""
    else:
        data = b"PK\x03\x04 this is a zip file, not a hurray file" * 10
    bad = tmp_path / f"{damage}.hurray"
    bad.write_bytes(bytes(data))
    for example, args in (("inspect", [bad]), ("rewrite", [bad, tmp_path / "out.hurray"])):
        result = rust_examples.run(example, *args)
        assert result.returncode not in (0, PANIC_EXIT), (example, result.stdout, result.stderr)
        assert "HURRAY_ERROR_" in result.stderr and "panicked" not in result.stderr, result.stderr
    assert not (tmp_path / "out.hurray").exists()


def test_a_missing_file_and_bad_usage(rust_examples, tmp_path):
    result = rust_examples.run("inspect", tmp_path / "absent.hurray")
    assert result.returncode == 1 and "HURRAY_ERROR_IO" in result.stderr
    result = rust_examples.run("inspect")
    assert result.returncode == 2 and "usage" in result.stderr


def test_cargo_run_inspect_as_documented(python_file):
    """The command line the issue names, through cargo itself."""
    path, tensors = python_file
    result = rust.cargo("run", "--offline", "--quiet", "--example", "inspect", "--", str(path))
    lines = result.stdout.splitlines()
    assert lines == python_view(path)
    # The header, then one line per tensor Python wrote: an empty listing would agree with an empty view.
    assert lines[0] == HEADER and len(lines) - 1 == len(tensors) > 0
    assert "panicked" not in result.stderr, result.stderr


def test_frames_through_a_pipe_both_ways(rust_examples):
    """Python writes frames into Rust's stdin; Rust reads each and writes it
    back, rebuilt, to its stdout; Python reads them."""
    import io

    tensors = rust_tensors.make()
    sent = io.BytesIO()
    for name, tensor in tensors.items():
        hurray.write_frame(sent, tensor, name=name)
    result = subprocess.run([rust_examples.path("frame_echo")], input=sent.getvalue(), capture_output=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr.decode()
    back = io.BytesIO(result.stdout)
    for name, original in tensors.items():
        got_name, got = hurray.read_frame(back)
        assert got_name == name
        assert got.descriptor == original.descriptor
        assert rust_tensors.buffer_bytes(got) == rust_tensors.buffer_bytes(original), name
    assert hurray.read_frame(back) is None


def test_a_cut_frame_stream_is_an_error_never_a_panic(rust_examples):
    import io

    sent = io.BytesIO()
    hurray.write_frame(sent, rust_tensors.make()["nvfp4"], name="x")
    data = sent.getvalue()
    for cut in (1, len(data) // 2, len(data) - 1):
        result = subprocess.run([rust_examples.path("frame_echo")], input=data[:cut], capture_output=True,
                                timeout=120)
        assert result.returncode == 1, (cut, result.stderr)
        assert b"HURRAY_ERROR_CORRUPT" in result.stderr and b"panicked" not in result.stderr
