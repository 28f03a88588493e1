"""save_checkpoint: tensors written back as a library's checkpoint (ADR-063).

Each quantized tensor goes to the chosen convention's writer, which states
it only when its graph is exactly the one that convention's reader makes
(the reader's own node functions are the one source of both): its buffers
then are the convention's stored tensors, written as they lie, nothing
repacked or rounded. A tensor it cannot state is refused by name before
anything is written. Plain tensors are written as they are, when
safetensors can hold them. The result is a directory: config.json (the
``config`` given, with the convention's quantization config), one
model.safetensors and, for mlx-lm, the index it always writes.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Any, Optional

from ...errors import InvalidArgumentError, UnsupportedError
from ...io._pairs import as_tensor
from .._atomic import replace_atomically
from ..safetensors_file import save_safetensors
from . import awq, bitsandbytes, compressed_tensors, fp8_block, gptq, mlx
from ._claims import Stated
from .sources import CONFIG, INDEX

__all__ = ["FORMATS", "save_checkpoint"]

# format name -> (state(name, tensor), config(params), per-module config, safetensors metadata format)
_Writer = tuple[Callable[[str, Any], Stated], Callable[[Any], dict[str, Any]], bool, str]
_WRITERS: dict[str, _Writer] = {
    "compressed-tensors": (compressed_tensors.state, compressed_tensors.config, True, "pt"),
    "gptq": (gptq.state, gptq.config, False, "pt"),
    "awq": (awq.state, awq.config, False, "pt"),
    "fp8": (fp8_block.state, fp8_block.config, False, "pt"),
    "bitsandbytes": (bitsandbytes.state, bitsandbytes.config, False, "pt"),
    "mlx": (mlx.state, mlx.config, True, "mlx"),
}
FORMATS = tuple(_WRITERS)
_ALIASES = {"ct": "compressed-tensors", "bnb": "bitsandbytes", "mlx-lm": "mlx", "deepseek-fp8": "fp8"}


def _plain(name: str, value: Any, fmt: str) -> Any:
    from ..safetensors_file import _direct

    tensor = as_tensor(value, f"save_checkpoint: tensor {name!r}")
    if tensor.descriptor.scheme != "none" or _direct(tensor) is None:
        raise UnsupportedError(f"save_checkpoint: tensor {name!r}: {fmt} cannot state it: it is neither one of the "
                               f"convention's quantized weights nor a plain array safetensors holds "
                               f"({tensor.descriptor.scheme} {tensor.descriptor.dtype})")
    return tensor


def save_checkpoint(tensors: Mapping[str, Any], path: str | os.PathLike[str], format: str, *,
                    config: Optional[Mapping[str, Any]] = None) -> None:
    """Write `tensors` as a `format` checkpoint in the directory `path` (made if missing).

    `format` is one of FORMATS ("compressed-tensors", "gptq", "awq", "fp8",
    "bitsandbytes", "mlx"). `config` is the model's config.json (for
    example ``load_checkpoint(...).config``); its quantization config is
    replaced by the one the written tensors need. A quantized tensor the
    convention cannot state exactly raises UnsupportedError naming it, and
    nothing is written.
    """
    if not hasattr(tensors, "items"):
        raise InvalidArgumentError(f"save_checkpoint: tensors must be a Mapping, not {type(tensors).__name__}")
    fmt = _ALIASES.get(format, format)
    if fmt not in _WRITERS:
        raise InvalidArgumentError(f"save_checkpoint: format {format!r} is not one of {', '.join(FORMATS)}")
    state, make_config, per_module, meta = _WRITERS[fmt]
    entries: dict[str, Any] = {}
    params: dict[str, dict[str, Any]] = {}
    for name in tensors:
        value = tensors[name]
        tensor = as_tensor(value, f"save_checkpoint: tensor {name!r}")
        if tensor.descriptor.scheme == "none":
            entries[name] = _plain(name, tensor, fmt)
            continue
        stated = state(name, tensor)
        for key in stated.entries:
            if key in entries or key in tensors and key != name:
                raise InvalidArgumentError(f"save_checkpoint: tensor {name!r} is stored as {key!r}, a name "
                                           "another tensor has")
        entries.update(stated.entries)
        params[name[: -len(".weight")] if name.endswith(".weight") else name] = stated.params
    quant = (make_config(params) if per_module else make_config(list(params.values()))) if params else None
    directory = os.fspath(path)
    os.makedirs(directory, exist_ok=True)
    full = dict(config or {})
    for key in ("quantization_config", "quantization"):
        full.pop(key, None)
    if quant is not None:
        full["quantization_config"] = quant
        if fmt == "mlx":
            full["quantization"] = quant
    shard = "model.safetensors"
    save_safetensors(os.path.join(directory, shard), entries, metadata={"format": meta})
    if fmt == "mlx":
        index = {"metadata": {"total_size": sum(int(getattr(v, "nbytes", 0)) for v in entries.values())},
                 "weight_map": {k: shard for k in sorted(entries)}}
        _write_json(os.path.join(directory, INDEX), index)
    _write_json(os.path.join(directory, CONFIG), full)


def _write_json(path: str, value: Any) -> None:
    text = json.dumps(value, indent=2, sort_keys=True).encode("utf-8")
    replace_atomically(path, lambda out: out.write(text), "save_checkpoint")
