"""What the framework bridges share for version-2 graphs (ADR-061).

A bridge states a library's tensor with a builder of
hurray.quant.library_graphs and puts it over the library's own memory
(``over``); going back, it recognises a tensor by rebuilding the layouts it
knows and comparing encodings (``recognise``: a descriptor is taken for a
library's kind only when it is, byte for byte, the descriptor the bridge
itself would make), then reads each buffer's bytes (``buffer_bytes``).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Optional

import numpy as np

from ..core.descriptor import Descriptor
from ..core.tensor import Tensor
from ..errors import HurrayError, UnsupportedError
from ..quant.library_graphs import Layout

__all__ = ["buffer_bytes", "over", "recognise"]


def descriptor_of(layout: Layout) -> Descriptor:
    return Descriptor.graph(layout.shape, layout.root, result_dtype=layout.result_dtype)


def over(layout: Layout, spans: Sequence[tuple[int, int]], owners: Sequence[Any]) -> Tensor:
    """A Tensor of ``layout`` over ``spans`` (buffer i at spans[i]), kept alive by ``owners``."""
    return Tensor(descriptor_of(layout), spans, owner=tuple(owners))


def recognise(desc: Descriptor, candidates: Iterable[tuple[Any, Layout]]) -> Optional[Any]:
    """The key of the first candidate layout whose descriptor is ``desc``, byte for byte; None if none is."""
    if desc.scheme != "graph":
        return None
    encoded = desc.encode()
    for key, layout in candidates:
        try:
            if descriptor_of(layout).encode() == encoded:
                return key
        except HurrayError:  # a candidate the builder refuses (a shape it cannot hold) is simply not it
            continue
    return None


def buffer_bytes(tensor: Tensor, index: int, nbytes: int, what: str) -> np.ndarray:
    """The first ``nbytes`` of buffer ``index`` as a numpy uint8 view (no copy), read-only if the tensor is."""
    address, size = tensor.buffers[index]
    if nbytes > size:
        raise UnsupportedError(f"{what}: buffer {index} holds {size} bytes, fewer than the {nbytes} its layout reads")
    raw = Tensor(Descriptor.build("uint8", (size,)), [(address, size)], owner=tensor, readonly=tensor.readonly)
    return np.asarray(raw)[:nbytes]
