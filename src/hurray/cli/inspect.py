"""``python -m hurray inspect FILE``: one line per tensor of a hurray-io file:
name, dtype, shape, quantization, bytes. Reads only the index and the frame
headers (no checksums: that is ``verify``). Model files and checkpoint
directories: see inspect_model (a quantized weight's scheme in words)."""
import argparse
import os
import sys

from ..core.descriptor import Descriptor
from ..core.tensor import Tensor

from ..errors import HurrayError

NAME = "inspect"
HELP = "list the tensors of a hurray-io, GGUF, safetensors or ONNX file, or of a checkpoint directory"


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
        return run_model(args, describe)

    try:
        with load(args.file, verify=False) as f:
            for key, value in sorted(f.metadata.items()):
                print(f"# {key} = {value}")
            for name in f:
                print(describe(name, f[name]))
    except HurrayError as exc:
        print(f"hurray inspect: {args.file}: {exc}", file=sys.stderr)
        return 1
    return 0
