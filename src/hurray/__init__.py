"""Hurray: full-fidelity tensor interchange over the hurray-ffi C ABI.

This module is the face: it imports the public names from the folder of
their layer (core/, quant/, bridges/, io/, formats/; docs/index.md has the
table) and lists them in __all__, which is also all that dir(hurray) shows.
It installs nothing itself: _wiring.install() completes Tensor once, last.
hurray.errors, hurray.io, hurray.dtypes and hurray.nodes are modules of their own.
"""
from importlib import metadata as _metadata

from ._ffi import lib as _lib

C_ABI_VERSION = _lib.HURRAY_C_ABI_VERSION

if _lib.hurray_c_abi_version() != C_ABI_VERSION:
    raise ImportError(
        f"hurray was built against C ABI {C_ABI_VERSION} but loaded libhurray "
        f"with C ABI {_lib.hurray_c_abi_version()}"
    )

try:
    __version__ = _metadata.version("hurray")
except _metadata.PackageNotFoundError:  # running from a source tree without metadata
    __version__ = "0+unknown"

# The C library and its errors (layer 7).
from ._paths import get_include, get_library  # noqa: E402
from .errors import DLPackError, HurrayError  # noqa: E402

# Element types, descriptor and Tensor (layers 1-4: core/).
from .core.descriptor import Descriptor, Part  # noqa: E402
from .core.dtypes import DTYPES, dtype_code, dtype_name, numpy_dtype  # noqa: E402
from .core.tensor import Tensor  # noqa: E402

# Quantization (layer 3: quant/): GGML blocks and simple quantizers; Tensor.dequantize() decodes every scheme.
from .quant.ggml import from_ggml, from_gguf, to_ggml, to_gguf  # noqa: E402
from .quant.quantizers import quantize_affine, quantize_mx, quantize_nvfp4  # noqa: E402

# Python's bridges (layer 6: bridges/): numpy, DLPack, the native protocol.
from .bridges.dlpack import from_dlpack  # noqa: E402
from .bridges.numpy import from_numpy  # noqa: E402
from .bridges.protocol import from_hurray  # noqa: E402
from .bridges.mlx import from_mlx, to_mlx  # noqa: E402  (imports mlx only when called)
from .bridges.torch import from_torch, to_torch  # noqa: E402  (imports torch only when called)

# Files and streams (layer 5: io/): save/load named tensors, frames on pipes and sockets.
from .io import File, load, read_frame, save, write_frame  # noqa: E402

# Model files (formats/): GGUF and safetensors read zero-copy, and written (ADR-041); conversion between them.
from .formats.conversion import convert  # noqa: E402
from .formats.gguf_file import GGUFFile, load_gguf  # noqa: E402
from .formats.gguf_write import save_gguf  # noqa: E402
from .formats.safetensors_file import (  # noqa: E402
    SafetensorsFile, load_safetensors, load_safetensors_bytes, save_safetensors, save_safetensors_bytes)

# Checkpoints as their libraries write them (formats/checkpoint/, ADR-063): one quantized Tensor per weight.
from .formats.checkpoint import Checkpoint, load_checkpoint, save_checkpoint  # noqa: E402

# The modules the docs and every pickle name: hurray.errors, hurray.io, hurray.dtypes,
# hurray.packing, hurray.pickling (the last three re-export core/ and bridges/), and
# hurray.nodes, the nodes of a version-2 descriptor (core/nodes.py).
from . import dtypes, errors, io, nodes, packing, pickling  # noqa: E402,F401

# Last: the methods of other layers and the C fast paths, set on Tensor in one fixed order.
from . import _wiring  # noqa: E402

_wiring.install()

__all__ = [
    "C_ABI_VERSION",
    "Checkpoint",
    "DLPackError",
    "DTYPES",
    "Descriptor",
    "File",
    "GGUFFile",
    "HurrayError",
    "Part",
    "SafetensorsFile",
    "Tensor",
    "__version__",
    "convert",
    "dtype_code",
    "dtype_name",
    "from_dlpack",
    "from_ggml",
    "from_gguf",
    "from_hurray",
    "from_mlx",
    "from_numpy",
    "from_torch",
    "get_include",
    "get_library",
    "load",
    "load_checkpoint",
    "load_gguf",
    "load_safetensors",
    "load_safetensors_bytes",
    "numpy_dtype",
    "quantize_affine",
    "quantize_mx",
    "quantize_nvfp4",
    "read_frame",
    "save",
    "save_checkpoint",
    "save_gguf",
    "save_safetensors",
    "save_safetensors_bytes",
    "to_ggml",
    "to_gguf",
    "to_mlx",
    "to_torch",
    "write_frame",
]


def __dir__() -> list[str]:
    """The face: __all__ and the module's dunders, not the submodules and
    private names that importing leaves in its namespace."""
    return sorted({*__all__, *(name for name in globals() if name.startswith("__") and name.endswith("__"))})
