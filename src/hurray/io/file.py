"""hurray.load and hurray.File: a hurray-io file as a read-only Mapping of Tensors."""
import collections.abc
import os

from .._ffi import ffi, lib
from ..errors import InvalidArgumentError, check
from ._pairs import tensor_from_pair
from .lazy import LazyTensor


def _destroy_reader(ptr):
    lib.hurray_reader_destroy(ffi.new("HurrayReader **", ptr))


class _Reader:
    """The C reader, destroyed exactly once, when the File and every tensor
    still waiting for verification have let go of it."""

    __slots__ = ("ptr", "__weakref__")

    def __init__(self, path, flags):
        box = ffi.new("HurrayReader **")
        check(lib.hurray_reader_open(path, flags, box))
        self.ptr = ffi.gc(box[0], _destroy_reader)

    def verify(self, index):
        check(lib.hurray_reader_verify(self.ptr, index))


class _Verifier:
    """Verifies one tensor of a reader; held by the tensor until it has."""

    __slots__ = ("reader", "index")

    def __init__(self, reader, index):
        self.reader = reader
        self.index = index

    def __call__(self):
        self.reader.verify(self.index)


class File(collections.abc.Mapping):
    """A hurray-io file: a read-only Mapping of names to :class:`hurray.Tensor`.

    Made by :func:`load`. ``metadata`` is the file's string -> string map.
    ``close()`` (or leaving a ``with`` block) releases the File; tensors
    already taken stay valid, and keep what backs them alive.
    """

    def __init__(self, path, *, mmap=True, verify=True):
        self._path = os.fsdecode(path)
        self._mmap = bool(mmap)
        self._verify = bool(verify)
        flags = 0 if self._mmap else lib.HURRAY_READ_NO_MMAP
        if self._mmap or not self._verify:
            # Mapped tensors are verified on first use (lazy.py), not here.
            flags |= lib.HURRAY_READ_NO_VERIFY
        self._reader = _Reader(os.fsencode(path), flags)
        count = ffi.new("uint64_t *")
        check(lib.hurray_reader_count(self._reader.ptr, count))
        self._count = count[0]
        # Names and metadata are decoded on first need: taking one tensor
        # by name is a lookup in C, whatever the number of tensors.
        self._names = None
        self._metadata = None

    def _all_names(self):
        names = self._names
        if names is None:
            ptr = self._live_reader().ptr
            name = ffi.new("const char **")
            length = ffi.new("uint64_t *")

            def name_at(i):
                check(lib.hurray_reader_name(ptr, i, name, length))
                return ffi.buffer(name[0], length[0])[:].decode("utf-8")  # UTF-8 checked in C

            names = self._names = {name_at(i): i for i in range(self._count)}
        return names

    def _index_of(self, name):
        """The index of tensor `name`; KeyError when there is none."""
        if self._names is not None:
            return self._names[name]
        if not isinstance(name, str):
            raise KeyError(name)
        try:
            encoded = name.encode("utf-8")
        except UnicodeEncodeError:
            raise KeyError(name) from None
        found = ffi.new("uint64_t *")  # per call: a File may be shared by threads
        status = lib.hurray_reader_find(self._live_reader().ptr, encoded, len(encoded), found)
        if status == lib.HURRAY_ERROR_NOT_FOUND:
            raise KeyError(name)
        check(status)
        return found[0]

    @property
    def metadata(self):
        """The file's metadata, as a new dict[str, str]."""
        if self._metadata is None:
            ptr = self._live_reader().ptr
            count = ffi.new("uint64_t *")
            check(lib.hurray_reader_metadata_count(ptr, count))
            key, value = ffi.new("const char **"), ffi.new("const char **")
            key_len, value_len = ffi.new("uint64_t *"), ffi.new("uint64_t *")
            pairs = {}
            for i in range(count[0]):
                check(lib.hurray_reader_metadata_get(ptr, i, key, key_len, value, value_len))
                pairs[ffi.buffer(key[0], key_len[0])[:].decode("utf-8")] = (
                    ffi.buffer(value[0], value_len[0])[:].decode("utf-8"))
            self._metadata = pairs
        return dict(self._metadata)

    @property
    def path(self):
        return self._path

    @property
    def closed(self):
        return self._reader is None

    def _live_reader(self):
        reader = self._reader
        if reader is None:
            raise InvalidArgumentError(f"hurray.File {self._path!r} is closed")
        return reader

    def __getitem__(self, name):
        reader = self._live_reader()
        index = self._index_of(name)  # KeyError, as for any Mapping
        context = ffi.new("HurrayTensorContext **")
        buffers = ffi.new("HurrayBufferList **")
        check(lib.hurray_reader_tensor(reader.ptr, index, context, buffers))
        if self._mmap and self._verify:
            return tensor_from_pair(context[0], buffers[0], LazyTensor, _Verifier(reader, index))
        return tensor_from_pair(context[0], buffers[0])

    def verify(self, name):
        """Check tensor `name`'s checksum now; raises ChecksumError on a mismatch."""
        self._live_reader().verify(self._index_of(name))

    def __iter__(self):
        return iter(self._all_names())

    def __len__(self):
        return self._count

    def __contains__(self, name):
        try:
            self._index_of(name)
        except KeyError:
            return False
        return True

    def keys(self):
        return self._all_names().keys()

    def close(self):
        """Release the file. Tensors already taken stay valid."""
        self._reader = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self.closed else f"{len(self)} tensors"
        return f"<hurray.File {self._path!r} ({state})>"


def load(path, *, mmap=True, verify=True):
    """Open the hurray-io file at `path` as a :class:`File`.

    Opening reads only the trailer and the index, whatever the file's size.
    With ``mmap=True`` tensors are zero-copy, copy-on-write views of a
    private mapping that lives as long as any tensor using it; writing into
    one never reaches the file. ``mmap=False`` reads each tensor with pread
    into owned aligned memory (for network file systems). Unless
    ``verify=False``, a tensor's checksum is verified the first time its
    memory is used (mapped), or as it is read (``mmap=False``); a mismatch
    raises :class:`hurray.errors.ChecksumError`.
    """
    return File(path, mmap=mmap, verify=verify)
