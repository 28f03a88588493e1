"""hurray-io from Python: save / load / File, lazy verification, lifetimes,
atomic replacement, and bad files (each a HurrayError)."""
import gc
import os
import pickle
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import hurray
from hurray.errors import ChecksumError, CorruptError, HurrayError, HurrayIOError, InvalidArgumentError
from io_craft import Parsed, xxh3
from io_kinds import assert_same, kinds


@pytest.fixture(scope="module")
def every_kind():
    return kinds()


@pytest.mark.parametrize("mmap", [True, False])
@pytest.mark.parametrize("page_align", [False, True])
def test_every_kind_round_trips_byte_for_byte(tmp_path, every_kind, mmap, page_align):
    path = tmp_path / "kinds.hurray"
    hurray.save(path, every_kind, metadata={"source": "test", "ünïcode": "✓"}, page_align=page_align)
    with hurray.load(path, mmap=mmap) as f:
        assert list(f) == list(every_kind)
        assert f.metadata == {"source": "test", "ünïcode": "✓"}
        for name, value in every_kind.items():
            got = f[name]
            assert_same(got, value)
            alignment = 4096 if page_align else 64
            for address, nbytes in got.buffers:
                assert address % alignment == 0 or nbytes == 0


def test_values_survive_as_numbers(tmp_path, every_kind):
    path = tmp_path / "kinds.hurray"
    hurray.save(path, every_kind)
    f = hurray.load(path)
    assert np.array_equal(np.asarray(f["negative strides"]), every_kind["negative strides"])
    assert np.array_equal(np.asarray(f["strided"]), every_kind["strided"])
    assert np.asarray(f["bfloat16"]).dtype == every_kind["bfloat16"].dtype
    assert np.array_equal(f["affine per-axis"].dequantize(), every_kind["affine per-axis"].dequantize())
    assert np.array_equal(f["ggml q6_k"].dequantize(), every_kind["ggml q6_k"].dequantize(), equal_nan=True)


def test_file_is_a_read_only_mapping(tmp_path):
    path = tmp_path / "m.hurray"
    hurray.save(path, {"a": np.arange(3), "b": np.ones((2, 2))})
    f = hurray.load(path)
    assert len(f) == 2 and "a" in f and "z" not in f and sorted(f.keys()) == ["a", "b"]
    assert f.metadata == {}
    with pytest.raises(KeyError):
        f["z"]
    with pytest.raises(TypeError):
        f["a"] = 1
    assert "2 tensors" in repr(f)
    f.close()
    assert f.closed and "closed" in repr(f)
    with pytest.raises(InvalidArgumentError, match="closed"):
        f["a"]


def test_tensors_outlive_the_file(tmp_path):
    path = tmp_path / "life.hurray"
    data = np.arange(1 << 16, dtype=np.float32)
    hurray.save(path, {"t": data})
    with hurray.load(path) as f:
        unverified = f["t"]
        verified = f["t"]
        np.asarray(verified)
    del f
    gc.collect()
    # The mapping (and, for the unverified tensor, the reader) live on.
    assert np.array_equal(np.asarray(unverified), data)
    array = np.asarray(verified)
    del verified, unverified
    gc.collect()
    assert np.array_equal(array, data)


def test_mapped_tensors_are_copy_on_write(tmp_path):
    path = tmp_path / "cow.hurray"
    hurray.save(path, {"t": np.zeros(4)})
    f = hurray.load(path)
    a = np.asarray(f["t"])
    a[0] = 5.0  # a private copy of the page; never the file
    assert np.array_equal(np.asarray(hurray.load(path)["t"]), np.zeros(4))


