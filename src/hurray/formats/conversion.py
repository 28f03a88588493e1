"""convert: between .gguf, .safetensors and .hurray files, judged by extension, and
from checkpoint directories and .onnx models to them or (with ``format``) to a
library's checkpoint convention (ADR-063).

Every tensor crosses exactly (ADR-041 says how safetensors holds what it has
no dtype for); a tensor the target cannot hold (GGUF has no affine, MX or
NVFP4 tensors, no strides, ...) or the source cannot give (a GGUF type
Hurray has no descriptor for) is refused by name before the target is
touched. Metadata values that are not strings become JSON text in
safetensors and .hurray files, whose metadata maps strings to strings.

With `dtype` ("float32", "float16" or "bfloat16"), every quantized tensor
(any scheme but none) is dequantized by the library (ADR-055) into a plain
tensor of that type first, and the plain ones cross as they are. The
dequantized tensors are held in memory until the target is written.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Optional

from ..bridges.numpy import from_numpy
from ..core.tensor import Tensor
from ..io._path import fs_path
from ..errors import InvalidArgumentError
from ..quant.dequantizers import OUTPUT_DTYPES
from ..io import load, save
from ..io._tensor_map import FileMapping
from .gguf_file import load_gguf
from .gguf_write import save_gguf
from .safetensors_file import load_safetensors, save_safetensors

_Path = str | os.PathLike[str]
_Progress = Optional[Callable[[int, int], object]]

__all__ = ["FORMATS", "convert", "format_of", "open_model_file"]

FORMATS = (".gguf", ".safetensors", ".hurray")


def format_of(path: _Path) -> str:
    """".gguf", ".safetensors" or ".hurray", from the path's extension (after the path policy's checks)."""
    _, shown = fs_path(path, "convert")
    ext = os.path.splitext(shown)[1].lower()
    if ext not in FORMATS:
        raise InvalidArgumentError(f"{shown!r}: the extension {ext or '(none)'!r} is not one of "
                                   f"{', '.join(FORMATS)}")
    return ext


def open_model_file(path: _Path) -> FileMapping:
    """The file at `path` as a read-only Mapping of Tensors with `.metadata`, by extension."""
    ext = format_of(path)
    if ext == ".gguf":
        return load_gguf(path)
    if ext == ".safetensors":
        return load_safetensors(path)
    return load(path)


class _Counted(Mapping[str, Tensor]):
    """The source's tensors, reporting (bytes handed over, bytes in all) as a writer takes them."""

    def __init__(self, tensors: Mapping[str, Tensor], progress: _Progress) -> None:
        self._tensors = tensors
        self._progress = progress
        self._done = 0
        self._total = sum(n for t in tensors.values() for _, n in t.buffers)

    def __getitem__(self, name: str) -> Tensor:
        tensor = self._tensors[name]
        if self._progress is not None:
            self._done += sum(n for _, n in tensor.buffers)
            self._progress(min(self._done, self._total), self._total)
        return tensor

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)


def _string_metadata(metadata: Mapping[str, Any]) -> dict[str, str]:
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in metadata.items()}


def _tensors(source: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """Every tensor of the source, so that a tensor it cannot give is refused before writing starts."""
    return {name: source[name] for name in source}


def _dequantized(tensors: dict[str, Tensor], dtype: str) -> dict[str, Tensor]:
    """Every quantized tensor as a plain one of `dtype`, the plain ones as they are."""
    if dtype not in OUTPUT_DTYPES:
        raise InvalidArgumentError(f"convert: dtype must be one of {', '.join(OUTPUT_DTYPES)}, not {dtype!r}")
    return {name: from_numpy(tensor.dequantize(dtype)) if tensor.descriptor.scheme != "none" else tensor
            for name, tensor in tensors.items()}


def _open_source(path: _Path) -> FileMapping:
    """A model file by its extension, or a checkpoint (a directory, an .onnx file) through load_checkpoint."""
    _, shown = fs_path(path, "convert")  # the path policy first: no NUL, a path at all
    if os.path.isdir(shown) or shown.lower().endswith(".onnx"):
        from .checkpoint import load_checkpoint

        return load_checkpoint(path)
    return open_model_file(path)


def convert(source_path: _Path, target_path: _Path, *, dtype: Optional[str] = None,
            progress: _Progress = None, format: Optional[str] = None) -> None:
    """Convert `source_path` into `target_path`; the formats come from the extensions.

    The source may also be a checkpoint directory or an .onnx model (read by
    load_checkpoint, ADR-063). With `format` (one of
    hurray.formats.checkpoint.FORMATS) the target is a checkpoint directory
    in that library's convention, written by save_checkpoint: lossless only,
    a tensor it cannot state is refused by name; `dtype` cannot go with it.
    `dtype` ("float32", "float16" or "bfloat16"), if given, dequantizes every
    quantized tensor into a plain one of that type. `progress`, if given, is
    called with (bytes done, bytes in all).
    """
    if format is not None:
        if dtype is not None:
            raise InvalidArgumentError("convert: --format writes a library's quantized convention; "
                                       "it cannot go with --dtype, which dequantizes")
        from .checkpoint import save_checkpoint

        with _open_source(source_path) as source:
            tensors = _tensors(source)
            config = getattr(source, "config", None)
            save_checkpoint(tensors, target_path, format, config=config)
            if progress is not None:
                total = sum(n for t in tensors.values() for _, n in t.buffers)
                progress(total, total)
        return
    target = format_of(target_path)
    with _open_source(source_path) as source:
        tensors = _tensors(source)
        if dtype is not None:
            tensors = _dequantized(tensors, dtype)
        metadata = source.metadata
        if target == ".gguf":
            types = getattr(source, "metadata_types", None)
            save_gguf(target_path, tensors, metadata=metadata, types=types, progress=progress)
        elif target == ".safetensors":
            save_safetensors(target_path, tensors, metadata=_string_metadata(metadata), progress=progress)
        else:
            save(target_path, _Counted(tensors, progress), metadata=_string_metadata(metadata))
