"""Where a checkpoint's stored tensors lie: one safetensors file, or a
directory of shards bound by ``model.safetensors.index.json`` (ADR-063).

The index and the config are read once; each shard is opened (and mapped)
once, whatever number of tensors it holds. A stored tensor is an Entry:
its Hurray dtype name, its shape, and where its bytes lie; `data(name)` is
a zero-copy read-only uint8 view of them, `plain(name)` the Tensor the
safetensors reader makes of it. Every JSON file is read with a size cap
(and json's own nesting cap, a RecursionError turned into a CorruptError), and every name the index gives must be a plain file name
inside the directory.
"""
from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple, Optional

import numpy as np

from ...core.tensor import Tensor
from ...errors import CorruptError, HurrayError, UnsupportedError, io_error
from ...io._path import open_regular
from ..safetensors_file import SAFETENSORS_DTYPES, SafetensorsFile, load_safetensors

__all__ = ["Entry", "Sources", "read_json", "open_sources"]

INDEX = "model.safetensors.index.json"
CONFIG = "config.json"
MAX_JSON = 16 << 20  # a config or an index larger than this is not one


class Entry(NamedTuple):
    """A stored tensor: Hurray dtype name (None for a dtype this build lacks), shape, and its file's dtype name."""

    dtype: Optional[str]
    shape: tuple[int, ...]
    stored: str


def _no_duplicates(what: str) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)  # in C; only an object whose keys collapse is walked, for the key to name
        if len(out) != len(items):
            seen: set[str] = set()
            for key, _ in items:
                if key in seen:
                    raise CorruptError(f"{what}: the key {key!r} is listed twice")
                seen.add(key)
        return out
    return pairs


def parse_json(text: bytes, what: str, limit: int = MAX_JSON) -> Any:
    """JSON text of at most `limit` bytes, without duplicate keys; else CorruptError (nesting too, never a crash)."""
    if len(text) > limit:
        raise CorruptError(f"{what}: {len(text)} bytes of JSON, more than the {limit} allowed")
    try:
        value = json.loads(text.decode("utf-8"), object_pairs_hook=_no_duplicates(what))
    except UnicodeDecodeError:
        raise CorruptError(f"{what}: not UTF-8 text") from None
    except RecursionError:  # json's scanner counts its nesting against the interpreter's recursion limit
        raise CorruptError(f"{what}: JSON nested deeper than the parser allows") from None
    except ValueError as exc:
        if isinstance(exc, HurrayError):
            raise
        raise CorruptError(f"{what}: not valid JSON ({exc})") from None
    return value


def _read_bounded(fd: int, size: int, limit: int) -> bytes:
    """At most `limit` bytes of the open file `fd`, from its start.

    A read of `limit` (16 MiB) at once would allocate that much for a config
    of a few hundred bytes; the size the open found is read first, and the
    rest only when the file has grown since."""
    want = min(size + 1, limit)
    text = os.read(fd, want)
    if len(text) < want:
        return text  # the whole file: a regular file's read comes back short only at its end
    chunks = [text]
    while want < limit:
        more = os.read(fd, limit - want)
        if not more:
            break
        chunks.append(more)
        want += len(more)
    return b"".join(chunks)


def read_json(path: str, what: str) -> Any:
    """The JSON file at `path` (bounded as parse_json says)."""
    fd, size, shown = open_regular(path, what)  # the path policy: a missing file is a HurrayFileNotFoundError
    try:
        text = _read_bounded(fd, size, MAX_JSON + 1)
    except OSError as exc:
        raise io_error(f"{what}: cannot read {shown!r}: {exc.strerror}", exc.errno or 0, shown) from None
    finally:
        os.close(fd)
    return parse_json(text, f"{what}: {path!r}")


class Sources:
    """The stored tensors of one or more safetensors files, by name."""

    def __init__(self, path: str, files: list[SafetensorsFile], owner: dict[str, SafetensorsFile],
                 visible: Optional[dict[str, SafetensorsFile]] = None) -> None:
        self.path = path
        self._files = files
        self._owner = owner  # entry name -> the file that stores it
        # what the files' own readers list (the same as owner unless Hurray wrote tensors as parts)
        self._visible = owner if visible is None else visible
        self.metadata: dict[str, str] = {}
        for f in files:
            self.metadata.update(f.metadata)

    def __iter__(self) -> Iterator[str]:
        """The stored entries (those a Hurray record of ADR-041 binds into one tensor left out)."""
        return iter(self._owner)

    def visible(self) -> Iterator[str]:
        """The names the files' own readers give: entries, and tensors Hurray wrote as parts."""
        return iter(self._visible)

    def __contains__(self, name: object) -> bool:
        return name in self._owner

    def __len__(self) -> int:
        return len(self._owner)

    def entry(self, name: str) -> Entry:
        stored, shape, _, _ = self._owner[name]._raw[name]
        known = SAFETENSORS_DTYPES.get(stored)
        return Entry(None if known is None else known[0], shape, stored)

    def data(self, name: str) -> np.ndarray:
        """The entry's bytes: a zero-copy, read-only uint8 view of its file's map."""
        f = self._owner[name]
        f._check_open()
        _, _, start, nbytes = f._raw[name]
        return f._bytes(start, nbytes)

    def plain(self, name: str) -> Tensor:
        return self._visible[name][name]

    def files_by_name(self) -> dict[str, Any]:
        """{visible name: the file mapping that gives it}, for a reader's fast path."""
        return self._visible

    def file_of(self, name: str) -> str:
        return self._owner[name].path

    def close(self) -> None:
        for f in self._files:
            f.close()


