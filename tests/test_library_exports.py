"""libhurray's exported symbols are exactly the functions hurray.h declares,
and the cffi module, whose cdef is derived from the header, reaches them all."""
import re
import subprocess

import hurray
from hurray._ffi import lib


def header_functions():
    with open(hurray.get_include() + "/hurray.h", encoding="utf-8") as f:
        text = f.read()
    return set(re.findall(r"\b(hurray_[a-z0-9_]+)\s*\(", text))


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
    assert lib.hurray_c_abi_version() == lib.HURRAY_C_ABI_VERSION == hurray.C_ABI_VERSION == 4


def test_version_command_names_package_and_abi():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "hurray", "--version"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"hurray {hurray.__version__} (C ABI 4, linked library C ABI 4)"
