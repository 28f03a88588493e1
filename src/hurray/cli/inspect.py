"""``python -m hurray inspect FILE``: the file's metadata, then a header row and
one tab-separated line per tensor. Reads only the index and the frame headers
(no checksums: that is ``verify``). Model files and checkpoint directories: see
inspect_model (a quantized weight's quantization column is its scheme in words)."""
import argparse
import os
import sys

from ..core.descriptor import Descriptor
from ..core.tensor import Tensor

from ..errors import HurrayError

NAME = "inspect"
HELP = "list the tensors of a .hurray, .gguf, .safetensors or .onnx file, or of a checkpoint directory"
DESCRIPTION = """\
List the tensors of a .hurray, .gguf, .safetensors or .onnx file (by its
extension), or of a checkpoint directory (config.json, shards and index).

Prints the file's metadata as lines starting with '#', then a header row and
one tab-separated line per tensor: its name, dtype, shape (32x16, or scalar),
quantization ('-' for none, else the scheme and its parameters; a checkpoint's
quantized weight shows its scheme in words, e.g. 'int4 affine, groups of 128,
act-order, fp16 scales (GPTQ v1)') and bytes. Reads the file's index, not the
tensors' bytes; 'verify' checks those.
Exit status: 0; 1 when the file cannot be read or a tensor is refused.
"""
HEADER = "name\tdtype\tshape\tquantization\tbytes"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a .hurray, .gguf, .safetensors or .onnx file, or a checkpoint directory")


def quantization(desc: Descriptor) -> str:
    """A short word for the tensor's layer 3: '-' when there is none."""
    if desc.scheme == "none":
        return "-"
    if desc.scheme == "ggml":
        return f"ggml:{desc.ggml_type}"
    if desc.scheme == "graph":
        return "graph"
    text = f"{desc.scheme}:{desc.granularity}"
    if desc.granularity == "per_axis":
        text += f"(axis={desc.axis})"
    elif desc.granularity == "per_block":
        text += f"(axis={desc.axis},block={desc.block_size})"
    return text


def describe(name: str, tensor: Tensor) -> str:
    desc = tensor.descriptor
    shape = "x".join(str(n) for n in desc.shape) or "scalar"
    nbytes = sum(n for _, n in tensor.buffers)
    return f"{name}\t{desc.dtype}\t{shape}\t{quantization(desc)}\t{nbytes}"


def run(args: argparse.Namespace) -> int:
    from ..io import load
    from .inspect_model import MODEL_EXTENSIONS, run as run_model

    if args.file.lower().endswith(MODEL_EXTENSIONS) or os.path.isdir(args.file):  # see inspect_model
        return run_model(args, HEADER, describe)

    try:
        with load(args.file, verify=False) as f:
            for key, value in sorted(f.metadata.items()):
                print(f"# {key} = {value}")
            print(HEADER)
            for name in f:
                print(describe(name, f[name]))
    except HurrayError as exc:
        print(f"hurray inspect: {args.file}: {exc}", file=sys.stderr)
        return 1
    return 0
