"""Descriptor encoding version 2 (a graph of nodes, ADR-054) in C.

tests/c/test_descriptor_graph.c (every example of the design built, encoded,
decoded and checked against buffers of hand-worked sizes; every refusal; the
index scans; version 1 beside it) is built against the installed library,
with the library sources compiled in under AddressSanitizer and UBSan, and
run under valgrind. tests/c/test_graph_codes.c (where a stored node's codes
lie, against a packer of its own and bytes the owning libraries write) reads
the internal headers, so it is built with the sources compiled in, at -O2
and under the sanitizers.
"""
from support.cbuild import (
    C_TESTS,
    CC,
    NATIVE,
    assert_checks_passed,
    build_installed,
    build_sanitized,
    library_sources,
    run_checked,
    run_sanitized,
    run_under_valgrind,
)

STRICT = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-pthread"]
# The byte sweep over every example's encoding makes millions of checks; a
# count this low means whole sections stopped running.
MIN_CHECKS = 1_000_000
# Under valgrind the sweep is skipped (HURRAY_TEST_SCALE=10).
MIN_CHECKS_WITHOUT_SWEEP = 15_000
CODES_MIN_CHECKS = 20_000
INTERNAL = [*STRICT, "-I", str(NATIVE / "src")]


def test_graph_against_installed_library(tmp_path):
    exe = build_installed(C_TESTS / "test_descriptor_graph.c", tmp_path / "test_descriptor_graph", [*STRICT, "-g"])
    assert_checks_passed(run_checked([str(exe)], timeout=300), "test_descriptor_graph", MIN_CHECKS)


def test_graph_under_address_and_undefined_sanitizers(tmp_path):
    exe = build_sanitized(C_TESTS / "test_descriptor_graph.c", tmp_path / "graph_sanitized", STRICT,
                          library_sources())
    assert_checks_passed(run_sanitized(exe, "detect_leaks=1"), "test_descriptor_graph", MIN_CHECKS)


def test_graph_under_valgrind(tmp_path):
    exe = build_installed(C_TESTS / "test_descriptor_graph.c", tmp_path / "test_descriptor_graph", [*STRICT, "-g"])
    result = run_under_valgrind(exe, "10", timeout=600)
    assert_checks_passed(result, "test_descriptor_graph", MIN_CHECKS_WITHOUT_SWEEP)


def test_graph_codes_at_o2(tmp_path):
    exe = tmp_path / "test_graph_codes"
    run_checked([CC, *INTERNAL, "-O2", "-I", str(NATIVE / "include"), str(C_TESTS / "test_graph_codes.c"),
                 *library_sources(), "-o", str(exe)], timeout=300)
    assert_checks_passed(run_checked([str(exe)], timeout=120), "test_graph_codes", CODES_MIN_CHECKS)


def test_graph_codes_under_address_and_undefined_sanitizers(tmp_path):
    exe = build_sanitized(C_TESTS / "test_graph_codes.c", tmp_path / "codes_sanitized", INTERNAL, library_sources())
    assert_checks_passed(run_sanitized(exe, "detect_leaks=1"), "test_graph_codes", CODES_MIN_CHECKS)