def test_checksum_is_verified_on_first_use_only(tmp_path):
    path = tmp_path / "bad.hurray"
    hurray.save(path, {"good": np.arange(8.0), "bad": np.arange(1024, dtype=np.int32)})
    p = Parsed(path.read_bytes())
    offset, _ = p.frame(1)
    data = p.data
    data[offset + 128 + 7] ^= 0x20  # inside the first buffer
    path.write_bytes(bytes(data))
    f = hurray.load(path)
    assert np.array_equal(np.asarray(f["good"]), np.arange(8.0))
    t = f["bad"]  # taking it is cheap and does not hash
    assert t.shape == (1024,) and t.dtype == "int32"  # nor does looking at its descriptor
    assert "not verified yet" in repr(t)
    for use in (np.asarray, lambda t: t.buffer(0), lambda t: t.buffers, lambda t: t.__hurray__(),
                lambda t: t.dequantize(), lambda t: t.unpack(), lambda t: t.stored_values(), hurray.from_hurray,
                lambda t: t.__dlpack__(), pickle.dumps, lambda t: hurray.save(tmp_path / "copy.hurray", {"t": t})):
        with pytest.raises(ChecksumError, match="checksum"):
            use(t)
    with pytest.raises(ChecksumError):
        f.verify("bad")
    f.verify("good")
    assert not (tmp_path / "copy.hurray").exists()
    # verify=False hands the bytes out as they are; mmap=False checks while reading.
    assert np.asarray(hurray.load(path, verify=False)["bad"]).shape == (1024,)
    with pytest.raises(ChecksumError):
        hurray.load(path, mmap=False)["bad"]
    assert np.asarray(hurray.load(path, mmap=False, verify=False)["bad"]).shape == (1024,)


def test_verified_tensor_becomes_a_plain_tensor(tmp_path):
    path = tmp_path / "v.hurray"
    hurray.save(path, {"t": np.arange(4)})
    t = hurray.load(path)["t"]
    assert type(t) is not hurray.Tensor and isinstance(t, hurray.Tensor)
    np.asarray(t)
    assert type(t) is hurray.Tensor


def test_save_takes_torch_state_dicts_and_protocol_objects(tmp_path):
    torch = pytest.importorskip("torch")
    state = {"w": torch.arange(6, dtype=torch.bfloat16).reshape(2, 3), "b": torch.zeros(3)}
    hurray.save(tmp_path / "sd.hurray", state)
    f = hurray.load(tmp_path / "sd.hurray")
    assert f["w"].dtype == "bfloat16"
    assert torch.equal(torch.from_dlpack(f["w"]), state["w"])


def test_save_refuses_bad_arguments_before_writing(tmp_path):
    path = tmp_path / "refused.hurray"
    with pytest.raises(InvalidArgumentError, match="Mapping"):
        hurray.save(path, [np.zeros(1)])
    with pytest.raises(InvalidArgumentError, match="str"):
        hurray.save(path, {1: np.zeros(1)})
    with pytest.raises(InvalidArgumentError, match="UTF-8"):
        hurray.save(path, {"\udcff": np.zeros(1)})
    with pytest.raises(InvalidArgumentError, match="metadata"):
        hurray.save(path, {"a": np.zeros(1)}, metadata={"k": 1})
    with pytest.raises(InvalidArgumentError, match="list"):
        hurray.save(path, {"a": [1, 2]})
    with pytest.raises(HurrayIOError):
        hurray.save(tmp_path / "no" / "dir.hurray", {"a": np.zeros(1)})
    assert list(tmp_path.iterdir()) == []


def test_replacing_a_mapped_file_keeps_the_old_bytes(tmp_path):
    path = tmp_path / "r.hurray"
    hurray.save(path, {"t": np.full(1 << 14, 1.0)})
    old = hurray.load(path)["t"]
    np.asarray(old)
    hurray.save(path, {"t": np.full(1 << 14, 2.0)})
    assert np.all(np.asarray(old) == 1.0)
    assert np.all(np.asarray(hurray.load(path)["t"]) == 2.0)


