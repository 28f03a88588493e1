"""`python -m hurray --cflags --libs` prints what a C build needs; `--version` the versions."""
import argparse
import sys

from . import C_ABI_VERSION, __version__, _paths
from ._ffi import lib


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m hurray", description=__doc__)
    parser.add_argument("--cflags", action="store_true", help="print the compile flags (include path)")
    parser.add_argument("--libs", action="store_true", help="print the link flags (library and rpath)")
    parser.add_argument("--version", action="store_true", help="print the package and C ABI versions")
    args = parser.parse_args(argv)
    if args.version:
        print(f"hurray {__version__} (C ABI {C_ABI_VERSION}, linked library C ABI {lib.hurray_c_abi_version()})")
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
