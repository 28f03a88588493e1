"""The GGUF index in C (tests/c/test_gguf_index.c): good files, every refusal, every truncation and every
byte changed -- against the installed library, under AddressSanitizer and UBSan, and under valgrind."""
import os

from support.cbuild import (
    C_TESTS,
    assert_checks_passed,
    build_installed,
    build_sanitized,
    library_sources,
    run_checked,
    run_under_valgrind,
)

STRICT = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread"]
SOURCE = C_TESTS / "test_gguf_index.c"


def test_against_installed_library(tmp_path):
    exe = build_installed(SOURCE, tmp_path / "test_gguf_index", STRICT)
    assert_checks_passed(run_checked([str(exe)], timeout=300), "test_gguf_index", more_than=20000)


def test_under_address_and_undefined_sanitizers(tmp_path):
    sources = library_sources()
    assert any(p.endswith("gguf_index.c") for p in sources)
    exe = build_sanitized(SOURCE, tmp_path / "test_gguf_index_sanitized", STRICT, sources)
    env = dict(os.environ)
    env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"
    env["ASAN_OPTIONS"] = "detect_leaks=1"
    result = run_checked([str(exe)], env=env, timeout=600)
    assert "runtime error:" not in result.stderr and "Sanitizer" not in result.stderr, result.stderr
    assert_checks_passed(result, "test_gguf_index", more_than=20000)


def test_under_valgrind(tmp_path):
    exe = build_installed(SOURCE, tmp_path / "test_gguf_index", STRICT)
    result = run_under_valgrind(exe, "7", 600)
    assert_checks_passed(result, "test_gguf_index", more_than=1000)
