"""hurray-io in C (tests/c/test_io.c): files, frames and bad input.

Built three ways like the core test: against the installed library with
`python -m hurray --cflags --libs` (which must suffice for hurray_io.h too),
with the library sources compiled in under AddressSanitizer and UBSan, and
run under valgrind memcheck.
"""
import pytest

from support.cbuild import (
    C_TESTS,
    STRICT,
    assert_checks_passed,
    build_installed,
    build_sanitized,
    library_sources,
    run_checked,
    run_sanitized,
    run_under_valgrind,
)


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
    result = run_sanitized(exe, "detect_leaks=1", args=[scratch], timeout=600)
    assert_checks_passed(result, "test_io", more_than=100000)


def test_io_under_valgrind(test_io_binary, tmp_path):
    # every 37th byte of the exhaustive loops
    result = run_under_valgrind(test_io_binary, "37", 600, args=[tmp_path])
    assert_checks_passed(result, "test_io", more_than=1000)
