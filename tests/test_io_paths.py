"""One path policy for every function that takes a path, in Python (ADR-056; issue 27 items 3, 6, 13; issue 25).

Every reader (hurray.load, load_gguf, load_safetensors, convert's source),
every writer (hurray.save, save_gguf, save_safetensors, convert's target)
and the CLI: a path with a NUL byte is an InvalidArgumentError, not a path
cut at the NUL; a missing file is a FileNotFoundError; a FIFO is refused
without blocking (each case in a child with a timeout, since the old code
hung); a directory is an IsADirectoryError; symlinks are followed and kept;
a new file gets the mode open(2) gives it under the umask, a replaced one
keeps its own.
"""
import errno
import os
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hurray
from hurray.errors import HurrayError, HurrayIOError, InvalidArgumentError

TENSORS = {"w": np.arange(12, dtype=np.float32).reshape(3, 4)}

READERS = {
    "load": lambda p: hurray.load(p),
    "load mmap=False": lambda p: hurray.load(p, mmap=False),
    "load_gguf": lambda p: hurray.load_gguf(p),
    "load_safetensors": lambda p: hurray.load_safetensors(p),
    "convert (source)": lambda p: hurray.convert(p, "/nonexistent/out.hurray"),  # the source is refused first
}
WRITERS = {
    ".hurray": lambda p, t=TENSORS: hurray.save(p, t),
    ".gguf": lambda p, t=TENSORS: hurray.save_gguf(p, t),
    ".safetensors": lambda p, t=TENSORS: hurray.save_safetensors(p, t),
}
EXTENSION_OF = {"load": ".hurray", "load mmap=False": ".hurray", "load_gguf": ".gguf",
                "load_safetensors": ".safetensors", "convert (source)": ".safetensors"}


def temporaries(directory):
    return [n for n in os.listdir(directory) if ".hurray-tmp-" in n]


@pytest.mark.parametrize("reader", READERS)
def test_a_path_with_a_nul_byte_is_refused_when_reading(tmp_path, reader):
    real = tmp_path / "config.json"
    WRITERS[EXTENSION_OF[reader]](real)  # a file the NUL would cut the path to
    with pytest.raises(InvalidArgumentError, match="NUL"):
        READERS[reader](str(real) + "\0x")
    with pytest.raises(InvalidArgumentError, match="NUL"):
        READERS[reader](os.fsencode(real) + b"\0x")


@pytest.mark.parametrize("ext", WRITERS)
def test_a_path_with_a_nul_byte_is_refused_when_writing(tmp_path, ext):
    # Issue 27, item 3: "config.json\0.hurray" replaced config.json.
    victim = tmp_path / "config.json"
    victim.write_text('{"keep": true}')
    with pytest.raises(InvalidArgumentError, match="NUL"):
        WRITERS[ext](os.path.join(tmp_path, "config.json\0" + ext))
    assert victim.read_text() == '{"keep": true}'
    assert sorted(os.listdir(tmp_path)) == ["config.json"]


@pytest.mark.parametrize("reader", READERS)
def test_a_missing_file_is_a_file_not_found_error(tmp_path, reader):
    missing = tmp_path / ("missing" + EXTENSION_OF[reader])
    with pytest.raises(FileNotFoundError) as info:
        READERS[reader](missing)
    assert isinstance(info.value, HurrayIOError) and isinstance(info.value, HurrayError)
    assert info.value.errno == errno.ENOENT and info.value.filename == str(missing)
    assert "No such file" in str(info.value) and str(missing) in str(info.value)


@pytest.mark.parametrize("ext", WRITERS)
def test_a_missing_directory_is_a_file_not_found_error(tmp_path, ext):
    with pytest.raises(FileNotFoundError):
        WRITERS[ext](tmp_path / "no" / "such" / ("x" + ext))


@pytest.mark.parametrize("reader", READERS)
def test_a_directory_is_refused_when_reading(tmp_path, reader):
    folder = tmp_path / ("folder" + EXTENSION_OF[reader])
    folder.mkdir()
    with pytest.raises(IsADirectoryError):
        READERS[reader](folder)


