"""What the model-file writers accept as a tensor: a Tensor, a numpy array, or a producer of either protocol."""
import numpy as np

from .errors import InvalidArgumentError
from .numpy_bridge import from_numpy
from .tensor import Tensor

__all__ = ["as_tensor"]


def as_tensor(value, name, who):
    """`value` as a Tensor, zero-copy; `who` and `name` go into the refusal of anything else."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        return from_numpy(value)
    if hasattr(value, "__hurray__"):
        from .protocol import from_hurray
        return from_hurray(value)
    if hasattr(value, "__dlpack__"):
        from .dlpack import from_dlpack
        return from_dlpack(value)
    raise InvalidArgumentError(f"{who}: tensor {name!r} is a {type(value).__name__}, "
                               "not a hurray.Tensor, numpy array or DLPack producer")
