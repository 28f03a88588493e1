"""``python -m hurray verify FILE``: check a file as far as its format allows.

A .hurray file: every checksum. Exit status 0 only when the file opens
(trailer and index checks) and every tensor matches its checksum; each
failure is printed. On a terminal, a progress bar on stderr (the one convert
draws) for files of 64 MiB or more. A GGUF or safetensors file has no
checksums: its structure is checked (the header, and every tensor's type,
shape and place in the file, as reading it checks them), and the output says
that its bytes could not be.
"""
import argparse
import os
import sys

from ._progress import Bar
from .inspect_model import MODEL_EXTENSIONS
from ..errors import HurrayError

NAME = "verify"
HELP = "check a file: every checksum of a .hurray file, the structure of a .gguf or .safetensors file"
DESCRIPTION = """\
Check a .hurray, .gguf or .safetensors file (by its extension), as far as
its format allows.

A .hurray file carries a checksum for every tensor: each one is checked.
GGUF and safetensors files carry no checksums, so their tensors' bytes
cannot be checked; their structure is: the header, and every tensor's type,
shape and place in the file. Each failure is printed.
Exit status: 0 when every check passes; 1 otherwise.
"""
PROGRESS_FROM = 64 << 20
_FORMATS = {".gguf": "GGUF", ".safetensors": "safetensors"}


def _tensors(count: int) -> str:
    return f"{count} tensor" + ("" if count == 1 else "s")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a .hurray, .gguf or .safetensors file")


def run_model(args: argparse.Namespace) -> int:
    """A GGUF or safetensors file: opening checks the header and the layout of the data;
    taking each tensor checks its type and shape against its bytes."""
    from ..formats.conversion import open_model_file

    fmt = _FORMATS[os.path.splitext(args.file)[1].lower()]
    try:
        f = open_model_file(args.file)
    except HurrayError as exc:
        print(f"hurray verify: {args.file}: {exc}", file=sys.stderr)
        return 1
    failures = 0
    with f:
        for name in f:
            try:
                f[name]
            except HurrayError as exc:
                failures += 1
                print(f"FAIL {name}: {exc}", file=sys.stderr)
    if failures:
        print(f"hurray verify: {args.file}: {failures} of {len(f)} tensors failed", file=sys.stderr)
        return 1
    print(f"{args.file}: {_tensors(len(f))}, structure checked; {fmt} files carry no checksums, "
          "so the tensors' bytes cannot be checked")
    return 0


def run(args: argparse.Namespace) -> int:
    from ..io import load

    if args.file.lower().endswith(MODEL_EXTENSIONS):
        return run_model(args)
    try:
        f = load(args.file, verify=False)
    except HurrayError as exc:
        print(f"hurray verify: {args.file}: {exc}", file=sys.stderr)
        return 1
    failures = 0
    with f:
        total = os.path.getsize(args.file)
        progress = Bar("verifying", sys.stderr)
        progress.enabled = progress.enabled and total >= PROGRESS_FROM
        done = 0
        for name in f:
            try:
                f.verify(name)
                done += sum(n for _, n in f[name].buffers)
            except HurrayError as exc:
                failures += 1
                print(f"FAIL {name}: {exc}", file=sys.stderr)
            progress(done, total)
        progress(total, total)  # the rest (index, trailer) was checked on opening
        progress.close()
    if failures:
        print(f"hurray verify: {args.file}: {failures} of {len(f)} tensors failed", file=sys.stderr)
        return 1
    print(f"{args.file}: {_tensors(len(f))}, every checksum matches")
    return 0
