"""Pickling and copying a Tensor (ADR-043).

With pickle protocol 5 the descriptor bytes go in-band and every buffer goes
out-of-band as a ``pickle.PickleBuffer`` over the tensor's own memory, in
buffer order: nothing is copied. With protocol 4 and below every buffer goes
in-band as a byte string, copied again into writable memory on arrival when
the tensor was writable. Unpickling is an import like any other: the
versions are checked, the descriptor decoded and validated, and each
received buffer checked against the length and fingerprint recorded when it
was pickled, all before the Tensor exists; the Tensor constructor then proves
the spans against the descriptor in C.

The reconstructor's name, ``hurray.pickling.unpickle_tensor``, and the shape
of its arguments are part of every pickle ever written: change neither
without a new format.
"""
import pickle
import zlib

import numpy as np

from ._ffi import ffi, lib
from .descriptor import Descriptor
from .errors import AbiVersionError, CorruptError, UnsupportedError
from .tensor import Tensor

__all__ = ["ENCODING_VERSION", "copy_tensor", "reduce_ex", "unpickle_tensor"]

# The descriptor encoding version this build writes and reads. The C library
# has the one codec; the version is the little-endian uint16 at bytes 4-5 of
# every encoding (docs/impl/descriptor-encoding.md), so read it from one.
ENCODING_VERSION = int.from_bytes(Descriptor.build("uint8", ()).encode()[4:6], "little")

# (C ABI version, descriptor encoding version): the first item of every state.
_VERSIONS = (lib.HURRAY_C_ABI_VERSION, ENCODING_VERSION)

# How many bytes at each end of a buffer the fingerprint reads.
_EDGE = 256


def _fingerprint(view):
    """CRC-32 of the first and the last _EDGE bytes of a 1-D byte memoryview.

    Not a checksum of the contents: it costs the same for 1 KiB and 1 GiB,
    and tells apart buffers that a transport returned swapped, shifted or
    cut, which a length alone misses when two buffers are the same size.
    """
    return zlib.crc32(view[-_EDGE:], zlib.crc32(view[:_EDGE]))


def reduce_ex(tensor, protocol):
    """Tensor.__reduce_ex__: (unpickle_tensor, (versions, descriptor bytes, readonly, checks, buffers[, True]))."""
    arrays = [tensor.buffer(i) for i in range(len(tensor.buffers))]  # zero-copy uint8 views
    views = [memoryview(a) for a in arrays]
    checks = tuple((v.nbytes, _fingerprint(v)) for v in views)
    state = (_VERSIONS, tensor.descriptor.encode(), tensor.readonly, checks)
    if protocol >= 5:
        # Out-of-band when the pickler has a buffer_callback; otherwise pickle
        # writes each in-band, as bytes when read-only and bytearray when not.
        return (unpickle_tensor, state + (tuple(pickle.PickleBuffer(a) for a in arrays),))
    # In-band bytes (one copy; a bytearray would cost pickle a second), made
    # writable again on arrival, as numpy's in-band copies are.
    return (unpickle_tensor, state + (tuple(v.tobytes() for v in views), True))


def _is_int_pair(value):
    return type(value) is tuple and len(value) == 2 and type(value[0]) is int and type(value[1]) is int


def _refuse_versions(versions):
    """Raise the error that says what is wrong with a state's versions."""
    if not _is_int_pair(versions):
        raise CorruptError(f"pickled tensor: versions must be a pair of ints, not {versions!r}")
    abi, encoding = versions
    if abi != lib.HURRAY_C_ABI_VERSION:
        raise AbiVersionError(
            f"pickled tensor: written by C ABI version {abi}; this build serves {lib.HURRAY_C_ABI_VERSION}"
        )
    raise UnsupportedError(
        f"pickled tensor: descriptor encoding version {encoding} is unsupported (this build reads {ENCODING_VERSION})"
    )


def _received(i, obj, check):
    """Received buffer `i` as a 1-D byte memoryview, checked against `check`,
    the (nbytes, fingerprint) pair recorded when it was pickled."""
    try:
        view = memoryview(obj)
        if not view.c_contiguous:
            # The one copy on this side: a transport handed back strided memory.
            view = memoryview(view.tobytes())
        if view.ndim != 1 or view.format != "B":
            view = view.cast("B")
    except (TypeError, ValueError, BufferError) as exc:  # not a buffer, or a released one
        raise CorruptError(
            f"pickled tensor: buffer {i} is a {type(obj).__name__}, not a usable buffer (missing?): {exc}"
        ) from None
    if not _is_int_pair(check):
        raise CorruptError(f"pickled tensor: buffer {i}'s check must be (nbytes, fingerprint), not {check!r}")
    nbytes, fingerprint = check
    if view.nbytes != nbytes:
        raise CorruptError(
            f"pickled tensor: buffer {i} holds {view.nbytes} bytes, but {nbytes} were pickled "
            "(a buffer is missing, cut short or out of order)"
        )
    if _fingerprint(view) != fingerprint:
        raise CorruptError(
            f"pickled tensor: buffer {i} does not match the one pickled "
            "(out of order, or changed after pickling)"
        )
    return view


def unpickle_tensor(versions, encoded, readonly, checks, buffers, inband_copy=False):
    """Rebuild a pickled Tensor, checking everything it is handed first.

    The Tensor's owner is the tuple of memoryviews over the received buffer
    objects (see each one's ``.obj``); it is read-only if it was read-only
    when pickled or if any received buffer is read-only. `inband_copy`
    (protocols 0 to 4) says the buffers are the pickle's own bytes: a
    writable tensor then gets writable copies of them.
    """
    if not _is_int_pair(versions) or versions != _VERSIONS:
        _refuse_versions(versions)
    descriptor = Descriptor.decode(encoded)
    if type(readonly) is not bool:
        raise CorruptError(f"pickled tensor: readonly must be a bool, not {type(readonly).__name__}")
    if type(checks) is not tuple or type(buffers) is not tuple or len(checks) != len(buffers):
        raise CorruptError("pickled tensor: the buffer checks and the buffers do not pair up")
    if type(inband_copy) is not bool:
        raise CorruptError(f"pickled tensor: inband_copy must be a bool, not {type(inband_copy).__name__}")
    views = tuple(_received(i, obj, check) for i, (obj, check) in enumerate(zip(buffers, checks)))
    if inband_copy and not readonly:
        views = tuple(memoryview(bytearray(view)) for view in views)
    spans = []
    for view in views:
        readonly = readonly or view.readonly
        spans.append((int(ffi.cast("uintptr_t", ffi.from_buffer(view))), view.nbytes))
    # check_buffers in C: every byte the descriptor reaches lies in a span.
    return Tensor._from_spans(descriptor, tuple(spans), views, readonly)


def copy_tensor(tensor):
    """copy.copy and copy.deepcopy: a writable tensor over new copies of every
    buffer, byte for byte, as ndarray.copy() is for numpy. The descriptor is
    immutable and shared; the owner is the tuple of new uint8 arrays."""
    arrays = tuple(np.array(tensor.buffer(i), copy=True) for i in range(len(tensor.buffers)))
    spans = tuple((a.__array_interface__["data"][0], a.nbytes) for a in arrays)
    return Tensor._from_spans(tensor.descriptor, spans, arrays, False)
