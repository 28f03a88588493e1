"""``python -m hurray convert IN OUT [--dtype bfloat16]``: between .gguf, .safetensors and .hurray files, by extension;
IN may be a checkpoint directory or an .onnx model; ``--format NAME`` writes OUT as
a checkpoint directory in that library's convention (ADR-063).

With ``--dtype`` (float32, float16 or bfloat16) every quantized tensor is
dequantized into a plain one of that type on the way. Exit status 0 when OUT
was written; 1 when the conversion was refused (the message names the tensor
and why) and OUT is untouched. A progress bar shows on a terminal.
"""
import argparse
import sys
from typing import Optional, TextIO

from ._progress import Bar
from ..formats.checkpoint.writer import FORMATS
from ..formats.conversion import convert
from ..errors import HurrayError
from ..quant.dequantizers import OUTPUT_DTYPES

NAME = "convert"
HELP = "convert a model file between .gguf, .safetensors and .hurray, or a checkpoint to a library's convention"
DESCRIPTION = """\
Convert a model file between .gguf, .safetensors and .hurray, by the files'
extensions, keeping every tensor exact (quantized ones too). The source may
also be a checkpoint directory or an .onnx model; with --format the target is
a checkpoint directory in that library's convention (compressed-tensors,
gptq, awq, fp8, bitsandbytes, mlx).

A conversion that would lose something is refused, naming the tensor and
why, and the target is left untouched; the target is written whole or not
at all. A progress bar shows on a terminal.
Exit status: 0 when the target was written; 1 when refused.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", help="the file to read (.gguf, .safetensors, .hurray or .onnx) or a checkpoint "
                                       "directory")
    parser.add_argument("target", help="the file to write (.gguf, .safetensors or .hurray; replaced atomically), or "
                                       "with --format a checkpoint directory")
    parser.add_argument("--dtype", choices=sorted(OUTPUT_DTYPES), default=None,
                        help="dequantize every quantized tensor into a plain one of this type")
    parser.add_argument("--quiet", action="store_true", help="no progress bar, even on a terminal")
    parser.add_argument("--format", choices=FORMATS, default=None,
                        help="write TARGET as a checkpoint directory in this library's convention (lossless only: "
                             "a tensor it cannot state is refused by name)")


def run(args: argparse.Namespace, stderr: Optional[TextIO] = None) -> int:
    stderr = sys.stderr if stderr is None else stderr
    bar = Bar(f"{args.source} -> {args.target}", stderr)
    try:
        convert(args.source, args.target, dtype=getattr(args, "dtype", None),
                progress=None if args.quiet else bar, format=getattr(args, "format", None))
    except HurrayError as exc:
        print(f"hurray convert: {exc}", file=stderr)
        return 1
    finally:
        bar.close()
    return 0
