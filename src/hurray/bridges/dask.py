"""Dask distributed's own serialization of a Tensor (ADR-049), registered
without importing Dask.

distributed speaks pickle protocol 4 on every connection to its scheduler
(its common denominator), so an object it pickles there -- every
``client.scatter`` and ``client.gather`` unless ``direct=True`` -- travels
in-band and is copied on each hop. numpy arrays do not pay this because
distributed has a serializer of its "dask" family for them, which hands each
buffer to the connection as a frame of its own whatever the protocol. This
module gives Tensor the same: the header is the pickled state's in-band part
(versions, descriptor bytes, read-only flag, lengths) and the frames are the
tensor's buffers, zero-copy; the other side goes through the same checked
reconstructor as a pickle (hurray.pickling.unpickle_tensor).

It also tells ``dask.sizeof`` how many bytes a Tensor holds (its buffers'),
so that a worker's memory accounting sees them.

The registration needs distributed.protocol.serialize and must not import
it: ``import hurray`` registers at once when it is already loaded (a worker
that receives a Tensor imports hurray to rebuild it, so it always is), and
otherwise puts a watcher first on ``sys.meta_path``. The watcher finds
nothing; asked for any module, it looks whether serialize has been loaded
since, and if so registers and takes itself off ``sys.meta_path``.
"""
import sys
from typing import Any, Optional, Sequence

from ..core.tensor import Tensor
from ..errors import CorruptError
from .pickling import unpickle_tensor

__all__ = ["dask_deserialize", "dask_serialize", "watch_for_dask"]

_SERIALIZE = "distributed.protocol.serialize"  # where the dispatch tables live


def dask_serialize(tensor: Tensor) -> tuple[dict[str, Any], list[memoryview]]:
    """distributed's "dask" serializer for a Tensor: (header, frames), the
    frames being the tensor's buffers, in order, over its own memory."""
    _, (versions, encoded, readonly, nbytes, buffers) = tensor.__reduce_ex__(5)
    header = {"hurray": list(versions), "descriptor": encoded, "readonly": readonly, "nbytes": list(nbytes)}
    return header, [buffer.raw() for buffer in buffers]


def dask_deserialize(header: dict[str, Any], frames: Sequence[Any]) -> Tensor:
    """The Tensor dask_serialize described, checked as an unpickled one is.

    Frames that arrive read-only are copied when the tensor was writable,
    as distributed does for numpy arrays; the rest are used in place.
    """
    try:
        versions, encoded, readonly = header["hurray"], header["descriptor"], header["readonly"]
        # msgpack makes tuples lists: a (length, fingerprint) check too.
        nbytes = tuple(tuple(c) if type(c) is list else c for c in header["nbytes"])
        frames = tuple(frames)
    except (KeyError, TypeError) as exc:
        raise CorruptError(f"dask frames of a tensor: the header is not one hurray wrote ({exc!r})") from None
    if len(frames) != len(nbytes):
        raise CorruptError(
            f"dask frames of a tensor: {len(frames)} frames for {len(nbytes)} buffers (a frame is missing or extra)"
        )
    if readonly is False:
        frames = tuple(_writable(frame) for frame in frames)
    versions = tuple(versions) if type(versions) is list else versions  # msgpack makes tuples lists
    return unpickle_tensor(versions, encoded, readonly, nbytes, frames)


def _writable(frame: Any) -> Any:
    """`frame`, or a writable copy of it if its memory is read-only."""
    try:
        view = memoryview(frame)
    except TypeError:
        return frame  # not a buffer: unpickle_tensor says so
    return bytearray(view) if view.readonly else frame


def _sizeof(tensor: Tensor) -> int:
    return sum(nbytes for _, nbytes in tensor.buffers)


def _register() -> bool:
    """Register with distributed and dask.sizeof if serialize is loaded; True if so."""
    serialize = sys.modules.get(_SERIALIZE)
    if serialize is None or not hasattr(serialize, "dask_deserialize"):
        return False  # not imported, or still being imported
    serialize.dask_serialize.register(Tensor, dask_serialize)
    serialize.dask_deserialize.register(Tensor, dask_deserialize)
    sizeof = sys.modules.get("dask.sizeof")  # serialize imports it first
    if sizeof is not None:
        sizeof.sizeof.register(Tensor, _sizeof)
    return True


class _Watcher:
    """First on sys.meta_path until distributed's serialize module is loaded."""

    def find_spec(self, name: str, path: Optional[Sequence[str]] = None, target: Any = None) -> None:
        if _register():
            # A new list: the import in progress is iterating over the old one.
            sys.meta_path = [finder for finder in sys.meta_path if not isinstance(finder, _Watcher)]
        return None


def watch_for_dask() -> None:
    """Register now if distributed is loaded, or as soon as it is."""
    if not _register() and not any(isinstance(finder, _Watcher) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Watcher())
