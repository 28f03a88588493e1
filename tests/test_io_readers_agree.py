"""The mapped and the pread reader hold a file to the same rules (issue 27, item 8).

A frame whose alignment (2^12) differs from its file's (2^6) -- a page-aligned
frame moved behind a 64-byte file header, every checksum right -- was refused
by hurray.load() and by verify, but loaded without complaint with
hurray.load(mmap=False).
"""
import struct

import numpy as np
import pytest

import hurray
from hurray.errors import CorruptError
from io_craft import Parsed


def moved_frame_file(tmp_path):
    source = tmp_path / "paged.hurray"
    hurray.save(source, {"t": np.arange(16, dtype=np.uint8)}, page_align=True)
    p = Parsed(source.read_bytes())
    assert p.data[10] == 12
    offset, frame_len, checksum, name = p.entries[0]
    frame = bytes(p.data[offset:offset + frame_len])
    header = bytearray(p.data[:64])
    header[10] = 6
    p.data = bytearray(header + frame)
    p.index_offset = 64 + frame_len
    p.entries[0][0] = 64
    path = tmp_path / "moved.hurray"
    path.write_bytes(p.seal())
    assert struct.unpack_from("<B", path.read_bytes(), 64 + 6)[0] == 12  # the frame still says 2^12
    return path


@pytest.mark.parametrize("mmap, verify", [(True, True), (True, False), (False, True), (False, False)])
def test_a_frame_of_another_alignment_is_refused_by_every_reader(tmp_path, mmap, verify):
    path = moved_frame_file(tmp_path)
    with hurray.load(path, mmap=mmap, verify=verify) as f:  # the index itself is sound
        with pytest.raises(CorruptError, match="alignment"):
            np.asarray(f["t"])
        with pytest.raises(CorruptError, match="alignment"):
            f.verify("t")