def _is_file_name(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and os.path.basename(value) == value and value not in (".", "..")


def _shard_name(directory: str, value: Any, tensor: str) -> str:
    if not _is_file_name(value):
        raise CorruptError(f"load_checkpoint: {directory!r}: the index maps tensor {tensor!r} to {value!r}, "
                           "which is not a file name in the checkpoint's directory")
    return value


def _open_all(paths: Iterable[str], opened: list[SafetensorsFile]) -> None:
    for p in paths:
        opened.append(load_safetensors(p))


def open_sources(directory: str) -> Sources:
    """The shards of a checkpoint directory, by its index (or its one model.safetensors)."""
    index_path = os.path.join(directory, INDEX)
    opened: list[SafetensorsFile] = []
    try:
        if os.path.exists(index_path):
            index = read_json(index_path, "load_checkpoint")
            weight_map = index.get("weight_map") if isinstance(index, dict) else None
            if not isinstance(weight_map, dict):
                raise CorruptError(f"load_checkpoint: {index_path!r}: no weight_map object")
            shards = _shards_of(weight_map, directory)
            for shard in shards:
                if not os.path.isfile(os.path.join(directory, shard)):
                    raise CorruptError(f"load_checkpoint: {index_path!r} lists shard {shard!r}, "
                                       f"which is not in {directory!r}")
            _open_all((os.path.join(directory, s) for s in shards), opened)
            owner: dict[str, SafetensorsFile] = {}
            held_in: dict[str, str] = {}  # tensor -> the shard that holds it, to compare with the index
            count = 0
            for f, shard in zip(opened, shards):
                held = _entries(f)
                count += len(held)
                owner.update(dict.fromkeys(held, f))
                held_in.update(dict.fromkeys(held, shard))
            if count != len(held_in) or held_in != weight_map:  # compared in C; the names only to say why
                _disagreement(opened, shards, weight_map, directory, index_path)
            visible = owner if all(not f._composites for f in opened) else \
                {name: f for f in opened for name in f}
            return Sources(directory, opened, owner, visible)
        files = sorted(n for n in os.listdir(directory) if n.endswith(".safetensors"))
        if not files:  # a directory where a file or a checkpoint was expected: the path policy's error
            raise io_error(f"load_checkpoint: {directory!r} is a directory with no {INDEX} and no .safetensors "
                           "file: not a checkpoint", errno.EISDIR, directory)
        if len(files) != 1:
            found = ", ".join(files) or "none"
            raise UnsupportedError(f"load_checkpoint: {directory!r} has no {INDEX} and not exactly one "
                                   f".safetensors file (found {found})")
        return single(os.path.join(directory, files[0]), opened)
    except BaseException:
        for f in opened:
            f.close()
        raise


def single(path: str, opened: Optional[list[SafetensorsFile]] = None) -> Sources:
    """One safetensors file as Sources."""
    f = load_safetensors(path)
    if opened is not None:
        opened.append(f)
    return Sources(path, [f], dict.fromkeys(_entries(f), f), dict.fromkeys(f, f) if f._composites else None)


def _shards_of(weight_map: dict[str, Any], directory: str) -> list[str]:
    """The shards the index names, each once, in the order it first names them."""
    try:
        shards = list(dict.fromkeys(weight_map.values()))  # one pass in C
    except TypeError:  # a value that is no file name (a list, say): the pass below names its tensor
        shards = None
    if shards is not None and all(map(_is_file_name, shards)):
        return shards
    named: dict[str, None] = {}
    for tensor, value in weight_map.items():  # value by value: the first that is no file name, with its tensor
        named[_shard_name(directory, value, tensor)] = None
    return list(named)


def _disagreement(opened: list[SafetensorsFile], shards: list[str], weight_map: dict[str, Any], directory: str,
                  index_path: str) -> None:
    """Raise the CorruptError that says where the shards and the index disagree."""
    listed: dict[str, list[str]] = {shard: [] for shard in shards}
    for tensor, shard in weight_map.items():
        listed[shard].append(tensor)
    owner: set[str] = set()
    for f, shard in zip(opened, shards):
        held = _entries(f)
        if len(held) != len(listed[shard]) or set(held) != set(listed[shard]):
            _mismatch(f, held, listed[shard], weight_map, directory)
        owner.update(held)
    # a tensor in two shards, each listing it: impossible from one map
    raise CorruptError(f"load_checkpoint: {index_path!r}: the shards hold {len(owner)} tensors, "
                       f"the index lists {len(weight_map)}")


def _mismatch(f: SafetensorsFile, held: list[str], listed: list[str], weight_map: dict[str, Any],
              directory: str) -> None:
    """Raise the CorruptError that names the first tensor a shard and the index disagree on."""
    listed_set = set(listed)
    for name in held:
        if name not in listed_set:
            where = "does not list it" if name not in weight_map else f"puts it in {weight_map[name]!r}"
            raise CorruptError(f"load_checkpoint: shard {f.path!r} holds tensor {name!r}, but the index {where}")
    held_set = set(held)
    for name in listed:
        if name not in held_set:
            raise CorruptError(f"load_checkpoint: the index puts tensor {name!r} in {f.path!r}, "
                               "which does not hold it")
    raise CorruptError(f"load_checkpoint: shard {f.path!r} holds a tensor twice")  # pragma: no cover


def _entries(f: SafetensorsFile) -> list[str]:
    """The file's stored entries but the parts of tensors Hurray wrote as parts (ADR-041)."""
    if not f._composites:
        return list(f._raw)
    claimed = {b for _, buffers in f._composites.values() for b in buffers}
    return [name for name in f._raw if name not in claimed]
