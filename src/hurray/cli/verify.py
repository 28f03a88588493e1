"""``python -m hurray verify FILE``: check every checksum of a hurray-io file.

Exit status 0 only when the file opens (trailer and index checks) and every
tensor matches its checksum; each failure is printed. On a terminal, a
progress bar on stderr (the one convert draws) for files of 64 MiB or more.
"""
import argparse
import os
import sys

from ._progress import Bar
from ..errors import HurrayError

NAME = "verify"
HELP = "check every checksum of a hurray-io file"
PROGRESS_FROM = 64 << 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a .hurray file")


def run(args: argparse.Namespace) -> int:
    from ..io import load

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
    print(f"{args.file}: {len(f)} tensors, every checksum matches")
    return 0
