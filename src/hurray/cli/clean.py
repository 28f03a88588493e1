"""``python -m hurray clean [DIR ...]``: remove the temporary files dead writers left behind.

A Hurray writer writes to a temporary file beside its target and renames it
into place (ADR-039 § 6). Where the file system has O_TMPFILE the temporary
has no name and a killed writer leaves nothing; elsewhere it is named
``BASE.hurray-tmp-PID-N``, and a writer killed before its rename leaves it.
Every save removes those in its own folder; this command does it on
request. It removes only files with that name, only when no process PID
exists and no writer holds the file's lock (ADR-056). Exit status 0 when
every folder could be read.
"""
import argparse
import sys

from .._ffi import ffi, lib
from ..errors import HurrayError, check
from ..io._path import fs_path

NAME = "clean"
HELP = "remove the temporary files of dead Hurray writers from folders"
DESCRIPTION = """\
Remove, from each folder given (the current one by default), the temporary
files Hurray writers killed before their rename left behind: only files named
BASE.hurray-tmp-PID-N, only when process PID is gone and no writer holds the
file's lock. Where the file system has O_TMPFILE a writer's temporary has no
name, and there is nothing to clean.
Exit status: 0; 1 when a folder cannot be read.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directories", nargs="*", default=["."], metavar="DIR",
                        help="a folder to clean (default: the current one)")


def run(args: argparse.Namespace) -> int:
    status = 0
    removed = ffi.new("uint64_t *")
    for directory in args.directories:
        try:
            raw, shown = fs_path(directory, "hurray clean")
            check(lib.hurray_atomic_file_clean(raw, removed), shown)
        except HurrayError as exc:
            print(f"hurray clean: {exc}", file=sys.stderr)
            status = 1
            continue
        count = removed[0]
        print(f"{shown}: removed {count} temporary file{'' if count == 1 else 's'} of dead writers")
    return status
