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
Remove the temporary files (BASE.hurray-tmp-PID-N) that Hurray writers killed
before their rename left in each folder DIR (default: the current one). A file
is removed only when no process PID exists and no writer holds its lock.
Prints how many files each folder lost.
Exit status: 0 when every folder could be read; 1 otherwise.
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
