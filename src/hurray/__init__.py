"""Hurray: full-fidelity tensor interchange over the hurray-ffi C ABI."""
from importlib.metadata import PackageNotFoundError, version as _version

from ._ffi import lib as _lib
from ._paths import get_include, get_library
from .errors import HurrayError

C_ABI_VERSION = _lib.HURRAY_C_ABI_VERSION

if _lib.hurray_c_abi_version() != C_ABI_VERSION:
    raise ImportError(
        f"hurray was built against C ABI {C_ABI_VERSION} but loaded libhurray "
        f"with C ABI {_lib.hurray_c_abi_version()}"
    )

try:
    __version__ = _version("hurray")
except PackageNotFoundError:  # running from a source tree without metadata
    __version__ = "0+unknown"

__all__ = ["C_ABI_VERSION", "HurrayError", "get_include", "get_library", "__version__"]

# Descriptor, Tensor and the numpy bridge (layers 1-4 and 6).
from .descriptor import Descriptor, Part  # noqa: E402
from .dtypes import DTYPES, dtype_code, dtype_name, numpy_dtype  # noqa: E402
from .numpy_bridge import from_numpy  # noqa: E402
from .tensor import Tensor  # noqa: E402

__all__ += ["DTYPES", "Descriptor", "Part", "Tensor", "dtype_code", "dtype_name", "from_numpy", "numpy_dtype"]

# DLPack (layer 6): Tensor.__dlpack__ exports, from_dlpack imports, where DLPack can hold the tensor.
from .dlpack import DLPackError, from_dlpack  # noqa: E402

__all__ += ["DLPackError", "from_dlpack"]

# The native protocol (layer 6): Tensor.__hurray__ exports, from_hurray imports.
from .protocol import from_hurray  # noqa: E402

__all__ += ["from_hurray"]

# Quantization (layer 3): GGUF blocks and simple quantizers; Tensor.dequantize() decodes every scheme.
from .gguf import from_gguf, to_gguf  # noqa: E402
from .quantize import quantize_affine, quantize_mx, quantize_nvfp4  # noqa: E402

__all__ += ["from_gguf", "quantize_affine", "quantize_mx", "quantize_nvfp4", "to_gguf"]

# Model files: GGUF and safetensors read zero-copy, and written (ADR-041).
from .gguf_file import GGUFFile, load_gguf  # noqa: E402
from .gguf_write import save_gguf  # noqa: E402
from .safetensors_file import SafetensorsFile, load_safetensors, save_safetensors  # noqa: E402

__all__ += ["GGUFFile", "SafetensorsFile", "load_gguf", "load_safetensors", "save_gguf", "save_safetensors"]

# Files and streams (layer 5): save/load named tensors, frames on pipes and sockets.
from .io import File, load, read_frame, save, write_frame  # noqa: E402

__all__ += ["File", "load", "read_frame", "save", "write_frame"]

# Conversion between .gguf, .safetensors and .hurray files (hurray.convert is the function;
# its module stays importable as hurray.convert through sys.modules).
from .convert import convert  # noqa: E402

__all__ += ["convert"]

# Dask distributed: a Tensor gets a serializer of distributed's own, sending its buffers as frames
# through the scheduler too, registered when distributed is loaded, never importing it (ADR-049).
from ._dask import watch_for_dask as _watch_for_dask  # noqa: E402

_watch_for_dask()
