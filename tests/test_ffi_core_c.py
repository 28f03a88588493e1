"""The C core of hurray-ffi (status, buffers, buffer lists, tensor contexts),
tested by the C program tests/c/test_core.c.

The program is built three ways: against the installed library with the
flags `python -m hurray --cflags --libs` prints (as any C user would), with
the library sources compiled in under AddressSanitizer and UBSan, and run
under valgrind memcheck. tests/c/test_adr034_decls.c checks that hurray.h
declares exactly what ADR-034 section 1 declares.
"""
import pytest

from support.cbuild import (
    C_TESTS,
    CC,
    STRICT,
    assert_checks_passed,
    build_installed,
    build_sanitized,
    hurray_flags,
    library_sources,
    run_checked,
    run_sanitized,
    run_under_valgrind,
)

# Valgrind is ~50x slower; divide the loop counts (100,000 cycles, 8 threads
# x 20,000) by this so the run stays well under a minute.
VALGRIND_SCALE = "10"


@pytest.fixture(scope="module")
def test_core_binary(tmp_path_factory):
    """test_core.c linked against the installed libhurray."""
    return build_installed(C_TESTS / "test_core.c", tmp_path_factory.mktemp("c_core") / "test_core", STRICT)


def test_core_against_installed_library(test_core_binary):
    result = run_checked([str(test_core_binary)], timeout=120)
    assert_checks_passed(result, "test_core")


def test_core_under_address_and_undefined_sanitizers(tmp_path):
    sources = library_sources()
    assert any(p.endswith("tensor_context.c") for p in sources)
    exe = build_sanitized(C_TESTS / "test_core.c", tmp_path / "test_core_sanitized", STRICT, sources)
    # allocator_may_return_null: the test asks for 2**62 bytes on purpose and
    # expects HURRAY_ERROR_NO_MEMORY, not an ASan abort.
    result = run_sanitized(exe, "detect_leaks=1:allocator_may_return_null=1")
    assert_checks_passed(result, "test_core")


def test_core_under_valgrind(test_core_binary):
    result = run_under_valgrind(test_core_binary, VALGRIND_SCALE, timeout=120)
    assert_checks_passed(result, "test_core")


def test_adr034_declarations_match_installed_header(tmp_path):
    # Link flags would be unused with -c (and clang warns about them), so
    # only the compile flags are asked for.
    run_checked(
        [CC, "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-c",
         str(C_TESTS / "test_adr034_decls.c"), "-o", str(tmp_path / "decls.o"), *hurray_flags("--cflags")],
        timeout=60,
    )
