"""Reading and re-sealing hurray-io files byte by byte, to craft bad input.

Written from docs/impl/io-format.md alone (not from the C code), so the bad
input tests also check that the specification and the reader agree.
"""
import struct

from hurray._ffi import ffi, lib

TRAILER = 64
FRAME_HEADER = 48


def xxh3(data):
    out = ffi.new("uint64_t *")
    assert lib.hurray_io_checksum(bytes(data), len(data), out) == lib.HURRAY_OK
    return out[0]


class Parsed:
    """A file's index entries and metadata, editable, and re-sealable."""

    def __init__(self, data):
        self.data = bytearray(data)
        t = self.data[-TRAILER:]
        self.index_offset, self.index_len = struct.unpack_from("<QQ", t, 0)
        ix = self.data[self.index_offset:self.index_offset + self.index_len]
        assert ix[:4] == b"HRYI"
        count, meta_count = struct.unpack_from("<QQ", ix, 8)
        pos = 32
        self.entries = []
        for _ in range(count):
            offset, frame_len, checksum, name_len = struct.unpack_from("<QQQI", ix, pos)
            pos += 32
            name = bytes(ix[pos:pos + name_len])
            pos += (name_len + 7) & ~7
            self.entries.append([offset, frame_len, checksum, name])
        self.metadata = []
        for _ in range(meta_count):
            key_len, value_len = struct.unpack_from("<II", ix, pos)
            key = bytes(ix[pos + 8:pos + 8 + key_len])
            value = bytes(ix[pos + 8 + key_len:pos + 8 + key_len + value_len])
            pos += (8 + key_len + value_len + 7) & ~7
            self.metadata.append([key, value])

    def frame(self, i):
        """(offset, header fields dict) of entry i's frame."""
        offset = self.entries[i][0]
        h = self.data[offset:offset + FRAME_HEADER]
        frame_len, name_len, desc_len, count = struct.unpack_from("<QIII", h, 8)
        return offset, {"frame_len": frame_len, "name_len": name_len, "descriptor_len": desc_len,
                        "buffer_count": count, "align_log2": h[6]}

    def descriptor_span(self, i):
        offset, f = self.frame(i)
        start = offset + FRAME_HEADER + 8 * f["buffer_count"] + f["name_len"]
        return start, start + f["descriptor_len"]

    def end_offset(self, i):
        """Absolute offset of entry i's stored frame checksum."""
        offset, f = self.frame(i)
        return offset + f["frame_len"] - (1 << f["align_log2"])  # the end block is one alignment unit

    def reseal_frame(self, i, header_too=False):
        """Recompute entry i's frame checksum (and header checksum), in the frame and the index."""
        offset, f = self.frame(i)
        if header_too:
            table = self.data[offset + FRAME_HEADER:offset + FRAME_HEADER + 8 * f["buffer_count"]]
            struct.pack_into("<Q", self.data, offset + 32, xxh3(self.data[offset:offset + 32] + table))
        end = self.end_offset(i)
        checksum = xxh3(self.data[offset:end])
        struct.pack_into("<Q", self.data, end, checksum)
        self.entries[i][2] = checksum

    def seal(self):
        """The file bytes with this index and a matching trailer."""
        ix = bytearray(b"HRYI" + struct.pack("<HHQQQ", 1, 0, len(self.entries), len(self.metadata), 0))
        for offset, frame_len, checksum, name in self.entries:
            ix += struct.pack("<QQQII", offset, frame_len, checksum, len(name), 0) + name
            ix += bytes(-len(ix) % 8)
        for key, value in self.metadata:
            ix += struct.pack("<II", len(key), len(value)) + key + value
            ix += bytes(-len(ix) % 8)
        body = bytes(self.data[:self.index_offset]) + bytes(ix)
        t = bytearray(struct.pack("<QQQQHBBIQ", self.index_offset, len(ix), xxh3(ix),
                                  len(body) + TRAILER, 1, self.data[10], 0, 0, 0))
        t += struct.pack("<Q", xxh3(t)) + b"HRYEND\r\n"
        return body + bytes(t)
