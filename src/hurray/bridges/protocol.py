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
from .._protocol import C_ABI_MIN_VERSION, C_ABI_VERSION, CAPSULE_NAME, USED_CAPSULE_NAME
from .._protocol import CapsuleType as _CapsuleType
from .._protocol import consume as _consume
from .._protocol import export as _export
from ..core.descriptor import Descriptor
from ._names import qualified_name, refusal
from ..core.tensor import Tensor
from ..errors import AbiVersionError, CapsuleError, HurrayError, InvalidArgumentError, UnsupportedError

__all__ = ["CAPSULE_NAME", "USED_CAPSULE_NAME", "from_hurray", "to_capsule"]

_from_checked = Tensor._from_checked
# _kept and _keep: decoded descriptors by their bytes, the package's one
# cache of them, in C (hurray._core), which its hot paths share (ADR-046).


def context_version(max_version: Any) -> int:
    """The C ABI version of the context made for a consumer that reads up to ``max_version``.

    ``None`` (the consumer passed nothing) is a consumer of C ABI 4, the
    last version before the keyword existed (ADR-059); an int of at least 4
    is capped at this build's version. Anything else is refused by name.
    """
    if max_version is None:
        return C_ABI_MIN_VERSION
    if isinstance(max_version, bool) or not isinstance(max_version, int):
        raise InvalidArgumentError(
            f"__hurray__(max_version=...) takes the newest C ABI version the consumer reads, "
            f"an int such as {C_ABI_VERSION}, not {type(max_version).__name__}"
        )
    if max_version < C_ABI_MIN_VERSION:
        raise AbiVersionError(
            f"__hurray__(max_version={max_version}): no C ABI before version {C_ABI_MIN_VERSION} "
            f"has a tensor context; this build makes contexts of versions {C_ABI_MIN_VERSION} to {C_ABI_VERSION}"
        )
    return min(max_version, C_ABI_VERSION)


def to_capsule(tensor: Tensor, *, max_version: Any = None) -> Any:
    """Export ``tensor`` as a ``"hurray_tensor"`` capsule (what ``Tensor.__hurray__`` returns).

    The capsule shares the tensor's memory and holds the tensor alive until
    the capsule, or whoever consumes it, lets go. Its context has the newest
    C ABI version up to ``max_version`` (:func:`context_version`): a consumer
    that passes nothing reads C ABI 4, whose buffers are writable by
    contract. A read-only tensor therefore goes out only with a version-5
    context, every buffer marked ``HURRAY_BUFFER_READONLY``; asked without
    ``max_version`` it is refused, because an ABI-4 consumer would take its
    memory for writable (ADR-059).

    The capsule's references to its producer are invisible to the cycle
    collector (design note D-NB2, decision 11).
    """
    version = context_version(max_version)
    # The slots, not the properties: this is the producer's whole hot path,
    # and four Python-level property calls would cost as much as the export.
    readonly = bool(tensor._readonly)
    if readonly and version < 5:
        raise UnsupportedError(
            "cannot export a read-only tensor through __hurray__() for a consumer of C ABI "
            f"{version}: that ABI has no way to say that memory must not be written. A consumer "
            f"of C ABI 5 asks __hurray__(max_version=5) and receives it marked read-only "
            "(hurray.from_hurray does); otherwise export a writable copy"
        )
    return _export(tensor._descriptor.encode(), tensor._buffers, tensor, version, readonly)


def _from_hurray(obj: Any) -> Tensor:
    """A :class:`hurray.Tensor` sharing the memory of ``obj``, through its ``__hurray__()``.

    ``obj`` may also be a ``"hurray_tensor"`` capsule itself, as a C
    producer might hand over. ``obj.__hurray__`` is asked for the newest
    context this build reads (``max_version``), and asked again without the
    keyword if it does not take it (a producer written for C ABI 4). The
    tensor is read-only when the context marks any buffer read-only (ABI 5,
    ADR-059). The capsule's ABI version is checked first,
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
        capsule = to_capsule(obj, max_version=C_ABI_VERSION)  # Tensor.__hurray__, one call shorter
    elif kind is _CapsuleType:
        capsule = obj
    else:
        capsule = _capsule_of(obj)
    _version, descriptor_bytes, spans, holder, (address, box), readonly = _consume(capsule)
    descriptor = _kept(descriptor_bytes)
    if descriptor is None:
        # consume() decoded and checked it: keep that one (ADR-046).
        descriptor = _keep(Descriptor._adopt_handed(address, box, descriptor_bytes))
    # Not the public constructor: consume() has just proved, in C, that every
    # byte the descriptor can reach lies inside these very spans
    # (hurray_descriptor_check_buffers on the capsule's own list), and the
    # spans are the list's own; the constructor would prove it again.
    return _from_checked(descriptor, spans, holder, readonly=readonly)


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
        try:
            capsule = method(max_version=C_ABI_VERSION)
        except TypeError:
            capsule = method()  # a producer of C ABI 4 takes no keyword
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
    name = qualified_name(obj)
    if what == _NO_METHOD:
        raise CapsuleError(refusal(obj, "object does not support the Hurray protocol (no __hurray__ method)")) from None
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
