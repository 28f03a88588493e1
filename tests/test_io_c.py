"""hurray-io in C (tests/c/test_io.c): files, frames and bad input.

Built three ways like the core test: against the installed library with
`python -m hurray --cflags --libs` (which must suffice for hurray_io.h too),
with the library sources compiled in under AddressSanitizer and UBSan, and
run under valgrind memcheck.
"""
import os
import shutil

import pytest

from support.cbuild import (
    C_TESTS,
    assert_checks_passed,
    build_installed,
    build_sanitized,
    library_sources,
    run_checked,
)

STRICT = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread"]


@pytest.fixture(scope="module")
def test_io_binary(tmp_path_factory):
    return build_installed(C_TESTS / "test_io.c", tmp_path_factory.mktemp("c_io") / "test_io", STRICT)


def test_io_against_installed_library(test_io_binary, tmp_path):
    result = run_checked([str(test_io_binary), str(tmp_path)], timeout=300)
    assert_checks_passed(result, "test_io", more_than=100000)


def test_io_under_address_and_undefined_sanitizers(tmp_path):
    sources = library_sources()
    assert any(p.endswith("io_reader.c") for p in sources)
    exe = build_sanitized(C_TESTS / "test_io.c", tmp_path / "test_io_sanitized", STRICT, sources)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = dict(os.environ)
    env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"
    env["ASAN_OPTIONS"] = "detect_leaks=1"
    result = run_checked([str(exe), str(scratch)], env=env, timeout=600)
    assert "runtime error:" not in result.stderr and "Sanitizer" not in result.stderr, result.stderr
    assert_checks_passed(result, "test_io", more_than=100000)


def test_io_under_valgrind(test_io_binary, tmp_path):
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        pytest.fail("valgrind is required for this test and is not installed")
    env = dict(os.environ)
    env["HURRAY_TEST_SCALE"] = "37"  # every 37th byte of the exhaustive loops
    result = run_checked([valgrind, "--error-exitcode=99", "--leak-check=full",
                          "--errors-for-leak-kinds=definite,indirect,possible",
                          str(test_io_binary), str(tmp_path)], env=env, timeout=600)
    assert "ERROR SUMMARY: 0 errors" in result.stderr, result.stderr
    assert_checks_passed(result, "test_io", more_than=1000)
