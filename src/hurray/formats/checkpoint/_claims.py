"""What a convention hands the checkpoint: one Claim per quantized weight.

A Claim names the weight as the unquantized model names it
(``<module>.weight``), the stored tensors it consumes, and how to make it:
make(sources) returns a Built (the version-2 descriptor, the zero-copy
views of the stored tensors that are its buffers, and the scheme in words)
or raises a HurrayError that names the tensor. Conventions call the
checks below, so that every refusal reads the same way.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Optional

import numpy as np

from ...core.descriptor import Descriptor
from ...errors import CorruptError, UnsupportedError
from .sources import Entry, Sources

__all__ = ["Built", "Claim", "contradiction", "expect", "refusal", "row_major", "small", "SHORT"]

# Short names of arithmetic and scale dtypes, for the words inspect shows.
SHORT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
         "float8_e4m3fn": "e4m3", "float8_e8m0fnu": "e8m0", "uint8": "u8", "int8": "int8"}


class Built(NamedTuple):
    descriptor: Descriptor
    arrays: tuple[np.ndarray, ...]
    words: str


class Claim(NamedTuple):  # a tuple: a checkpoint of thousands of weights makes one each on opening
    name: str
    convention: str
    parts: tuple[str, ...]
    make: Callable[[Sources], Built]


def refusal(name: str, reason: str) -> UnsupportedError:
    """A convention this build will not guess at (ambiguous, unknown version, left out)."""
    return UnsupportedError(f"load_checkpoint: tensor {name!r}: {reason}")


def contradiction(name: str, reason: str) -> CorruptError:
    """The config and the stored tensors disagree, or a companion is missing or malformed."""
    return CorruptError(f"load_checkpoint: tensor {name!r}: {reason}")


def expect(sources: Sources, name: str, entry: str, dtypes: Sequence[str],
           shape: Optional[Sequence[Optional[int]]] = None, role: str = "") -> Entry:
    """The entry `entry` of weight `name`, of one of `dtypes` and of `shape` (None matches any extent)."""
    what = f"its {role or 'companion'} {entry!r}"
    if entry not in sources:
        raise contradiction(name, f"{what} is missing from the checkpoint")
    found = sources.entry(entry)
    if found.dtype not in dtypes:
        raise contradiction(name, f"{what} is {found.stored}, not {' or '.join(dtypes)}")
    if shape is not None:
        ok = len(found.shape) == len(shape) and all(w is None or w == g for w, g in zip(shape, found.shape))
        if not ok:
            want = "[" + ", ".join("*" if w is None else str(w) for w in shape) + "]"
            raise contradiction(name, f"{what} has shape {list(found.shape)}; the config and the other "
                                      f"tensors make it {want}")
    return found


def small(sources: Sources, entry: str, dtype: Any) -> np.ndarray:
    """A companion's values as a typed read-only view (for the few values a reader must see)."""
    return sources.data(entry).view(np.dtype(dtype).newbyteorder("<")).reshape(sources.entry(entry).shape)


def row_major(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides (in elements or containers) of `shape`."""
    return tuple(math.prod(shape[k + 1:]) for k in range(len(shape)))


def config_int(name: str, config: dict[str, Any], key: str, where: str, default: Any = None) -> int:
    """An integer field of a quantization config, or a refusal naming it."""
    value = config.get(key, default)
    if type(value) is not int:
        raise refusal(name, f"{where} {key!r} is {value!r}, not an integer")
    return value


class Stated(NamedTuple):
    """What a writer makes of one weight: its stored tensors by name, and what the config must say of it."""

    entries: dict[str, np.ndarray]
    params: dict[str, Any]


def unstatable(name: str, convention: str, reason: str) -> UnsupportedError:
    """A tensor the chosen convention cannot state (it is never rounded to fit)."""
    return UnsupportedError(f"save_checkpoint: tensor {name!r}: {convention} cannot state it: {reason}")


def module_of(name: str, convention: str) -> str:
    if not name.endswith(".weight"):
        raise unstatable(name, convention, "a quantized weight's name must end in '.weight' (its module's weight)")
    return name[: -len(".weight")]


def stored_as(tensor: Any, index: int, dtype: Any, shape: Sequence[int]) -> np.ndarray:
    """Buffer `index` of `tensor` as a read-only array of `dtype` and `shape` (zero-copy)."""
    dt = np.dtype(dtype)
    need = math.prod(shape) * dt.itemsize
    raw = tensor.buffer(index)
    if raw.size < need:  # pragma: no cover - the descriptor proved the buffers hold what it reaches
        raise CorruptError(f"buffer {index} holds {raw.size} bytes, fewer than the {need} it must")
    return raw[:need].view(dt).reshape(tuple(shape))
