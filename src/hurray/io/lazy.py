"""Tensors whose checksum is verified on first use of their memory.

``load(path)[name]`` must cost about as much as opening a one-tensor file,
so it cannot hash the tensor. Instead it returns a :class:`LazyTensor`: a
Tensor whose ``_buffers`` -- the spans every path to the memory goes through
(``np.asarray``, ``buffer(i)``, ``dequantize``, ``__hurray__``,
``__dlpack__``, pickling, ``save``) -- is a property that verifies the
checksum first. Once verified the object becomes a plain :class:`Tensor`
(its class is swapped; the layout is the same), so later uses cost nothing.
A failed check raises :class:`hurray.errors.ChecksumError` at that use, and
again at the next.

tensor.py is not changed: the spans are stored in Tensor's own slot and
read through its slot descriptor.
"""
from __future__ import annotations

from typing import Any

from ..core.descriptor import Descriptor
from ..core.tensor import Tensor

_BUFFERS = Tensor.__dict__["_buffers"]  # the slot that holds the spans
_OWNER = Tensor.__dict__["_owner"]


class LazyTensor(Tensor):
    """A Tensor from a file, not yet verified. Behaves as a Tensor."""

    __slots__ = ()

    @classmethod
    def _from_pair(cls, descriptor: Descriptor, spans: tuple[tuple[int, int], ...], owner: Any) -> LazyTensor:
        self = object.__new__(cls)
        self._descriptor = descriptor
        _BUFFERS.__set__(self, spans)
        self._owner = owner
        self._readonly = False
        self._view = None
        return self

    @property
    def _buffers(self) -> tuple[tuple[int, int], ...]:  # type: ignore[override]  # Tensor's slot, read through
        owner = _OWNER.__get__(self)
        verify = owner.verifier
        if verify is not None:
            verify()  # raises ChecksumError; the tensor stays unverified
            owner.verifier = None  # also lets go of the reader
        self.__class__ = Tensor  # type: ignore[assignment]  # the swap this module is about
        return _BUFFERS.__get__(self)

    def __repr__(self) -> str:
        # Looking at a tensor is not using its memory: no verification here.
        d = self._descriptor
        return (f"<hurray.Tensor dtype={d.dtype!r} shape={d.shape!r}, buffers={len(_BUFFERS.__get__(self))}, "
                f"checksum not verified yet>")

    def __reduce_ex__(self, protocol: Any) -> Any:
        # Pickling copies the memory: verify first, whatever Tensor's own
        # pickling reads. After _buffers the object is a plain Tensor.
        self._buffers  # noqa: B018
        return type(self).__reduce_ex__(self, protocol)
