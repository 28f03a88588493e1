"""hurray.write_frame / hurray.read_frame on files, pipes and sockets."""
import io
import os
import socket
import threading

import numpy as np
import pytest

import hurray
from hurray.errors import ChecksumError, CorruptError, InvalidArgumentError
from io_kinds import assert_same, kinds

TIMEOUT = 30


def test_every_kind_as_frames():
    stream = io.BytesIO()
    originals = kinds()
    for name, value in originals.items():
        hurray.write_frame(stream, value, name=name)
        assert stream.tell() % 64 == 0  # so buffers stay aligned frame after frame
    stream.seek(0)
    for name, value in originals.items():
        got_name, tensor = hurray.read_frame(stream)
        assert got_name == name
        assert_same(tensor, value)
        for address, nbytes in tensor.buffers:
            assert address % 64 == 0
    assert hurray.read_frame(stream) is None
    assert hurray.read_frame(stream) is None


def test_default_name_is_empty_and_tensor_is_writable():
    stream = io.BytesIO()
    hurray.write_frame(stream, np.arange(3))
    stream.seek(0)
    name, tensor = hurray.read_frame(stream)
    assert name == ""
    array = np.asarray(tensor)
    array[0] = 7  # owned memory
    assert array.tolist() == [7, 1, 2]


def _pump(write_end, frames):
    with write_end:
        for name, array in frames:
            hurray.write_frame(write_end, array, name=name)


def _frames():
    return [(f"t{i}", np.full((i + 1, 1000), i, np.float32)) for i in range(20)]


def _read_all(read_end):
    out = []
    while (frame := hurray.read_frame(read_end)) is not None:
        out.append(frame)
    return out


def _check(received, sent):
    assert [n for n, _ in received] == [n for n, _ in sent]
    for (_, tensor), (_, array) in zip(received, sent):
        assert np.array_equal(np.asarray(tensor), array)


def test_frames_over_a_pipe():
    r, w = os.pipe()
    sent = _frames()
    writer = threading.Thread(target=_pump, args=(os.fdopen(w, "wb"), sent))
    writer.start()
    with os.fdopen(r, "rb") as read_end:
        received = _read_all(read_end)
    writer.join(TIMEOUT)
    _check(received, sent)


def test_frames_over_an_unbuffered_pipe():
    r, w = os.pipe()
    sent = _frames()
    writer = threading.Thread(target=_pump, args=(os.fdopen(w, "wb", buffering=0), sent))
    writer.start()
    with os.fdopen(r, "rb", buffering=0) as read_end:
        received = _read_all(read_end)
    writer.join(TIMEOUT)
    _check(received, sent)


def test_frames_over_a_socketpair():
    a, b = socket.socketpair()
    a.settimeout(TIMEOUT)
    b.settimeout(TIMEOUT)
    sent = _frames()
    writer = threading.Thread(target=lambda: (_pump(a.makefile("wb"), sent), a.shutdown(socket.SHUT_WR)))
    writer.start()
    with b, b.makefile("rb") as read_end:
        received = _read_all(read_end)
    writer.join(TIMEOUT)
    a.close()
    _check(received, sent)


def test_frames_over_a_loopback_socket():
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(TIMEOUT)
    sent = _frames()

    def serve():
        conn, _ = server.accept()
        with conn:
            _pump(conn.makefile("wb"), sent)
            conn.shutdown(socket.SHUT_WR)

    writer = threading.Thread(target=serve)
    writer.start()
    with socket.create_connection(server.getsockname(), timeout=TIMEOUT) as client, \
            client.makefile("rb") as read_end:
        received = _read_all(read_end)
    writer.join(TIMEOUT)
    server.close()
    _check(received, sent)


def _one_frame():
    stream = io.BytesIO()
    hurray.write_frame(stream, np.arange(100, dtype=np.int32), name="x")
    return stream.getvalue()


def test_truncated_frame_is_corrupt():
    data = _one_frame()
    for cut in range(1, len(data), 5):
        with pytest.raises(CorruptError, match="truncated|ends inside"):
            hurray.read_frame(io.BytesIO(data[:cut]))


def test_flipped_bits_in_a_frame():
    data = bytearray(_one_frame())
    for at in range(0, len(data), 3):
        data[at] ^= 0x80
        with pytest.raises(CorruptError):  # ChecksumError is a CorruptError
            hurray.read_frame(io.BytesIO(bytes(data)))
        data[at] ^= 0x80
    data[200] ^= 1  # a data byte: the checksum, unless asked not to verify
    with pytest.raises(ChecksumError):
        hurray.read_frame(io.BytesIO(bytes(data)))
    name, _ = hurray.read_frame(io.BytesIO(bytes(data)), verify=False)
    assert name == "x"


def test_not_a_frame():
    with pytest.raises(CorruptError, match="magic"):
        hurray.read_frame(io.BytesIO(b"GET / HTTP/1.1\r\n" * 4))


class Broken(io.RawIOBase):
    def writable(self):
        return True

    def readable(self):
        return True

    def write(self, data):
        raise OSError("disk on fire")

    def readinto(self, data):
        raise OSError("cable cut")


def test_file_object_errors_propagate():
    with pytest.raises(OSError, match="disk on fire"):
        hurray.write_frame(Broken(), np.arange(3))
    with pytest.raises(OSError, match="cable cut"):
        hurray.read_frame(Broken())


def test_bad_arguments():
    with pytest.raises(InvalidArgumentError, match="str"):
        hurray.write_frame(io.BytesIO(), np.arange(3), name=b"x")
    with pytest.raises(InvalidArgumentError):
        hurray.write_frame(io.BytesIO(), "not a tensor")


def test_huge_claimed_buffer_on_a_short_stream():
    """A correctly checksummed header that claims a 32 GiB buffer, then
    nothing: a truncated frame, refused without allocating what it claims."""
    import struct

    from io_craft import xxh3

    huge = 1 << 35
    header = bytearray(b"HRYF" + struct.pack("<HBBQIIII", 1, 6, 0, 64 + huge + 64, 0, 0, 1, 0))
    table = struct.pack("<Q", huge)
    header += struct.pack("<QQ", xxh3(header + table), 0) + table
    with pytest.raises(CorruptError, match="ends inside"):
        hurray.read_frame(io.BytesIO(bytes(header) + bytes(1000)))
