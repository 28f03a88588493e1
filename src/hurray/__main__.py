"""python -m hurray: build flags for C, versions, and commands on hurray-io files.

``python -m hurray --cflags --libs`` prints what a C build needs (hurray.h,
hurray_io.h and hurray_gguf.h); ``--version`` the versions; ``python -m hurray COMMAND ...``
runs a command (see hurray/commands/).
"""
import argparse
import sys
from collections.abc import Sequence
from typing import Optional

from . import C_ABI_VERSION, __version__, _paths
from ._ffi import lib
from .cli import COMMANDS


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hurray", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cflags", action="store_true", help="print the compile flags (include path)")
    parser.add_argument("--libs", action="store_true", help="print the link flags (library and rpath)")
    parser.add_argument("--version", action="store_true", help="print the package and C ABI versions")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        sub = commands.add_parser(command.NAME, help=command.HELP, description=command.__doc__)
        command.add_arguments(sub)
        sub.set_defaults(run=command.run)
    args = parser.parse_args(argv)
    if args.command is not None:
        return args.run(args)
    if args.version:
        print(f"hurray {__version__} (C ABI {C_ABI_VERSION}, linked library C ABI {lib.hurray_c_abi_version()}, "
              f"hurray-io {lib.hurray_io_version()})")
        return 0
    flags = []
    if args.cflags:
        flags += _paths.compile_flags()
    if args.libs:
        flags += _paths.link_flags()
    if not flags:
        parser.print_usage(sys.stderr)
        return 2
    print(" ".join(flags))
    return 0


if __name__ == "__main__":
    sys.exit(main())