def _fds_on(path_stat):
    """This process's descriptors that refer to the file `path_stat` describes."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            st = os.fstat(int(name))
        except OSError:  # the directory's own descriptor, closed by now
            continue
        if (st.st_dev, st.st_ino) == (path_stat.st_dev, path_stat.st_ino):
            found.append(name)
    return found


def _join_release_threads():
    for thread in threading.enumerate():
        if thread.name == "hurray-save-release":
            thread.join(timeout=60)


def test_save_releases_the_replaced_file(tmp_path):
    # ADR-050: the file a save replaced is released by a thread after the
    # save returns (its blocks are freed then); nothing is left open.
    path = tmp_path / "r.hurray"
    hurray.save(path, {"t": np.full(1 << 16, 1.0)})
    old = os.stat(path)
    hurray.save(path, {"t": np.full(1 << 16, 2.0)})
    assert os.stat(path).st_ino != old.st_ino
    assert np.all(np.asarray(hurray.load(path)["t"]) == 2.0)
    _join_release_threads()
    assert _fds_on(old) == []


def test_save_releases_the_replaced_file_itself_without_a_thread(tmp_path, monkeypatch):
    path = tmp_path / "r.hurray"
    hurray.save(path, {"t": np.full(1 << 16, 1.0)})
    old = os.stat(path)

    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    hurray.save(path, {"t": np.full(1 << 16, 2.0)})
    assert _fds_on(old) == []
    assert np.all(np.asarray(hurray.load(path)["t"]) == 2.0)


def test_kill_during_save_leaves_the_old_file_intact(tmp_path):
    path = tmp_path / "old.hurray"
    hurray.save(path, {"t": np.arange(100)})
    before = path.read_bytes()
    script = textwrap.dedent(f"""
        import numpy as np, hurray, sys
        big = {{f"t{{i}}": np.full(1 << 20, i, np.float64) for i in range(32)}}  # 256 MiB
        print("ready", flush=True)
        hurray.save({str(path)!r}, big)
        print("finished", flush=True)
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 60
        temp_size = 0
        while time.monotonic() < deadline and temp_size <= (16 << 20):
            temp_size = _open_temporary_size(child.pid, tmp_path)
            time.sleep(0.005)
        assert temp_size > (16 << 20), "the child never got far into writing its temporary file"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    assert path.read_bytes() == before
    assert np.array_equal(np.asarray(hurray.load(path)["t"]), np.arange(100))
    # The temporary had no name (O_TMPFILE on this file system): nothing is left.
    assert [p.name for p in tmp_path.iterdir()] == ["old.hurray"]


def _open_temporary_size(pid, directory):
    """The size of the largest file `pid` has open in `directory` other than
    the ones named there (its temporary, named or not); 0 if none."""
    named = {os.path.join(directory, n) for n in os.listdir(directory) if ".hurray-tmp-" not in n}
    largest = 0
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except FileNotFoundError:
        return 0
    for fd in fds:
        link = f"/proc/{pid}/fd/{fd}"
        try:
            target = os.readlink(link)
            if target.startswith(str(directory)) and target not in named:
                largest = max(largest, os.stat(link).st_size)
        except OSError:
            continue
    return largest


# ---- bad files: each a HurrayError, never a crash ---------------------------


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "sample.hurray"
    hurray.save(path, {"a": np.arange(16, dtype=np.float32), "b": np.arange(6, dtype=np.int64).reshape(2, 3)},
                metadata={"k": "v"})
    return path


def read_everything(path, **kwargs):
    with hurray.load(path, **kwargs) as f:
        for name in f:
            np.asarray(f[name])


def test_truncated_file(sample, tmp_path):
    data = sample.read_bytes()
    bad = tmp_path / "bad.hurray"
    for cut in range(0, len(data), 7):
        bad.write_bytes(data[:cut])
        with pytest.raises(HurrayError):
            read_everything(bad)
        with pytest.raises(HurrayError):
            read_everything(bad, mmap=False)


def test_flipped_bits_anywhere(sample, tmp_path):
    data = bytearray(sample.read_bytes())
    bad = tmp_path / "bad.hurray"
    for at in range(0, len(data), 3):
        data[at] ^= 0x04
        bad.write_bytes(data)
        with pytest.raises(HurrayError):
            read_everything(bad)
        data[at] ^= 0x04


def test_flipped_index_bits_fail_at_open(sample):
    p = Parsed(sample.read_bytes())
    p.data[p.index_offset + 40] ^= 1
    sample.write_bytes(bytes(p.data))
    with pytest.raises(ChecksumError, match="index"):
        hurray.load(sample)


def rewrite(path, edit):
    p = Parsed(path.read_bytes())
    edit(p)
    path.write_bytes(p.seal())


