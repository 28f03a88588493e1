"""Checks the checkpoint tests share: a weight is one quantized Tensor inside
its file's map, and its values are the library's own, bit for bit."""
from __future__ import annotations

from typing import Any

import numpy as np

from hurray.formats.checkpoint._graph import dequantize

_BITS = {"float32": np.uint32, "float16": np.uint16, "bfloat16": np.uint16}


def torch_bits(reference: Any) -> tuple[np.ndarray, str]:
    """(bit patterns, dtype name) of a torch tensor."""
    import torch

    name = str(reference.dtype).split(".")[-1]
    view = {"float32": torch.int32, "float16": torch.int16, "bfloat16": torch.int16}[name]
    return reference.contiguous().view(view).numpy().view(_BITS[name]), name


def same_values(tensor: Any, bits: np.ndarray, dtype: str) -> None:
    """The tensor dequantized to `dtype` by the C dequantizer equals `bits` bit for bit."""
    out = dequantize(tensor, dtype)
    assert out.shape == bits.shape, (out.shape, bits.shape)
    mine = out.view(_BITS[dtype])
    differ = int((mine != bits).sum())
    assert differ == 0, f"{differ} of {bits.size} elements differ in their bits"


def inside_map(checkpoint: Any, tensor: Any) -> None:
    """Every buffer of `tensor` lies inside one of the checkpoint's memory maps (nothing was copied)."""
    ranges = []
    for f in checkpoint._sources._files:
        view = np.frombuffer(f._map, np.uint8)
        start = view.__array_interface__["data"][0]
        ranges.append((start, start + view.size))
    for address, nbytes in tensor.buffers:
        assert any(lo <= address and address + nbytes <= hi for lo, hi in ranges), \
            f"buffer at {address:#x} ({nbytes} bytes) is not inside the file's map"


def one_weight(checkpoint: Any, name: str, shape: tuple[int, ...]) -> Any:
    t = checkpoint[name]
    assert t.descriptor.scheme == "graph" and tuple(t.shape) == shape
    inside_map(checkpoint, t)
    for part in checkpoint.parts(name):
        assert part == name or part not in checkpoint, f"{part} is still listed beside {name}"
    return t
