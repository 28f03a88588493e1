"""What to call an object Hurray cannot take, and what to call instead.

The bridges' refusals name an object's type by its module (``torch.Tensor``,
not ``Tensor``, which could be Hurray's own) and say which function takes
it. Nothing here imports a framework: a type is recognised by the modules of
its classes, so a refusal costs no import.
"""
from __future__ import annotations

from typing import Any

__all__ = ["dtype_leaf", "from_package", "qualified_name", "suggestion"]

# Top-level package -> the public module its types are spelled under, where
# the defining module is private (torch.Tensor is defined in torch._tensor).
_PUBLIC = {"builtins": ""}


def qualified_name(obj: Any) -> str:
    """``module.Class`` of ``type(obj)``, its public spelling: ``torch.Tensor``, ``numpy.ndarray``."""
    kind = type(obj)
    module = getattr(kind, "__module__", None) or ""
    name = getattr(kind, "__qualname__", kind.__name__)
    top = module.split(".", 1)[0]
    if top in _PUBLIC:
        module = _PUBLIC[top]
    else:
        # Drop private components (torch._tensor -> torch, numpy._core -> numpy).
        parts = module.split(".")
        while len(parts) > 1 and parts[-1].startswith("_"):
            parts.pop()
        module = ".".join(parts)
    return f"{module}.{name}" if module else name


def _families(obj: Any) -> set[str]:
    """The top-level packages of the classes ``type(obj)`` derives from."""
    return {(getattr(k, "__module__", None) or "").split(".", 1)[0] for k in type(obj).__mro__}


def suggestion(obj: Any) -> str:
    """What to call for ``obj`` instead, as a sentence ending in a period; "" when Hurray knows no route."""
    families = _families(obj)
    if families & {"torch", "torchao", "bitsandbytes"}:
        return ("A torch tensor (plain, legacy-quantized, torchao or bitsandbytes) comes in with "
                "hurray.from_torch(obj), which keeps its quantization.")
    if "mlx" in families:
        return ("An MLX array comes in with hurray.from_dlpack(array) (plain) or, for what "
                "mx.quantize returned, hurray.from_mlx(w, scales, biases, group_size=..., bits=..., mode=...).")
    if "numpy" in families:
        return "A numpy array comes in with hurray.from_numpy(array)."
    if hasattr(obj, "__hurray__"):
        return "It has __hurray__: pass it to hurray.from_hurray(obj)."
    if hasattr(obj, "__dlpack__"):
        return "It has __dlpack__: pass it to hurray.from_dlpack(obj)."
    if hasattr(obj, "__array_interface__") or hasattr(obj, "__array__"):
        return "It converts to numpy: pass hurray.from_numpy(np.asarray(obj))."
    return ""


def refusal(obj: Any, what: str) -> str:
    """``"<qualified name> <what>"``, then the suggestion, if any."""
    hint = suggestion(obj)
    return f"{qualified_name(obj)} {what}" + (f". {hint}" if hint else "")


def is_quantized_torch(obj: Any) -> bool:
    """A torch tensor of a legacy quantized dtype (qint8, quint8, qint32, quint4x2, quint2x4)."""
    if "torch" not in _families(obj):
        return False
    try:
        return bool(getattr(obj, "is_quantized", False))
    except Exception:
        return False


def from_package(obj: Any, package: str) -> bool:
    """``type(obj)`` is defined in ``package`` (its top-level module): no import needed to tell."""
    return (getattr(type(obj), "__module__", "") or "").split(".", 1)[0] == package


def dtype_leaf(dtype: Any) -> str:
    """A framework dtype's last name: ``torch.float8_e4m3fn`` and ``mlx.core.bfloat16`` give the Hurray spelling."""
    return str(dtype).rsplit(".", 1)[-1]