@pytest.mark.parametrize("ext", WRITERS)
def test_a_directory_is_refused_when_writing(tmp_path, ext):
    folder = tmp_path / ("folder" + ext)
    folder.mkdir()
    with pytest.raises(IsADirectoryError):
        WRITERS[ext](folder)
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("reader", READERS)
def test_a_path_that_is_not_a_path_is_refused(reader):
    with pytest.raises(InvalidArgumentError, match="str, bytes or os.PathLike"):
        READERS[reader](12)


FIFO_CHILD = textwrap.dedent("""
    import os, sys
    import numpy as np
    import hurray
    from hurray.errors import HurrayIOError
    fifo, how = sys.argv[1], sys.argv[2]
    calls = {
        "load": lambda: hurray.load(fifo), "load_gguf": lambda: hurray.load_gguf(fifo),
        "load_safetensors": lambda: hurray.load_safetensors(fifo),
        "save": lambda: hurray.save(fifo, {"w": np.zeros(2)}),
        "save_gguf": lambda: hurray.save_gguf(fifo, {"w": np.zeros(2, np.float32)}),
        "save_safetensors": lambda: hurray.save_safetensors(fifo, {"w": np.zeros(2)}),
    }
    try:
        calls[how]()
    except HurrayIOError as exc:
        assert "FIFO" in str(exc), str(exc)
        print("refused")
""")


@pytest.mark.parametrize("how", ["load", "load_gguf", "load_safetensors", "save", "save_gguf", "save_safetensors"])
def test_a_fifo_is_refused_without_blocking(tmp_path, how):
    # Issue 27, item 6: open(2) of a FIFO with no writer used to block forever.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = subprocess.run([sys.executable, "-c", FIFO_CHILD, str(fifo), how], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "refused", result.stdout + result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # a writer did not replace it
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("ext", WRITERS)
def test_modes_are_those_open_gives(tmp_path, ext):
    # Issue 27, item 13: save_gguf and save_safetensors made 0600 files and
    # turned a 0644 file they replaced into 0600.
    path = tmp_path / ("m" + ext)
    old = os.umask(0o022)
    try:
        WRITERS[ext](path)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
        os.unlink(path)
        os.umask(0o027)
        WRITERS[ext](path)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
        for mode in (0o600, 0o644, 0o755):
            os.chmod(path, mode)
            WRITERS[ext](path)
            assert stat.S_IMODE(os.stat(path).st_mode) == mode
    finally:
        os.umask(old)


@pytest.mark.parametrize("ext", WRITERS)
def test_writing_through_a_symlink_replaces_the_file_it_names(tmp_path, ext):
    # Issue 27, item 13: the decision (ADR-056) is to follow the link, as open(path, "wb") does.
    (tmp_path / "store").mkdir()
    target = tmp_path / "store" / ("blob" + ext)
    WRITERS[ext](target, {"w": np.zeros(4, np.float32)})
    link = tmp_path / ("model" + ext)
    link.symlink_to(os.path.join("store", "blob" + ext))
    WRITERS[ext](link, {"w": np.ones(4, np.float32)})
    assert link.is_symlink() and os.readlink(link) == os.path.join("store", "blob" + ext)
    reader = {".hurray": hurray.load, ".gguf": hurray.load_gguf, ".safetensors": hurray.load_safetensors}[ext]
    with reader(target) as f:
        assert np.asarray(f["w"]).tolist() == [1.0, 1.0, 1.0, 1.0]
    with reader(link) as f:  # and reading follows it too
        assert np.asarray(f["w"]).tolist() == [1.0, 1.0, 1.0, 1.0]
    assert temporaries(tmp_path) == [] and temporaries(tmp_path / "store") == []


def test_the_cli_says_a_path_is_refused_and_exits_1(tmp_path):
    fifo = tmp_path / "pipe.hurray"
    os.mkfifo(fifo)
    for command in (["inspect", str(tmp_path / "missing.hurray")], ["verify", str(tmp_path / "missing.hurray")],
                    ["inspect", str(fifo)], ["verify", str(fifo)], ["inspect", str(tmp_path / "m.gguf")],
                    ["convert", str(tmp_path / "missing.gguf"), str(tmp_path / "out.hurray")],
                    ["clean", str(tmp_path / "missing-folder")]):
        result = subprocess.run([sys.executable, "-m", "hurray", *command], capture_output=True, text=True,
                                timeout=60)
        assert result.returncode == 1, (command, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr and result.stderr.strip(), (command, result.stderr)
