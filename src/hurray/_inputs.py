"""What the writers accept as a tensor: a Tensor, a numpy array, or a producer of either protocol.

hurray.save, write_frame, save_safetensors and save_gguf all take their
tensors through :func:`as_tensor`, so they accept and refuse alike.
"""
from typing import Any

import numpy as np

from .errors import InvalidArgumentError
from .tensor import Tensor

__all__ = ["as_tensor"]


def as_tensor(value: Any, what: str) -> Tensor:
    """`value` as a Tensor, zero-copy: a Tensor itself, a numpy array, or anything
    hurray.from_hurray or hurray.from_dlpack takes (a torch tensor, say).
    `what` names the value in the refusal of anything else."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        from .numpy_bridge import from_numpy

        return from_numpy(value)
    if hasattr(value, "__hurray__"):
        from .protocol import from_hurray

        return from_hurray(value)
    if hasattr(value, "__dlpack__"):
        from .dlpack import from_dlpack

        return from_dlpack(value)
    raise InvalidArgumentError(
        f"{what} is a {type(value).__name__}: expected a hurray.Tensor, a numpy array, "
        f"or an object with __hurray__ or __dlpack__"
    )
