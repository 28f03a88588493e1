"""`python -m hurray --cflags --libs` prints what a C build needs; `--version` the versions."""
import argparse
import sys

from . import C_ABI_VERSION, __version__, _paths
from ._ffi import lib
from .errors import HurrayError


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["convert"]:
        from . import cli_convert

        return cli_convert.main(argv[1:])
    if argv[:1] == ["inspect"] and len(argv) == 2 and argv[1].lower().endswith((".gguf", ".safetensors")):
        from .cli_inspect_model import inspect_model_file

        try:
            return inspect_model_file(argv[1], sys.stdout)
        except HurrayError as exc:
            sys.stderr.write(f"python -m hurray inspect: {exc}\n")
            return 1
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
