"""``python -m hurray inspect FILE``: the file's metadata, then a header row and
one tab-separated line per tensor. Reads only the index and the frame headers
(no checksums: that is ``verify``)."""
import argparse
import sys

from ..core.descriptor import Descriptor
from ..core.tensor import Tensor

from ..errors import HurrayError

NAME = "inspect"
HELP = "list the tensors of a .hurray, .gguf or .safetensors file"
DESCRIPTION = """\
List the tensors of a .hurray, .gguf or .safetensors file (by its extension).

Prints the file's metadata as lines starting with '#', then a header row and
one tab-separated line per tensor: its name, dtype, shape (32x16, or scalar),
quantization ('-' for none, else the scheme and its parameters) and bytes.
Reads the file's index, not the tensors' bytes; 'verify' checks those.
Exit status: 0; 1 when the file cannot be read or a tensor is refused.
"""
HEADER = "name\tdtype\tshape\tquantization\tbytes"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a .hurray, .gguf or .safetensors file")


def quantization(desc: Descriptor) -> str:
    """A short word for the tensor's layer 3: '-' when there is none."""
    if desc.scheme == "none":
        return "-"
    if desc.scheme == "ggml":
        return f"ggml:{desc.ggml_type}"
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

    if args.file.lower().endswith(MODEL_EXTENSIONS):  # GGUF and safetensors files: see inspect_model
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
