"""The read-only Mappings of names to Tensors over one file.

FileMapping is what every such file shares: its path, ``close()`` and the
``with`` block, the closed check and the repr (hurray.File, and through
TensorMap the GGUF and safetensors readers). TensorMap adds the memory map:
the GGUF and safetensors readers parse a file's index once, keep one entry
per tensor, and make the Tensor only when it is asked for, as a zero-copy
view of the map. Every Tensor holds the map through its owner chain, so the
map lives as long as any tensor taken from it; close() only lets go of the
file's own reference.
"""
from __future__ import annotations

import mmap
import os
from abc import abstractmethod
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import CorruptError, InvalidArgumentError, io_error
from ._path import open_regular

if TYPE_CHECKING:
    from ..core.tensor import Tensor

__all__ = ["FileMapping", "TensorMap", "check_held", "close_quietly", "corrupt", "map_file"]

_F = TypeVar("_F", bound="FileMapping")


def map_file(path: str | os.PathLike[str], what: str) -> tuple[mmap.mmap | None, int]:
    """(read-only mmap or None for an empty file, its size) of the file at `path`.

    The path policy first (io/_path.py, ADR-056): no NUL, a regular file
    only, a FIFO refused without blocking. The map is advised to use huge
    pages, so that faults map the page cache's 2 MiB folios whole (ADR-058)."""
    fd, size, shown = open_regular(path, what)
    try:
        if size == 0:
            return None, 0
        mapped = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise io_error(f"{what}: cannot map {shown!r}: {exc.strerror}", exc.errno or 0, shown) from None
    finally:
        os.close(fd)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        try:
            mapped.madvise(mmap.MADV_HUGEPAGE)
        except OSError:
            pass  # only advice: without transparent huge pages, nothing changes
    return mapped, size


class FileMapping(Mapping[str, "Tensor"]):
    """A file of tensors as a read-only Mapping: `path`, `closed`, `close()`, ``with``.

    Subclasses set `_path` and `_closed`, answer the Mapping, and free what
    they hold in `_release` (called once, by the first close()).
    """

    _kind = "file"  # names the file in the closed error
    _path: str
    _closed: bool = False

    @property
    def path(self) -> str:
        return self._path

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    @abstractmethod
    def metadata(self) -> Mapping[str, Any]:
        """The file's key-value metadata, as a new dict."""

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidArgumentError(f"{self._kind} {self._path!r} is closed")

    def close(self) -> None:
        """Let go of the file. Tensors already taken stay valid; closing twice is fine."""
        if self._closed:
            return
        self._closed = True
        self._release()

    def _release(self) -> None:
        """Free what the file holds (once, from close())."""

    def __enter__(self: _F) -> _F:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self)} tensors"
        return f"<hurray.{type(self).__name__} {self._path!r}: {state}>"


class TensorMap(FileMapping):
    """A read-only Mapping of tensor names to Tensors over a memory map, with `.metadata`.

    Subclasses fill `_entries` (name -> whatever `_make` needs) and
    `_metadata`, and implement `_make(name, entry)`. Tensors are zero-copy
    and read-only; each keeps the memory map alive by itself.
    """

    def __init__(self, path: str | os.PathLike[str], mapped: mmap.mmap | None,
                 entries: dict[str, Any], metadata: dict[str, Any] | None) -> None:
        self._path = os.fspath(path)
        self._map: Any = mapped  # an mmap.mmap; None for an empty file, and once closed
        self._entries = entries
        self._metadata = metadata  # None: a subclass that reads it on first use

    # ---- Mapping --------------------------------------------------------

    def __getitem__(self, name: str) -> Tensor:
        self._check_open()
        try:
            entry = self._entries[name]
        except (KeyError, TypeError):
            raise KeyError(name) from None
        return self._make(name, entry)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def _make(self, name: str, entry: Any) -> Tensor:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    # ---- the rest -------------------------------------------------------

    @property
    def metadata(self) -> dict[str, Any]:
        """The file's key-value metadata (a new dict each time; changing it changes nothing)."""
        return dict(self._metadata or {})

    def _release(self) -> None:
        mapped, self._map = self._map, None
        close_quietly(mapped)  # tensors still viewing it keep it until the last of them goes


def close_quietly(mapped: mmap.mmap | None) -> None:
    """Close a map unless a view made while parsing still holds it (then it goes with that view)."""
    if mapped is not None:
        try:
            mapped.close()
        except BufferError:
            pass


def check_held(mapped: Any, size: int, what: str, path: str) -> None:
    """Refuses (CorruptError) to read a map whose file has shrunk since it
    was mapped (truncated, or rewritten by open(path, "wb") or cp): the pages
    past the new end would be a SIGBUS when touched (ADR-057). One fstat."""
    if not isinstance(mapped, mmap.mmap):
        return  # an empty file: nothing is mapped
    try:
        now = mapped.size()
    except (OSError, ValueError) as exc:
        raise corrupt(what, path, f"the mapped file cannot be looked at any more ({exc})") from None
    if now < size:
        raise corrupt(what, path, f"the file shrank from {size} to {now} bytes after it was opened (truncated or "
                                  f"rewritten in place); its mapped bytes are gone")


def corrupt(what: str, path: str, message: str) -> CorruptError:
    """A CorruptError that says which file and which kind of file."""
    return CorruptError(f"{what}: {path!r}: {message}")
