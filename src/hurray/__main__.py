"""python -m hurray: the flags a C build needs, the versions, and commands on tensor files.

What ``python -m hurray --help`` shows is DESCRIPTION, plain text; each
command module (hurray/cli/) has its own NAME, HELP and DESCRIPTION.
"""
import argparse
import sys
from collections.abc import Sequence
from typing import Optional

from . import C_ABI_VERSION, __version__, _paths
from ._ffi import lib
from .cli import COMMANDS

DESCRIPTION = """\
Hurray's command line: the flags a C build needs, the versions, and commands
on tensor files (.hurray, .gguf and .safetensors).

  python -m hurray --cflags --libs   the flags that build a C file against
                                     hurray.h, hurray_io.h, hurray_gguf.h
                                     and libhurray, for cc
  python -m hurray --version         the package, C ABI and hurray-io versions
  python -m hurray COMMAND --help    what a command takes and prints
"""


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m hurray", description=DESCRIPTION,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--cflags", action="store_true", help="print the compile flags (the include folder)")
    top.add_argument("--libs", action="store_true", help="print the link flags (libhurray and its run-time path)")
    top.add_argument("--version", action="store_true", help="print the package, C ABI and hurray-io versions")
    commands = top.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for command in COMMANDS:
        sub = commands.add_parser(command.NAME, help=command.HELP, description=command.DESCRIPTION,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
        command.add_arguments(sub)
        sub.set_defaults(run=command.run)
    return top


def main(argv: Optional[Sequence[str]] = None) -> int:
    top = parser()
    args = top.parse_args(argv)
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
    if not flags:  # nothing asked: say what there is to ask
        top.print_help()
        return 0
    print(" ".join(flags))
    return 0


if __name__ == "__main__":
    sys.exit(main())
