"""TensorMap: a read-only Mapping of names to Tensors over one memory-mapped file.

The GGUF and safetensors readers parse a file's index once, keep one entry
per tensor, and make the Tensor only when it is asked for, as a zero-copy
view of the map. Every Tensor holds the map through its owner chain, so the
map lives as long as any tensor taken from it; close() only lets go of the
file's own reference.
"""
import mmap
import os
from collections.abc import Mapping

from .errors import CorruptError, HurrayIOError, InvalidArgumentError

__all__ = ["TensorMap", "close_quietly", "corrupt", "map_file"]


def map_file(path, what):
    """(read-only mmap or None for an empty file, its size) of the file at `path`."""
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise HurrayIOError(f"{what}: cannot open {os.fspath(path)!r}: {exc.strerror}") from None
    except TypeError:
        raise InvalidArgumentError(f"{what}: path must be a str or os.PathLike, not {type(path).__name__}") from None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return None, 0
        return mmap.mmap(fd, size, access=mmap.ACCESS_READ), size
    except OSError as exc:
        raise HurrayIOError(f"{what}: cannot map {os.fspath(path)!r}: {exc.strerror}") from None
    finally:
        os.close(fd)


class TensorMap(Mapping):
    """A read-only Mapping of tensor names to Tensors, with `.metadata`.

    Subclasses fill `_entries` (name -> whatever `_make` needs) and
    `_metadata`, and implement `_make(name, entry)`. Tensors are zero-copy
    and read-only; each keeps the memory map alive by itself.
    """

    _kind = "file"

    def __init__(self, path, mapped, entries, metadata):
        self._path = os.fspath(path)
        self._map = mapped
        self._entries = entries
        self._metadata = metadata
        self._closed = False

    # ---- Mapping --------------------------------------------------------

    def __getitem__(self, name):
        if self._closed:
            raise InvalidArgumentError(f"{self._kind} {self._path!r} is closed")
        try:
            entry = self._entries[name]
        except (KeyError, TypeError):
            raise KeyError(name) from None
        return self._make(name, entry)

    def __iter__(self):
        return iter(self._entries)

    def __len__(self):
        return len(self._entries)

    def __contains__(self, name):
        return name in self._entries

    def _make(self, name, entry):  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    # ---- the rest -------------------------------------------------------

    @property
    def metadata(self):
        """The file's key-value metadata (a new dict each time; changing it changes nothing)."""
        return dict(self._metadata)

    @property
    def path(self):
        return self._path

    @property
    def closed(self):
        return self._closed

    def close(self):
        """Let go of the file. Tensors already taken stay valid; closing twice is fine."""
        if self._closed:
            return
        self._closed = True
        mapped, self._map = self._map, None
        if mapped is not None:
            try:
                mapped.close()
            except BufferError:
                pass  # tensors still view it: the map closes when the last of them goes

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self._closed else f"{len(self)} tensors"
        return f"<hurray.{type(self).__name__} {self._path!r}: {state}>"


def close_quietly(mapped):
    """Close a map unless a view made while parsing still holds it (then it goes with that view)."""
    if mapped is not None:
        try:
            mapped.close()
        except BufferError:
            pass


def corrupt(what, path, message):
    """A CorruptError that says which file and which kind of file."""
    return CorruptError(f"{what}: {path!r}: {message}")
