"""The GGUF index in C (tests/c/test_gguf_index.c): good files, every refusal, every truncation and every
byte changed -- against the installed library, under AddressSanitizer and UBSan, and under valgrind."""
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

SOURCE = C_TESTS / "test_gguf_index.c"


def test_against_installed_library(tmp_path):
    exe = build_installed(SOURCE, tmp_path / "test_gguf_index", STRICT)
    assert_checks_passed(run_checked([str(exe)], timeout=300), "test_gguf_index", more_than=20000)


def test_under_address_and_undefined_sanitizers(tmp_path):
    sources = library_sources()
    assert any(p.endswith("gguf_index.c") for p in sources)
    exe = build_sanitized(SOURCE, tmp_path / "test_gguf_index_sanitized", STRICT, sources)
    result = run_sanitized(exe, "detect_leaks=1", timeout=600)
    assert_checks_passed(result, "test_gguf_index", more_than=20000)


def test_under_valgrind(tmp_path):
    exe = build_installed(SOURCE, tmp_path / "test_gguf_index", STRICT)
    result = run_under_valgrind(exe, "7", 600)
    assert_checks_passed(result, "test_gguf_index", more_than=1000)
