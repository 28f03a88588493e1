"""The frameworks' packages, imported only when their bridge is called.

``import hurray`` imports none of torch, torchao, bitsandbytes or mlx (a
test holds it to that); each bridge asks for its package here, and a missing
one is an error that names what to install.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import MissingPackageError

__all__ = ["MissingPackageError", "require"]


def require(module: str, install: str, bridge: str) -> ModuleType:
    """``import module``, or MissingPackageError naming ``pip install <install>``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingPackageError(
            f"{bridge} needs {module.split('.')[0]}, which is not installed: pip install {install}"
        ) from exc
