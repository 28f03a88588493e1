"""Compile the C peer as a C extension module, the way a user of hurray-ffi would.

Two builds of the same sources:

- ``c_peer``: linked to the package's libhurray with exactly the flags
  ``python -m hurray --cflags --libs`` prints (plus Python's include
  directory, as any C extension needs);
- ``c_peer_static``: native/src/*.c compiled into the module itself with
  ``-fvisibility=hidden``, so its hurray_* symbols are private to it and
  cannot clash with, or be replaced by, the package's libhurray;
- ``c_peer_abi4``: the same sources compiled against the frozen header of
  C ABI 4 (``abi4/hurray.h``, the header as it was before ADR-059) and
  linked to the package's libhurray: a consumer built for ABI 4 that was
  never rebuilt, reading version-4 contexts only and knowing no read-only
  mark.
"""
import importlib.machinery
import importlib.util
import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PEER_SOURCES = sorted((HERE / "c_peer").glob("*.c"))
CC = os.environ.get("CC", "cc")
STRICT = ["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", "-pthread"]


def hurray_flags():
    """The installed package's compile and link flags, from its own command line."""
    result = subprocess.run(
        [sys.executable, "-m", "hurray", "--cflags", "--libs"], capture_output=True, text=True, timeout=60
    )
    if result.returncode != 0:
        raise RuntimeError(f"python -m hurray --cflags --libs failed:\n{result.stderr}")
    return shlex.split(result.stdout)


def _python_include():
    return "-I" + sysconfig.get_paths()["include"]


def _compile(command):
    result = subprocess.run(command, capture_output=True, text=True, timeout=180)
    if result.returncode != 0:
        raise RuntimeError(
            f"{shlex.join(map(str, command))} exited with {result.returncode}:\n{result.stdout}{result.stderr}"
        )


def _output(out_dir, name):
    return Path(out_dir) / (name + sysconfig.get_config_var("EXT_SUFFIX"))


def build_linked(out_dir):
    """c_peer, against the installed header and library."""
    path = _output(out_dir, "c_peer")
    _compile([CC, *STRICT, _python_include(), "-DPEER_MODULE=c_peer", *map(str, PEER_SOURCES),
              "-o", str(path), *hurray_flags()])
    return path


def build_abi4(out_dir):
    """c_peer_abi4: the ABI-4 header first on the include path, the installed library."""
    path = _output(out_dir, "c_peer_abi4")
    _compile([CC, *STRICT, _python_include(), f"-I{HERE / 'abi4'}", "-DPEER_MODULE=c_peer_abi4",
              *map(str, PEER_SOURCES), "-o", str(path), *hurray_flags()])
    return path


def build_static(out_dir):
    """c_peer_static, with its own hidden copy of the library sources."""
    native = ROOT / "native"
    sources = sorted((native / "src").glob("*.c"))
    path = _output(out_dir, "c_peer_static")
    _compile([CC, *STRICT, "-fvisibility=hidden", _python_include(), f"-I{native / 'include'}",
              f"-I{native / 'src'}", "-DPEER_MODULE=c_peer_static",
              # Its copy's spare-block slot in global-dynamic TLS: the peer is dlopen'ed late in a
              # session that has by then loaded other copies and libraries, and initial-exec TLS
              # (ADR-051 § 7) would need glibc's static surplus, which they may have used up.
              '-DHURRAY__SPARE_TLS_MODEL="global-dynamic"', *map(str, PEER_SOURCES),
              *map(str, sources), "-o", str(path)])
    return path


def load(path):
    """Import a built module from its file."""
    name = Path(path).name.split(".")[0]
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module
