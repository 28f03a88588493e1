"""The C core of hurray-ffi (status, buffers, buffer lists, tensor contexts),
tested by the C program tests/c/test_core.c.

The program is built three ways: against the installed library with the
flags `python -m hurray --cflags --libs` prints (as any C user would), with
the library sources compiled in under AddressSanitizer and UBSan, and run
under valgrind memcheck. tests/c/test_adr034_decls.c checks that hurray.h
declares exactly what ADR-034 section 1 declares.
"""
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
C_TESTS = ROOT / "tests" / "c"
NATIVE = ROOT / "native"
CC = os.environ.get("CC", "cc")
STRICT = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread"]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g"]
# Valgrind is ~50x slower; divide the loop counts (100,000 cycles, 8 threads
# x 20,000) by this so the run stays well under a minute.
VALGRIND_SCALE = "10"


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
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, (
        f"{shlex.join(str(c) for c in command)} exited with {result.returncode}\n"
        f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    )
    return result


def assert_checks_passed(result):
    last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    words = last.split()
    assert len(words) == 4 and words[0] == "test_core:" and words[2:] == ["checks", "passed"], (
        f"unexpected last line: {last!r}"
    )
    assert int(words[1]) > 0


@pytest.fixture(scope="module")
def test_core_binary(tmp_path_factory):
    """test_core.c linked against the installed libhurray."""
    exe = tmp_path_factory.mktemp("c_core") / "test_core"
    run_checked(
        [CC, *STRICT, str(C_TESTS / "test_core.c"), "-o", str(exe), *hurray_flags("--cflags", "--libs")],
        timeout=120,
    )
    return exe


def test_core_against_installed_library(test_core_binary):
    result = run_checked([str(test_core_binary)], timeout=120)
    assert_checks_passed(result)


def test_core_under_address_and_undefined_sanitizers(tmp_path):
    # The library sources are compiled into the program: ASan only sees
    # memory errors in instrumented code.
    sources = sorted(str(p) for p in (NATIVE / "src").glob("*.c"))
    assert any(p.endswith("tensor_context.c") for p in sources)
    exe = tmp_path / "test_core_sanitized"
    run_checked(
        [CC, *STRICT, *SANITIZE, "-I", str(NATIVE / "include"), str(C_TESTS / "test_core.c"), *sources,
         "-o", str(exe)],
        timeout=300,
    )
    env = dict(os.environ)
    env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"
    # allocator_may_return_null: the test asks for 2**62 bytes on purpose and
    # expects HURRAY_ERROR_NO_MEMORY, not an ASan abort.
    env["ASAN_OPTIONS"] = "detect_leaks=1:allocator_may_return_null=1"
    env.pop("HURRAY_TEST_SCALE", None)
    result = run_checked([str(exe)], env=env, timeout=300)
    reports = [
        line for line in result.stderr.splitlines()
        if "runtime error:" in line or ("ERROR:" in line and "Sanitizer" in line)
    ]
    assert not reports, result.stderr
    assert_checks_passed(result)


def test_core_under_valgrind(test_core_binary):
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        pytest.fail("valgrind is required for this test and is not installed")
    env = dict(os.environ)
    env["HURRAY_TEST_SCALE"] = VALGRIND_SCALE
    result = run_checked(
        [valgrind, "--error-exitcode=99", "--leak-check=full",
         "--errors-for-leak-kinds=definite,indirect,possible", str(test_core_binary)],
        env=env, timeout=120,
    )
    assert "ERROR SUMMARY: 0 errors" in result.stderr, result.stderr
    assert_checks_passed(result)


def test_adr034_declarations_match_installed_header(tmp_path):
    # Link flags would be unused with -c (and clang warns about them), so
    # only the compile flags are asked for.
    run_checked(
        [CC, "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c",
         str(C_TESTS / "test_adr034_decls.c"), "-o", str(tmp_path / "decls.o"), *hurray_flags("--cflags")],
        timeout=60,
    )
