"""Pickling and copying a Tensor (ADR-043, ADR-049).

With pickle protocol 5 the descriptor bytes go in-band and every buffer goes
out-of-band as a ``pickle.PickleBuffer`` over the tensor's own memory, in
buffer order: nothing is copied. With protocol 4 and below every buffer goes
in-band as a byte string, copied again into writable memory on arrival when
the tensor was writable. Unpickling is an import like any other: the
versions are checked, the descriptor decoded and validated, and each
received buffer's length checked against the one pickled (and, for buffers
of one tensor that share a length, a fingerprint of their edges, which
tells them apart if they come back swapped), all before the Tensor exists; the spans are then proven against the descriptor in C.

Both halves are in C (hurray._pickle, src/hurray/_ext/_pickle.c); this
module holds the messages for bad versions and the copies, and
hurray._wiring installs Tensor.__reduce_ex__ from it. The reconstructor's
name, ``hurray.pickling.unpickle_tensor``, and the shape of its arguments
are part of every pickle ever written: change neither without a new format
(hurray/pickling.py keeps that name, re-exporting it from here).
"""
from typing import Any, NoReturn

import numpy as np

from .._core import tensor_from_spans
from .._pickle import unpickle_tensor
from .._ffi import lib
from ..core.descriptor import Descriptor
from ..core.tensor import Tensor
from ..errors import AbiVersionError, CorruptError, UnsupportedError

__all__ = ["ENCODING_VERSION", "copy_tensor", "deepcopy_tensor", "unpickle_tensor"]

# The descriptor encoding version this build writes and reads. The C library
# has the one codec; the version is the little-endian uint16 at bytes 4-5 of
# every encoding (docs/impl/descriptor-encoding.md), so read it from one.
ENCODING_VERSION = int.from_bytes(Descriptor.build("uint8", ()).encode()[4:6], "little")

# (C ABI version, descriptor encoding version): the first item of every state.
# The C ABI version is the last one that changed what a state holds: 4. C ABI
# 5 added read-only marks to the protocol's buffers (ADR-059), which a state
# already carries as its own readonly item, so pickles keep saying 4 and
# builds of either ABI read each other's.
_VERSIONS = (lib.HURRAY_C_ABI_MIN_VERSION, ENCODING_VERSION)


def _is_int_pair(value: object) -> bool:
    return type(value) is tuple and len(value) == 2 and type(value[0]) is int and type(value[1]) is int


def _refuse_versions(versions: Any) -> NoReturn:
    """Raise the error that says what is wrong with a state's versions."""
    if not _is_int_pair(versions):
        raise CorruptError(f"pickled tensor: versions must be a pair of ints, not {versions!r}")
    abi, encoding = versions
    if abi != _VERSIONS[0]:
        raise AbiVersionError(
            f"pickled tensor: written by C ABI version {abi}; this build reads pickles of C ABI version {_VERSIONS[0]}"
        )
    raise UnsupportedError(
        f"pickled tensor: descriptor encoding version {encoding} is unsupported (this build reads {ENCODING_VERSION})"
    )


def copy_tensor(tensor: Tensor) -> Tensor:
    """copy.copy and copy.deepcopy: a writable tensor over new copies of every
    buffer, byte for byte, as ndarray.copy() is for numpy. The descriptor is
    immutable and shared; the owner is the tuple of new uint8 arrays."""
    arrays = tuple(np.array(tensor.buffer(i), copy=True) for i in range(len(tensor.buffers)))
    spans = tuple((a.__array_interface__["data"][0], a.nbytes) for a in arrays)
    return tensor_from_spans(tensor.descriptor, spans, arrays, False)


def deepcopy_tensor(tensor: Tensor, memo: Any) -> Tensor:
    """copy.deepcopy: as copy_tensor (the descriptor is immutable; `memo` has nothing to hold)."""
    return copy_tensor(tensor)


# unpickle_tensor(versions, encoded, readonly, nbytes, buffers[, inband_copy]),
# imported above from hurray._pickle: a C function whose __module__ is
# hurray.pickling, where every pickle finds it.
