"""libhurray's exported symbols are exactly the functions hurray.h,
hurray_io.h and hurray_gguf.h declare (nothing else: xxHash, vendored for hurray-io, stays
private), and the cffi module, whose cdef is derived from the headers,
reaches them all."""
import re
import subprocess

import hurray
from hurray._ffi import lib


def header_functions():
    names = set()
    for header in ("hurray.h", "hurray_io.h", "hurray_gguf.h"):
        with open(hurray.get_include() + "/" + header, encoding="utf-8") as f:
            names |= set(re.findall(r"\b(hurray_[a-z0-9_]+)\s*\(", f.read()))
    return names


def test_no_xxhash_symbol_escapes():
    out = subprocess.run(["nm", "-D", hurray.get_library()], capture_output=True, text=True, check=True).stdout
    assert not [line for line in out.splitlines() if "XXH" in line]


def exported_functions():
    out = subprocess.run(
        ["nm", "-D", "--defined-only", hurray.get_library()], capture_output=True, text=True, check=True
    ).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()[1] in ("T", "t")}


def test_library_exports_exactly_the_header_functions():
    declared = header_functions()
    assert len(declared) > 30
    assert exported_functions() == declared


def test_cffi_module_reaches_every_header_function():
    missing = sorted(name for name in header_functions() if not callable(getattr(lib, name, None)))
    assert missing == []


def test_linked_library_reports_the_header_version():
    assert lib.hurray_c_abi_version() == lib.HURRAY_C_ABI_VERSION == hurray.C_ABI_VERSION == 5


def test_version_command_names_package_and_abi():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "hurray", "--version"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"hurray {hurray.__version__} (C ABI 5, linked library C ABI 5, hurray-io 1)"
