"""The native protocol (layer 6): ``__hurray__`` export and ``from_hurray`` import.

A producer's ``__hurray__()`` returns a PyCapsule named ``"hurray_tensor"``
whose pointer is a ``HurrayBufferList`` and whose context is a
``HurrayTensorContext`` (ADR-030 section 2, ADR-034). Both capsule ends are
written in C, in ``hurray._protocol``; design note D-NB2 at the top of
``_protocol.c`` (and docs/impl/d-nb2.md) says who owns what, in which order
things are freed, and what happens on other threads and at interpreter exit.

Threads: ``to_capsule`` and ``from_hurray`` may be called from any thread.
A capsule is consumed at most once, even when threads race for it; the
loser gets a CapsuleError. The handles inside a capsule may be released on
any thread, including threads Python did not create.

Cycles: the references a capsule (or a consumer tensor's holder) keeps to
its producer are invisible to the cycle collector (design note D-NB2,
decision 11).
"""
from __future__ import annotations

from typing import Any, NoReturn

from .._core import from_hurray as _core_from_hurray
from .._core import keep as _keep
from .._core import kept as _kept
from .._protocol import CAPSULE_NAME, USED_CAPSULE_NAME
from .._protocol import CapsuleType as _CapsuleType
from .._protocol import consume as _consume
from .._protocol import export as _export
from ..core.descriptor import Descriptor
from ..core.tensor import Tensor
from ..errors import CapsuleError, HurrayError, UnsupportedError

__all__ = ["CAPSULE_NAME", "USED_CAPSULE_NAME", "from_hurray", "to_capsule"]

_from_checked = Tensor._from_checked
# _kept and _keep: decoded descriptors by their bytes, the package's one
# cache of them, in C (hurray._core), which its hot paths share (ADR-046).


def to_capsule(tensor: Tensor) -> Any:
    """Export ``tensor`` as a ``"hurray_tensor"`` capsule (what ``Tensor.__hurray__`` returns).

    The capsule shares the tensor's memory and holds the tensor alive until
    the capsule, or whoever consumes it, lets go. A read-only tensor is
    refused: C ABI 4 has no way to mark memory read-only, and a consumer
    writing into it could corrupt immutable data or fault on a read-only
    mapping. Export a writable copy instead.

    The capsule's references to its producer are invisible to the cycle
    collector (design note D-NB2, decision 11).
    """
    # The slots, not the properties: this is the producer's whole hot path,
    # and four Python-level property calls would cost as much as the export.
    if tensor._readonly:
        raise UnsupportedError(
            "cannot export a read-only tensor through __hurray__: the capsule cannot "
            "mark its memory read-only (C ABI 4 has no such flag); export a writable copy"
        )
    return _export(tensor._descriptor.encode(), tensor._buffers, tensor)


def _from_hurray(obj: Any) -> Tensor:
    """A :class:`hurray.Tensor` sharing the memory of ``obj``, through its ``__hurray__()``.

    ``obj`` may also be a ``"hurray_tensor"`` capsule itself, as a C
    producer might hand over. The capsule's ABI version is checked first,
    then its descriptor is decoded and checked against its buffers; only
    then is the capsule consumed (renamed ``"used_hurray_tensor"``). On any
    refusal a :class:`hurray.HurrayError` is raised and the capsule is left
    as it was, for its producer to free. (Only a MemoryError can come after
    the rename: the capsule is then consumed and the handles taken from it
    are freed.)

    The returned tensor holds its producer through handles the cycle
    collector cannot see (design note D-NB2, decision 11).
    """
    kind = type(obj)
    if kind is Tensor:
        capsule = to_capsule(obj)  # exactly what Tensor.__hurray__ does, one call shorter
    elif kind is _CapsuleType:
        capsule = obj
    else:
        capsule = _capsule_of(obj)
    _version, descriptor_bytes, spans, holder, (address, box) = _consume(capsule)
    descriptor = _kept(descriptor_bytes)
    if descriptor is None:
        # consume() decoded and checked it: keep that one (ADR-046).
        descriptor = _keep(Descriptor._adopt_handed(address, box, descriptor_bytes))
    # Not the public constructor: consume() has just proved, in C, that every
    # byte the descriptor can reach lies inside these very spans
    # (hurray_descriptor_check_buffers on the capsule's own list), and the
    # spans are the list's own; the constructor would prove it again.
    return _from_checked(descriptor, spans, holder)


def _capsule_of(obj: Any) -> Any:
    """Call ``obj.__hurray__()``; turn everything that can go wrong into a HurrayError.

    A HurrayError from ``__hurray__`` passes through; any other exception is
    wrapped, with the original as ``__cause__``. (``hurray._core`` does the
    same in C, and calls :func:`_refuse` for every failure.)
    """
    try:
        method = obj.__hurray__
    except AttributeError:
        _refuse(obj, _NO_METHOD, None)
    try:
        capsule = method()
    except Exception as exc:
        _refuse(obj, _RAISED, exc)
    if type(capsule) is not _CapsuleType:
        _refuse(obj, _NOT_A_CAPSULE, capsule)
    return capsule


_NO_METHOD, _RAISED, _NOT_A_CAPSULE = 0, 1, 2


def _refuse(obj: Any, what: int, value: Any) -> NoReturn:
    """Raise the error for a producer whose ``__hurray__`` gave no capsule.

    ``what`` says how: ``_NO_METHOD`` (no ``__hurray__``), ``_RAISED``
    (``value`` is the exception it raised), ``_NOT_A_CAPSULE`` (``value`` is
    what it returned). One statement of each error, for both the Python and
    the C path.
    """
    name = type(obj).__name__
    if what == _NO_METHOD:
        raise CapsuleError(
            f"{name} object does not support the Hurray protocol (no __hurray__ method)"
        ) from None
    if what == _RAISED:
        if isinstance(value, HurrayError):
            raise value  # already says what went wrong, in the package's terms
        raise HurrayError(f"{name}.__hurray__() raised {type(value).__name__}: {value}") from value
    raise CapsuleError(
        f"{name}.__hurray__() returned {type(value).__name__}, "
        f"not a PyCapsule named '{CAPSULE_NAME}'"
    )


# The hot path in C (ADR-046): a plain writable Tensor (exchanged without a
# capsule, ADR-048), a capsule, or any producer with __hurray__ goes through
# hurray._core with no Python frame (ADR-048, amended); a read-only or
# closed Tensor is _from_hurray's, and a producer's failures _refuse's.
# Tensor.__hurray__ is to_capsule in C for an exact, writable Tensor, and
# to_capsule otherwise. hurray._wiring hands _core these functions.
from_hurray = _core_from_hurray
