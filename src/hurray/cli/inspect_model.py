"""``python -m hurray inspect`` for GGUF and safetensors files, in inspect's own line format.

A tensor the reader refuses (a ggml type Hurray has no descriptor for) gets
a line saying why and makes the exit status 1; the others are listed.
"""
import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from ..formats.conversion import open_model_file
from ..errors import HurrayError
from ..core.tensor import Tensor

MODEL_EXTENSIONS = (".gguf", ".safetensors")
_LONG = 120


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    if isinstance(value, list) and len(text) > _LONG:
        return f"[{len(value)} items]"
    return text if len(text) <= _LONG else text[:_LONG - 3] + "..."


def run(args: argparse.Namespace, header: str, describe: Callable[[str, Tensor], str]) -> int:
    status = 0
    try:
        with open_model_file(args.file) as f:
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
                print(describe(name, tensor))
    except HurrayError as exc:
        print(f"hurray inspect: {args.file}: {exc}", file=sys.stderr)
        return 1
    return status
