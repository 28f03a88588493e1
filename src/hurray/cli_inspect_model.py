"""`python -m hurray inspect` for GGUF and safetensors files: the metadata, then one line per tensor.

A tensor the reader refuses (a type Hurray has no descriptor for) gets a
line saying why, and makes the exit status 1; the other tensors are listed.
"""
import json

from .convert import open_model_file
from .errors import HurrayError

_LONG = 120


def _short(value):
    text = value if isinstance(value, str) else json.dumps(value)
    if isinstance(value, list) and len(text) > _LONG:
        return f"[{len(value)} items]"
    return text if len(text) <= _LONG else text[:_LONG - 3] + "..."


def _kind(desc):
    if desc.scheme == "ggml":
        return f"ggml {desc.ggml_type}"
    if desc.scheme != "none":
        return f"{desc.scheme} {desc.granularity} {desc.dtype}"
    packed = "" if desc.packing == "none" else f" ({desc.packing})"
    return f"{desc.dtype}{packed}"


def inspect_model_file(path, out):
    """Write the description of `path` to `out`; return the exit status (0, or 1 if a tensor was refused)."""
    status = 0
    with open_model_file(path) as f:
        out.write(f"{path}: {len(f)} tensors\n")
        for key, value in f.metadata.items():
            out.write(f"  {key} = {_short(value)}\n")
        for name in f:
            try:
                tensor = f[name]
            except HurrayError as exc:
                out.write(f"  {name}: refused: {exc}\n")
                status = 1
                continue
            nbytes = sum(n for _, n in tensor.buffers)
            out.write(f"  {name}: {_kind(tensor.descriptor)} {list(tensor.shape)}, {nbytes} bytes\n")
    return status
