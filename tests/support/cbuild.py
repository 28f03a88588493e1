"""Compiling and running C code from the tests.

A C test program (tests/c/) is built either against the installed package,
with the flags ``python -m hurray --cflags --libs`` prints (as any C user
would), or with the library sources compiled in under AddressSanitizer and
UBSan; the installed build is also run under valgrind memcheck. Each
program ends with the line "NAME: N checks passed".
"""
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
C_TESTS = ROOT / "tests" / "c"
NATIVE = ROOT / "native"
CC = os.environ.get("CC", "cc")
# The warnings every C test program is built with.
STRICT = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g"]
# Every build that compiles the library's sources in uses the library's own
# floating-point rule: no product and sum fused into one rounding (setup.py,
# ADR-055).
LIBRARY_FLAGS = ["-ffp-contract=off"]


def hurray_flags(*options):
    """Compiler flags, exactly as `python -m hurray` prints them."""
    result = subprocess.run(
        [sys.executable, "-m", "hurray", *options], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, f"python -m hurray {' '.join(options)} failed:\n{result.stderr}"
    flags = shlex.split(result.stdout)
    assert flags, f"python -m hurray {' '.join(options)} printed no flags"
    return flags


def run_checked(command, **kwargs):
    """Runs `command`; a non-zero exit fails the test with its output."""
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, (
        f"{shlex.join(str(c) for c in command)} exited with {result.returncode}\n"
        f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    )
    return result


def build_installed(source, output, flags):
    """`source` compiled with `flags` and linked against the installed libhurray."""
    run_checked([CC, *flags, str(source), "-o", str(output), *hurray_flags("--cflags", "--libs")], timeout=120)
    return output


def library_sources():
    """native/src/*.c, for builds that compile the library in."""
    return sorted(str(p) for p in (NATIVE / "src").glob("*.c"))


def build_sanitized(source, output, flags, sources):
    """`source` with `sources` compiled in, under ASan and UBSan.

    The library sources are compiled in because ASan only sees memory
    errors in instrumented code.
    """
    run_checked([CC, *flags, *SANITIZE, *LIBRARY_FLAGS, "-I", str(NATIVE / "include"), str(source), *sources,
                 "-o", str(output)], timeout=300)
    return output


def run_sanitized(program, asan_options, args=(), timeout=300):
    """Runs a build_sanitized() program (with `args`) at full scale; any sanitizer report fails."""
    env = dict(os.environ)
    env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"
    env["ASAN_OPTIONS"] = asan_options
    env.pop("HURRAY_TEST_SCALE", None)
    result = run_checked([str(program), *map(str, args)], env=env, timeout=timeout)
    reports = [line for line in result.stderr.splitlines()
               if "runtime error:" in line or ("ERROR:" in line and "Sanitizer" in line)]
    assert not reports, result.stderr
    return result


def run_under_valgrind(program, scale, timeout, args=()):
    """Runs `program` (with `args`) under memcheck with HURRAY_TEST_SCALE=`scale`; any error or leak fails."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        pytest.fail("valgrind is required for this test and is not installed")
    env = dict(os.environ)
    env["HURRAY_TEST_SCALE"] = scale
    result = run_checked([valgrind, "--error-exitcode=99", "--leak-check=full",
                          "--errors-for-leak-kinds=definite,indirect,possible", str(program), *map(str, args)],
                         env=env, timeout=timeout)
    assert "ERROR SUMMARY: 0 errors" in result.stderr, result.stderr
    return result


def assert_checks_passed(result, program, more_than=0):
    """The last line of stdout is "PROGRAM: N checks passed" with N > more_than."""
    lines = result.stdout.strip().splitlines()
    last = lines[-1] if lines else ""
    words = last.split()
    assert len(words) == 4 and words[0] == f"{program}:" and words[2:] == ["checks", "passed"], (
        f"unexpected last line: {last!r}"
    )
    assert int(words[1]) > more_than
