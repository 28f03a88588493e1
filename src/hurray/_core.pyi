# Types of hurray._core (src/hurray/_ext/_core.c), the hot path in C (ADR-046).
from typing import Any, Callable, Iterable

import numpy as np

from .core.descriptor import Descriptor
from .core.tensor import Tensor

class ViewBase:
    tensor: Tensor

def from_numpy(array: np.ndarray | np.generic, /) -> Tensor: ...
def from_hurray(obj: Any, /) -> Tensor: ...
def decode(data: bytes, /) -> Descriptor | None: ...

# The one cache of decoded descriptors, by their bytes.
descriptors: dict[bytes, Descriptor]
DESCRIPTOR_CACHE_SIZE: int

def kept(data: bytes, /) -> Descriptor | None: ...
def keep(descriptor: Descriptor, /) -> Descriptor: ...
def pair(tensor: Tensor, /) -> tuple[int, int] | None: ...
def tensor_from_spans(
    descriptor: Descriptor, spans: tuple[tuple[int, int], ...], owner: Any, readonly: bool, /
) -> Tensor: ...
def safetensors_entries(
    header: dict[str, Any], data_start: int, bits: dict[str, int], /
) -> tuple[dict[str, tuple[str, tuple[int, ...], int, int]], int] | None: ...
def companions(names: Iterable[str], suffixes: dict[str, int], /) -> dict[str, list[str | None]]: ...
def add_nodes(address: int, nodes: list[Any], tables: tuple[Any, ...], /) -> bool: ...
def dequantize_rows(
    address: int, spans: tuple[tuple[int, int], ...], out_dtype: int, first: int, count: int, out: Any, /
) -> bool: ...
def anchored_claims(
    found: dict[str, list[str | None]], claim_type: type, convention: str, bind: Any, build: Any, stored: Any, /
) -> dict[str, Any]: ...
def safetensors_header(
    text: bytes, data_start: int, bits: dict[str, int], /
) -> tuple[dict[str, str], dict[str, tuple[str, tuple[int, ...], int, int]], int] | None: ...
def setup(
    tensor: type,
    descriptor: type,
    numpy_codes: dict[Any, Any],
    numpy_dtypes: dict[int, Any],
    from_numpy: Callable[..., Any],
    array: Callable[..., Any],
    /,
) -> Callable[..., Any]: ...
def setup_protocol(
    from_hurray: Callable[..., Any], refuse: Callable[..., Any], to_capsule: Callable[..., Any], /,
) -> Callable[..., Any]: ...
def setup_dlpack(
    dlpack: Callable[..., Any], export: Callable[..., Any], plans: dict[bytes, Any],
    cpu_device: tuple[int, int], /,
) -> tuple[Callable[..., Any], Callable[..., Any]]: ...
def setup_memory(
    buffer: Callable[..., Any], stored_values: Callable[..., Any], check_spans: Callable[..., Any], /
) -> tuple[Callable[..., Any], Callable[..., Any]]: ...
