"""Tensor: a descriptor, the spans of memory it describes, and who keeps them alive.

A Tensor never owns memory itself: `owner` does, and the Tensor holds a
strong reference to it. Spans are raw (address, nbytes) pairs, so the
constructor always proves through ``hurray_descriptor_check_buffers`` that
every byte the descriptor can reach lies inside them.

The methods that belong to other layers (dequantize, to_ggml, __hurray__,
__dlpack__, pickling and copying) are not defined here but installed by
hurray/_wiring.py, which also puts the C halves of __array__, buffer and
stored_values in place; the end of the class lists each and where it lives.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Optional

import numpy as np

from . import _views
from . import dtypes as _dtypes
from ._checks import U64, index, uint
from . import nodes as _nodes
from .descriptor import Descriptor, check_spans, plain_stored
from ..errors import InvalidArgumentError, OutOfRangeError, UnsupportedError

__all__ = ["Tensor"]

# {dtype code * 2 + byte order code: numpy dtype} for the builtin numpy
# types this process has viewed: the table Tensor.__array__'s C half reads
# (hurray._core, set up by hurray._wiring).
NUMPY_DTYPES: dict[int, np.dtype] = {}


def _spans(buffers: Any) -> tuple[tuple[int, int], ...]:
    """`buffers` as a tuple of (address, nbytes) pairs of unsigned 64-bit ints."""
    try:
        buffers = tuple(buffers)  # once: an iterator could not be read again below
    except TypeError:
        raise InvalidArgumentError("buffers must be a sequence of (address, nbytes) pairs") from None
    try:
        spans = tuple((address, nbytes) for address, nbytes in buffers)
    except (TypeError, ValueError):
        spans = None
    if spans is not None and all(
        type(a) is int and type(n) is int and 0 <= a < U64 and 0 <= n < U64 for a, n in spans
    ):
        return spans
    # The slow path, for a message that says what is wrong.
    try:
        pairs = [tuple(span) for span in buffers]
    except TypeError:
        raise InvalidArgumentError("buffers must be a sequence of (address, nbytes) pairs") from None
    checked = []
    for i, pair in enumerate(pairs):
        if len(pair) != 2:
            raise InvalidArgumentError(f"buffer {i} must be an (address, nbytes) pair, not {pair!r}")
        checked.append((uint(pair[0], f"buffer {i} address", U64), uint(pair[1], f"buffer {i} nbytes", U64)))
    return tuple(checked)


class Tensor:
    """A tensor over memory that `owner` keeps alive.

    `buffers` is a sequence of (address, nbytes) spans, one per buffer the
    descriptor refers to. `readonly` marks memory that must not be written:
    numpy views of it are then read-only. The spans are checked against the
    descriptor here, every time.
    """

    # _view: the values view's (array interface, dtype, quantized), made on
    # first use; the descriptor and spans never change, so neither does it.
    __slots__ = ("_descriptor", "_buffers", "_owner", "_readonly", "_view", "__weakref__")
    _view: Optional[tuple[dict[str, Any], np.dtype, bool]]

    def __init__(
        self, descriptor: Descriptor, buffers: Iterable[tuple[int, int]], owner: Any = None, *, readonly: bool = False
    ) -> None:
        if not isinstance(descriptor, Descriptor):
            raise InvalidArgumentError(f"descriptor must be a hurray.Descriptor, not {type(descriptor).__name__}")
        spans = _spans(buffers)
        check_spans(descriptor, spans)
        self._descriptor = descriptor
        self._buffers = spans
        self._owner = owner
        self._readonly = bool(readonly)
        self._view = None

    @classmethod
    def _from_spans(cls, descriptor: Descriptor, spans: tuple[tuple[int, int], ...], owner: Any,
                    readonly: bool = False) -> Tensor:
        """A Tensor over spans this package built: a tuple of (address, nbytes)
        int pairs, each below 2**64. They are checked against the descriptor
        in C, as always; only the normalization of user input is skipped."""
        check_spans(descriptor, spans)
        return cls._from_checked(descriptor, spans, owner, readonly)

    @classmethod
    def _from_checked(cls, descriptor: Descriptor, spans: tuple[tuple[int, int], ...], owner: Any,
                      readonly: bool = False) -> Tensor:
        """A Tensor over spans that hurray_descriptor_check_buffers has already accepted.

        For consumers whose spans were proven in C against this very
        descriptor (the native protocol checks a capsule's own buffer list):
        `spans` must be the tuple of (address, nbytes) int pairs that was
        checked. Nothing is checked again here.
        """
        self = object.__new__(cls)
        self._descriptor = descriptor
        self._buffers = spans
        self._owner = owner
        self._readonly = readonly
        self._view = None
        return self

    # ---- what it is ----------------------------------------------------

    @property
    def descriptor(self) -> Descriptor:
        return self._descriptor

    @property
    def buffers(self) -> tuple[tuple[int, int], ...]:
        """The (address, nbytes) spans, one per buffer."""
        return self._buffers

    @property
    def owner(self) -> Any:
        """The object keeping the memory alive (may be None for static memory)."""
        return self._owner

    @property
    def readonly(self) -> bool:
        return self._readonly

    @property
    def dtype(self) -> str:
        """The element type's name."""
        return self._descriptor.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self._descriptor.shape

    @property
    def strides(self) -> tuple[int, ...]:
        """Strides in elements."""
        return self._descriptor.strides

    @property
    def ndim(self) -> int:
        return self._descriptor.ndim

    @property
    def size(self) -> int:
        return self._descriptor.size

    def __repr__(self) -> str:
        d = self._descriptor
        extra = "".join(
            f", {name}={value!r}"
            for name, value, default in (
                ("packing", d.packing, "none"),
                ("scheme", d.scheme, "none"),
                ("byte_order", d.byte_order, "little"),
            )
            if value != default
        )
        ro = ", readonly=True" if self._readonly else ""
        return f"<hurray.Tensor dtype={d.dtype!r} shape={d.shape!r}{extra}, buffers={len(self._buffers)}{ro}>"

    # ---- memory --------------------------------------------------------

    def buffer(self, i: int) -> np.ndarray:
        """Buffer `index` as a zero-copy 1-D uint8 array that keeps this tensor alive."""
        i = index(i, "buffer index")
        if not 0 <= i < len(self._buffers):
            raise OutOfRangeError(f"buffer index {i} is outside 0 .. {len(self._buffers) - 1}")
        address, nbytes = self._buffers[i]
        interface = {"version": 3, "shape": (nbytes,), "typestr": "|u1", "data": (address, self._readonly)}
        array = _views.over(self, interface)
        if self._readonly:
            array.flags.writeable = False  # numpy ignores the flag for a NULL empty span
        return array

    def _view_plan(self, purpose: str) -> tuple[dict[str, Any], np.dtype, bool]:
        """(array interface, dtype, quantized) of the values view, made once."""
        plan = self._view
        if plan is None:
            d = self._descriptor
            if d.scheme == "graph":
                return self._graph_view_plan(purpose)
            if d.scheme == "ggml":
                raise UnsupportedError(f"{purpose}: ggml {d.ggml_type} blocks: use Tensor.dequantize()")
            if d.packing not in ("none", "padded"):
                raise UnsupportedError(
                    f"{purpose}: packed {d.bits}-bit {d.packing} elements: use Tensor.unpack() for a padded copy"
                )
            dt = _views.element_dtype(d.dtype, d.byte_order, purpose)
            values = d._read_fields()["parts"]["values"]
            interface = _views.strided_interface(self, values.buffer_index, values.byte_offset, dt, d.shape, d.strides)
            plan = self._view = (interface, dt, d.scheme in ("affine", "microscaling"))
            if _dtypes.is_builtin(dt):
                # hurray._core views this dtype in C from now on (ADR-046).
                NUMPY_DTYPES[d.dtype_code * 2 + (d.byte_order == "big")] = dt
        return plan

    def _graph_view_plan(self, purpose: str) -> tuple[dict[str, Any], np.dtype, bool]:
        """The view plan of a version-2 tensor: only a plain stored node 0,
        whose codes are the values, can be viewed; the rest is dequantized."""
        d = self._descriptor
        root = d.root
        if root is None or not plain_stored(root):
            raise UnsupportedError(
                f"{purpose}: a graph of nodes (descriptor encoding version 2, node 0 a "
                f"{type(root).__name__.lower()} node): use Tensor.dequantize()"
            )
        assert isinstance(root, _nodes.Stored)
        # Read back from C: packing and strides are always stated.
        if root.packing not in ("none", "padded"):
            raise UnsupportedError(f"{purpose}: node 0 holds packed {root.dtype} codes: use Tensor.dequantize()")
        dt = _views.element_dtype(root.dtype, root.byte_order, purpose)
        shape, strides = tuple(root.shape), tuple(root.strides or ())
        if shape != tuple(d.shape):
            # A reshape of node 0: viewable when node 0 is row-major contiguous.
            contiguous = Descriptor.build(root.dtype, shape).strides
            if strides != contiguous:
                raise UnsupportedError(f"{purpose}: node 0 is a strided {shape} that the tensor's {d.shape} reshapes: "
                                       "use Tensor.dequantize()")
            shape, strides = tuple(d.shape), tuple(d.strides)
        interface = _views.strided_interface(self, root.buffer, root.offset, dt, shape, strides)
        plan = self._view = (interface, dt, False)
        return plan

    def _stored_view(self, purpose: str) -> np.ndarray:
        """The values part as a zero-copy ndarray, for packings numpy can address."""
        interface, dt, _ = self._view_plan(purpose)
        return _views.view(self, interface, dt, purpose)

    def stored_values(self) -> np.ndarray:
        """The stored values as a zero-copy array, without dequantizing.

        For a quantized tensor these are the codes (say int8 or int4), not
        real numbers; packed sub-byte values need :meth:`unpack`.
        """
        return self._stored_view("Tensor.stored_values")

    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> np.ndarray:
        plan = self._view
        if plan is None or plan[2]:
            d = self._descriptor
            if d.scheme == "graph":
                plan = self._view_plan("np.asarray")
            elif d.scheme == "affine" or d.scheme == "microscaling":
                raise UnsupportedError(
                    f"np.asarray: {d.scheme} {d.granularity} quantization: use Tensor.dequantize()"
                )
            plan = self._view_plan("np.asarray")
        view = _views.view(self, plan[0], plan[1], "np.asarray")
        if dtype is not None and np.dtype(dtype) != view.dtype:
            if copy is False:
                raise UnsupportedError(
                    f"np.asarray: converting {self._descriptor.dtype} to {np.dtype(dtype)} needs a copy"
                )
            return view.astype(dtype)
        return view.copy() if copy else view

    def unpack(self) -> np.ndarray:
        """The stored values as a new C-order array, sub-byte types one per byte.

        Works for every packing; the result has the numpy or ml_dtypes type of
        the element (int4, float4_e2m1fn, ...). Quantized values stay codes.
        """
        d = self._descriptor
        if d.packing == "none":  # and every version-2 tensor: its plain node 0, or a refusal
            return np.array(self._stored_view("Tensor.unpack"), order="C", copy=True)
        if d.scheme == "ggml":
            raise UnsupportedError(f"Tensor.unpack: ggml {d.ggml_type} blocks: use Tensor.dequantize()")
        dt = _views.element_dtype(d.dtype, d.byte_order, "Tensor.unpack")
        codes = _views.codes(self, "Tensor.unpack")
        if d.packing == "padded":
            codes = codes.copy(order="C")  # a view of the stored bytes: copy it
        return codes.view(dt)

    # ---- installed by hurray._wiring ------------------------------------
    # The layers above this one import it, so it cannot import them: when the
    # package is imported, hurray/_wiring.py sets these on the class, in this
    # order, from the modules named:
    #   dequantize                     hurray.quant.dequantizers.dequantize
    #   to_ggml, to_gguf (old name)    hurray.quant.ggml.to_ggml
    #   __hurray__                     hurray.bridges.protocol.to_capsule, in C (hurray._core)
    #   __dlpack__, __dlpack_device__  hurray.bridges.dlpack, in C (hurray._core)
    #   __reduce_ex__                  hurray.bridges.pickling, in C (hurray._pickle)
    #   __copy__, __deepcopy__         hurray.bridges.pickling.copy_tensor, .deepcopy_tensor
    # and replaces __array__, buffer and stored_values above with their C halves
    # (hurray._core), which hand every case they do not serve to these.
    if TYPE_CHECKING:
        def dequantize(self, dtype: Any = "float32") -> np.ndarray:
            """The real values as a new array: float32, or float16 or bfloat16 (in C, ADR-055)."""

        def to_ggml(self) -> np.ndarray:
            """The GGML block bytes of a scheme-"ggml" tensor."""

        def to_gguf(self) -> np.ndarray:
            """to_ggml's old name."""

        def __hurray__(self, *, max_version: Any = None) -> Any:
            """A "hurray_tensor" capsule sharing this tensor's memory (its context of C ABI <= max_version)."""

        def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
            """A DLPack capsule sharing this tensor's memory, where DLPack can hold it."""

        def __dlpack_device__(self) -> tuple[int, int]:
            """(kDLCPU, 0): Hurray tensors live in host memory."""

        def __reduce_ex__(self, protocol: Any) -> Any:
            """Protocol 5: the buffers out-of-band, zero-copy; protocol 4 and below: in-band."""

        def __copy__(self) -> Tensor:
            """A writable tensor over new copies of the buffers, like ndarray.__copy__."""

        def __deepcopy__(self, memo: Any) -> Tensor:
            """As __copy__: the descriptor is immutable and the buffers are copied."""
