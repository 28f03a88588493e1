"""The path policy and HurrayAtomicFile in C (tests/c/test_io_paths.c; ADR-056, ADR-057).

What a path may name for reading and writing (a FIFO refused without
blocking, symlinks followed and kept, modes as open(2) gives them), the
temporary file's life (removed on every error path; a dead writer's
removed by the next writer, a live one's never), a write the file system
refuses said in its own words, a mapped file cut short refused rather than
faulted, and a frame held to its file's alignment by both readers. Built
against the installed library, with the sources under ASan and UBSan, and
run under valgrind, as the other C tests are.
"""
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

SOURCE = C_TESTS / "test_io_paths.c"


def test_io_paths_against_installed_library(tmp_path):
    exe = build_installed(SOURCE, tmp_path / "test_io_paths", STRICT)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    result = run_checked([str(exe), str(scratch)], timeout=300)
    assert_checks_passed(result, "test_io_paths", more_than=300)
    # The scratch folder is on a file system with O_TMPFILE (ext4, tmpfs, ...).
    assert "the temporary is unnamed" in result.stdout


def test_io_paths_under_address_and_undefined_sanitizers(tmp_path):
    # Built without O_TMPFILE: the named temporaries, their cleaning and locks.
    exe = build_sanitized(SOURCE, tmp_path / "test_io_paths_sanitized", [*STRICT, "-DHURRAY_NO_O_TMPFILE"],
                          library_sources())
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    result = run_sanitized(exe, "detect_leaks=1", args=[scratch], timeout=600)
    assert_checks_passed(result, "test_io_paths", more_than=300)


def test_io_paths_under_valgrind(tmp_path):
    exe = build_installed(SOURCE, tmp_path / "test_io_paths", STRICT)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    result = run_under_valgrind(exe, "1", 600, args=[scratch])
    assert_checks_passed(result, "test_io_paths", more_than=300)
