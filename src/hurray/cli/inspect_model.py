"""``python -m hurray inspect`` for GGUF, safetensors and ONNX files and checkpoint
directories, in inspect's own line format.

safetensors and ONNX files and directories open through load_checkpoint
(ADR-063): a quantized weight's quantization column is its scheme in words,
e.g. ``int4 affine, groups of 128, act-order, fp16 scales (GPTQ v1)``. A
tensor the reader refuses (a ggml type Hurray has no descriptor for, a
convention it will not guess at) gets a line saying why and makes the exit
status 1; the others are listed.
"""
import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from ..formats.conversion import open_model_file
from ..errors import HurrayError
from ..core.tensor import Tensor

MODEL_EXTENSIONS = (".gguf", ".safetensors", ".onnx")
_LONG = 120


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    if isinstance(value, list) and len(text) > _LONG:
        return f"[{len(value)} items]"
    return text if len(text) <= _LONG else text[:_LONG - 3] + "..."


def run(args: argparse.Namespace, header: str, describe: Callable[[str, Tensor], str]) -> int:
    from ..formats.checkpoint import load_checkpoint
    from ..formats.checkpoint.reader import Checkpoint

    status = 0
    opener = open_model_file if args.file.lower().endswith(".gguf") else load_checkpoint
    try:
        with opener(args.file) as f:
            for key, value in sorted(f.metadata.items()):
                print(f"# {key} = {_short(value)}")
            print(header)
            for name in f:
                try:
                    tensor = f[name]
                except HurrayError as exc:
                    print(f"{name}\trefused: {exc}")
                    status = 1
                    continue
                line = describe(name, tensor)
                if isinstance(f, Checkpoint) and f.convention(name) != "plain":
                    fields = line.split("\t")
                    fields[3] = f.scheme(name)
                    line = "\t".join(fields)
                print(line)
    except HurrayError as exc:
        print(f"hurray inspect: {args.file}: {exc}", file=sys.stderr)
        return 1
    return status