@pytest.mark.parametrize("edit, words", [
    (lambda p: p.entries[1].__setitem__(0, p.entries[1][0] + 64), "follow"),             # a gap
    (lambda p: p.entries[1].__setitem__(0, p.entries[0][0]), "follow"),                  # overlap
    (lambda p: p.entries[1].__setitem__(1, 1 << 40), "follow"),                          # past the end
    (lambda p: p.entries[1].__setitem__(1, (1 << 64) - 64), "follow"),                   # overflow
    (lambda p: p.entries[1].__setitem__(3, b"a"), "same name"),                          # duplicates
    (lambda p: p.entries[1].__setitem__(3, b"\xff\xfe"), "UTF-8"),                       # not UTF-8
    (lambda p: p.metadata.append([b"k", b"w"]), "twice"),                                # duplicate key
    (lambda p: p.metadata.__setitem__(0, [b"k", b"\xc0\xaf"]), "UTF-8"),                 # overlong
])
def test_bad_index_entries(sample, edit, words):
    rewrite(sample, edit)
    with pytest.raises(CorruptError, match=words):
        read_everything(sample)


def test_huge_claimed_counts(sample):
    p = Parsed(sample.read_bytes())
    ix = p.data[p.index_offset:p.index_offset + p.index_len]
    struct.pack_into("<Q", ix, 8, 1 << 60)
    sealed = bytearray(p.data[:p.index_offset] + ix + p.data[-64:])
    struct.pack_into("<Q", sealed, len(sealed) - 48, xxh3(ix))
    struct.pack_into("<Q", sealed, len(sealed) - 16, xxh3(sealed[-64:-16]))
    sample.write_bytes(sealed)
    with pytest.raises(CorruptError, match="more than"):
        hurray.load(sample)


def test_huge_claimed_frame_header(sample):
    def edit(p):
        offset, _ = p.frame(0)
        struct.pack_into("<I", p.data, offset + 20, 1 << 30)  # descriptor length
        p.reseal_frame(0, header_too=True)
    rewrite(sample, edit)
    for mmap in (True, False):
        with pytest.raises(CorruptError, match="descriptor length"):
            read_everything(sample, mmap=mmap)


def test_descriptor_that_does_not_decode(sample):
    def edit(p):
        start, _ = p.descriptor_span(0)
        p.data[start] ^= 0xFF  # the descriptor's magic
        p.reseal_frame(0)
    rewrite(sample, edit)
    for mmap in (True, False):
        with pytest.raises(HurrayError, match="magic"):
            read_everything(sample, mmap=mmap)


def test_descriptor_that_does_not_fit_its_buffers(sample):
    def edit(p):
        start, end = p.descriptor_span(0)
        bigger = hurray.Descriptor.build("float32", (17,)).encode()  # the buffer holds 16
        assert len(bigger) == end - start
        p.data[start:end] = bigger
        p.reseal_frame(0)
    rewrite(sample, edit)
    for mmap in (True, False):
        with pytest.raises(HurrayError, match="buffer"):
            read_everything(sample, mmap=mmap)


def test_not_a_file_of_ours(tmp_path):
    (tmp_path / "x").write_bytes(b"\x89HRY\r\n\x1a\n" + bytes(300))
    with pytest.raises(HurrayError, match="version"):
        hurray.load(tmp_path / "x")
    with pytest.raises(HurrayIOError, match="cannot open"):
        hurray.load(tmp_path / "missing")


def test_unknown_format_versions(sample):
    original = sample.read_bytes()

    def refused(data):
        sample.write_bytes(bytes(data))
        with pytest.raises(HurrayError, match="version"):
            read_everything(sample)
        with pytest.raises(HurrayError, match="version"):
            read_everything(sample, mmap=False)

    header = bytearray(original)
    header[8] = 2  # the file header
    refused(header)

    def frame_version(p):
        offset, _ = p.frame(0)
        p.data[offset + 4] = 2
        p.reseal_frame(0, header_too=True)
    rewrite(sample, frame_version)
    refused(sample.read_bytes())

    p = Parsed(original)
    ix = bytearray(p.data[p.index_offset:p.index_offset + p.index_len])
    ix[4] = 2  # the index
    sealed = bytearray(p.data[:p.index_offset] + ix + p.data[-64:])
    struct.pack_into("<Q", sealed, len(sealed) - 48, xxh3(ix))
    struct.pack_into("<Q", sealed, len(sealed) - 16, xxh3(sealed[-64:-16]))
    refused(sealed)

    trailer = bytearray(original)
    trailer[-32] = 2  # the trailer's version
    struct.pack_into("<Q", trailer, len(trailer) - 16, xxh3(trailer[-64:-16]))
    refused(trailer)
