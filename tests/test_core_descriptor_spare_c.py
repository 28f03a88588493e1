"""The per-thread spare descriptor block (ADR-051): tests/c/test_descriptor_spare.c.

Built against the installed library and with the library sources compiled in
under AddressSanitizer and UBSan, where a destroyed block must serve the
thread's next decode; run under valgrind, where the library must keep no
block at all. The leak checks of LeakSanitizer and memcheck see the blocks
kept by threads that exit. A read of a destroyed descriptor must still be
reported by both tools: the spare hides no use after destroy.
"""
import shutil
import subprocess

import pytest

from support.cbuild import (
    C_TESTS,
    SANITIZE,
    STRICT,
    assert_checks_passed,
    build_installed,
    build_sanitized,
    library_sources,
    run_checked,
    run_sanitized,
    run_under_valgrind,
)

SOURCE = C_TESTS / "test_descriptor_spare.c"
NAME = "test_descriptor_spare"
# Three sweeps of 50 descriptors of each kind, the threads' checks on top.
MIN_CHECKS = 10_000


@pytest.fixture(scope="module")
def installed_binary(tmp_path_factory):
    return build_installed(SOURCE, tmp_path_factory.mktemp("c_spare") / NAME, [*STRICT, "-g"])


@pytest.fixture(scope="module")
def sanitized_binary(tmp_path_factory):
    sources = library_sources()
    assert any(p.endswith("descriptor_spare.c") for p in sources)
    return build_sanitized(SOURCE, tmp_path_factory.mktemp("c_spare_asan") / NAME, STRICT, sources)


def test_spare_against_installed_library(installed_binary):
    assert_checks_passed(run_checked([str(installed_binary)], timeout=120), NAME, MIN_CHECKS)


def test_spare_under_address_and_undefined_sanitizers(sanitized_binary):
    # detect_leaks: a block kept by an exiting thread must be freed by its exit.
    assert_checks_passed(run_sanitized(sanitized_binary, "detect_leaks=1"), NAME, MIN_CHECKS)


def test_no_spare_under_valgrind(installed_binary):
    # "no-spare": every decode after a destroy must get a new block, and
    # memcheck must find no leak.
    result = run_under_valgrind(installed_binary, "1", timeout=600, args=("no-spare",))
    assert_checks_passed(result, NAME, MIN_CHECKS)


def expect_failure(command, env=None):
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode != 0, f"the use after destroy went unreported:\n{result.stdout}\n{result.stderr}"
    return result.stderr


def test_use_after_destroy_is_reported_by_address_sanitizer(sanitized_binary):
    # The destroyed block was kept, poisoned: ASan reports a use-after-poison
    # (not a use-after-free, which would mean the spare is off under ASan).
    stderr = expect_failure([str(sanitized_binary), "use-after-destroy"])
    assert "ERROR: AddressSanitizer: use-after-poison" in stderr, stderr
    assert "hurray_descriptor_rank" in stderr, stderr


def test_use_after_destroy_is_reported_by_valgrind(installed_binary):
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        pytest.fail("valgrind is required for this test and is not installed")
    stderr = expect_failure([valgrind, "--error-exitcode=99", str(installed_binary), "use-after-destroy"])
    assert "Invalid read" in stderr, stderr
    assert "hurray_descriptor_rank" in stderr, stderr
    assert "free'd" in stderr, stderr  # the block was freed, not kept


def test_sanitizer_flags_are_the_shared_ones():
    # The ASan build above is the one every C test uses (cbuild.SANITIZE).
    assert "-fsanitize=address,undefined" in SANITIZE
