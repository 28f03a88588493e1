# Types of hurray._pickle (src/hurray/_ext/_pickle.c): pickling a Tensor in C (ADR-043, ADR-049).
from typing import Any, Callable

from .core.tensor import Tensor

class Span:
    """One buffer of a Tensor, exported for pickle (keeps the tensor alive)."""

def unpickle_tensor(
    versions: Any, encoded: Any, readonly: Any, nbytes: Any, buffers: Any, inband_copy: Any = ..., /
) -> Tensor: ...
def setup(
    tensor: type,
    versions: tuple[int, int],
    decode: Callable[..., Any],
    decode_py: Callable[..., Any],
    tensor_from_spans: Callable[..., Any],
    refuse_versions: Callable[..., Any],
    corrupt_error: type,
    /,
) -> Callable[..., Any]: ...
