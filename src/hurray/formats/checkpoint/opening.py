"""load_checkpoint: a checkpoint opened by what its path names -- a directory
(config, shards and index), a .safetensors file with the config beside it,
or an .onnx, .gguf or .hurray file, each by its own reader."""
from __future__ import annotations

import errno
import os

from ...errors import InvalidArgumentError, io_error
from ...io._path import fs_path
from ...io._tensor_map import FileMapping
from .onnx import load_onnx
from .reader import assemble, read_config
from .sources import open_sources, single

__all__ = ["load_checkpoint"]


def load_checkpoint(path: str | os.PathLike[str]) -> FileMapping:
    """Open the checkpoint at `path` (a directory or a .safetensors, .onnx, .gguf or .hurray file).

    Returns a read-only Mapping of names to Tensors: one quantized Tensor per
    quantized weight, named as the unquantized model names it, of torch's
    shape [out_features, in_features], over the stored bytes where they lie.
    A missing path is a HurrayFileNotFoundError, a FileNotFoundError.
    """
    _, where = fs_path(path, "load_checkpoint")  # the path policy every reader shares (ADR-056)
    if not os.path.exists(where):  # the errno's HurrayIOError: a HurrayFileNotFoundError is a FileNotFoundError
        raise io_error(f"load_checkpoint: no such file or directory: {where!r}", errno.ENOENT, where)
    if os.path.isdir(where):
        config = read_config(where)
        sources = open_sources(where)
        try:
            return assemble(where, sources, config)
        except BaseException:
            sources.close()
            raise
    ext = os.path.splitext(where)[1].lower()
    if ext == ".onnx":
        return load_onnx(where)
    if ext == ".gguf":
        from ..gguf_file import load_gguf

        return load_gguf(where)
    if ext == ".hurray":
        from ...io import load

        return load(where)
    if ext != ".safetensors":
        raise InvalidArgumentError(f"load_checkpoint: {where!r} is not a directory or a .safetensors, .onnx, "
                                   ".gguf or .hurray file")
    config = read_config(os.path.dirname(os.path.abspath(where)))
    sources = single(where)
    try:
        return assemble(where, sources, config)
    except BaseException:
        sources.close()
        raise
